/**
 * Loading a run config module: the import-cycle check, then the import
 * itself in a read-only Deno process (`config_loader.ts`, so a config
 * module cannot write, run programs, use the network or read the
 * environment, and a broken one cannot take the runner down), then
 * validation ({@linkcode validateRunConfig}). Every error is an
 * {@linkcode InputError} whose one line names the config file.
 *
 * @module
 */
import { Effect } from "effect";
import { InputError } from "../io/errors.ts";
import { REPO_ROOT } from "../io/repo.ts";
import { absPath, displayPath, isFile } from "./_fs.ts";
import { type ResolvedRunConfig, validateRunConfig } from "./config.ts";
import { findImportCycle } from "./imports.ts";
import { ORT_ADDON } from "./ort.ts";
import { denoRunArgv } from "./sandbox.ts";

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/**
 * Imports the config module `file` in a read-only Deno process and returns
 * the data it exports (`config`, or `datasets`/`models`).
 */
const importConfig = (file: string, shown: string): Effect.Effect<unknown, InputError> =>
  Effect.tryPromise({
    try: async () => {
      const [deno, ...args] = denoRunArgv(`${REPO_ROOT}/runs/config_loader.ts`, [file], {
        read: true,
        // A config may import the encoder registry, which may load ONNX Runtime's addon.
        ffi: ORT_ADDON !== null ? [ORT_ADDON] : undefined,
      }, { quiet: true });
      const out = await new Deno.Command(deno, {
        args,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      const text = new TextDecoder().decode(out.stdout).trim().split("\n").pop() ?? "";
      let parsed: { ok?: unknown; error?: string };
      try {
        parsed = JSON.parse(text);
      } catch {
        const err = new TextDecoder().decode(out.stderr).trim().split("\n").filter(Boolean);
        throw new InputError({
          file: shown,
          where: "",
          message: `cannot load: ${
            err.find((l) => /error/i.test(l)) ?? err[0] ?? `exit ${out.code}`
          }`.replace(ANSI, ""),
        });
      }
      if (parsed.error !== undefined) {
        const circular = /before initialization/.test(parsed.error) ? " (a circular import?)" : "";
        throw new InputError({
          file: shown,
          where: "",
          message: `cannot load: ${parsed.error}${circular}`,
        });
      }
      return parsed.ok;
    },
    catch: (e) =>
      e instanceof InputError
        ? e
        : new InputError({ file: shown, where: "", message: `cannot load: ${e}` }),
  });

/**
 * Loads and validates the run config module `path` (absolute, or relative
 * to the working folder).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { REPO_ROOT } from "../io/repo.ts";
 * import { loadRunConfig } from "./load.ts";
 * const cfg = await Effect.runPromise(loadRunConfig(`${REPO_ROOT}/configs/eval_two_models_mini.ts`));
 * if (cfg.models[0].abbr !== "sparse-pi" || cfg.models.length !== 2) throw new Error();
 * ```
 */
export const loadRunConfig = (path: string): Effect.Effect<ResolvedRunConfig, InputError> =>
  Effect.gen(function* () {
    const file = absPath(path);
    const shown = displayPath(file);
    if (!isFile(file)) {
      return yield* Effect.fail(
        new InputError({ file: shown, where: "", message: "no such config file" }),
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
    const data = yield* importConfig(file, shown);
    return yield* validateRunConfig(data, file);
  });
