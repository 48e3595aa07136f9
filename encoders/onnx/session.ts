/**
 * The one ONNX Runtime session module (the ONNX encoders and BEM's scorer
 * use it): where onnxruntime-node's native files are, which Deno permissions a process needs to load them,
 * the execution provider (`--device cpu|cuda|webgpu|auto`), and the check
 * of the CUDA provider's libraries before a session is created, so that a
 * missing library is named (`libcublas.so.13 not found`) instead of
 * surfacing as an opaque provider error ({@linkcode createSession}), and
 * tensors of a manifest dtype ({@linkcode makeTensor}).
 *
 * onnxruntime-node 1.29.0 loads the CUDA provider the way ONNX Runtime
 * does on Linux: `libonnxruntime_providers_shared.so` and
 * `libonnxruntime_providers_cuda.so` are looked up in the folder of
 * `libonnxruntime.so.1` (the package's `bin/napi-v6/linux/x64/`), and the
 * provider's own dependencies (cuBLAS, cuRAND, the CUDA runtime, the
 * driver; cuDNN is opened on demand) through the dynamic loader
 * (`LD_LIBRARY_PATH`, `ldconfig`'s cache, the system folders).
 *
 * @module
 */
import type * as Ort from "onnxruntime-node";
import { type GraphInterface, OnnxConfigError } from "./manifest.ts";
import { ONNX_DEVICES, type OnnxDevice } from "../names.ts";

let ortModule: typeof Ort | undefined;

/**
 * onnxruntime-node, imported on first use: importing it loads its native
 * addon (which needs `--allow-ffi`), so modules that only name the ONNX
 * encoders (the registry, `sparse-pi` processes) must not load it.
 */
export async function loadOrt(): Promise<typeof Ort> {
  if (ortModule === undefined) {
    // ONNX Runtime's telemetry writes /tmp/mat-debug-<pid>.log and files under
    // ~/.cache/Microsoft/DeveloperTools/ unless this is set before it starts. The
    // commands set it for themselves and their children (deno.json's tasks,
    // io/process.ts CHILD_ENV); this covers a program or notebook that imports the
    // library with environment access, and is skipped quietly without it.
    try {
      Deno.env.set("ORT_DISABLE_TELEMETRY", "1");
    } catch { /* no --allow-env: the launcher's environment decides */ }
    ortModule = await import("onnxruntime-node");
  }
  return ortModule;
}

function ortLoaded(): typeof Ort {
  if (!ortModule) throw new Error("onnxruntime-node is not loaded yet (call loadOrt first)");
  return ortModule;
}

export { ONNX_DEVICES, type OnnxDevice };

/** Session options of the ONNX encoders. */
export interface OnnxSessionOptions {
  /** Execution provider (default `cpu`). */
  readonly device?: OnnxDevice;
  /** Intra-op threads (ONNX Runtime's default, one per core, when absent). */
  readonly threads?: number;
  /** Where `auto` reports a fallback (default: a line on stderr). */
  readonly log?: (line: string) => void;
  /** Folder of onnxruntime-node's native files (default: the installed package's). */
  readonly binDir?: string;
}

const ARCH: Record<string, string> = { x86_64: "x64", aarch64: "arm64" };

/**
 * The folder of onnxruntime-node's native files for this platform (in
 * Deno's npm cache: `<DENO_DIR>/npm/registry.npmjs.org/onnxruntime-node/
 * 1.29.0/bin/napi-v6/linux/x64`). Needs no permission.
 *
 * @example
 * ```ts
 * import { ortBinDir } from "./session.ts";
 * if (!ortBinDir().includes("/onnxruntime-node/")) throw new Error(ortBinDir());
 * if (Deno.build.os === "linux" && Deno.build.arch === "x86_64") {
 *   if (!ortBinDir().endsWith("/bin/napi-v6/linux/x64")) throw new Error(ortBinDir());
 * }
 * ```
 */
