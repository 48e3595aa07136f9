/**
 * Shared by the BEM tests: fixtures, the golden tokenizer file, independent
 * logits from Python onnxruntime, a dev slice, and small helpers.
 *
 * The model here is `tests/fixtures/bem_surrogate_NOT_BEM.onnx`: random
 * weights with BEM's interface. Its scores test the plumbing and mean
 * nothing; they are never BEM scores.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { DEV_GZ, python, ROOT } from "../../_util.ts";
import { Bem, type BemBatch, BemLive, type BemTriple } from "../../../metrics/bem/mod.ts";

/** The test fixtures folder. */
export const FIX = `${ROOT}/tests/fixtures`;
/** The BERT-shaped test surrogate (NOT BEM; int64 inputs, no mask). */
export const SURROGATE = `${FIX}/bem_surrogate_NOT_BEM.onnx`;
/** The small surrogate with int32 inputs and a mask input (NOT BEM). */
export const MINI = `${FIX}/bem_surrogate_int32_mask_NOT_BEM.onnx`;
/** The BEM authors' seed example. */
export const SEED: BemTriple = {
  question: "why is the sky blue",
  reference: "light scattering",
  candidate: "scattering of light",
};

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

/** The text of a gzip file. */
export async function gunzipText(path: string): Promise<string> {
  const f = await Deno.open(path);
  return await new Response(f.readable.pipeThrough(new DecompressionStream("gzip"))).text();
}

/** One entry of the golden tokenizer file. */
export interface GoldenRow {
  k: string;
  t?: string;
  f?: string;
  lo?: number;
  hi?: number;
  ids?: number[];
  input_ids?: number[];
  segment_ids?: number[];
  question?: string;
  reference?: string;
  candidate?: string;
  vocab_sha256?: string;
  counts?: Record<string, number>;
}

let goldenCache: GoldenRow[] | undefined;
/** The golden tokenizer file's entries (read once). */
export async function golden(): Promise<GoldenRow[]> {
  goldenCache ??= (await gunzipText(`${FIX}/bem_tokenizer_golden.ndjson.gz`)).split("\n")
    .filter((l) => l !== "").map((l) => JSON.parse(l));
  return goldenCache;
}

/** The text of a code point run of the golden file. */
export function codePointText(r: GoldenRow): string {
  const out: string[] = [];
  for (let c = r.lo!; c <= r.hi!; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const ch = String.fromCodePoint(c);
    out.push(r.f === "iso" ? ch : `x${ch}y`);
  }
  return out.join(" ");
}

/** The SHA-256 of a file, in hex. */
export async function sha256(path: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Logits from Python onnxruntime (`tests/fixtures/bem_ort_check.py`; installed by
 * `tools/test_setup.sh`): an independent runtime on the same ONNX file.
 */
export async function ortLogits(
  model: string,
  inputs: readonly { input_ids: number[]; segment_ids: number[] }[],
): Promise<number[][]> {
  const out = await python([`${FIX}/bem_ort_check.py`], JSON.stringify({ model, inputs }));
  return JSON.parse(out.stdout);
}

/** Asserts two arrays are equal within `tol`, element by element. */
export function assertClose(a: ArrayLike<number>, b: ArrayLike<number>, tol: number, msg = "") {
  assertEquals(a.length, b.length, `${msg} length`);
  for (let i = 0; i < a.length; i++) {
    assert(Math.abs(a[i] - b[i]) <= tol, `${msg}[${i}]: ${a[i]} vs ${b[i]} (tolerance ${tol})`);
  }
}

/** A model batch of unpadded rows, zero-padded to 512. */
export function batchOf(rows: readonly { input_ids: number[]; segment_ids: number[] }[]): BemBatch {
  const L = 512;
  const b: BemBatch = {
    rows: rows.length,
    seqLen: L,
    ids: new Int32Array(rows.length * L),
    segments: new Int32Array(rows.length * L),
    lengths: new Int32Array(rows.length),
  };
  rows.forEach((r, i) => {
    b.ids.set(r.input_ids, i * L);
    b.segments.set(r.segment_ids, i * L);
    b.lengths[i] = r.input_ids.length;
  });
  return b;
}

/** Runs `f` with a fresh BEM service on `opts`. */
export const withBem = <A, E>(
  opts: Parameters<typeof BemLive>[0],
  f: (bem: Bem["Service"]) => Effect.Effect<A, E>,
): Promise<A> => Effect.runPromise(Effect.provide(Bem.use(f), BemLive(opts)));

/** A dev question as the tests read it. */
export interface DevQuestion {
  id: string;
  question: string;
  answers: { text: string }[];
}

/** The first `paragraphs` paragraphs of the bundled dev set, as a SQuAD file. */
export async function devSlice(paragraphs: number): Promise<{ json: string; qs: DevQuestion[] }> {
  const dev = JSON.parse(await gunzipText(DEV_GZ));
  const a = dev.data[0];
  const sliced = {
    version: "1.1",
    data: [{ ...a, paragraphs: a.paragraphs.slice(0, paragraphs) }],
  };
  const qs: DevQuestion[] = sliced.data[0].paragraphs.flatMap((p: { qas: DevQuestion[] }) => p.qas);
  return { json: JSON.stringify(sliced), qs };
}
