/**
 * Three cheap deterministic systems over the bundled dev set, written as
 * prediction files (the rules of `tests/metrics/stats_test.ts`): each picks
 * the context sentence sharing the most non-stop words with the question and
 * answers with its first new word (`first`), its first run of capitalised or
 * numeric new words (`firstCaps`) or its last such run (`lastCaps`).
 *
 * @module
 */
import { DEV_GZ } from "../_util.ts";

const STOP = new Set(
  ("a an the of in on at to for by with from and or is was were are be been what which who " +
    "whom whose when where why how did does do that this these those it its as").split(" "),
);
const strip = (w: string) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "");
const norm = (w: string) => strip(w).toLowerCase();
const capital = (w: string) => /^[\p{Lu}\p{N}]/u.test(strip(w));

interface Article {
  title: string;
  paragraphs: { context: string; qas: { id: string; question: string }[] }[];
}

/** The systems' names, in the order {@linkcode writeDevSystems} returns their files. */
export const SYSTEMS = ["first", "firstCaps", "lastCaps"] as const;

/**
 * Writes `<dir>/<name>.json` for each of {@linkcode SYSTEMS} over the first
 * `articles` articles of dev (all by default) and returns the paths.
 */
export async function writeDevSystems(dir: string, articles?: number): Promise<string[]> {
  const file = await Deno.open(DEV_GZ);
  const text = await new Response(file.readable.pipeThrough(new DecompressionStream("gzip")))
    .text();
  const data = (JSON.parse(text) as { data: Article[] }).data.slice(0, articles);
  const preds: Record<string, string>[] = [{}, {}, {}];
  for (const art of data) {
    for (const p of art.paragraphs) {
      const sents = p.context.split(/(?<=[.!?])\s+/);
      for (const q of p.qas) {
        const qw = new Set(q.question.split(/\s+/).map(norm).filter((w) => w && !STOP.has(w)));
        let best = sents[0];
        let bestScore = -1;
        for (const s of sents) {
          const sc = s.split(/\s+/).filter((w) => qw.has(norm(w))).length;
          if (sc > bestScore) [best, bestScore] = [s, sc];
        }
        const toks = best.split(/\s+/).filter((w) => strip(w) !== "");
        const cand = toks.map((w) => !qw.has(norm(w)) && !STOP.has(norm(w)));
        const first = strip(toks.find((_, i) => cand[i]) ?? "");
        const run = (from: number, step: 1 | -1) => {
          for (let i = from; i >= 0 && i < toks.length; i += step) {
            if (!cand[i] || !capital(toks[i])) continue;
            let j = i;
            while (cand[j + step] && capital(toks[j + step] ?? "")) j += step;
            const [lo, hi] = step === 1 ? [i, j] : [j, i];
            return toks.slice(lo, hi + 1).map(strip).join(" ");
          }
          return first;
        };
        preds[0][q.id] = first;
        preds[1][q.id] = run(0, 1);
        preds[2][q.id] = run(toks.length - 1, -1);
      }
    }
  }
  const paths: string[] = [];
  for (let i = 0; i < SYSTEMS.length; i++) {
    const path = `${dir}/${SYSTEMS[i]}.json`;
    await Deno.writeTextFile(path, JSON.stringify(preds[i]));
    paths.push(path);
  }
  return paths;
}

/** The first `articles` articles of dev as a SQuAD file at `path`. */
export async function writeDevSubset(path: string, articles: number): Promise<void> {
  const file = await Deno.open(DEV_GZ);
  const text = await new Response(file.readable.pipeThrough(new DecompressionStream("gzip")))
    .text();
  const d = JSON.parse(text) as { version: string; data: unknown[] };
  await Deno.writeTextFile(
    path,
    JSON.stringify({ version: d.version, data: d.data.slice(0, articles) }),
  );
}
