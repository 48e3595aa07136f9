/**
 * The ONNX Runtime side of BEM: opening a session on a device, reading the
 * model's interface from the graph and checking it against BEM's recipe, and
 * running one batch. Kept small and separate so that the project's shared
 * ONNX session helper (`encoders/onnx.ts`, with the full CUDA story) can
 * replace {@linkcode openBemSession} later. onnxruntime-node is imported on
 * first use, so importing this module needs no `--allow-ffi`.
 *
 * @module
 */
import type * as Ort from "onnxruntime-node";

type OrtModule = typeof Ort;
let ortModule: OrtModule | undefined;

/**
 * onnxruntime-node, loaded on first use: importing it loads a native addon
 * (Deno needs `--allow-ffi` then), which stages that never run BEM
 * (`evaluate` without `--bem`) must not pay for or need permission for.
 */
async function loadOrt(): Promise<OrtModule> {
  ortModule ??= await import("onnxruntime-node");
  return ortModule;
}

/** Where the model runs. `cuda` needs onnxruntime-node's CUDA provider. */
export type BemDevice = "cpu" | "cuda";

/** An integer input of the model. */
export interface BemIntInput {
  /** Input name in the graph. */
  readonly name: string;
  /** Element type the graph declares. */
  readonly type: "int32" | "int64";
}

/** The model's interface, as read from the graph. */
export interface BemInterface {
  /** Token ids (`input_ids`, or `input_word_ids`, ...). */
  readonly ids: BemIntInput;
  /** Segment ids (`segment_ids`, or `token_type_ids`, `input_type_ids`). */
  readonly segments: BemIntInput;
  /** Attention mask, only when the model declares one. */
  readonly mask?: { readonly name: string; readonly type: "int32" | "int64" | "float32" | "bool" };
  /** The logits output (last dimension 2). */
  readonly output: string;
  /** A fixed batch size the graph declares, if any. */
  readonly fixedBatch?: number;
}

/** Input or output metadata as ONNX Runtime reports it (or only the name). */
export interface ValueInfo {
  /** Name in the graph. */
  readonly name: string;
  /** Element type (`int64`, `float32`, ...), when known. */
  readonly type?: string;
  /** Shape: numbers for fixed dimensions, strings for symbolic ones. */
  readonly shape?: readonly (number | string)[];
}

const IDS_NAMES = ["input_ids", "input_word_ids", "word_ids", "ids"];
const SEGMENT_NAMES = ["segment_ids", "token_type_ids", "input_type_ids", "type_ids"];
const MASK_NAMES = ["input_mask", "attention_mask", "mask"];

/** `input_ids:0` → `input_ids` (TensorFlow tensor names). */
const bare = (name: string): string => name.replace(/:\d+$/, "");

/**
 * Checks a model's inputs and outputs against BEM's recipe and says which
 * is which: an ids input and a segment input, each int32 or int64; an
 * optional mask; nothing else; one output whose last dimension is 2.
 * Returns an error message (one line) when they do not fit.
 *
 * @example
 * ```ts
 * import { bemInterface } from "./_bem_session.ts";
 * bemInterface(
 *   [{ name: "input_ids", type: "int64" }, { name: "segment_ids", type: "int64" }],
 *   [{ name: "output_0", type: "float32", shape: ["batch", 2] }],
 * ); // { ids: { name: "input_ids", type: "int64" }, segments: ..., output: "output_0" }
 * ```
 */
