/**
 * `deno run -A bench/onnx_speed.ts [--manifest PATH] [--data FILE] [--threads 2] [--limit N]
 * [--no-sizes]`: speed and dump size of an ONNX encoder pair (default the
 * piqa-lstm baseline) on SQuAD dev, in process, on the CPU:
 *
 * - paragraphs/s and questions/s (encoding only, batches of 32 paragraphs /
 *   256 questions as `embed_*` uses them; model load timed apart);
 * - phrases per paragraph, d;
 * - dump size on dev: the exact `.npz` bytes `embed_context` would write for
 *   f32 and f16, stored and compressed (`--compressed`), plus the phrase
 *   `.json` files, and the question dumps.
 *
 * Prints a table on stderr and one JSON object on stdout.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { contextInputs, questionInputs } from "../encoders/embed.ts";
import {
  encodeContexts,
  encodeQuestions,
  loadOnnxContext,
  loadOnnxQuestion,
  PIQA_LSTM_MANIFEST,
} from "../encoders/onnx/encoder.ts";
import type { ContextInput, QuestionInput } from "../encoders/types.ts";
import { encodeMatrix, phrasesJson } from "../io/dump/writer.ts";

const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");

const args = [...Deno.args];
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
};
const manifest = opt("manifest", PIQA_LSTM_MANIFEST);
const data = opt("data", `${ROOT}/data/dev-v1.1.json.gz`);
const threads = Number(opt("threads", "2"));
const limit = Number(opt("limit", "0"));
const sizes = !args.includes("--no-sizes");

const collect = <A, E>(s: Stream.Stream<A, E>) => Effect.runPromise(Stream.runCollect(s));
let paragraphs = [...await collect(contextInputs(data))] as ContextInput[];
let questions = [...await collect(questionInputs(data))] as QuestionInput[];
if (limit > 0) {
  paragraphs = paragraphs.slice(0, limit);
  questions = questions.slice(0, limit * 5);
}

const t0 = performance.now();
const cm = await Effect.runPromise(loadOnnxContext(manifest, { threads }));
const qm = await Effect.runPromise(loadOnnxQuestion(manifest, { threads }));
const loadS = (performance.now() - t0) / 1000;

const size = { f32: 0, f16: 0, f32c: 0, f16c: 0, json: 0, q16: 0, q32: 0 };
let phrases = 0, maxPhrases = 0, encS = 0, dim = 0;
const te = new TextEncoder();
for (let b = 0; b < paragraphs.length; b += 32) {
  const t = performance.now();
  const enc = await encodeContexts(cm, paragraphs.slice(b, b + 32));
  encS += (performance.now() - t) / 1000;
  for (const e of enc) {
    phrases += e.matrix.rows;
    maxPhrases = Math.max(maxPhrases, e.matrix.rows);
    dim = e.matrix.cols;
    if (!sizes) continue;
    size.json += te.encode(phrasesJson(e.phrases)).length;
    for (
      const [k, dtype, compressed] of [
        ["f32", "f32", false],
        ["f16", "f16", false],
        ["f32c", "f32", true],
        ["f16c", "f16", true],
      ] as const
    ) {
      size[k] += encodeMatrix(e.matrix, { sparse: false, compressed, dtype }).length;
    }
  }
}
let qS = 0;
for (let b = 0; b < questions.length; b += 256) {
  const t = performance.now();
  const enc = await encodeQuestions(qm, questions.slice(b, b + 256));
  qS += (performance.now() - t) / 1000;
  if (!sizes) continue;
  for (const e of enc) {
    size.q16 += encodeMatrix(e.vector, { sparse: false, compressed: false, dtype: "f16" }).length;
    size.q32 += encodeMatrix(e.vector, { sparse: false, compressed: false, dtype: "f32" }).length;
  }
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
const result = {
  manifest: manifest.replace(`${ROOT}/`, ""),
  data: data.replace(`${ROOT}/`, ""),
  threads,
  device: cm.opened.device,
  paragraphs: paragraphs.length,
  questions: questions.length,
  loadSeconds: +loadS.toFixed(2),
  contextSeconds: +encS.toFixed(2),
  questionSeconds: +qS.toFixed(2),
  paragraphsPerSecond: +(paragraphs.length / encS).toFixed(1),
  questionsPerSecond: +(questions.length / qS).toFixed(1),
  phrasesPerParagraph: +(phrases / paragraphs.length).toFixed(1),
  maxPhrasesPerParagraph: maxPhrases,
  phrases,
  dim,
  ...(sizes ? { bytes: size } : {}),
};
console.error(
  [
    `${result.manifest} on ${result.data}: ${paragraphs.length} paragraphs, ${questions.length} questions, ${threads} threads (${result.device})`,
    `load        ${loadS.toFixed(2)} s`,
    `contexts    ${result.paragraphsPerSecond} paragraphs/s (${encS.toFixed(1)} s)`,
    `questions   ${result.questionsPerSecond} questions/s (${qS.toFixed(1)} s)`,
    `phrases     ${result.phrasesPerParagraph} per paragraph (max ${maxPhrases}), ${phrases} in all, d=${dim}`,
    ...(sizes
      ? [
        `context npz f32 ${mb(size.f32)} stored, ${mb(size.f32c)} compressed`,
        `context npz f16 ${mb(size.f16)} stored, ${mb(size.f16c)} compressed`,
        `phrase json     ${mb(size.json)}`,
        `question npz    ${mb(size.q16)} f16, ${mb(size.q32)} f32 (stored)`,
      ]
      : []),
  ].join("\n"),
);
console.log(JSON.stringify(result));
