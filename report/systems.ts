/**
 * The systems of a report scored question by question: each dataset read
 * once (and its sha256 taken), each prediction file checked against it and
 * scored with the one SQuAD v1.1 fold of `metrics/`
 * ({@linkcode SquadV1Accumulator}: the same per-question EM and F1 as
 * `evaluate --per-question`, the same totals as `evaluate`). EM and F1 are
 * always recomputed so from the predictions against the dataset as it is
 * now; nothing recorded earlier is taken on trust.
 *
 * A system's per-question rows (written by the scoring pass of `full` or
 * `run`, found by `inputs.ts`) are checked against that re-score and give
 * BEM, which cannot be recomputed here: each row must be the dataset's
 * question in the dataset's order, with the prediction file's prediction,
 * the dataset's gold answers (when the row records them) and the
 * recomputed `em` and `f1`, to the bit.
 *
 * Refused as bad input ({@linkcode InputError}, naming the file and the
 * first question that is wrong): a prediction file with a question id that
 * is not in its dataset (predictions for another dataset); two systems of
 * one dataset on different question sets (their datasets hold different
 * questions or gold answers, or they answer different questions: a question
 * one system leaves out would count as wrong and bias the comparison); a
 * rows file that is not the dataset's questions in its order, whose
 * predictions differ from the prediction file's (stale), whose gold answers
 * are not the dataset's (the dataset changed after the run), whose `em` or
 * `f1` is not what the prediction scores (rows edited, or scored against
 * other gold answers), or that has BEM for some questions only.
 *
 * @module
 */
import { Effect, Stream } from "effect";
import { FileError, InputError } from "../io/errors.ts";
import { fileSha256 } from "../io/manifest.ts";
import { readPredictions } from "../io/predictions.ts";
import { squadArticles } from "../io/squad.ts";
import { BEM_THRESHOLD } from "../metrics/bem/fold.ts";
import {
  EmptyDatasetError,
  NoGoldAnswersError,
  SquadV1Accumulator,
  type SquadV1Result,
} from "../metrics/squad.ts";
import type { SystemSpec } from "./inputs.ts";

/** A question of a dataset, with what the report shows of it. */
export interface ReportQuestion {
  /** Question id. */
  readonly id: string;
  /** Article title. */
  readonly title: string;
  /** The question text. */
  readonly question: string;
  /** The gold answers, in file order. */
  readonly golds: readonly string[];
}

/** A system scored on every question of its dataset (dataset order). */
export interface ScoredSystem {
  /** Where it came from. */
  readonly spec: SystemSpec;
  /** The official totals (`evaluate`'s numbers). */
  readonly result: SquadV1Result;
  /** The prediction per question (`null`: none). */
  readonly predictions: readonly (string | null)[];
  /** EM per question, 0 or 1. */
  readonly em: Float64Array;
  /** F1 per question, 0..1. */
  readonly f1: Float64Array;
  /** BEM score per question (0..1), when the rows carry it. */
  readonly bem: Float64Array | null;
  /**
   * The per-question rows file checked against the scores recomputed here
   * (and the source of `bem`), or `null` when the system has none. EM and
   * F1 always come from the metrics fold run here on the predictions.
   */
  readonly rows: string | null;
}

/** A dataset with its systems. */
export interface ScoredDataset {
  /** The dataset's name. */
  readonly name: string;
  /** Its data file (that of the first system). */
  readonly data: string;
  /** The sha256 (hex) of that file as it was read: the gold answers everything was scored on. */
  readonly sha256: string;
  /** Its questions in file order. */
  readonly questions: readonly ReportQuestion[];
  /** Its systems, in INPUT order. */
  readonly systems: readonly ScoredSystem[];
}

/** Errors of {@linkcode scoreSystems}. */
export type ScoreError = InputError | FileError;

const bad = (file: string, where: string, message: string) =>
  new InputError({ file, where, message });

/** Reads the questions of a SQuAD file (contexts are not kept). */
export const readQuestions = (
  data: string,
): Effect.Effect<ReportQuestion[], ScoreError> =>
  Effect.map(
    Stream.runCollect(squadArticles(data, { context: "optional" })),
    (articles) => {
      const out: ReportQuestion[] = [];
      for (const a of articles) {
        for (const p of a.paragraphs) {
          for (const q of p.questions) {
            out.push({
              id: q.id,
              title: a.title,
              question: q.question,
              golds: (q.answers ?? []).map((x) => x.text),
            });
          }
        }
      }
      return out;
    },
  );

