/**
 * Typed errors shared by the `io/` readers, and the commands' usage and
 * work errors. Every error of a file carries the file it is about and a
 * one-line description of what is wrong and where, so a command-line stage
 * can print exactly one clear line; every error carries the exit code it
 * calls for (`exitCode`), which {@linkcode exitCodeOf} reads: the one place
 * a failure becomes an exit status.
 *
 * @module
 */
import * as Data from "effect/Data";

/**
 * The exit code of a command whose work failed: 1, the work failed; 2, bad
 * usage or bad input. (0 is success; 130 and 143 a stop by SIGINT or SIGTERM,
 * decided by the signal, not by an error.)
 */
export type ExitCode = 1 | 2;

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
  /** Exit code of a command that fails with it: 2, bad input. */
  get exitCode(): ExitCode {
    return 2;
  }

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
  /**
   * Exit code of a command that fails with it: 2 (a missing or unreadable
   * input is bad usage), 1 when the message says the system failed (disk
   * full, read-only file system, I/O error: {@linkcode isSystemFailureMessage}).
   */
  get exitCode(): ExitCode {
    return isSystemFailureMessage(this.message) ? 1 : 2;
  }

  /** One line: `file: message`. */
  override toString(): string {
    return `${this.file}: ${this.message}`;
  }
}

/**
 * A write the operating system refused or could not complete: the disk is
 * full, the file system is read-only, permission to write was denied, an
 * I/O error. The work failed (exit 1); the input was not at fault (unlike
 * a plain {@linkcode FileError}, exit 2). It is a `FileError` (same tag,
 * same fields, same line) to every handler that matches on one.
 *
 * @example
 * ```ts
 * import { FileError, WriteError } from "./errors.ts";
 * const e = new WriteError({ file: "/out/pred.json", message: "permission denied" });
 * if (!(e instanceof FileError) || e._tag !== "FileError") throw new Error();
 * if (e.toString() !== "/out/pred.json: permission denied") throw new Error(e.toString());
 * ```
 */
export class WriteError extends FileError {
  /** Exit code of a command that fails with it: 1, the work failed. */
  override get exitCode(): ExitCode {
    return 1;
  }
}

/** `code`s of OS errors that mean the system failed a write, not that the input is bad. */
const SYSTEM_WRITE_CODES = new Set([
  "ENOSPC",
  "EROFS",
  "EIO",
  "EDQUOT",
  "EFBIG",
  "EACCES",
  "EPERM",
]);

/**
 * Messages of OS errors that are failures of the system whatever the
 * operation (disk full, read-only file system, I/O error, quota, too many
 * open files), as Deno words them (`No space left on device (os error 28)`).
 *
 * @example
 * ```ts
 * import { isSystemFailureMessage } from "./errors.ts";
 * if (!isSystemFailureMessage("cannot write file: No space left on device (os error 28)")) throw new Error();
 * if (isSystemFailureMessage("no such file")) throw new Error();
 * ```
 */
export function isSystemFailureMessage(message: string): boolean {
  return /\(os error (5|23|24|27|28|30|122)\)|No space left on device|Read-only file system|Disk quota exceeded|Input\/output error|Too many open files/
    .test(message);
}

/**
 * The error of a failed write of `file`: a {@linkcode WriteError} when the
 * operating system refused or failed it (see its notes), else a
 * {@linkcode FileError} (a missing output folder, a path that is a folder:
 * bad usage). `prefix` starts the message (`cannot write file: `).
 *
 * @example
 * ```ts
 * import { WriteError, writeFailure } from "./errors.ts";
 * const full = Object.assign(new Error("No space left on device (os error 28)"), { code: "ENOSPC" });
 * if (!(writeFailure("/o/c.json", full) instanceof WriteError)) throw new Error();
 * const denied = writeFailure("/o/c.json", new Deno.errors.PermissionDenied("denied"));
 * if (!(denied instanceof WriteError) || denied.message !== "permission denied") throw new Error();
 * const missing = writeFailure("/no/c.json", new Deno.errors.NotFound("x"), "cannot write file: ");
 * if (missing instanceof WriteError || missing.message !== "cannot write file: no such file or folder") {
 *   throw new Error(missing.message);
 * }
 * ```
 */
