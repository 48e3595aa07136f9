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
 * Reading: both are JSON as Python's `json` writes it (`NaN`, `Infinity`
 * and `-Infinity` read as `null`: see {@linkcode parsePythonJson}), and
 * both are strict UTF-8 (a byte-order mark at the start is
 * dropped; an invalid byte sequence is refused, naming the lm-eval line
 * and the byte, or the OpenCompass file's byte offset, never replaced by
 * U+FFFD). An lm-eval log is read line by line from its bytes
 * (`./datasets/lines.ts`, the dataset readers' line reader: `\r\n` ends a
 * line too), never held whole: a line longer than
 * {@linkcode MAX_LINE_BYTES} (16 MiB) is refused, naming its number, as
 * soon as the bound is passed. An OpenCompass file is one JSON object, read
 * whole: one whose text passes JavaScript's string limit is refused as
 * such.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { type FileError, InputError, UsageError } from "./errors.ts";
import { firstInvalidUtf8 } from "./json_events.ts";
import { parsePythonJson } from "./pyjson.ts";
import { type ByteSource, openSource } from "./source.ts";
import { HEAD_BYTES, MAX_LINE_BYTES } from "./datasets/bounds.ts";
import { lineSplitter } from "./datasets/lines.ts";

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
 * The format of a prediction file from its first bytes: a first non-blank
 * line that is a JSON object with `doc_id` and `filtered_resps` is
 * lm-eval's, and so is one that is no whole JSON value but opens an object
 * with an integer `doc_id` (a sample line cut at the bound, or broken: its
 * reader names the line); an object whose first key is `"0"` and whose
 * first value holds `prediction` is OpenCompass's; anything else
 * `{id: answer}`.
 *
 * @example
 * ```ts
 * import { predFormatOfHead } from "./predictions_harness.ts";
 * const lm = '{"doc_id": 0, "doc": {"question": "q"}, "filtered_resps": ["a"]}\n{"doc_id": 1';
 * if (predFormatOfHead(lm) !== "lm-eval") throw new Error();
 * if (predFormatOfHead('{"doc_id": 0, "doc": {"context": "cut at the bou') !== "lm-eval") {
 *   throw new Error();
 * }
 * if (predFormatOfHead('{\n  "0": {\n    "origin_prompt": "Q: x", "prediction": "a"') !== "opencompass") {
 *   throw new Error();
 * }
 * if (predFormatOfHead('{"q1": "Denver"}') !== "ids") throw new Error();
 * ```
 */
