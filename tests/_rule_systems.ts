/**
 * Three cheap deterministic QA systems over the bundled dev set, for tests
 * that need real, different prediction sets (the statistics and the report).
 * Each picks the context sentence sharing the most non-stop words with the
 * question and answers with
 *
 * - `first`: its first word not in the question,
 * - `firstCaps`: its first run of capitalised or numeric new words,
 * - `lastCaps`: its last such run
 *
 * (the runs fall back to `first`).
 *
 * @module
 */
import { DEV_GZ } from "./_util.ts";

const STOP = new Set(
  ("a an the of in on at to for by with from and or is was were are be been what which who " +
    "whom whose when where why how did does do that this these those it its as").split(" "),
);
const strip = (w: string) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "");
const norm = (w: string) => strip(w).toLowerCase();
const capital = (w: string) => /^[\p{Lu}\p{N}]/u.test(strip(w));

interface Article {
  title: string;
  paragraphs: {
    context: string;
    qas: { id: string; question: string; answers: { text: string }[] }[];
  }[];
}

/** The systems' names, in the order of {@linkcode DevRuleAnswers.answers}. */
export const SYSTEMS = ["first", "firstCaps", "lastCaps"] as const;

/** Every question of the chosen articles in dataset order, with each system's answer. */
export interface DevRuleAnswers {
  /** Question ids. */
  readonly ids: string[];
  /** Gold answer texts per question. */
  readonly golds: string[][];
  /** Per system (in {@linkcode SYSTEMS} order), the answer per question. */
  readonly answers: [string[], string[], string[]];
}

/** The three systems' answers on the first `articles` articles of dev (all by default). */
export async function devRuleAnswers(articles?: number): Promise<DevRuleAnswers> {
  const file = await Deno.open(DEV_GZ);
  const text = await new Response(file.readable.pipeThrough(new DecompressionStream("gzip")))
    .text();
  const data = (JSON.parse(text) as { data: Article[] }).data.slice(0, articles);
  const out: DevRuleAnswers = { ids: [], golds: [], answers: [[], [], []] };
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
        out.ids.push(q.id);
        out.golds.push(q.answers.map((a) => a.text));
        out.answers[0].push(first);
        out.answers[1].push(run(0, 1));
        out.answers[2].push(run(toks.length - 1, -1));
      }
    }
  }
  return out;
}