export function ortBinDir(): string {
  const main = decodeURIComponent(new URL(import.meta.resolve("onnxruntime-node")).pathname);
  const pkg = main.slice(0, main.lastIndexOf("/dist/"));
  return `${pkg}/bin/napi-v6/${Deno.build.os === "windows" ? "win32" : Deno.build.os}/${
    ARCH[Deno.build.arch] ?? Deno.build.arch
  }`;
}

/** The Node-API addon file onnxruntime-node loads (`--allow-ffi` must cover it). */
export function ortBindingPath(): string {
  return `${ortBinDir()}/onnxruntime_binding.node`;
}

/**
 * The Deno permission flags, beyond reading its input, model files and
 * output folder, that an encoder process using ONNX Runtime needs:
 *
 * - `cpu`: `--allow-ffi=<the addon file>` (nothing else: no env, no sys);
 * - `cuda`, `auto`: `--allow-ffi` (the CUDA libraries are probed with
 *   `Deno.dlopen` by their names, which Deno can only allow wholesale) and
 *   read access to the native folder (to read the provider's dependencies).
 * - `webgpu`: `--allow-ffi`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { onnxPermissions, ortBindingPath } from "./session.ts";
 * assert.deepEqual(onnxPermissions("cpu"), { ffi: [ortBindingPath()], read: [] });
 * assert.equal(onnxPermissions("cuda").ffi, "all");
 * ```
 */
export function onnxPermissions(
  device: OnnxDevice = "cpu",
): { readonly ffi: readonly string[] | "all"; readonly read: readonly string[] } {
  if (device === "cpu") return { ffi: [ortBindingPath()], read: [] };
  if (device === "webgpu") return { ffi: "all", read: [] };
  return { ffi: "all", read: [ortBinDir()] };
}

/** Where each library the CUDA provider needs comes from (for the error line). */
const CUDA_HINTS: Record<string, string> = {
  "libcublas.so.13": "cuBLAS 13",
  "libcublasLt.so.13": "cuBLAS 13",
  "libcurand.so.10": "cuRAND 10",
  "libcudart.so.13": "the CUDA 13 runtime",
  "libcuda.so.1": "the NVIDIA driver",
  "libcudnn.so.9": "cuDNN 9 for CUDA 13, opened by the provider for the LSTM kernels",
};

const SYSTEM_LIBS = /^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[-\w]*)\.so/;

/**
 * The DT_NEEDED entries (shared libraries it links to) of an ELF64
 * little-endian shared object, read from its dynamic section with a few
 * small reads (the CUDA provider is 230 MB).
 *
 * @example
 * ```ts
 * import { elfNeeded, ortBinDir } from "./session.ts";
 * if (Deno.build.os === "linux") {
 *   const needed = await elfNeeded(`${ortBinDir()}/libonnxruntime.so.1`);
 *   if (!needed.includes("libc.so.6")) throw new Error(needed.join());
 * }
 * ```
 */
