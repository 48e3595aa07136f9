/**
 * The ONNX Runtime side of BEM: opening a session on a device (through the
 * project's one session module, `encoders/onnx/session.ts`, with its CUDA
 * check), reading the model's interface from the graph and checking it
 * against BEM's recipe, and running one batch. onnxruntime-node is imported
 * on first use, so importing this module needs no `--allow-ffi`.
 *
 * @module
 */
import type * as Ort from "onnxruntime-node";
import type { GraphValue } from "../../encoders/onnx/manifest.ts";
import {
  createSession,
  makeTensor,
  sessionGraph,
  type SessionLike,
  SessionOpenError,
} from "../../encoders/onnx/session.ts";

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
export type ValueInfo = GraphValue;

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
 * import assert from "node:assert/strict";
 * import { bemInterface } from "./session.ts";
 * const iface = bemInterface(
 *   [{ name: "input_ids", type: "int64" }, { name: "segment_ids", type: "int64" }],
 *   [{ name: "output_0", type: "float32", shape: ["batch", 2] }],
 * );
 * assert.deepEqual(iface, {
 *   ids: { name: "input_ids", type: "int64" },
 *   segments: { name: "segment_ids", type: "int64" },
 *   output: "output_0",
 * });
 * // A model that does not fit gets one line saying why.
 * assert.match(String(bemInterface([{ name: "features" }], [])), /does not feed \(features\)/);
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
export type BemSessionLike = SessionLike;

/**
 * The interface metadata of a session, with names only where metadata is
 * missing (the shared {@linkcode sessionGraph}).
 *
 * @example
 * ```ts
 * import { sessionValueInfo } from "./session.ts";
 * const v = sessionValueInfo({ inputNames: ["input_ids"], outputNames: ["logits"] });
 * if (v.inputs[0].name !== "input_ids" || v.outputs.length !== 1) throw new Error("names");
 * ```
 */
export function sessionValueInfo(
  s: BemSessionLike,
): { inputs: ValueInfo[]; outputs: ValueInfo[] } {
  const g = sessionGraph(s);
  return { inputs: [...g.inputs], outputs: [...g.outputs] };
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
 * import { openBemSession } from "./session.ts";
 * const s = await openBemSession("bem.onnx", { device: "cpu", threads: 2 });
 * ```
 */
export async function openBemSession(
  path: string,
  opts: OpenSessionOptions = {},
): Promise<Ort.InferenceSession> {
  const device = opts.device ?? "cpu";
  try {
    // quiet: ONNX Runtime's own log lines would break the one-line error rule.
    const opened = await createSession(path, { device, threads: opts.threads, quiet: true });
    return opened.session;
  } catch (e) {
    if (!(e instanceof SessionOpenError)) throw e;
    const msg = e.detail.trim();
    if (e.reason === "runtime") {
      throw new Error(`cannot load onnxruntime-node (run with --allow-ffi): ${e.firstLine}`);
    }
    if (e.reason === "cuda-unavailable") {
      // The check's line names the missing library and where the route is documented.
      throw new Error(
        `cannot use the CUDA execution provider of onnxruntime-node (${msg}); ` +
          "use --device cpu instead",
      );
    }
    if (e.reason === "cuda-failed" && /cuda|provider|shared librar/i.test(msg)) {
      throw new Error(
        `cannot use the CUDA execution provider of onnxruntime-node (${msg}); ` +
          'see encoders/ONNX.md, "CUDA", or use --device cpu',
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

/**
 * Runs one batch and returns the logits, `[rows, 2]` row-major, as float64.
 *
 * @example
 * ```ts ignore
 * import { bemInterface, openBemSession, runBemBatch, sessionValueInfo } from "./session.ts";
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
  const dims = [batch.rows, batch.seqLen];
  const feeds: Record<string, Ort.Tensor> = {
    [iface.ids.name]: makeTensor(iface.ids.type, batch.ids, dims),
    [iface.segments.name]: makeTensor(iface.segments.type, batch.segments, dims),
  };
  if (iface.mask) {
    const m = new Int32Array(batch.rows * batch.seqLen);
    for (let r = 0; r < batch.rows; r++) {
      m.fill(1, r * batch.seqLen, r * batch.seqLen + batch.lengths[r]);
    }
    feeds[iface.mask.name] = makeTensor(iface.mask.type, m, dims);
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
