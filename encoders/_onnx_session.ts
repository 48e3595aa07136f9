/**
 * ONNX Runtime sessions of the ONNX encoders: where onnxruntime-node's
 * native files are, which Deno permissions a process needs to load them,
 * the execution provider (`--device cpu|cuda|webgpu|auto`), and the check
 * of the CUDA provider's libraries before a session is created, so that a
 * missing library is named (`libcublas.so.13 not found`) instead of
 * surfacing as an opaque provider error.
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
import { type GraphInterface, OnnxConfigError } from "./_onnx_manifest.ts";

let ortModule: typeof Ort | undefined;

/**
 * onnxruntime-node, imported on first use: importing it loads its native
 * addon (which needs `--allow-ffi`), so modules that only name the ONNX
 * encoders (the registry, `sparse-pi` processes) must not load it.
 */
export async function loadOrt(): Promise<typeof Ort> {
  ortModule ??= await import("onnxruntime-node");
  return ortModule;
}

function ortLoaded(): typeof Ort {
  if (!ortModule) throw new Error("onnxruntime-node is not loaded yet (call loadOrt first)");
  return ortModule;
}

/** Where a model runs. `auto`: CUDA when it can be loaded, else CPU (said on stderr). */
export type OnnxDevice = "cpu" | "cuda" | "webgpu" | "auto";

/** Devices accepted by `--device`. */
export const ONNX_DEVICES: readonly OnnxDevice[] = ["cpu", "cuda", "webgpu", "auto"];

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
 * import { ortBinDir } from "./_onnx_session.ts";
 * ortBinDir().endsWith("/bin/napi-v6/linux/x64"); // true on Linux x86-64
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
 * import { onnxPermissions } from "./_onnx_session.ts";
 * onnxPermissions("cpu").ffi; // [".../onnxruntime-node/1.29.0/bin/napi-v6/linux/x64/onnxruntime_binding.node"]
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
 * ```ts ignore
 * import { elfNeeded } from "./_onnx_session.ts";
 * await elfNeeded("/usr/lib/x86_64-linux-gnu/libz.so.1"); // ["libc.so.6"]
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
 * ```ts ignore
 * import { cudaProviderProblem } from "./_onnx_session.ts";
 * await cudaProviderProblem(); // "libonnxruntime_providers_cuda.so not found in /root/.cache/deno/..."
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

function graphOf(s: Ort.InferenceSession): GraphInterface {
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

const deviceError = (encoder: string, message: string) =>
  new OnnxConfigError({ encoder, message: message });

/**
 * Creates a session on a model's bytes (read by the caller, under Deno's
 * read permission) with the requested device. `cuda` checks the provider's
 * libraries first and fails with {@linkcode OnnxConfigError} (exit 2)
 * naming the missing one; `auto` falls back to `cpu` and says why through
 * `opts.log`.
 *
 * @example
 * ```ts ignore
 * import { openSession } from "./_onnx_session.ts";
 * const { session, device } = await openSession(
 *   await Deno.readFile("context.onnx"), "context.onnx", "piqa-lstm", { device: "cpu", threads: 2 });
 * ```
 */
export async function openSession(
  bytes: Uint8Array,
  label: string,
  encoder: string,
  opts: OnnxSessionOptions = {},
): Promise<OpenedSession> {
  const device = opts.device ?? "cpu";
  const log = opts.log ?? ((l: string) => console.error(l));
  const ort = await loadOrt().catch((e) => {
    throw deviceError(encoder, `cannot load onnxruntime-node: ${errMsg(e)}`);
  });
  const base: Ort.InferenceSession.SessionOptions = {
    graphOptimizationLevel: "all",
    logSeverityLevel: 3,
    ...(opts.threads ? { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } : {}),
  };
  const create = async (ep: "cpu" | "cuda" | "webgpu") => {
    const session = await ort.InferenceSession.create(bytes, { ...base, executionProviders: [ep] });
    return { session, device: ep, graph: graphOf(session) };
  };
  if (device === "cpu") {
    try {
      return await create("cpu");
    } catch (e) {
      throw deviceError(encoder, `cannot load ${label}: ${errMsg(e)}`);
    }
  }
  if (device === "webgpu") {
    try {
      return await create("webgpu");
    } catch (e) {
      throw deviceError(
        encoder,
        `--device webgpu: cannot create a WebGPU session for ${label}: ${errMsg(e)}`,
      );
    }
  }
  const problem = await cudaProviderProblem(opts.binDir);
  if (problem === undefined) {
    try {
      return await create("cuda");
    } catch (e) {
      if (device === "cuda") {
        throw deviceError(
          encoder,
          `--device cuda: cannot create a CUDA session for ${label}: ${errMsg(e)}`,
        );
      }
      log(`${encoder}: --device auto: CUDA session failed (${errMsg(e)}); using cpu`);
    }
  } else if (device === "cuda") {
    throw deviceError(encoder, `--device cuda: ${problem}`);
  } else {
    log(`${encoder}: --device auto: CUDA unavailable (${problem}); using cpu`);
  }
  try {
    return await create("cpu");
  } catch (e) {
    throw deviceError(encoder, `cannot load ${label}: ${errMsg(e)}`);
  }
}

/** An ONNX Runtime tensor. */
export type OrtTensor = Ort.Tensor;

/**
 * Makes an integer/float/bool tensor of a manifest dtype from numbers.
 *
 * @example
 * ```ts ignore
 * import { loadOrt, makeTensor } from "./_onnx_session.ts";
 * await loadOrt();
 * makeTensor("int64", [1, 2], [1, 2]).dims; // [1, 2]
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
      return new ort.Tensor("int32", Int32Array.from(values), dims);
    case "float32":
      return new ort.Tensor("float32", Float32Array.from(values), dims);
    case "float16": {
      const f = Float16Array.from(values);
      return new ort.Tensor("float16", new Uint16Array(f.buffer), dims);
    }
    case "bool":
      return new ort.Tensor("bool", Uint8Array.from(values, (v) => (v ? 1 : 0)), dims);
  }
}

if (import.meta.main) {
  // `deno run encoders/_onnx_session.ts` prints the native folder (bench/gpu_check.sh uses it).
  console.log(ortBinDir());
}
