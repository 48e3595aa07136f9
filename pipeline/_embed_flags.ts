/**
 * The flags both embedding stages take (`embed_context`, `embed_question`),
 * without the encoders: their command lines (`--help`) load this module
 * and `encoders/names.ts` only. What the flags mean to the work is
 * `_embed_cli.ts`.
 *
 * @module
 */
import type { FlagSpec } from "./_args.ts";
import { DEFAULT_ENCODER, ENCODER_NAMES, ONNX_DEVICES } from "../encoders/names.ts";

/** The flags both embedding stages take. */
export const EMBED_FLAGS = [
  {
    name: "encoder",
    type: "string",
    choices: ENCODER_NAMES,
    default: DEFAULT_ENCODER,
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
  {
    name: "overwrite",
    type: "boolean",
    description:
      "rewrite files that already exist; accept a folder made from another input, encoder or format",
  },
  { name: "batch", type: "int", metavar: "N", min: 1, description: "items per encoder call" },
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
    name: "unique-ids",
    type: "boolean",
    description:
      "rename repeated article titles as split --unique-ids does (io/squad_ids.ts) instead of refusing them",
  },
  {
    name: "range",
    type: "string",
    metavar: "A:B",
    description: "only items A (inclusive) to B (exclusive), 0-based in input order",
  },
  {
    name: "format",
    type: "string",
    metavar: "NAME",
    description:
      "the input's format (default: detected; NDJSON records first), as evaluate's: squad, mrqa, dpr, trec, open; corpora: dpr-passages (psgs_w100.tsv), passages (JSONL)",
  },
] as const satisfies readonly FlagSpec[];
