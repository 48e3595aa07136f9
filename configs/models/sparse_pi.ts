/**
 * The built-in `sparse-pi` encoder (linear sparse phrase vectors, CPU, no
 * download), and a variant with small batches (same vectors, more encoder
 * calls) to stand in as a second model where no other encoder is
 * registered.
 *
 * @example
 * ```ts
 * import { sparsePi } from "./sparse_pi.ts";
 * const big = { ...sparsePi, abbr: "sparse-pi-b128", batch: { context: 128, question: 1024 } };
 * if (big.encoder !== "sparse-pi") throw new Error("a spread keeps the encoder");
 * ```
 *
 * @module
 */
import type { ModelConfig } from "../types.ts";

/** `sparse-pi` with its default batch sizes. */
export const sparsePi: ModelConfig = {
  abbr: "sparse-pi",
  encoder: "sparse-pi",
  device: "cpu",
  batch: { context: 32, question: 256 },
};

/** `sparse-pi` with small batches (8 paragraphs, 16 questions a call). */
export const sparsePiSmallBatch: ModelConfig = {
  ...sparsePi,
  abbr: "sparse-pi-b8",
  batch: { context: 8, question: 16 },
};
