/**
 * ONNX Runtime's native addon, as far as a run's permissions are concerned:
 * where it is, and whether importing the encoder registry already loads it
 * (then every encoder process needs `--allow-ffi=<addon>`, and nothing
 * wider).
 *
 * @module
 */
import { runCommand } from "../../io/process.ts";
import * as Effect from "effect/Effect";
import { stageScriptPath } from "../plan/scripts.ts";
import { denoRunArgv } from "./sandbox.ts";

/**
 * The ONNX Runtime Node-API addon file (in Deno's npm cache), or `null`
 * when it cannot be found. A process that may load it needs
 * `--allow-ffi=<this file>` (and nothing wider).
 *
 * @example
 * ```ts
 * import { ORT_ADDON } from "./ort.ts";
 * if (ORT_ADDON !== null && !ORT_ADDON.endsWith("/onnxruntime_binding.node")) {
 *   throw new Error(ORT_ADDON);
 * }
 * ```
 */
export const ORT_ADDON: string | null = (() => {
  try {
    const main = decodeURIComponent(new URL(import.meta.resolve("onnxruntime-node")).pathname);
    const os = Deno.build.os === "windows" ? "win32" : Deno.build.os;
    const arch = ({ x86_64: "x64", aarch64: "arm64" } as Record<string, string>)[Deno.build.arch] ??
      Deno.build.arch;
    const f = `${
      main.slice(0, main.lastIndexOf("/dist/"))
    }/bin/napi-v6/${os}/${arch}/onnxruntime_binding.node`;
    return Deno.statSync(f).isFile ? f : null;
  } catch {
    return null;
  }
})();

/** How long the probe below may take before it is stopped (it then counts as needing nothing). */
const PROBE_TIMEOUT_MS = 60_000;

/**
 * Whether an encoder process loads ONNX Runtime's native addon just by
 * importing the encoder registry (then every encoder process, ONNX or not,
 * needs `--allow-ffi=<that addon>`): a probe that runs `embed_context - -`
 * with no permission at all, so that the modules of its work load (its
 * `--help` loads none of them) and its first read is refused. Succeeds
 * with the addon path to allow, or `undefined` when the probe needs
 * nothing.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { ORT_ADDON, probeOrtOnImport } from "./ort.ts";
 * const ffi = await Effect.runPromise(probeOrtOnImport());
 * if (ffi !== undefined && ffi !== ORT_ADDON) throw new Error(ffi);
 * ```
 */
export const probeOrtOnImport = (
  deno: string = Deno.execPath(),
): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    if (ORT_ADDON === null) return undefined;
    const [cmd, ...args] = denoRunArgv(stageScriptPath("embedContext"), ["-", "-"], {}, {
      deno,
    });
    const out = yield* runCommand(cmd, args, PROBE_TIMEOUT_MS);
    return out.code !== 0 && /Requires ffi access/.test(out.stderr) ? ORT_ADDON : undefined;
  });
