/**
 * The two task kinds of a run (`runs/plan.ts`) that are not stage scripts of
 * their own, as Effects:
 *
 * - `prepare --data SRC --out DIR [--articles A:B]`: writes
 *   `DIR/data.json` (articles A..B-1 of SRC, every other field kept; only
 *   with `--articles`), then the PI-SQuAD split `DIR/context.json` and
 *   `DIR/question.json`. Each file appears atomically.
 * - `eval --data D --pred P --out R [--rows ROWS] [--bem MODEL ...]`: the
 *   official SQuAD v1.1 EM/F1 of P (and BEM, in the same process, when
 *   asked), written to R atomically as `{"exact_match": ..., "f1": ...,
 *   "bem": ...}`; with `--rows`, the per-question rows of the same scoring
 *   pass (`runs/layout.ts`) to ROWS, atomically, before R. With
 *   `--open-pred P2 --topk T` (a dataset's `open` option), the open search's
 *   top-1 EM/F1 and top-k metrics go in R's `open` and each row gets the
 *   question's open fields (`metrics/open.ts`).
 *
 * The command line of both is `pipeline/_run_task.ts`, which the plans
 * name as a script (`runs/plan.ts`).
 *
 * @module
 */
import { Effect } from "effect";
import { FileError } from "../io/errors.ts";
import { openAtomicWriter } from "../io/source.ts";
import { split } from "../io/squad_split.ts";
import { writeArticleSubset } from "../io/squad_subset.ts";
import { scoreDataset } from "../metrics/evaluate.ts";
import { type OpenMetrics, openScores } from "../metrics/open.ts";

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/** Options of {@linkcode prepareDataset}. */
export interface PrepareOptions {
  /** The SQuAD file. */
  readonly data: string;
  /** Output folder. */
  readonly out: string;
  /** Article range `[start, end)`, or all. */
  readonly articles?: readonly [number, number];
  /** Rename repeated article titles in the split (`io/squad_ids.ts`) instead of refusing them. */
  readonly uniqueIds?: boolean;
}

/**
 * Writes the article subset (when a range is given) and the split of a
 * dataset into `opts.out`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { REPO_ROOT } from "../io/repo.ts";
 * import { prepareDataset } from "./tasks.ts";
 * const out = await Deno.makeTempDir();
 * const r = await Effect.runPromise(prepareDataset({
 *   data: `${REPO_ROOT}/data/dev-v1.1.json.gz`, out, articles: [8, 10],
 * }));
 * if (r.paragraphs !== 47 || r.questions !== 232) throw new Error(JSON.stringify(r));
 * await Deno.remove(out, { recursive: true });
 * ```
 */
export const prepareDataset = (opts: PrepareOptions) =>
  Effect.gen(function* () {
    yield* fsDo(opts.out, () => Deno.mkdir(opts.out, { recursive: true }));
    let data = opts.data;
    if (opts.articles) {
      data = `${opts.out}/data.json`;
      yield* writeArticleSubset({ data: opts.data, out: data, articles: opts.articles });
    }
    return yield* split({
      data,
      context: `${opts.out}/context.json`,
      question: `${opts.out}/question.json`,
      uniqueIds: opts.uniqueIds,
    });
  });

/** Options of {@linkcode evalPredictions}. */
export interface EvalOptions {
  /** The SQuAD dataset. */
  readonly data: string;
  /** The predictions. */
  readonly pred: string;
  /** The result file to write. */
  readonly out: string;
  /**
   * The per-question rows to write (`id`, `prediction`, `reference`,
   * `golds`, `em`, `f1`, and `bem` when BEM is scored): from the same pass
   * that makes the result, nothing scored twice.
   */
  readonly rows?: string;
  /** BEM: the ONNX model (scored in this process). */
  readonly bem?: string;
  /** BEM: which number goes in `bem` (`accuracy`, default, or `score`). */
  readonly bemReport?: "accuracy" | "score";
  /**
   * The open search's outputs (a dataset's `open` option): its top-1
   * predictions and top-k records, scored in the same task
   * (`metrics/open.ts` {@linkcode openScores}); the result gains `open`
   * and each row the question's open fields.
   */
  readonly open?: {
    readonly pred: string;
    readonly topk: string;
    /** Paragraph ids with repeated titles renamed, as the search ran. */
    readonly uniqueIds?: boolean;
  };
}

/** The open numbers of a result file (a dataset's `open` option). */
export interface OpenRecord extends OpenMetrics {
  /** Official v1.1 EM of the open (search) top-1 predictions (0..100). */
  readonly exact_match: number;
  /** Official v1.1 F1 of the open predictions (0..100). */
  readonly f1: number;
  /** Questions with an open prediction. */
  readonly answered: number;
}

/** A result file. */
export interface EvalRecord {
  /** Official SQuAD v1.1 exact match (0..100). */
  readonly exact_match: number;
  /** Official SQuAD v1.1 F1 (0..100). */
  readonly f1: number;
  /** BEM accuracy or score (0..100), when configured. */
  readonly bem?: number;
  /** The whole BEM summary (as `evaluate --bem` prints it), when configured. */
  readonly bem_summary?: Record<string, unknown>;
  /** Questions scored. */
  readonly total: number;
  /** Questions with a prediction. */
  readonly answered: number;
  /** The open search's numbers, when the dataset has the `open` option. */
  readonly open?: OpenRecord;
}

/**
 * Scores predictions and writes the result file atomically.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { evalPredictions } from "./tasks.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{
 *   title: "T", paragraphs: [{ context: "Paris is in France.", qas: [{ id: "q1",
 *     question: "Where is Paris?", answers: [{ text: "France", answer_start: 12 }] }] }],
 * }] }));
 * await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "in France" }));
 * const r = await Effect.runPromise(evalPredictions({
 *   data: `${dir}/d.json`, pred: `${dir}/p.json`, out: `${dir}/r.json`,
 * }));
 * if (r.exact_match !== 0 || Math.abs(r.f1 - 200 / 3) > 1e-9 || r.answered !== 1) {
 *   throw new Error(JSON.stringify(r));
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const evalPredictions = (opts: EvalOptions) =>
  Effect.gen(function* () {
    const open = opts.open === undefined ? undefined : yield* openScores({
      data: opts.data,
      predictions: opts.open.pred,
      topk: opts.open.topk,
      uniqueIds: opts.open.uniqueIds,
    });
    const s = yield* scoreDataset({
      data: opts.data,
      predictions: opts.pred,
      ...(opts.rows !== undefined ? { perQuestion: opts.rows } : {}),
      ...(open !== undefined ? { rowExtra: (id: string) => open.rows.get(id) } : {}),
      ...(opts.bem !== undefined ? { bem: { model: opts.bem } } : {}),
    });
    const bem = s.bem;
    const record: EvalRecord = {
      exact_match: s.exactMatch,
      f1: s.f1,
      ...(bem
        ? {
          bem: opts.bemReport === "score" ? bem.bem_score : bem.bem_accuracy,
          bem_summary: { ...bem },
        }
        : {}),
      total: s.questions,
      answered: "answered" in s.result ? s.result.answered : 0,
      ...(open !== undefined
        ? {
          open: {
            exact_match: open.exact_match,
            f1: open.f1,
            answered: open.answered,
            ...open.metrics,
          },
        }
        : {}),
    };
    const text = JSON.stringify(record) + "\n";
    yield* fsDo(opts.out, async () => {
      const w = await openAtomicWriter(opts.out);
      await w.write(text);
      await w.commit();
    });
    return record;
  });
