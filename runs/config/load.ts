/**
 * Loading a run config module: the import-cycle check, then the import
 * itself in a Deno process of its own (`config_loader.ts`) that may read
 * only the config's own folder tree and the repository, cannot import
 * remote code, write, run programs, use the network or read the
 * environment, and is stopped (SIGKILL, then awaited) when it has not
 * finished within a timeout (default {@linkcode CONFIG_LOAD_TIMEOUT_S} s),
 * so a broken or hostile config cannot read other files, leak them, or
 * hang the runner; then validation ({@linkcode validateRunConfig}). Every
 * error is an {@linkcode InputError} whose one line names the config file
 * (and, for a module that does not parse or throws, the line and column
 * Deno gives: `run.ts: line 3, column 3: cannot load: SyntaxError: ...`).
 *
 * @module
 */
import { runCommand } from "../../io/process.ts";
import * as Effect from "effect/Effect";
import { InputError } from "../../io/errors.ts";
import { REPO_ROOT } from "../../io/repo.ts";
import { fileKind } from "../../io/regular.ts";
import { absPath, dirOf, displayPath, isFile } from "../../io/fs.ts";
import { type ResolvedRunConfig, validateRunConfig } from "./config.ts";
import type { SourcePosition } from "./config_loader.ts";
import { findImportCycle } from "./imports.ts";
import { ORT_ADDON } from "../sandbox/ort.ts";
import { denoRunArgv } from "../sandbox/sandbox.ts";

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** Seconds a config module may take to load before its process is stopped. */
export const CONFIG_LOAD_TIMEOUT_S = 30;

/**
 * The command line of the loader process for the config module `file`
 * (absolute): reads limited to the config's folder tree and the
 * repository, remote imports off, ONNX Runtime's addon loadable (a config
 * may import the encoder registry).
 *
 * @example
 * ```ts
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { configLoaderArgv } from "./load.ts";
 * const argv = configLoaderArgv("/c/run.ts");
 * if (!argv.includes(`--allow-read=/c,${REPO_ROOT}`) || !argv.includes("--no-remote")) {
 *   throw new Error(argv.join(" "));
 * }
 * ```
 */
export function configLoaderArgv(file: string): string[] {
  return denoRunArgv(`${REPO_ROOT}/runs/config/config_loader.ts`, [file], {
    read: [dirOf(file), REPO_ROOT],
    ffi: ORT_ADDON !== null ? [ORT_ADDON] : undefined,
  }, { quiet: true });
}

/**
 * Imports the config module `file` in its loader process and returns the
 * data it exports (`config`, or `datasets`/`models`).
 */
const importConfig = (
  file: string,
  shown: string,
  timeoutS: number,
): Effect.Effect<unknown, InputError> =>
  Effect.gen(function* () {
    const fail = (message: string, where = "") =>
      Effect.fail(new InputError({ file: shown, where, message }));
    const [deno, ...args] = configLoaderArgv(file);
    // A scoped child: stopped at the timeout, and when the load is interrupted.
    const out = yield* runCommand(deno, args, timeoutS * 1000);
    if (out.timedOut) return yield* fail(`did not load within ${timeoutS} s (stopped)`);
    if ((out.code === 126 || out.code === 127) && out.stderr.startsWith(`${deno}: `)) {
      return yield* fail(`cannot load: ${out.stderr}`); // the runtime could not be started
    }
    const text = out.stdout.trim().split("\n").pop() ?? "";
    let parsed: { ok?: unknown; error?: string; at?: SourcePosition };
    try {
      parsed = JSON.parse(text);
    } catch {
      const err = out.stderr.trim().split("\n").filter(Boolean);
      return yield* fail(
        `cannot load: ${err.find((l) => /error/i.test(l)) ?? err[0] ?? `exit ${out.code}`}`
          .replace(ANSI, ""),
      );
    }
    if (parsed.error !== undefined) {
      const circular = /before initialization/.test(parsed.error) ? " (a circular import?)" : "";
      // Where Deno says the error is: in the config itself, or in a module it imports.
      const at = parsed.at;
      const where = at === undefined
        ? ""
        : `${
          at.file === file ? "" : `${displayPath(at.file)}, `
        }line ${at.line}, column ${at.column}`;
      return yield* fail(`cannot load: ${parsed.error}${circular}`, where);
    }
    return parsed.ok;
  });

/** Options of {@linkcode loadRunConfig}. */
export interface LoadOptions {
  /** Seconds the config module may take to load (default {@linkcode CONFIG_LOAD_TIMEOUT_S}). */
  readonly timeoutS?: number;
}

/**
 * Loads and validates the run config module `path` (absolute, or relative
 * to the working folder).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { loadRunConfig } from "./load.ts";
 * const cfg = await Effect.runPromise(loadRunConfig(`${REPO_ROOT}/configs/eval_two_models_mini.ts`));
 * if (cfg.models[0].abbr !== "sparse-pi" || cfg.models.length !== 2) throw new Error();
 * ```
 */
export const loadRunConfig = (
  path: string,
  opts: LoadOptions = {},
): Effect.Effect<ResolvedRunConfig, InputError> =>
  Effect.gen(function* () {
    const file = absPath(path);
    const shown = displayPath(file);
    if (!isFile(file)) {
      // A named pipe, a device or a folder is named for what it is; nothing there is "no such".
      let what: string | undefined;
      try {
        what = fileKind(Deno.statSync(file));
      } catch {
        what = undefined;
      }
      return yield* Effect.fail(
        new InputError({
          file: shown,
          where: "",
          message: what === undefined ? "no such config file" : `is ${what}, not a regular file`,
        }),
      );
    }
    const cycle = yield* Effect.promise(() => findImportCycle(file));
    if (cycle) {
      return yield* Effect.fail(
        new InputError({
          file: shown,
          where: "",
          message: `circular import: ${cycle.map((f) => displayPath(f)).join(" → ")}`,
        }),
      );
    }
    const data = yield* importConfig(file, shown, opts.timeoutS ?? CONFIG_LOAD_TIMEOUT_S);
    return yield* validateRunConfig(data, file);
  });