export function predFormatOfHead(head: string): PredFormat {
  const text = head.replace(/^\uFEFF/, "").trimStart();
  const nl = text.indexOf("\n");
  const line = nl < 0 ? text : text.slice(0, nl);
  try {
    const first = JSON.parse(line);
    if (isObject(first) && "doc_id" in first && "filtered_resps" in first) return "lm-eval";
  } catch {
    // Not one JSON line. An lm-eval sample opens with its `doc_id` (and no `{id: answer}` file
    // can: its values are strings), so a line cut before its end is lm-eval's.
    if (/^\{\s*"doc_id"\s*:\s*[0-9]/.test(line)) return "lm-eval";
  }
  if (/^\{\s*"0"\s*:\s*\{/.test(text) && /"(prediction|origin_prompt)"\s*:/.test(text)) {
    return "opencompass";
  }
  return "ids";
}

/** JSON's white space (and a byte-order mark's bytes, at the start). */
const isBlank = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const BOM = [0xef, 0xbb, 0xbf];

/**
 * The format of the prediction file at `path` (`.gz` too), from its first
 * {@linkcode HEAD_BYTES} (64 KiB) and, when they do not hold the whole
 * first non-blank line (an lm-eval sample with a long document), on to
 * that line's end, reading at most {@linkcode MAX_LINE_BYTES} (16 MiB) of
 * it: see {@linkcode predFormatOfHead}. Stdin (`-`) is `{id: answer}`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { detectPredFormat } from "./predictions_harness.ts";
 * const path = await Deno.makeTempFile({ suffix: ".jsonl" });
 * const doc = { question: "who?", context: "x".repeat(100_000) };
 * await Deno.writeTextFile(path, JSON.stringify({ doc_id: 0, doc, filtered_resps: ["a"] }) + "\n");
 * if (await Effect.runPromise(detectPredFormat(path)) !== "lm-eval") throw new Error();
 * await Deno.remove(path);
 * ```
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
        let start = -1; // offset of the first non-blank byte, once read
        let end = -1; // offset of the `\n` that ends the first non-blank line, once read
        const scan = (chunk: Uint8Array, at: number) => {
          let i = 0;
          if (start < 0) {
            while (
              i < chunk.byteLength &&
              (isBlank(chunk[i]) || (at + i < 3 && chunk[i] === BOM[at + i]))
            ) i++;
            if (i === chunk.byteLength) return;
            start = at + i;
          }
          const nl = chunk.indexOf(0x0a, i);
          if (nl >= 0) end = at + nl;
        };
        // The head, and on to the first line's end (a line longer than the bound is the
        // reader's to refuse: no further).
        const enough = () =>
          n >= HEAD_BYTES && (end >= 0 || n - Math.max(start, 0) > MAX_LINE_BYTES + 4);
        try {
          while (!enough()) {
            const r = await reader.read();
            if (r.done) break;
            parts.push(r.value);
            if (end < 0) scan(r.value, n);
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
        const upTo = end < 0 ? n : Math.max(Math.min(HEAD_BYTES, n), end + 1);
        return predFormatOfHead(new TextDecoder().decode(all.subarray(0, upTo)));
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

/** Reads an lm-eval samples file a line at a time: `line` takes each, `end` gives the answers. */
interface LmEvalReader {
  /** Takes line `n` (from 1) of the file, its text without its line end. */
  line(n: number, text: string): void;
  /** The answers, once every line is taken (fails for a question left unanswered). */
  end(): HarnessAnswers;
}

function lmEvalReader(file: string, questions: readonly SetQuestion[]): LmEvalReader {
  const byId = new Map<string, number>();
  questions.forEach((x, i) => byId.set(x.id, i));
  const predictions = new Map<string, string>();
  const exact = new Map<string, number>();
  let filter: string | undefined;
  let metrics: string[] | undefined;
  let count = 0;
  const take = (n: number, text: string) => {
    const line = text.trim();
    if (line === "") return;
    const where = `line ${n}`;
    let rec: unknown;
    try {
      rec = parsePythonJson(line);
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
    if (f !== filter) return;
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
  };
  const end = (): HarnessAnswers => {
    const gap = missing(file, questions, new Set(predictions.keys()), count);
    if (gap !== undefined) throw gap;
    return {
      format: "lm-eval",
      predictions,
      ...(exact.size === predictions.size && exact.size > 0 ? { harnessExact: exact } : {}),
      ...(filter !== undefined ? { filter } : {}),
      ...(metrics !== undefined ? { metrics } : {}),
    };
  };
  return { line: take, end };
}

/**
 * The answers of an lm-eval samples file's text (see the module's
 * documentation; {@linkcode readHarnessAnswers} reads a file line by line
 * instead, never holding it whole).
 *
 * @example
 * ```ts
 * import { lmEvalAnswers } from "./predictions_harness.ts";
 * const text = JSON.stringify({ doc_id: 0, doc: { question: "who?" }, filtered_resps: ["Ann"] });
 * const r = lmEvalAnswers("s.jsonl", text + "\r\n", [{ id: "q1", question: "who?" }]);
 * if (r.predictions.get("q1") !== "Ann") throw new Error();
 * ```
 */
export function lmEvalAnswers(
  file: string,
  text: string,
  questions: readonly SetQuestion[],
): HarnessAnswers {
  const reader = lmEvalReader(file, questions);
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) reader.line(n + 1, lines[n]);
  return reader.end();
}

/** The answers of an lm-eval log's bytes, read line by line (at most {@linkcode MAX_LINE_BYTES} each). */
async function lmEvalFromSource(
  src: ByteSource,
  questions: readonly SetQuestion[],
): Promise<HarnessAnswers> {
  const reader = lmEvalReader(src.name, questions);
  // The splitter refuses a line over the bound, or a bad UTF-8 sequence, naming the line; an
  // error here cancels the file's stream.
  for await (const lines of src.stream.pipeThrough(lineSplitter(src.name, MAX_LINE_BYTES))) {
    for (const l of lines) reader.line(l.line, l.text);
  }
  return reader.end();
}

/** The length above which JavaScript cannot hold a string (V8: 2^29 - 24 code units). */
const MAX_STRING = (1 << 29) - 24;

const tooLarge = (file: string) =>
  new InputError({
    file,
    where: "",
    message:
      `longer than ${MAX_STRING} characters (JavaScript's string limit): an OpenCompass file is one JSON object, read whole, so one this large cannot be read`,
  });

/**
 * The text of a file read whole (an OpenCompass file), decoded as strict
 * UTF-8: a leading byte-order mark is dropped; an invalid byte sequence
 * fails naming its byte offset (one cut off by the end of the file, the
 * offset of its first byte); a text over JavaScript's string limit fails as
 * such (at once for more than four bytes a character's worth of them).
 */
async function wholeText(src: ByteSource): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of src.stream) {
    size += chunk.byteLength;
    if (size > 4 * MAX_STRING) throw tooLarge(src.name);
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let o = 0;
  for (const c of chunks) {
    bytes.set(c, o);
    o += c.byteLength;
  }
  chunks.length = 0;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (e) {
    if (e instanceof RangeError && /string (length|too long)/i.test(e.message)) {
      throw tooLarge(src.name);
    }
    let at = firstInvalidUtf8(bytes);
    if (at >= size) {
      // Valid but for a sequence the end cut off: named at its first byte.
      while (at > 0 && (bytes[at - 1] & 0xc0) === 0x80) at--;
      at = Math.max(0, at - 1);
    }
    throw new InputError({
      file: src.name,
      where: `byte ${at}`,
      message: "invalid UTF-8 byte sequence",
    });
  }
}

/** The answers of an OpenCompass predictions file's text (see the module's documentation). */
export function openCompassAnswers(
  file: string,
  text: string,
  questions: readonly SetQuestion[],
): HarnessAnswers {
  let obj: unknown;
  try {
    obj = parsePythonJson(text);
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
 * one {@linkcode InputError} on the first mismatch, on invalid UTF-8, on an
 * lm-eval line longer than {@linkcode MAX_LINE_BYTES} (read no further) or
 * an OpenCompass file over JavaScript's string limit (see the module's
 * documentation).
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
 * await Deno.remove(path);
 * ```
 */
export const readHarnessAnswers = (
  path: string,
  format: Exclude<PredFormat, "ids">,
  questions: readonly SetQuestion[],
): Effect.Effect<HarnessAnswers, InputError | FileError> =>
  Effect.flatMap(openSource(path), (src) =>
    Effect.tryPromise({
      try: async () =>
        format === "lm-eval"
          ? await lmEvalFromSource(src, questions)
          : openCompassAnswers(path, await wholeText(src), questions),
      catch: (e) => {
        if (e instanceof InputError) return e;
        // A text over JavaScript's string limit that passed the count (JSON.parse's copies).
        if (
          format === "opencompass" && e instanceof RangeError &&
          /string (length|too long)/i.test(e.message)
        ) {
          return tooLarge(path);
        }
        return new InputError({
          file: path,
          where: "",
          message: e instanceof Error ? e.message : String(e),
        });
      },
    }));