export async function elfNeeded(path: string): Promise<string[]> {
  const f = await Deno.open(path);
  try {
    const read = async (pos: number, len: number): Promise<DataView> => {
      await f.seek(pos, Deno.SeekMode.Start);
      const buf = new Uint8Array(len);
      let got = 0;
      while (got < len) {
        const n = await f.read(buf.subarray(got));
        if (n === null) break;
        got += n;
      }
      return new DataView(buf.buffer, 0, got);
    };
    const h = await read(0, 64);
    if (h.byteLength < 64 || h.getUint32(0) !== 0x7f454c46) {
      throw new Error(`${path}: not an ELF file`);
    }
    if (h.getUint8(4) !== 2 || h.getUint8(5) !== 1) {
      throw new Error(`${path}: not ELF64 little-endian`);
    }
    const phoff = Number(h.getBigUint64(32, true));
    const phentsize = h.getUint16(54, true);
    const phnum = h.getUint16(56, true);
    const ph = await read(phoff, phentsize * phnum);
    const loads: { vaddr: number; offset: number; filesz: number }[] = [];
    let dyn: { offset: number; size: number } | undefined;
    for (let k = 0; k < phnum; k++) {
      const o = k * phentsize;
      const type = ph.getUint32(o, true);
      const offset = Number(ph.getBigUint64(o + 8, true));
      const vaddr = Number(ph.getBigUint64(o + 16, true));
      const filesz = Number(ph.getBigUint64(o + 32, true));
      if (type === 1) loads.push({ vaddr, offset, filesz });
      if (type === 2) dyn = { offset, size: filesz };
    }
    if (!dyn) return [];
    const d = await read(dyn.offset, dyn.size);
    const needed: number[] = [];
    let strtab = -1, strsz = 0;
    for (let o = 0; o + 16 <= d.byteLength; o += 16) {
      const tag = Number(d.getBigInt64(o, true));
      const val = Number(d.getBigUint64(o + 8, true));
      if (tag === 0) break;
      if (tag === 1) needed.push(val);
      if (tag === 5) strtab = val;
      if (tag === 10) strsz = val;
    }
    const seg = loads.find((l) => strtab >= l.vaddr && strtab < l.vaddr + l.filesz);
    if (!seg) return [];
    const s = await read(seg.offset + (strtab - seg.vaddr), strsz);
    const bytes = new Uint8Array(s.buffer, 0, s.byteLength);
    return needed.map((off) => {
      let e = off;
      while (e < bytes.length && bytes[e] !== 0) e++;
      return new TextDecoder().decode(bytes.subarray(off, e));
    });
  } finally {
    f.close();
  }
}

const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ");

/**
 * Why the CUDA provider cannot load here, in one line, or `undefined` when
 * every library it needs can be opened. Checks, in order: the two provider
 * files in `binDir`, each library `libonnxruntime_providers_cuda.so` links
 * to (opened with `Deno.dlopen`, which searches as the dynamic loader will),
 * then cuDNN 9.
 *
 * @example
 * ```ts
 * import { cudaProviderProblem } from "./session.ts";
 * // e.g. "libonnxruntime_providers_shared.so not found in .../onnxruntime-node/1.29.0/bin/..."
 * const problem = await cudaProviderProblem();
 * if (problem !== undefined && (problem.includes("\n") || problem === "")) throw new Error(problem);
 * ```
 */
export async function cudaProviderProblem(
  binDir: string = ortBinDir(),
): Promise<string | undefined> {
  for (const lib of ["libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"]) {
    try {
      await Deno.stat(`${binDir}/${lib}`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        return `${lib} not found in ${binDir} (onnxruntime-node's CUDA provider is not ` +
          `installed; see encoders/ONNX.md, "CUDA")`;
      }
      return `cannot look for ${lib} in ${binDir} (${errMsg(e)}; run with --allow-read=${binDir})`;
    }
  }
  let needed: string[];
  try {
    needed = await elfNeeded(`${binDir}/libonnxruntime_providers_cuda.so`);
  } catch (e) {
    return `cannot read libonnxruntime_providers_cuda.so: ${errMsg(e)}`;
  }
  const libs = [...needed.filter((n) => !SYSTEM_LIBS.test(n)), "libcudnn.so.9"];
  for (const lib of libs) {
    try {
      Deno.dlopen(lib, {}).close();
    } catch (e) {
      if (e instanceof Deno.errors.NotCapable) {
        return `cannot probe ${lib}: --device cuda needs --allow-ffi (unrestricted) to open the CUDA libraries`;
      }
      const why = CUDA_HINTS[lib] ? `; install ${CUDA_HINTS[lib]}` : "";
      const by = lib === "libcudnn.so.9" ? "" : ", needed by libonnxruntime_providers_cuda.so";
      return /cannot open shared object file|No such file/i.test(errMsg(e))
        ? `${lib} not found${by} (searched LD_LIBRARY_PATH, ldconfig's cache and the system folders${why})`
        : `${lib} cannot be loaded: ${errMsg(e)}`;
    }
  }
  return undefined;
}

