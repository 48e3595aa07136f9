/**
 * One paragraph's questions ({@linkcode mergeUnit}) and a batch of
 * paragraphs ({@linkcode mergeBatch}): read, check, score, answer.
 *
 * @module
 */
import type { ContextDump, DumpSourceSync, MissingFile } from "../../io/dump/reader_sync.ts";
import { isQuestionShape, rowsMatchPhrases, sameDim } from "../../io/dump/checks.ts";
import { dumpStem } from "../../io/dump/names.ts";
import { FileError, InputError } from "../../io/errors.ts";
import type { Matrix } from "../../io/matrix.ts";
import { bestRows, type ScoringOptions } from "./best_rows.ts";
import { asFloat32 } from "../dense_f64.ts";

/** One question's outcome: an answer, a `Missing` path, or neither (no phrases). */
export interface MergeOutcome {
  /** The question id. */
  readonly qid: string;
  /** The answer phrase. */
  readonly answer?: string;
  /** The path of the missing file (printed as `Missing <path>`). */
  readonly missing?: string;
}

const isMissing = (x: unknown): x is MissingFile =>
  typeof x === "object" && x !== null && "missing" in x;

function shapeOf(m: Matrix): string {
  return `(${m.rows}, ${m.cols})`;
}

/**
 * The error to throw about a paragraph, unless its matrix has a NaN or
 * infinite value not checked yet (a deferred check): that error comes first,
 * as when the reader checks.
 */
function checkedFirst(
  ctx: ContextDump,
  e: { file: string; where: string; message: string },
): InputError {
  if (ctx.checkFinite !== undefined && ctx.matrix.kind === "dense") {
    ctx.checkFinite(asFloat32(ctx.matrix));
  }
  return new InputError(e);
}

/**
 * Answers the questions of one paragraph: reads each question vector and
 * (once) the paragraph's matrix and phrases, checks them, and scores all the
 * questions in one pass. Throws the first bad input in question order
 * ({@linkcode InputError} / {@linkcode FileError}).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { openDumpSync } from "../../io/dump/reader_sync.ts";
 * import { writeContextDump, writeQuestionDump } from "../../io/dump/writer.ts";
 * import { mergeUnit } from "./unit.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/c`);
 * Deno.mkdirSync(`${dir}/q`);
 * const f = { sparse: false, compressed: false };
 * const row = (...v: number[]) => new Float32Array(v);
 * await Effect.runPromise(writeContextDump(`${dir}/c`, {
 *   id: "T_0",
 *   phrases: [{ text: "Paris", start: 0, end: 5 }, { text: "France", start: 12, end: 18 }],
 *   matrix: { kind: "dense", rows: 2, cols: 4, dtype: "f32", data: row(1, 0, 0, 0, 0, 1, 0, 0) },
 * }, f));
 * await Effect.runPromise(writeQuestionDump(`${dir}/q`, {
 *   id: "q1",
 *   vector: { kind: "dense", rows: 1, cols: 4, dtype: "f32", data: row(0, 2, 0, 0) },
 * }, f));
 * const c = openDumpSync(`${dir}/c`), q = openDumpSync(`${dir}/q`);
 * const [o] = mergeUnit(c, q, { cid: "T_0", qids: ["q1"] });
 * if (o.answer !== "France") throw new Error(`got ${o.answer}`);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function mergeUnit(
  c: DumpSourceSync,
  q: DumpSourceSync,
  unit: { readonly cid: string; readonly qids: readonly string[] },
  options: ScoringOptions = {},
): MergeOutcome[] {
  const outcomes: MergeOutcome[] = [];
  const todo: number[] = [];
  const vectors: Matrix[] = [];
  let ctx: ContextDump | MissingFile | undefined;
  for (const qid of unit.qids) {
    const qm = q.readQuestion(qid);
    if (isMissing(qm)) {
      outcomes.push({ qid, missing: qm.missing });
      continue;
    }
    if (ctx === undefined) {
      ctx = c.readContext(unit.cid);
      if (!isMissing(ctx) && !rowsMatchPhrases(ctx.matrix, ctx.phrases.length)) {
        const stem = dumpStem(unit.cid);
        throw checkedFirst(ctx, {
          file: c.label(`${stem}.json`),
          where: "",
          message: `${ctx.phrases.length} phrases but ${
            c.label(`${stem}.npz`)
          } has ${ctx.matrix.rows} rows`,
        });
      }
    }
    if (isMissing(ctx)) {
      outcomes.push({ qid, missing: ctx.missing });
      continue;
    }
    const qLabel = q.label(`${dumpStem(qid)}.npz`);
    if (!isQuestionShape(qm)) {
      throw checkedFirst(ctx, {
        file: qLabel,
        where: "",
        message: `shape ${shapeOf(qm)}; a question vector must be 1×d`,
      });
    }
    if (!sameDim(qm, ctx.matrix)) {
      throw checkedFirst(ctx, {
        file: qLabel,
        where: "",
        message: `d = ${qm.cols} but ${
          c.label(`${dumpStem(unit.cid)}.npz`)
        } has d = ${ctx.matrix.cols}`,
      });
    }
    todo.push(outcomes.length);
    outcomes.push({ qid });
    vectors.push(qm);
  }
  if (ctx !== undefined && !isMissing(ctx) && ctx.matrix.rows > 0 && vectors.length > 0) {
    const best = bestRows(ctx, vectors, options);
    for (let k = 0; k < todo.length; k++) {
      outcomes[todo[k]] = { qid: outcomes[todo[k]].qid, answer: ctx.phrases.at(best[k]) };
    }
  }
  return outcomes;
}

/** What {@linkcode mergeBatch} returns. */
export interface BatchResult {
  /** Each unit's outcomes, in order, up to the unit that failed. */
  readonly ok: MergeOutcome[][];
  /** The error of the unit that failed (the units after it were not run). */
  readonly err?: InputError | FileError;
}

/**
 * {@linkcode mergeUnit} on each unit in turn, stopping at the first bad
 * input (other errors are thrown).
 *
 * @example
 * ```ts
 * import { openDumpSync } from "../../io/dump/reader_sync.ts";
 * import { mergeBatch } from "./unit.ts";
 * const dir = Deno.makeTempDirSync();
 * // No files: each question is reported missing.
 * const c = openDumpSync(dir), q = openDumpSync(dir);
 * const r = mergeBatch(c, q, [{ cid: "T_0", qids: ["q1"] }]);
 * if (r.ok[0][0].missing !== `${dir}/q1.npz`) throw new Error("not missing");
 * Deno.removeSync(dir);
 * ```
 */
export function mergeBatch(
  c: DumpSourceSync,
  q: DumpSourceSync,
  units: readonly { readonly cid: string; readonly qids: readonly string[] }[],
  options: ScoringOptions = {},
): BatchResult {
  const ok: MergeOutcome[][] = [];
  for (const unit of units) {
    try {
      ok.push(mergeUnit(c, q, unit, options));
    } catch (e) {
      if (e instanceof InputError || e instanceof FileError) return { ok, err: e };
      throw e;
    }
  }
  return { ok };
}
