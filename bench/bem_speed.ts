/**
 * BEM throughput on CPU: pairs per second through the whole service
 * (tokenize, pad, run, softmax) at batch 1 and batch 64, on the first
 * SQuAD v1.1 dev questions paired with their gold answers (dedup is off:
 * every pair is distinct). Uses the test surrogate
 * (`tests/fixtures/bem_surrogate_NOT_BEM.onnx`, 2 layers, hidden 16) unless
 * `--model` names another file, so with the real BEM (12 layers, hidden 768)
 * expect far fewer pairs per second.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A bench/bem_speed.ts [--model bem.onnx] [--pairs 512] [--threads 2]
 * ```
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { squadQuestions } from "../io/squad.ts";
import { Bem, BemLive, type BemTriple, defaultBemTokenizer } from "../metrics/bem/mod.ts";

const arg = (name: string, dflt: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const root = new URL("..", import.meta.url).pathname;
const model = arg("model", `${root}tests/fixtures/bem_surrogate_NOT_BEM.onnx`);
const nPairs = Number(arg("pairs", "512"));
const threads = Number(arg("threads", "2"));

const triples: BemTriple[] = [];
await Effect.runPromise(Stream.runForEach(
  Stream.take(squadQuestions(`${root}data/dev-v1.1.json.gz`), nPairs),
  (q) =>
    Effect.sync(() => {
      const a = q.answers?.[0]?.text ?? "";
      // Candidate: the gold answer with its first word dropped, so pairs differ.
      triples.push({
        candidate: a.split(" ").slice(1).join(" ") || a,
        reference: a,
        question: q.question,
      });
    }),
));

const tok = defaultBemTokenizer();
const t0 = performance.now();
let n = 0;
for (const t of triples) {
  n += tok.ids(t.candidate).length + tok.ids(t.reference).length + tok.ids(t.question).length;
}
const tokSecs = (performance.now() - t0) / 1000;

const results: Record<string, number> = {
  tokenize_pairs_per_s: Math.round(triples.length / tokSecs),
};
for (const batch of [1, 64]) {
  const secs = await Effect.runPromise(Effect.provide(
    Effect.gen(function* () {
      const bem = yield* Bem;
      yield* bem.score(
        triples.slice(0, Math.min(64, triples.length)).map((t) => ({
          ...t,
          question: t.question + " ?",
        })),
      ); // warm-up
      const s = performance.now();
      yield* bem.score(triples);
      return (performance.now() - s) / 1000;
    }),
    BemLive({ model, batch, threads, cacheSize: 0 }),
  ));
  results[`batch_${batch}_pairs_per_s`] = Math.round(triples.length / secs);
}
console.log(
  JSON.stringify({
    model: model.replace(root, ""),
    pairs: triples.length,
    threads,
    tokens: n,
    ...results,
  }),
);