/** A created session and the device it runs on. */
export interface OpenedSession {
  /** The session. */
  readonly session: Ort.InferenceSession;
  /** The provider in use. */
  readonly device: "cpu" | "cuda" | "webgpu";
  /** Its inputs and outputs as the graph declares them. */
  readonly graph: GraphInterface;
}

/** What {@linkcode sessionGraph} needs of a session (a real one, or a test double). */
export interface SessionLike {
  /** Input names in graph order. */
  readonly inputNames: readonly string[];
  /** Output names in graph order. */
  readonly outputNames: readonly string[];
  /** Input metadata (onnxruntime-node 1.29+). */
  readonly inputMetadata?: readonly unknown[];
  /** Output metadata (onnxruntime-node 1.29+). */
  readonly outputMetadata?: readonly unknown[];
}

/**
 * A session's inputs and outputs as the graph declares them: name, element
 * type and shape where ONNX Runtime reports metadata, the name alone where
 * it does not.
 *
 * @example
 * ```ts
 * import { sessionGraph } from "./session.ts";
 * const g = sessionGraph({
 *   inputNames: ["ids"],
 *   outputNames: ["out"],
 *   inputMetadata: [{ name: "ids", type: "int64", shape: ["batch", 8] }],
 * });
 * if (g.inputs[0].type !== "int64" || g.outputs[0].type !== undefined) throw new Error("graph");
 * ```
 */
export function sessionGraph(s: SessionLike): GraphInterface {
  const read = (names: readonly string[], meta: readonly unknown[] | undefined) =>
    names.map((name, i) => {
      const m = meta?.[i] as
        | { name?: string; type?: string; shape?: (number | string)[] }
        | undefined;
      return m && m.name === name ? { name, type: m.type, shape: m.shape } : { name };
    });
  return {
    inputs: read(s.inputNames, s.inputMetadata),
    outputs: read(s.outputNames, s.outputMetadata),
  };
}

/**
 * Why {@linkcode createSession} could not create a session; each caller
 * words it for its users (`reason` says which step failed, `detail` is
 * ONNX Runtime's or the CUDA check's message on one line).
 */
export class SessionOpenError extends Error {
  /**
   * `runtime`: onnxruntime-node cannot be imported; `model`: the bytes or
   * file are not a model the CPU provider can load; `cuda-unavailable`: a
   * library of the CUDA provider is missing ({@linkcode cudaProviderProblem});
   * `cuda-failed`: the CUDA session itself failed; `webgpu`: the WebGPU
   * session failed.
   */
  readonly reason: "runtime" | "model" | "cuda-unavailable" | "cuda-failed" | "webgpu";
  /** The underlying message, whitespace collapsed to single spaces. */
  readonly detail: string;
  /** The first line of the underlying message. */
  readonly firstLine: string;

  /** An error of a step, from what that step threw. */
  constructor(reason: SessionOpenError["reason"], cause: unknown) {
    const raw = cause instanceof Error ? cause.message : String(cause);
    super(`${reason}: ${errMsg(cause)}`);
    this.name = "SessionOpenError";
    this.reason = reason;
    this.detail = errMsg(cause);
    this.firstLine = raw.split("\n")[0];
  }
}

/** Options of {@linkcode createSession}. */
export interface CreateSessionOptions {
  /** Execution provider (default `cpu`). */
  readonly device?: OnnxDevice;
  /** Intra-op threads (ONNX Runtime's default, one per core, when absent). */
  readonly threads?: number;
  /** Folder of onnxruntime-node's native files (default: the installed package's). */
  readonly binDir?: string;
  /**
   * Only fatal lines from ONNX Runtime's own logger (default: errors too).
   * Set process-wide; it takes effect with the first session of a process.
   */
  readonly quiet?: boolean;
  /** `auto` fell back to `cpu`: why (the CUDA check's line, or the failed session's). */
  readonly onFallback?: (
    why: { readonly reason: "unavailable" | "failed"; detail: string },
  ) => void;
}

