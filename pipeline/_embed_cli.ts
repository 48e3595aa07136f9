/**
 * Flags shared by `embed_context` and `embed_question`.
 *
 * @module
 */
import type { EmbedOptions } from "../encoders/embed.ts";
import { type FlagSpec, type ParsedArgs, UsageError } from "./_cli.ts";
import { ENCODER_NAMES, type EncoderOptions } from "../encoders/registry.ts";
import { ONNX_DEVICES, type OnnxDevice } from "../encoders/onnx.ts";

/** The flags both embedding stages take. */
export const EMBED_FLAGS: readonly FlagSpec[] = [
  {
    name: "encoder",
    type: "string",
    choices: ENCODER_NAMES,
    default: "sparse-pi",
    description: "encoder to run",
  },
  {
    name: "model",
    type: "string",
    metavar: "PATH",
    description: "model artifact (default: the encoder's bundled one)",
  },
  { name: "sparse", type: "boolean", description: "write scipy sparse CSR .npz files" },
  {
    name: "compressed",
    type: "boolean",
    description: "deflate the .npz entries (savez_compressed)",
  },
  {
    name: "dtype",
    type: "string",
    choices: ["f32", "f16"],
    description: "dense element type to store (default: the encoder's)",
  },
  { name: "overwrite", type: "boolean", description: "rewrite files that already exist" },
  { name: "batch", type: "int", metavar: "N", description: "items per encoder call" },
  {
    name: "device",
    type: "string",
    choices: ONNX_DEVICES,
    default: "cpu",
    description: "ONNX encoders: execution provider (auto: CUDA if it loads, else CPU)",
  },
  {
    name: "threads",
    type: "int",
    metavar: "N",
    description: "ONNX encoders: intra-op threads (default: one per core)",
  },
  {
    name: "range",
    type: "string",
    metavar: "A:B",
    description: "only items A (inclusive) to B (exclusive), 0-based in input order",
  },
];

/** Parses `A:B` into `[A, B]`; throws {@linkcode UsageError}. */
export function parseRange(v: string | undefined): [number, number] | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d+):(\d+)$/.exec(v);
  if (!m || Number(m[1]) > Number(m[2])) {
    throw new UsageError(`--range expects A:B with 0 <= A <= B, got "${v}"`);
  }
  return [Number(m[1]), Number(m[2])];
}

/** Embedding options from parsed flags. */
export function embedOptions(a: ParsedArgs, input: string, out: string): EmbedOptions {
  return {
    input,
    out,
    sparse: a.flags["sparse"] === true,
    compressed: a.flags["compressed"] === true,
    dtype: a.flags["dtype"] as "f32" | "f16" | undefined,
    overwrite: a.flags["overwrite"] === true,
    metadata: a.flags["metadata"] === true,
    batchSize: a.flags["batch"] as number | undefined,
    range: parseRange(a.flags["range"] as string | undefined),
  };
}

/** Encoder options (model, device, threads) from parsed flags; throws {@linkcode UsageError}. */
export function encoderOptions(a: ParsedArgs): EncoderOptions {
  const threads = a.flags["threads"] as number | undefined;
  if (threads !== undefined && threads < 1) {
    throw new UsageError(`--threads expects a positive integer, got ${threads}`);
  }
  return {
    model: a.flags["model"] as string | undefined,
    device: (a.flags["device"] as OnnxDevice | undefined) ?? "cpu",
    threads,
  };
}