/** Refuses predictions with ids that are not questions of the dataset. */
function checkForeign(
  spec: SystemSpec,
  ids: ReadonlySet<string>,
  preds: ReadonlyMap<string, string>,
): void {
  let foreign = 0;
  let first = "";
  for (const id of preds.keys()) {
    if (!ids.has(id)) {
      if (foreign++ === 0) first = id;
    }
  }
  if (foreign > 0) {
    throw bad(
      spec.predictions,
      "",
      `${foreign} of its ${preds.size} question ids are not questions of ${spec.data} (first: "${first}"): predictions for another dataset?`,
    );
  }
}

/** A system scored from its prediction file with the metrics fold (no rows file). */
function scoreOne(
  spec: SystemSpec,
  qs: readonly ReportQuestion[],
  preds: ReadonlyMap<string, string>,
): ScoredSystem {
  const acc = new SquadV1Accumulator();
  const n = qs.length;
  const em = new Float64Array(n);
  const f1 = new Float64Array(n);
  const predictions: (string | null)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const q = qs[i];
    const pred = preds.get(q.id);
    let row;
    try {
      row = acc.add({ id: q.id, answers: q.golds }, pred);
    } catch (e) {
      if (e instanceof NoGoldAnswersError) {
        throw bad(spec.data, `question "${q.id}"`, "has no gold answers (SQuAD v1.1 rules)");
      }
      throw e;
    }
    em[i] = row.exactMatch ? 1 : 0;
    f1[i] = row.f1;
    predictions[i] = pred ?? null;
  }
  let result: SquadV1Result;
  try {
    result = acc.result();
  } catch (e) {
    if (e instanceof EmptyDatasetError) throw bad(spec.data, "", e.message);
    throw e;
  }
  return { spec, result, predictions, em, f1, bem: null, rows: null };
}

/** The fields of a rows line that `report` reads. */
interface RowLine {
  id?: unknown;
  prediction?: unknown;
  golds?: unknown;
  em?: unknown;
  f1?: unknown;
  bem?: unknown;
}

const sameGolds = (a: unknown, b: readonly string[]): boolean =>
  Array.isArray(a) && a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Checks a system's per-question rows (`runs/layout.ts`) against its scores
 * recomputed here (`scored`) and returns it with the rows' BEM: the rows
 * must be the dataset's questions in the dataset's order, each with the
 * prediction file's prediction, the dataset's gold answers (when the row
 * has `golds`), and `em` and `f1` equal to the recomputed ones; `bem` in
 * [0, 1] for every question or none.
 */
function checkRows(
  spec: SystemSpec,
  rowsFile: string,
  qs: readonly ReportQuestion[],
  scored: ScoredSystem,
): ScoredSystem {
  let text: string;
  try {
    text = Deno.readTextFileSync(rowsFile);
  } catch (e) {
    throw new FileError({ file: rowsFile, message: e instanceof Error ? e.message : String(e) });
  }
  const n = qs.length;
  const bem = new Float64Array(n);
  let withBem = 0;
  let i = 0;
  let line = 0;
  for (const l of text.split("\n")) {
    line++;
    if (l.trim() === "") continue;
    let r: RowLine;
    try {
      r = JSON.parse(l);
    } catch {
      throw bad(rowsFile, `line ${line}`, "invalid JSON");
    }
    if (typeof r !== "object" || r === null || typeof r.id !== "string") {
      throw bad(rowsFile, `line ${line}`, "a row needs an id");
    }
    if (i >= n) {
      throw bad(
        rowsFile,
        `line ${line}`,
        `question "${r.id}": more rows than the ${n} questions of ${spec.data}`,
      );
    }
    const q = qs[i];
    if (r.id !== q.id) {
      throw bad(
        rowsFile,
        `line ${line}`,
        `question "${r.id}" where ${spec.data} has question ${
          i + 1
        } "${q.id}": rows of another dataset (or order)`,
      );
    }
    if ((r.em !== 0 && r.em !== 1) || typeof r.f1 !== "number" || !(r.f1 >= 0 && r.f1 <= 1)) {
      throw bad(rowsFile, `question "${q.id}"`, "a row needs em 0 or 1 and f1 in [0, 1]");
    }
    if (r.prediction !== null && typeof r.prediction !== "string") {
      throw bad(rowsFile, `question "${q.id}"`, "prediction is neither a string nor null");
    }
    const pred = scored.predictions[i];
    if (r.prediction !== pred) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `prediction ${JSON.stringify(r.prediction)} here but ${
          JSON.stringify(pred)
        } in ${spec.predictions}: a stale rows file`,
      );
    }
    if (r.golds !== undefined && !sameGolds(r.golds, q.golds)) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `gold answers ${JSON.stringify(r.golds)} here but ${
          JSON.stringify(q.golds)
        } in ${spec.data}: the dataset changed after these rows were scored`,
      );
    }
    if (r.em !== scored.em[i] || r.f1 !== scored.f1[i]) {
      throw bad(
        rowsFile,
        `question "${q.id}"`,
        `em ${r.em}, f1 ${r.f1} here but its prediction ${JSON.stringify(pred)} scores em ${
          scored.em[i]
        }, f1 ${scored.f1[i]} against ${spec.data}: rows edited, or scored on other gold answers`,
      );
    }
    if (r.bem !== undefined) {
      if (typeof r.bem !== "number" || !(r.bem >= 0 && r.bem <= 1)) {
        throw bad(rowsFile, `question "${q.id}"`, "bem is not a number in [0, 1]");
      }
      bem[i] = r.bem;
      withBem++;
    }
    i++;
  }
  if (i < n) {
    throw bad(
      rowsFile,
      "",
      `${i} rows for the ${n} questions of ${spec.data} (question "${qs[i].id}" has none)`,
    );
  }
  if (withBem !== 0 && withBem !== n) {
    throw bad(rowsFile, "", `bem for ${withBem} of ${n} questions (BEM for some questions only)`);
  }
  return { ...scored, bem: withBem === n ? bem : null, rows: rowsFile };
}