/**
 * The one place an ONNX Runtime session is created (the encoders and BEM
 * both come here): loads onnxruntime-node on first use, picks the execution
 * provider (`cuda` checks the provider's libraries first, so that a missing
 * one is named; `auto` falls back to `cpu`, through `opts.onFallback`), and
 * throws a {@linkcode SessionOpenError} that says which step failed.
 * `model` is the model's bytes (read by the caller) or a file path.
 *
 * @example
 * ```ts
 * import { PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * import { createSession, SessionOpenError } from "./session.ts";
 * const model = PIQA_LSTM_MANIFEST.replace(/manifest\.json$/, "question.onnx");
 * const { session, device, graph } = await createSession(model, { device: "cpu", threads: 2 });
 * await session.release();
 * if (device !== "cpu" || graph.inputs.length === 0) throw new Error(device);
 * // Not a model: the error says which step failed.
 * const e = await createSession(new Uint8Array(8)).catch((e) => e);
 * if (!(e instanceof SessionOpenError) || e.reason !== "model") throw e;
 * ```
 */
export async function createSession(
  model: Uint8Array | string,
  opts: CreateSessionOptions = {},
): Promise<OpenedSession> {
  const device = opts.device ?? "cpu";
  let ort: typeof Ort;
  try {
    ort = await loadOrt();
  } catch (e) {
    throw new SessionOpenError("runtime", e);
  }
  // The process-wide logger would print a provider's load failure as a
  // multi-line error of its own; quiet callers say it in one line instead.
  if (opts.quiet) ort.env.logLevel = "fatal";
  const base: Ort.InferenceSession.SessionOptions = {
    graphOptimizationLevel: "all",
    logSeverityLevel: opts.quiet ? 4 : 3,
    ...(opts.threads ? { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } : {}),
  };
  const create = async (ep: "cpu" | "cuda" | "webgpu") => {
    const options = { ...base, executionProviders: [ep] };
    const session = typeof model === "string"
      ? await ort.InferenceSession.create(model, options)
      : await ort.InferenceSession.create(model, options);
    return { session, device: ep, graph: sessionGraph(session) };
  };
  const onCpu = async () => {
    try {
      return await create("cpu");
    } catch (e) {
      throw new SessionOpenError("model", e);
    }
  };
  if (device === "cpu") return await onCpu();
  if (device === "webgpu") {
    try {
      return await create("webgpu");
    } catch (e) {
      throw new SessionOpenError("webgpu", e);
    }
  }
  const problem = await cudaProviderProblem(opts.binDir);
  if (problem === undefined) {
    try {
      return await create("cuda");
    } catch (e) {
      if (device === "cuda") throw new SessionOpenError("cuda-failed", e);
      opts.onFallback?.({ reason: "failed", detail: errMsg(e) });
    }
  } else if (device === "cuda") {
    throw new SessionOpenError("cuda-unavailable", problem);
  } else {
    opts.onFallback?.({ reason: "unavailable", detail: problem });
  }
  return await onCpu();
}

const deviceError = (encoder: string, message: string) =>
  new OnnxConfigError({ encoder, message: message });

