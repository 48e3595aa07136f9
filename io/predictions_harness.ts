/**
 * Answers that evaluation harnesses log, read as `{id: answer}` for a
 * question set, every match checked:
 *
 * - lm-evaluation-harness `--log_samples` files
 *   (`<output_path>/<model>/samples_<task>_<date>.jsonl`, written by
 *   `EvaluationTracker.save_results_samples`): one JSON line per document
 *   and filter, `{"doc_id", "doc", "target", "arguments", "resps",
 *   "filtered_resps", "filter", "metrics", "doc_hash", ..., <metric>: value}`
 *   (`lm_eval/evaluator.py`). The answer is `filtered_resps[0]`; a task
 *   with several filters is read with its first one (the file's first
 *   line's). The harness's own per-sample `exact_match`, when logged, is
 *   kept beside the answers.
 * - OpenCompass prediction files (`predictions/<model>/<dataset>.json`):
 *   `{"0": {"origin_prompt", "prediction", "gold"}, "1": ...}`, one entry
 *   per question in dataset order.
 *
 * Matching: an lm-eval document that carries its own id (`id`, `qid`,
 * `question_id`: SQuAD's, TriviaQA's) is matched by it; otherwise (and
 * always for OpenCompass) by position (`doc_id`, the entry's number). Every
 * match is checked: the question text (lm-eval: the doc's `question` equals
 * the set's; OpenCompass: the prompt holds it), no question twice, and the
 * count (every question answered). A log of another set, or a shuffled or
 * partial one, fails with one {@linkcode InputError} naming the first
 * mismatch, and nothing is scored.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { type FileError, InputError, UsageError } from "./errors.ts";
import { openSource } from "./source.ts";

/** The prediction file formats: `{id: answer}`, lm-eval's samples, OpenCompass's predictions. */
export const PRED_FORMATS = ["ids", "lm-eval", "opencompass"] as const;

/** A prediction file format. */
export type PredFormat = (typeof PRED_FORMATS)[number];

const PRED_ALIASES: Record<string, PredFormat> = {
  json: "ids",
  squad: "ids",
  lm_eval: "lm-eval",
  "lm-evaluation-harness": "lm-eval",
  lmeval: "lm-eval",
  samples: "lm-eval",
  oc: "opencompass",
};

/**
 * The format a `--pred-format` value names (case does not matter; aliases
 * `json`, `lm_eval`, `lm-evaluation-harness`, `oc`). Throws
 * {@linkcode UsageError} for any other name.
 *
 * @example
 * ```ts
 * import { parsePredFormat } from "./predictions_harness.ts";
 * if (parsePredFormat("LM_EVAL") !== "lm-eval" || parsePredFormat("oc") !== "opencompass") {
 *   throw new Error();
 * }
 * ```
 */