/**
 * Whether a BEM score counts as correct (above
 * {@linkcode BEM_THRESHOLD}, as `metrics/bem` counts BEM accuracy).
 *
 * @example
 * ```ts
 * import { bemCorrect } from "./systems.ts";
 * if (bemCorrect(0.5) || !bemCorrect(0.51)) throw new Error();
 * ```
 */
export const bemCorrect = (score: number): boolean => score > BEM_THRESHOLD;

/**
 * Reads every dataset once and scores every system on it, grouped by
 * dataset (first appearance order). See the module notes for what is
 * refused.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { scoreSystems } from "./systems.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{ title: "t",
 *   paragraphs: [{ context: "Paris is in France.", qas: [
 *     { id: "q1", question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] },
 *   ] }] }] }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "in France" }));
 * const [ds] = await Effect.runPromise(scoreSystems([{ name: "A", dataset: "d", data: `${dir}/d.json`,
 *   predictions: `${dir}/p.json`, rows: null, input: "A", kind: "pred" }]));
 * await Deno.remove(dir, { recursive: true });
 * if (ds.systems[0].em[0] !== 0 || Math.abs(ds.systems[0].f1[0] - 2 / 3) > 1e-15) throw new Error();
 * ```
 */
export const scoreSystems = (
  specs: readonly SystemSpec[],
): Effect.Effect<ScoredDataset[], ScoreError> =>
  Effect.gen(function* () {
    const questionsOf = new Map<string, ReportQuestion[]>();
    const groups = new Map<string, SystemSpec[]>();
    for (const s of specs) {
      if (!groups.has(s.dataset)) groups.set(s.dataset, []);
      groups.get(s.dataset)!.push(s);
      if (!questionsOf.has(s.data)) questionsOf.set(s.data, yield* readQuestions(s.data));
    }
    const out: ScoredDataset[] = [];
    for (const [name, group] of groups) {
      const qs = questionsOf.get(group[0].data)!;
      const ids = new Set(qs.map((q) => q.id));
      const systems: ScoredSystem[] = [];
      for (const spec of group) {
        const own = questionsOf.get(spec.data)!;
        if (own !== qs) {
          const differ = own.length !== qs.length ? Math.min(own.length, qs.length) : own.findIndex(
            (q, i) => q.id !== qs[i].id || !sameGolds(q.golds, qs[i].golds),
          );
          if (differ >= 0) {
            const id = (own[differ] ?? qs[differ]).id;
            return yield* bad(
              spec.data,
              "",
              `systems "${group[0].name}" (${
                group[0].data
              }, ${qs.length} questions) and "${spec.name}" (${own.length} questions) of dataset "${name}" are on different question sets (question "${id}" differs)`,
            );
          }
        }
        const preds = yield* readPredictions(spec.predictions);
        const s = yield* Effect.try({
          try: () => {
            checkForeign(spec, ids, preds);
            const scored = scoreOne(spec, qs, preds);
            return spec.rows ? checkRows(spec, spec.rows, qs, scored) : scored;
          },
          catch: (e) =>
            e instanceof InputError || e instanceof FileError
              ? e
              : bad(spec.predictions, "", String(e)),
        });
        if (systems.length > 0) {
          const f = systems[0];
          const i = s.predictions.findIndex((p, j) => (p === null) !== (f.predictions[j] === null));
          if (i >= 0) {
            return yield* bad(
              spec.predictions,
              "",
              `answers ${s.result.answered} of the ${qs.length} questions of dataset "${name}", while "${f.spec.name}" answers ${f.result.answered}: two systems on different question sets (question "${
                qs[i].id
              }" is answered by one only)`,
            );
          }
        }
        systems.push(s);
      }
      const sha256 = yield* fileSha256(group[0].data);
      out.push({ name, data: group[0].data, sha256, questions: qs, systems });
    }
    return out;
  });
