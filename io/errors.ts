/**
 * Typed errors shared by the `io/` readers. Every error carries the file it
 * is about and a one-line description of what is wrong and where, so a
 * command-line stage can print exactly one clear line.
 *
 * @module
 */
import * as Data from "effect/Data";

/**
 * Bad input: a file that cannot be parsed or does not have the expected
 * structure. `where` names the record (article title, paragraph index,
 * question id) or the byte offset when known.
 *
 * @example
 * ```ts
 * import { InputError } from "./errors.ts";
 * const e = new InputError({ file: "dev.json", where: "byte 17", message: "invalid JSON" });
 * if (e.toString() !== "dev.json: byte 17: invalid JSON") throw new Error(e.toString());
 * const noWhere = new InputError({ file: "-", where: "", message: "empty file" });
 * if (noWhere.toString() !== "-: empty file") throw new Error(noWhere.toString());
 * ```
 */
export class InputError extends Data.TaggedError("InputError")<{
  /** The file (or `-` for stdin). */
  readonly file: string;
  /** Where in the file: a record path or a byte offset; may be empty. */
  readonly where: string;
  /** What is wrong. */
  readonly message: string;
}> {
  /** One line: `file: where: message`. */
  override toString(): string {
    return [this.file, this.where, this.message].filter((s) => s !== "").join(
      ": ",
    );
  }
}

/**
 * A file that cannot be opened, read or written (missing, permission denied,
 * disk full). Distinct from {@linkcode InputError}: the bytes were never
 * looked at.
 *
 * @example
 * ```ts
 * import { FileError } from "./errors.ts";
 * const e = new FileError({ file: "dev.json", message: "no such file" });
 * if (e.toString() !== "dev.json: no such file" || e._tag !== "FileError") throw new Error();
 * ```
 */
export class FileError extends Data.TaggedError("FileError")<{
  /** The file. */
  readonly file: string;
  /** What the operating system said. */
  readonly message: string;
}> {
  /** One line: `file: message`. */
  override toString(): string {
    return `${this.file}: ${this.message}`;
  }
}

/**
 * Bad usage of a command or an option that does not fit the input (exit code 2).
 *
 * @example
 * ```ts
 * import { UsageError } from "./errors.ts";
 * const e = new UsageError("--k must be a positive integer");
 * if (e._tag !== "UsageError" || e.message !== "--k must be a positive integer") throw new Error();
 * ```
 */
export class UsageError extends Error {
  /** Tag for matching. */
  readonly _tag = "UsageError";
}
