/**
 * Test fixtures of the IVF-PQ search tests: a clustered dense dump and the
 * bytes of a search's answers.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { writeContextDump } from "../../../../io/dump/writer.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import type { TopK } from "../../../../search/index/exact/score.ts";

/** A clustered dump of `paragraphs` paragraphs (d 32) and `nq` questions drawn the same way. */
export async function clusteredDump(
  dir: string,
  paragraphs: number,
  nq: number,
): Promise<Float32Array[]> {
  Deno.mkdirSync(dir, { recursive: true });
  const u = splitmix32(5), d = 32, clusters = 20;
  const g = () => {
    const a = (u() + 1) / 4294967297, b = u() / 4294967296;
    return Math.sqrt(-2 * Math.log(a)) * Math.cos(2 * Math.PI * b);
  };
  const centres = Float32Array.from({ length: clusters * d }, g);
  const draw = () => {
    const c = u() % clusters, v = new Float32Array(d);
    // Coarse values: many equal scores, so ties are decided by the row.
    for (let t = 0; t < d; t++) v[t] = Math.round(4 * (centres[c * d + t] + 0.5 * g())) / 4;
    return v;
  };
  for (let p = 0; p < paragraphs; p++) {
    const per = 15 + (p % 9);
    const data = new Float32Array(per * d);
    for (let i = 0; i < per; i++) data.set(i % 5 === 4 ? data.slice(0, d) : draw(), i * d);
    await Effect.runPromise(writeContextDump(dir, {
      id: `P_${String(p).padStart(4, "0")}`,
      phrases: Array.from({ length: per }, (_, i) => ({ text: `w${i}`, start: 0, end: 2 })),
      matrix: { kind: "dense", rows: per, cols: d, dtype: "f32", data },
    }, { sparse: false, compressed: false, dtype: "f16" }));
  }
  return Array.from({ length: nq }, draw);
}

/** Each question's rows and the bytes of its float64 scores. */
export const bytes = (tops: readonly TopK[]) =>
  tops.map((t) => [t.rows, [...new Uint8Array(Float64Array.from(t.scores).buffer)]]);