export function writeFailure(file: string, e: unknown, prefix = ""): FileError {
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
  const message = prefix +
    (e instanceof Deno.errors.NotFound
      ? "no such file or folder"
      : e instanceof Deno.errors.PermissionDenied
      ? "permission denied"
      : e instanceof Deno.errors.NotCapable
      ? "permission denied (not granted to this process)"
      : e instanceof Deno.errors.IsADirectory
      ? "is a directory"
      : e instanceof FileError
      ? e.message
      : e instanceof Error
      ? e.message
      : String(e));
  const system = e instanceof WriteError || e instanceof Deno.errors.PermissionDenied ||
    (typeof code === "string" && SYSTEM_WRITE_CODES.has(code)) || isSystemFailureMessage(message);
  return system ? new WriteError({ file, message }) : new FileError({ file, message });
}

/**
 * Bad usage of a command or an option that does not fit the input (exit code 2).
 *
 * @example
 * ```ts
 * import { UsageError } from "./errors.ts";
 * const e = new UsageError("--k must be a positive integer");
 * if (e._tag !== "UsageError" || e.message !== "--k must be a positive integer") throw new Error();
 * if (e.exitCode !== 2 || !(e instanceof Error)) throw new Error();
 * ```
 */
export class UsageError extends Data.TaggedError("UsageError")<{
  /** What is wrong, on one line. */
  readonly message: string;
}> {
  /**
   * The error, with what is wrong.
   *
   * @param message what is wrong, on one line
   */
  constructor(message: string) {
    super({ message });
  }

  /** Exit code of a command that fails with it: 2, bad usage. */
  get exitCode(): ExitCode {
    return 2;
  }
}

/**
 * A failure of the work itself (exit code 1), as opposed to bad input:
 * a check that found violations, an output that could not be written.
 *
 * @example
 * ```ts
 * import { WorkError } from "./errors.ts";
 * const e = new WorkError("3 violations");
 * if (e._tag !== "WorkError" || e.message !== "3 violations" || e.exitCode !== 1) throw new Error();
 * ```
 */
export class WorkError extends Data.TaggedError("WorkError")<{
  /** What failed, on one line. */
  readonly message: string;
}> {
  /**
   * The error, with what failed.
   *
   * @param message what failed, on one line
   */
  constructor(message: string) {
    super({ message });
  }

  /** Exit code of a command that fails with it: 1, the work failed. */
  get exitCode(): ExitCode {
    return 1;
  }
}

/**
 * The exit code a command ends with when its work fails with `e`: the
 * error's own `exitCode` when it is 2 (bad usage or bad input), else 1 (the
 * work failed). The errors a command fails with carry their exit code
 * (`exitCode`: {@linkcode UsageError}, {@linkcode InputError} and
 * {@linkcode FileError} 2, {@linkcode WriteError} and a `FileError` whose
 * message says the system failed 1, {@linkcode WorkError} 1, `RunError`
 * what its failed task reported, `BemError` and `OnnxConfigError` theirs,
 * ...); a value without one (a defect, a plain `Error`, a library's own
 * error its caller did not word as an `InputError`) is the work failing.
 * This is the one place a failure becomes an exit status: `runMain`
 * (`pipeline/_cli.ts`) and the commands' usage checks before it call it.
 *
 * @example
 * ```ts
 * import { exitCodeOf, FileError, InputError, UsageError, WriteError } from "./errors.ts";
 * if (exitCodeOf(new UsageError("bad flag")) !== 2) throw new Error();
 * if (exitCodeOf(new InputError({ file: "x", where: "", message: "bad" })) !== 2) throw new Error();
 * if (exitCodeOf(new FileError({ file: "x", message: "no such file" })) !== 2) throw new Error();
 * if (exitCodeOf(new FileError({ file: "x", message: "No space left on device (os error 28)" })) !== 1) {
 *   throw new Error();
 * }
 * if (exitCodeOf(new WriteError({ file: "x", message: "permission denied" })) !== 1) throw new Error();
 * if (exitCodeOf(new Error("crash")) !== 1 || exitCodeOf("crash") !== 1) throw new Error();
 * ```
 */
export function exitCodeOf(e: unknown): ExitCode {
  return typeof e === "object" && e !== null && (e as { exitCode?: unknown }).exitCode === 2
    ? 2
    : 1;
}