export function parsePredFormat(name: string): PredFormat {
  const n = name.trim().toLowerCase();
  if ((PRED_FORMATS as readonly string[]).includes(n)) return n as PredFormat;
  const alias = PRED_ALIASES[n];
  if (alias !== undefined) return alias;
  throw new UsageError(
    `unknown prediction format ${JSON.stringify(name)}; the formats: ${PRED_FORMATS.join(", ")}`,
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The format of a prediction file from its first bytes: a first line that
 * is a JSON object with `doc_id` and `filtered_resps` is lm-eval's; an
 * object whose first key is `"0"` and whose first value holds `prediction`
 * is OpenCompass's; anything else `{id: answer}`.
 *
 * @example
 * ```ts
 * import { predFormatOfHead } from "./predictions_harness.ts";
 * const lm = '{"doc_id": 0, "doc": {"question": "q"}, "filtered_resps": ["a"]}\n{"doc_id": 1';
 * if (predFormatOfHead(lm) !== "lm-eval") throw new Error();
 * if (predFormatOfHead('{\n  "0": {\n    "origin_prompt": "Q: x", "prediction": "a"') !== "opencompass") {
 *   throw new Error();
 * }
 * if (predFormatOfHead('{"q1": "Denver"}') !== "ids") throw new Error();
 * ```
 */
export function predFormatOfHead(head: string): PredFormat {
  const text = head.replace(/^\uFEFF/, "").trimStart();
  const nl = text.indexOf("\n");
  try {
    const first = JSON.parse(nl < 0 ? text : text.slice(0, nl));
    if (isObject(first) && "doc_id" in first && "filtered_resps" in first) return "lm-eval";
  } catch {
    // Not one JSON line.
  }
  if (/^\{\s*"0"\s*:\s*\{/.test(text) && /"(prediction|origin_prompt)"\s*:/.test(text)) {
    return "opencompass";
  }
  return "ids";
}

const HEAD = 64 * 1024;

/**
 * The format of the prediction file at `path` (its first 64 KiB; `.gz`
 * too): see {@linkcode predFormatOfHead}. Stdin (`-`) is `{id: answer}`.
 */
export const detectPredFormat = (
  path: string,
): Effect.Effect<PredFormat, FileError | InputError> =>
  path === "-"
    ? Effect.succeed("ids")
    : Effect.flatMap(openSource(path), (src) =>
      Effect.promise(async () => {
        const reader = src.stream.getReader();
        const parts: Uint8Array[] = [];
        let n = 0;
        try {
          while (n < HEAD) {
            const r = await reader.read();
            if (r.done) break;
            parts.push(r.value);
            n += r.value.byteLength;
          }
        } catch {
          // A bad file: the reader that reads it whole names what is wrong.
        } finally {
          await reader.cancel().catch(() => {});
        }
        const all = new Uint8Array(n);
        let o = 0;
        for (const p of parts) {
          all.set(p, o);
          o += p.byteLength;
        }
        return predFormatOfHead(new TextDecoder().decode(all.subarray(0, HEAD)));
      }));

/** A question of the set the answers are matched to: its id and text, in set order. */
export interface SetQuestion {
  /** The question id (as `{id: answer}` files key it). */
  readonly id: string;
  /** The question text. */
  readonly question: string;
}

/** Answers read from a harness's log. */
export interface HarnessAnswers {
  /** The file's format. */
  readonly format: PredFormat;
  /** `{id: answer}` for every question of the set. */
  readonly predictions: Map<string, string>;
  /** The harness's own per-question exact match (0 or 1), where it logged one. */
  readonly harnessExact?: Map<string, number>;
  /** lm-eval: the filter read (`filter` of its lines). */
  readonly filter?: string;
  /** lm-eval: the task's metrics as its lines name them. */
  readonly metrics?: readonly string[];
}

const idKeys = ["id", "qid", "question_id"] as const;

function docId(doc: Record<string, unknown>): string | undefined {
  for (const k of idKeys) {
    const v = doc[k];
    if (typeof v === "string" && v !== "") return v;
    if (typeof v === "number" && Number.isSafeInteger(v)) return String(v);
  }
  return undefined;
}

function firstText(v: unknown): string | undefined {
  let x = v;
  while (Array.isArray(x)) x = x[0];
  return typeof x === "string" ? x : undefined;
}

function promptText(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) {
    return v.map((m) => isObject(m) ? String(m.prompt ?? m.content ?? "") : String(m)).join("\n");
  }
  return "";
}

const q = (s: string) => JSON.stringify(s.length > 80 ? s.slice(0, 77) + "..." : s);

function missing(
  file: string,
  questions: readonly SetQuestion[],
  answered: Set<string>,
  count: number,
): InputError | undefined {
  if (answered.size === questions.length) return undefined;
  const i = questions.findIndex((x) => !answered.has(x.id));
  return new InputError({
    file,
    where: "",
    message: `${count} answers for ${questions.length} questions: question ${
      JSON.stringify(questions[i].id)
    } (position ${i}) has none (a partial log, or one of another set)`,
  });
}

/** The answers of an lm-eval samples file's text (see the module's documentation). */
export function lmEvalAnswers(
  file: string,
  text: string,
  questions: readonly SetQuestion[],
): HarnessAnswers {
  const byId = new Map<string, number>();
  questions.forEach((x, i) => byId.set(x.id, i));
  const predictions = new Map<string, string>();
  const exact = new Map<string, number>();
  let filter: string | undefined;
  let metrics: string[] | undefined;
  let count = 0;
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n].trim();
    if (line === "") continue;
    const where = `line ${n + 1}`;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch (e) {
      throw new InputError({
        file,
        where,
        message: `invalid JSON (${e instanceof Error ? e.message : e})`,
      });
    }
    const docIdValue = isObject(rec) ? rec.doc_id : undefined;
    if (!isObject(rec) || typeof docIdValue !== "number" || !Number.isSafeInteger(docIdValue)) {
      throw new InputError({
        file,
        where,
        message: 'not an lm-eval sample (no integer "doc_id")',
      });
    }
    const at = `${where} doc_id ${docIdValue}`;
    const bad = (message: string) => new InputError({ file, where: at, message });
    const f = typeof rec.filter === "string" ? rec.filter : undefined;
    if (count === 0 && filter === undefined) filter = f;
    if (f !== filter) continue;
    if (metrics === undefined && Array.isArray(rec.metrics)) {
      metrics = rec.metrics.filter((m): m is string => typeof m === "string");
    }
    const doc = isObject(rec.doc) ? rec.doc : undefined;
    if (doc === undefined) throw bad('no "doc" object');
    const own = docId(doc);
    let pos: number;
    if (own !== undefined) {
      const p = byId.get(own);
      if (p === undefined) {
        throw bad(`the doc's id ${JSON.stringify(own)} is not a question of the set`);
      }
      pos = p;
    } else {
      pos = docIdValue;
      if (pos < 0 || pos >= questions.length) {
        throw bad(`no question at position ${pos}: the set has ${questions.length}`);
      }
    }
    const want = questions[pos];
    const asked = doc.question ?? doc.query;
    if (typeof asked !== "string") throw bad('the doc has no "question" to check against the set');
    if (asked.trim() !== want.question.trim()) {
      throw bad(
        `the doc's question ${q(asked)} is not question ${JSON.stringify(want.id)}'s ${
          q(want.question)
        } (a log of another set, or shuffled)`,
      );
    }
    if (predictions.has(want.id)) throw bad(`question ${JSON.stringify(want.id)} answered twice`);
    const answer = firstText(rec.filtered_resps);
    if (answer === undefined) {
      throw bad('"filtered_resps" holds no text answer (not a generation task?)');
    }
    predictions.set(want.id, answer);
    const em = rec.exact_match;
    if (typeof em === "number" || typeof em === "boolean") exact.set(want.id, Number(em));
    count++;
  }
  const gap = missing(file, questions, new Set(predictions.keys()), count);
  if (gap !== undefined) throw gap;
  return {
    format: "lm-eval",
    predictions,
    ...(exact.size === predictions.size && exact.size > 0 ? { harnessExact: exact } : {}),
    ...(filter !== undefined ? { filter } : {}),
    ...(metrics !== undefined ? { metrics } : {}),
  };
}

/** The answers of an OpenCompass predictions file's text (see the module's documentation). */
export function openCompassAnswers(
  file: string,
  text: string,
  questions: readonly SetQuestion[],
): HarnessAnswers {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (e) {
    throw new InputError({
      file,
      where: "",
      message: `invalid JSON (${e instanceof Error ? e.message : e})`,
    });
  }
  if (!isObject(obj)) {
    throw new InputError({ file, where: "", message: "not an OpenCompass predictions object" });
  }
  const predictions = new Map<string, string>();
  const keys = Object.keys(obj);
  for (const key of keys) {
    const at = `entry ${JSON.stringify(key)}`;
    const bad = (message: string) => new InputError({ file, where: at, message });
    if (!/^(0|[1-9][0-9]*)$/.test(key)) throw bad("not a question number");
    const pos = Number(key);
    if (pos >= questions.length) {
      throw bad(`no question at position ${pos}: the set has ${questions.length}`);
    }
    const e = obj[key];
    if (!isObject(e)) throw bad("not an object");
    const answer = firstText(e.prediction);
    if (answer === undefined) throw bad('no text "prediction"');
    const want = questions[pos];
    const prompt = promptText(e.origin_prompt);
    if (!prompt.includes(want.question.trim())) {
      throw bad(
        `the prompt does not hold question ${JSON.stringify(want.id)}'s text ${
          q(want.question)
        } (a file of another set, or shuffled)`,
      );
    }
    predictions.set(want.id, answer);
  }
  const gap = missing(file, questions, new Set(predictions.keys()), keys.length);
  if (gap !== undefined) throw gap;
  return { format: "opencompass", predictions };
}

/**
 * Reads the answers of a harness log at `path` (`.gz` too) in `format`,
 * matched to `questions` (the set's, in its order) and checked. Fails with
 * one {@linkcode InputError} on the first mismatch.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { readHarnessAnswers } from "./predictions_harness.ts";
 * const path = await Deno.makeTempFile({ suffix: ".jsonl" });
 * const line = (i: number, q: string, a: string) =>
 *   JSON.stringify({ doc_id: i, doc: { question: q, answer: [a] }, filtered_resps: [a],
 *     filter: "remove_whitespace", exact_match: 1.0 });
 * await Deno.writeTextFile(path, `${line(0, "who?", "Ann")}\n${line(1, "where?", "Rome")}\n`);
 * const qs = [{ id: "0", question: "who?" }, { id: "1", question: "where?" }];
 * const r = await Effect.runPromise(readHarnessAnswers(path, "lm-eval", qs));
 * if (r.predictions.get("1") !== "Rome" || r.harnessExact?.get("0") !== 1) throw new Error();
 * const wrong = [{ id: "0", question: "who?" }, { id: "1", question: "when?" }];
 * const msg = await Effect.runPromise(Effect.flip(readHarnessAnswers(path, "lm-eval", wrong)));
 * if (!String(msg).includes('line 2 doc_id 1: the doc\'s question "where?" is not question "1"')) {
 *   throw new Error(String(msg));
 * }
 * ```
 */
export const readHarnessAnswers = (
  path: string,
  format: Exclude<PredFormat, "ids">,
  questions: readonly SetQuestion[],
): Effect.Effect<HarnessAnswers, InputError | FileError> =>
  Effect.flatMap(
    Effect.flatMap(openSource(path), (src) =>
      Effect.tryPromise({
        try: () => new Response(src.stream).text(),
        catch: (e) =>
          e instanceof InputError ? e : new InputError({
            file: path,
            where: "",
            message: e instanceof Error ? e.message : String(e),
          }),
      })),
    (text) =>
      Effect.try({
        try: () =>
          format === "lm-eval"
            ? lmEvalAnswers(path, text, questions)
            : openCompassAnswers(path, text, questions),
        catch: (e) =>
          e instanceof InputError
            ? e
            : new InputError({ file: path, where: "", message: String(e) }),
      }),
  );
