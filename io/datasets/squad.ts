/**
 * SQuAD-format question sets as {@linkcode QaRecord}s and
 * {@linkcode CorpusPassage}s, on the streaming SQuAD reader (`io/squad.ts`,
 * unchanged: one article in memory at a time): SQuAD v1.1 and v2.0
 * (`is_impossible` is `noAnswer`, `plausible_answers` are
 * `plausibleAnswers`), and XQuAD and MLQA, which are SQuAD files in other
 * languages (the language code comes from the options, else from the file
 * name: {@linkcode langFromFileName}). The paragraph id is PI-SQuAD's
 * `title_index`; the context is optional (a PI-SQuAD question file has
 * none). An empty question or a repeated question id is bad input, named by
 * its article, paragraph and id as the SQuAD reader names its errors.
 *
 * @module
 */
import * as Stream from "effect/Stream";
import { InputError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import { type SquadReadOptions, type SquadRecord, squadRecordStream } from "../squad.ts";
import {
  type CorpusPassage,
  IdRegistry,
  type QaReadOptions,
  type QaRecord,
  questionProblem,
} from "./types.ts";

/**
 * The language code in an XQuAD or MLQA file name: XQuAD's
 * `xquad.<lang>.json`, MLQA's `...-context-<lang>-question-<lang>.json` (the
 * context's language: the answers are spans of the context). `undefined`
 * for any other name.
 *
 * @example
 * ```ts
 * import { langFromFileName } from "./squad.ts";
 * if (langFromFileName("data/xquad.de.json") !== "de") throw new Error();
 * const mlqa = "MLQA_V1/dev/dev-context-zh-question-en.json.gz";
 * if (langFromFileName(mlqa) !== "zh") throw new Error();
 * if (langFromFileName("dev-v1.1.json") !== undefined) throw new Error();
 * ```
 */
export function langFromFileName(path: string): string | undefined {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const x = /^xquad\.([a-z]{2,3}(?:-[A-Za-z]+)?)\.json(?:\.gz)?$/.exec(base);
  if (x !== null) return x[1];
  const m = /context-([a-z]{2,3})-question-[a-z]{2,3}\.json(?:\.gz)?$/.exec(base);
  return m === null ? undefined : m[1];
}

function fromSquad<T>(
  src: ByteSource,
  parts: SquadReadOptions,
  convert: (r: SquadRecord, out: T[]) => void,
): Stream.Stream<T, InputError> {
  return Stream.fromReadableStream({
    evaluate: () =>
      squadRecordStream(src, parts).pipeThrough(
        new TransformStream<SquadRecord, T>({
          transform(r, controller) {
            const out: T[] = [];
            convert(r, out);
            for (const x of out) controller.enqueue(x);
          },
        }),
      ),
    onError: (e) =>
      e instanceof InputError ? e : new InputError({
        file: src.name,
        where: "",
        message: e instanceof Error ? e.message : String(e),
      }),
  });
}

/**
 * The questions of a SQuAD-format file (v1.1, v2.0, XQuAD, MLQA), in file
 * order, each with its paragraph id, context (when the file has it) and
 * title.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadQuestionRecords } from "./squad.ts";
 * const text = JSON.stringify({ version: "v2.0", data: [{ title: "T", paragraphs: [{
 *   context: "Paris is big.", qas: [
 *     { id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] },
 *     { id: "q2", question: "Who?", answers: [], is_impossible: true,
 *       plausible_answers: [{ text: "big", answer_start: 9 }] },
 *   ] }] }] });
 * const src = { name: "dev-v2.0.json", stream: new Blob([text]).stream() };
 * const qs = await Effect.runPromise(Stream.runCollect(squadQuestionRecords(src, { lang: "en" })));
 * if (qs[0].paragraphId !== "T_0" || qs[0].answers[0] !== "Paris" || qs[0].lang !== "en") {
 *   throw new Error();
 * }
 * if (qs[1].noAnswer !== true || qs[1].plausibleAnswers?.[0] !== "big") throw new Error();
 * ```
 */
export function squadQuestionRecords(
  src: ByteSource,
  opts: QaReadOptions = {},
): Stream.Stream<QaRecord, InputError> {
  const ids = new IdRegistry();
  const parts = { context: "optional", answers: opts.answers ?? "required" } as const;
  return fromSquad<QaRecord>(src, parts, (r, out) => {
    if (r.kind !== "article") return;
    const rawTitle = r.raw.title as string;
    for (const p of r.paragraphs) {
      const at = `article "${rawTitle}" paragraph ${p.index}`;
      for (const q of p.questions) {
        const where = `${at} question "${q.id}"`;
        const bad = questionProblem(q.raw.question, "question");
        if (bad !== undefined) throw new InputError({ file: src.name, where, message: bad });
        const seen = ids.add(q.id, at);
        if (seen !== undefined) {
          throw new InputError({
            file: src.name,
            where,
            message: `duplicate id (first at ${seen})`,
          });
        }
        out.push({
          kind: "question",
          id: q.id,
          question: q.question,
          answers: (q.answers ?? []).map((a) => a.text),
          paragraphId: p.id,
          ...(p.context !== undefined ? { context: p.context } : {}),
          title: r.title,
          ...(q.is_impossible === true ? { noAnswer: true } : {}),
          ...(q.plausible_answers !== undefined
            ? { plausibleAnswers: q.plausible_answers.map((a) => a.text) }
            : {}),
          ...(opts.regex ? { regex: true } : {}),
          ...(opts.lang !== undefined ? { lang: opts.lang } : {}),
        });
      }
    }
  });
}

/**
 * The paragraphs of a SQuAD-format file as corpus passages (id
 * `title_index`, the article title, the context). A paragraph without a
 * context, or one whose id repeats an earlier one (two articles with one
 * title), is bad input; `qas` may be missing (a PI-SQuAD context file).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadPassages } from "./squad.ts";
 * const text = JSON.stringify({ data: [{ title: "T", paragraphs: [
 *   { context: "One.", qas: [] }, { context: "Two.", qas: [] },
 * ] }] });
 * const ps = await Effect.runPromise(
 *   Stream.runCollect(squadPassages({ name: "d.json", stream: new Blob([text]).stream() })),
 * );
 * if (ps.map((p) => `${p.id}=${p.text}`).join() !== "T_0=One.,T_1=Two.") throw new Error();
 * ```
 */
export function squadPassages(src: ByteSource): Stream.Stream<CorpusPassage, InputError> {
  const ids = new IdRegistry();
  return fromSquad<CorpusPassage>(src, { qas: "optional" }, (r, out) => {
    if (r.kind !== "article") return;
    const rawTitle = r.raw.title as string;
    for (const p of r.paragraphs) {
      const at = `article "${rawTitle}" paragraph ${p.index}`;
      const seen = ids.add(p.id, at);
      if (seen !== undefined) {
        throw new InputError({
          file: src.name,
          where: at,
          message: `duplicate paragraph id ${JSON.stringify(p.id)} (first at ${seen})`,
        });
      }
      out.push({ id: p.id, title: r.title, text: p.context as string });
    }
  });
}