/**
 * Creates an encoder's session on a model's bytes (read by the caller,
 * under Deno's read permission) with the requested device
 * ({@linkcode createSession}), its failures worded for the encoders: `cuda`
 * fails with {@linkcode OnnxConfigError} (exit 2) naming the missing
 * library; `auto` falls back to `cpu` and says why through `opts.log`.
 *
 * @example
 * ```ts
 * import { PIQA_LSTM_MANIFEST } from "./encoder.ts";
 * import { OnnxConfigError } from "./manifest.ts";
 * import { openSession } from "./session.ts";
 * const file = PIQA_LSTM_MANIFEST.replace(/manifest\.json$/, "context.onnx");
 * const { session, device } = await openSession(
 *   await Deno.readFile(file), "context.onnx", "piqa-lstm", { device: "cpu", threads: 2 });
 * await session.release();
 * if (device !== "cpu") throw new Error(device);
 * const e = await openSession(new Uint8Array(8), "x.onnx", "piqa-lstm").catch((e) => e);
 * if (!(e instanceof OnnxConfigError) || !e.message.startsWith("cannot load x.onnx: ")) throw e;
 * ```
 */
export async function openSession(
  bytes: Uint8Array,
  label: string,
  encoder: string,
  opts: OnnxSessionOptions = {},
): Promise<OpenedSession> {
  const log = opts.log ?? ((l: string) => console.error(l));
  try {
    return await createSession(bytes, {
      device: opts.device,
      threads: opts.threads,
      binDir: opts.binDir,
      onFallback: ({ reason, detail }) =>
        log(
          reason === "unavailable"
            ? `${encoder}: --device auto: CUDA unavailable (${detail}); using cpu`
            : `${encoder}: --device auto: CUDA session failed (${detail}); using cpu`,
        ),
    });
  } catch (e) {
    if (!(e instanceof SessionOpenError)) throw e;
    switch (e.reason) {
      case "runtime":
        throw deviceError(encoder, `cannot load onnxruntime-node: ${e.detail}`);
      case "model":
        throw deviceError(encoder, `cannot load ${label}: ${e.detail}`);
      case "webgpu":
        throw deviceError(
          encoder,
          `--device webgpu: cannot create a WebGPU session for ${label}: ${e.detail}`,
        );
      case "cuda-failed":
        throw deviceError(
          encoder,
          `--device cuda: cannot create a CUDA session for ${label}: ${e.detail}`,
        );
      case "cuda-unavailable":
        throw deviceError(encoder, `--device cuda: ${e.detail}`);
    }
  }
}

/** An ONNX Runtime tensor. */
export type OrtTensor = Ort.Tensor;

/**
 * Makes an integer/float/bool tensor of a manifest dtype from numbers. An
 * `Int32Array` for `int32` and a `Float32Array` for `float32` are used as
 * they are (not copied).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadOrt, makeTensor } from "./session.ts";
 * await loadOrt();
 * const t = makeTensor("int64", [1, 2], [1, 2]);
 * assert.deepEqual([t.type, t.dims, [...(t.data as BigInt64Array)]], ["int64", [1, 2], [1n, 2n]]);
 * ```
 */
export function makeTensor(
  dtype: "int64" | "int32" | "float32" | "float16" | "bool",
  values: ArrayLike<number>,
  dims: readonly number[],
): Ort.Tensor {
  const ort = ortLoaded();
  const n = values.length;
  switch (dtype) {
    case "int64": {
      const a = new BigInt64Array(n);
      for (let k = 0; k < n; k++) a[k] = BigInt(values[k]);
      return new ort.Tensor("int64", a, dims);
    }
    case "int32":
      return new ort.Tensor(
        "int32",
        values instanceof Int32Array ? values : Int32Array.from(values),
        dims,
      );
    case "float32":
      return new ort.Tensor(
        "float32",
        values instanceof Float32Array ? values : Float32Array.from(values),
        dims,
      );
    case "float16": {
      const f = Float16Array.from(values);
      return new ort.Tensor("float16", new Uint16Array(f.buffer), dims);
    }
    case "bool":
      return new ort.Tensor("bool", Uint8Array.from(values, (v) => (v ? 1 : 0)), dims);
  }
}

if (import.meta.main) {
  // `deno run encoders/onnx/session.ts` prints the native folder (bench/gpu_check.sh uses it).
  console.log(ortBinDir());
}