export function bemInterface(
  inputs: readonly ValueInfo[],
  outputs: readonly ValueInfo[],
): BemInterface | string {
  const want = "BEM needs inputs input_ids and segment_ids (int32 or int64; optional " +
    "input_mask) and one output of shape [batch, 2]";
  const described = (vs: readonly ValueInfo[]) =>
    vs.map((v) => `${v.name}${v.type ? ` ${v.type}` : ""}`).join(", ") || "none";
  let ids: ValueInfo | undefined, segments: ValueInfo | undefined, mask: ValueInfo | undefined;
  for (const v of inputs) {
    const n = bare(v.name);
    if (IDS_NAMES.includes(n) && !ids) ids = v;
    else if (SEGMENT_NAMES.includes(n) && !segments) segments = v;
    else if (MASK_NAMES.includes(n) && !mask) mask = v;
    else {return `the model has an input BEM does not feed (${v.name}); ${want}; it has ${
        described(inputs)
      }`;}
  }
  if (!ids || !segments) {
    return `the model lacks ${!ids ? "an ids input" : "a segment-ids input"}; ${want}; ` +
      `it has ${described(inputs)}`;
  }
  for (const v of [ids, segments]) {
    const t = v.type ?? "int64";
    if (t !== "int32" && t !== "int64") {
      return `the model's input ${v.name} is ${t}; ${want}`;
    }
  }
  if (mask && !["int32", "int64", "float32", "bool", undefined].includes(mask.type)) {
    return `the model's mask input ${mask.name} is ${mask.type}; BEM feeds int32, int64, float32 or bool`;
  }
  for (const v of [ids, segments, mask]) {
    const seq = v?.shape?.[1];
    if (typeof seq === "number" && seq !== 512) {
      return `the model's input ${v!.name} has ${seq} positions; BEM's recipe pads to 512`;
    }
  }
  const two = outputs.filter((o) => {
    const last = o.shape?.[o.shape.length - 1];
    return last === 2 || (last === undefined && outputs.length === 1);
  });
  if (two.length !== 1) {
    return `the model's outputs do not give two logits per pair (${
      outputs.map((o) => `${o.name} [${(o.shape ?? []).join(", ")}]`).join(", ") || "none"
    }); ${want}`;
  }
  const batch = ids.shape?.[0];
  return {
    ids: { name: ids.name, type: (ids.type ?? "int64") as "int32" | "int64" },
    segments: { name: segments.name, type: (segments.type ?? "int64") as "int32" | "int64" },
    ...(mask
      ? {
        mask: {
          name: mask.name,
          type: (mask.type ?? "int64") as "int32" | "int64" | "float32" | "bool",
        },
      }
      : {}),
    output: two[0].name,
    ...(typeof batch === "number" && batch > 0 ? { fixedBatch: batch } : {}),
  };
}

/** What the session helpers need of a session (a real one, or a test double). */
export interface BemSessionLike {
  /** Input names in graph order. */
  readonly inputNames: readonly string[];
  /** Output names in graph order. */
  readonly outputNames: readonly string[];
  /** Input metadata (onnxruntime-node 1.29+). */
  readonly inputMetadata?: readonly unknown[];
  /** Output metadata (onnxruntime-node 1.29+). */
  readonly outputMetadata?: readonly unknown[];
}

/** The interface metadata of a session, with names only where metadata is missing. */
export function sessionValueInfo(
  s: BemSessionLike,
): { inputs: ValueInfo[]; outputs: ValueInfo[] } {
  const read = (names: readonly string[], meta: readonly unknown[] | undefined): ValueInfo[] =>
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

/** Options of {@linkcode openBemSession}. */
export interface OpenSessionOptions {
  /** `cpu` (default) or `cuda`. */
  readonly device?: BemDevice;
  /** Intra-op threads (ONNX Runtime's default when absent). */
  readonly threads?: number;
}

/**
 * Opens an ONNX Runtime session on `path`. Throws an `Error` whose message
 * is one line: the file is missing, not a model, or the device's execution
 * provider cannot be loaded.
 *
 * @example
 * ```ts ignore
 * import { openBemSession } from "./_bem_session.ts";
 * const s = await openBemSession("bem.onnx", { device: "cpu", threads: 2 });
 * ```
 */
export async function openBemSession(
  path: string,
  opts: OpenSessionOptions = {},
): Promise<Ort.InferenceSession> {
  const device = opts.device ?? "cpu";
  const options: Ort.InferenceSession.SessionOptions = {
    executionProviders: [device],
    graphOptimizationLevel: "all",
    // ONNX Runtime's own log lines would break the one-line error rule.
    logSeverityLevel: 4,
    ...(opts.threads ? { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } : {}),
  };
  let ort: OrtModule;
  try {
    ort = await loadOrt();
  } catch (e) {
    const msg = (e instanceof Error ? e.message : String(e)).split("\n")[0];
    throw new Error(`cannot load onnxruntime-node (run with --allow-ffi): ${msg}`);
  }
  // The process-wide logger prints the CUDA provider's load failure as a
  // multi-line error of its own; the message below says it in one line.
  // (It takes effect when the first session of the process is created.)
  ort.env.logLevel = "fatal";
  try {
    return await ort.InferenceSession.create(path, options);
  } catch (e) {
    const msg = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ").trim();
    if (device === "cuda" && /cuda|provider|shared librar/i.test(msg)) {
      throw new Error(
        `cannot use the CUDA execution provider of onnxruntime-node (${msg}); ` +
          "install onnxruntime-node's CUDA build on a machine with CUDA 12, or use --device cpu",
      );
    }
    throw new Error(`cannot load the ONNX model: ${msg}`);
  }
}

/** One batch of padded inputs, row-major `[rows, seqLen]`. */
export interface BemBatch {
  /** Rows in the batch. */
  readonly rows: number;
  /** Positions per row (512). */
  readonly seqLen: number;
  /** Token ids. */
  readonly ids: Int32Array;
  /** Segment ids. */
  readonly segments: Int32Array;
  /** Unpadded length of each row (for the mask). */
  readonly lengths: Int32Array;
}

function intTensor(
  ort: OrtModule,
  type: "int32" | "int64",
  data: Int32Array,
  dims: number[],
): Ort.Tensor {
  if (type === "int32") return new ort.Tensor("int32", data, dims);
  const big = new BigInt64Array(data.length);
  for (let i = 0; i < data.length; i++) big[i] = BigInt(data[i]);
  return new ort.Tensor("int64", big, dims);
}

/**
 * Runs one batch and returns the logits, `[rows, 2]` row-major, as float64.
 *
 * @example
 * ```ts ignore
 * import { bemInterface, openBemSession, runBemBatch, sessionValueInfo } from "./_bem_session.ts";
 * const s = await openBemSession("bem.onnx");
 * const v = sessionValueInfo(s);
 * const iface = bemInterface(v.inputs, v.outputs);
 * ```
 */
export async function runBemBatch(
  session: Ort.InferenceSession,
  iface: BemInterface,
  batch: BemBatch,
): Promise<Float64Array> {
  const ort = await loadOrt();
  const dims = [batch.rows, batch.seqLen];
  const feeds: Record<string, Ort.Tensor> = {
    [iface.ids.name]: intTensor(ort, iface.ids.type, batch.ids, dims),
    [iface.segments.name]: intTensor(ort, iface.segments.type, batch.segments, dims),
  };
  if (iface.mask) {
    const m = new Int32Array(batch.rows * batch.seqLen);
    for (let r = 0; r < batch.rows; r++) {
      m.fill(1, r * batch.seqLen, r * batch.seqLen + batch.lengths[r]);
    }
    const t = iface.mask.type;
    feeds[iface.mask.name] = t === "int32" || t === "int64"
      ? intTensor(ort, t, m, dims)
      : t === "float32"
      ? new ort.Tensor("float32", Float32Array.from(m), dims)
      : new ort.Tensor("bool", Uint8Array.from(m), dims);
  }
  const out = await session.run(feeds, [iface.output]);
  const t = out[iface.output];
  if (t && t.type !== "float32" && t.type !== "float64") {
    throw new Error(`the model's output ${iface.output} is ${t.type}; BEM gives float logits`);
  }
  if (!t || t.data.length !== batch.rows * 2) {
    throw new Error(
      `the model's output ${iface.output} has ${t?.data.length ?? 0} values for ${batch.rows} ` +
        "pairs; BEM gives 2 logits per pair",
    );
  }
  return Float64Array.from(t.data as Float32Array | Float64Array);
}
