/**
 * The summary of a run: one row per (dataset, model) with EM, F1 and BEM
 * from the result files, each with its 95 % confidence interval, as txt
 * (aligned), Markdown and CSV; when a dataset has the `open` option, the
 * open search's columns too (open EM/F1, k, top-k EM/F1, paragraph
 * recall@k, MRR@k; `-` for a dataset without it).
 *
 * Dataset kinds (a dataset's `type`): EM and F1 are each kind's own metric
 * (SQuAD v1.1/v2.0's script, MRQA's, MLQA's in the set's language, top-1
 * for open sets; F1 is `-` for regex answers, which have none). When a
 * dataset is not `squad` the table gains a `kind` column, and a group per
 * kind that has more: `squad2` HasAns EM / NoAns EM, `xquad`/`mlqa` the
 * language (`-` in the rows of other kinds). A run of `squad` sets only
 * has the table it always had.
 *
 * The intervals are paired bootstrap percentile intervals
 * (`metrics/stats` {@linkcode pairedBootstrap}, B = {@linkcode SUMMARY_RESAMPLES},
 * seed {@linkcode SUMMARY_SEED}) of the mean over the per-question rows the
 * `eval` task wrote next to the predictions (`runs/plan/layout.ts`), in percent: the
 * same numbers `report` gives for that system (its resamples draw the same
 * question indices whatever the number of systems). BEM's interval is of
 * what the result's `bem` is: the accuracy (score > 0.5) by default, the
 * mean score with `report: "score"`. Without a rows file (a run folder
 * from before rows were written) the interval is `n/a`; a rows file that is
 * there but is not rows (a line that is not JSON, an `em` that is not a
 * number, a byte that is not UTF-8...) is refused, one {@linkcode InputError}
 * naming the file, the line and what is wrong, never an interval silently
 * left out. The rows are read a line at a time: a file of any size.
 *
 * @module
 */
import { BEM_THRESHOLD } from "../../metrics/bem/fold.ts";
import { pairedBootstrap } from "../../metrics/stats/bootstrap.ts";
import { runLayout } from "../plan/layout.ts";
import { textTable } from "../plan/table.ts";
import type { Plan } from "../plan/task.ts";
import type { DatasetKind } from "../config/config.ts";
import { kindTakes, rulesOfKind } from "../../io/datasets/formats.ts";
import { InputError } from "../../io/errors.ts";
import { statRegularFile } from "../../io/regular.ts";
import { readLinesStrict } from "../../io/text.ts";

/** Resamples of the summary's bootstrap intervals. */
export const SUMMARY_RESAMPLES = 1000;
/** Seed of the summary's bootstrap intervals. */
export const SUMMARY_SEED = 0;

/** A 95 % interval `[low, high]` in percent. */
export type Ci = readonly [number, number];

/** A row of the summary: one model on one dataset. */
export interface SummaryRow {
  /** Dataset abbr. */
  readonly dataset: string;
  /** Model abbr. */
  readonly model: string;
  /** Exact match (0..100), or `null` when there is no result. */
  readonly em: number | null;
  /** F1 (0..100), or `null`. */
  readonly f1: number | null;
  /** BEM (0..100); `undefined` when not configured, `null` when missing. */
  readonly bem: number | null | undefined;
  /** EM's 95 % interval, or `null` when there are no rows (absent: not computed). */
  readonly emCi?: Ci | null;
  /** F1's 95 % interval, or `null`. */
  readonly f1Ci?: Ci | null;
  /** BEM's 95 % interval; `undefined` when BEM is not configured, `null` when missing. */
  readonly bemCi?: Ci | null;
  /**
   * The open search's numbers (the dataset's `open` option; the result's
   * `open`): `undefined` when not configured, `null` when missing.
   */
  readonly open?: OpenSummary | null;
  /**
   * The dataset's kind (`squad`, `squad2`, `mrqa`, `xquad`, `mlqa`, `open`,
   * `jsonl`); absent: `squad`. When any row is not `squad` the table gains
   * a `kind` column and the groups of the kinds present.
   */
  readonly kind?: DatasetKind;
  /** SQuAD v2.0's HasAns/NoAns EM (`squad2` rows; `null` when missing). */
  readonly v2?: { readonly hasAnsEm: number | null; readonly noAnsEm: number | null } | null;
  /** The language an `xquad`/`mlqa` row was scored in. */
  readonly lang?: string;
}

/** The open columns of a summary row (see {@linkcode SummaryRow.open}). */
export interface OpenSummary {
  /** Open (search) top-1 EM (0..100). */
  readonly em: number;
  /** Open top-1 F1 (0..100). */
  readonly f1: number;
  /** The k of the top-k columns. */
  readonly k: number;
  /** Best-of-k EM (0..100). */
  readonly topkEm: number;
  /** Best-of-k F1 (0..100). */
  readonly topkF1: number;
  /** Questions whose own paragraph is among the k (0..100). */
  readonly paragraphRecall: number;
  /** MRR@k (0..1). */
  readonly mrr: number;
}

/**
 * The summary table as txt (aligned), Markdown and CSV. A metric that is not
 * configured is `-`; a missing result or interval is `n/a`. The CSV gives
 * each interval as two columns (`em_low`, `em_high`, ...).
 *
 * @example
 * ```ts
 * import { formatSummary } from "./summary.ts";
 * const s = formatSummary([{
 *   dataset: "d", model: "m", em: 50, f1: 60.5, bem: undefined, emCi: [40, 60], f1Ci: [50.25, 70],
 * }]);
 * const want = "dataset,model,em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high\n" +
 *   "d,m,50,40,60,60.5,50.25,70,-,-,-\n";
 * if (s.csv !== want) throw new Error(s.csv);
 * if (!s.md.includes("| d | m | 50.00 | [40.00, 60.00] | 60.50 | [50.25, 70.00] | - | - |")) {
 *   throw new Error(s.md);
 * }
 * ```
 */
export function formatSummary(rows: readonly SummaryRow[]): {
  txt: string;
  md: string;
  csv: string;
} {
  // Open columns only when a dataset has the open search (else the table is as before).
  const withOpen = rows.some((r) => r.open !== undefined);
  const openHead = ["open EM", "open F1", "top-k", "top-k EM", "top-k F1", "P-recall@k", "MRR@k"];
  const openCells = (o: OpenSummary | null | undefined, f: (v: number) => string) =>
    !withOpen
      ? []
      : o === undefined
      ? openHead.map(() => "-")
      : o === null
      ? openHead.map(() => "n/a")
      : [o.em, o.f1, o.k, o.topkEm, o.topkF1, o.paragraphRecall].map((v, i) =>
        i === 2 ? String(v) : f(v)
      ).concat(f === String ? String(o.mrr) : o.mrr.toFixed(4));
  // Dataset kinds beyond SQuAD v1.1: a kind column, then one group per kind that has one.
  const withKind = rows.some((r) => r.kind !== undefined && r.kind !== "squad");
  const v2 = (r: SummaryRow) => r.kind !== undefined && rulesOfKind(r.kind) === "v2.0";
  const withV2 = rows.some(v2);
  const withLang = rows.some((r) => kindTakes(r.kind, "lang"));
  const kindHead = [
    ...(withV2 ? ["HasAns EM", "NoAns EM"] : []),
    ...(withLang ? ["lang"] : []),
  ];
  const kindCells = (r: SummaryRow, f: (v: number | null | undefined) => string) => [
    ...(withV2
      ? !v2(r) ? ["-", "-"] : r.v2 == null ? ["n/a", "n/a"] : [f(r.v2.hasAnsEm), f(r.v2.noAnsEm)]
      : []),
    ...(withLang ? [kindTakes(r.kind, "lang") ? r.lang ?? "n/a" : "-"] : []),
  ];
  const head = [
    "dataset",
    "model",
    ...(withKind ? ["kind"] : []),
    "EM",
    "EM 95% CI",
    "F1",
    "F1 95% CI",
    "BEM",
    "BEM 95% CI",
    ...(withOpen ? openHead : []),
    ...kindHead,
  ];
  const fmt = (v: number | null | undefined) =>
    v === undefined ? "-" : v === null ? "n/a" : v.toFixed(2);
  const raw = (v: number | null | undefined) =>
    v === undefined ? "-" : v === null ? "n/a" : String(v);
  // An interval of a configured metric that was not computed is n/a.
  const ci = (v: Ci | null | undefined, configured: boolean) =>
    !configured ? "-" : !v ? "n/a" : `[${v[0].toFixed(2)}, ${v[1].toFixed(2)}]`;
  const ciRaw = (v: Ci | null | undefined, configured: boolean) =>
    !configured ? ["-", "-"] : !v ? ["n/a", "n/a"] : [String(v[0]), String(v[1])];
  // F1 of regex answers (CuratedTREC) does not exist: "-", as an unconfigured metric.
  const noF1 = (r: SummaryRow) => r.em !== null && r.f1 === null && r.kind !== undefined;
  const cells = rows.map((r) => [
    r.dataset,
    r.model,
    ...(withKind ? [r.kind ?? "squad"] : []),
    fmt(r.em),
    ci(r.emCi, true),
    noF1(r) ? "-" : fmt(r.f1),
    ci(r.f1Ci, !noF1(r)),
    fmt(r.bem),
    ci(r.bemCi, r.bem !== undefined),
    ...openCells(r.open, (v) => v.toFixed(2)),
    ...kindCells(r, fmt),
  ]);
  const txt = textTable(head, cells).join("\n") + "\n";
  const md = [
    `| ${head.join(" | ")} |`,
    `| --- | --- |${withKind ? " --- |" : ""} ---: | ---: | ---: | ---: | ---: | ---: |${
      withOpen ? " ---: |".repeat(7) : ""
    }${withV2 ? " ---: | ---: |" : ""}${withLang ? " --- |" : ""}`,
    ...cells.map((c) => `| ${c.join(" | ")} |`),
  ].join("\n") + "\n";
  const csvCell = (s: string) => /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  const csvHead =
    `dataset,model,${
      withKind ? "kind," : ""
    }em,em_low,em_high,f1,f1_low,f1_high,bem,bem_low,bem_high` +
    (withOpen ? ",open_em,open_f1,top_k,top_k_em,top_k_f1,paragraph_recall,mrr" : "") +
    (withV2 ? ",has_ans_em,no_ans_em" : "") + (withLang ? ",lang" : "");
  const csv = [csvHead].concat(
    rows.map((r) =>
      [
        r.dataset,
        r.model,
        ...(withKind ? [r.kind ?? "squad"] : []),
        raw(r.em),
        ...ciRaw(r.emCi, true),
        noF1(r) ? "-" : raw(r.f1),
        ...ciRaw(r.f1Ci, !noF1(r)),
        raw(r.bem),
        ...ciRaw(r.bemCi, r.bem !== undefined),
        ...openCells(r.open, String),
        ...kindCells(r, raw),
      ].map(csvCell).join(",")
    ),
  ).join("\n") + "\n";
  return { txt, md, csv };
}

/** A row's value of `key` when it is a number from 0 to 1; else what is wrong with it. */
function unitScore(r: Record<string, unknown>, key: string): number | string {
  const v = r[key];
  if (typeof v === "number" && v >= 0 && v <= 1) return v;
  return v === undefined ? `no ${key}` : `${key} ${JSON.stringify(v)} is not a number from 0 to 1`;
}

/**
 * The per-question scores of a rows file, or `null` when there is no rows
 * file (a run folder from before rows were written) or it has no rows. The
 * file is read a line at a time (`io/text.ts` {@linkcode readLinesStrict}),
 * and a file that is not rows is an {@linkcode InputError} naming the file,
 * the line and what is wrong: a line that is not JSON or not an object, an
 * `em` that is not a number from 0 to 1, an `f1` that is neither that nor
 * `null` (regex answers) or is `null` in some rows only, a `bem` that is not
 * a number from 0 to 1 or is in some rows only; a byte that is not UTF-8 and
 * a line over 16 MiB are `readLinesStrict`'s. A file that cannot be read is a
 * `FileError`.
 */
function readRowScores(
  file: string,
): { em: Float64Array; f1: Float64Array | null; bem: Float64Array | null } | null {
  if (statRegularFile(file) === undefined) return null;
  const lines = readLinesStrict(file);
  const em: number[] = [];
  const f1: number[] = [];
  const bem: number[] = [];
  let noF1 = 0;
  let line = 0;
  const bad = (message: string) => new InputError({ file, where: `line ${line}`, message });
  for (const l of lines) {
    line++;
    if (l.trim() === "") continue;
    let r: unknown;
    try {
      r = JSON.parse(l);
    } catch {
      throw bad("invalid JSON");
    }
    if (typeof r !== "object" || r === null || Array.isArray(r)) {
      throw bad("a row is not an object");
    }
    const row = r as Record<string, unknown>;
    const e = unitScore(row, "em");
    if (typeof e === "string") throw bad(e);
    // `f1: null`: regex answers (CuratedTREC), which have EM only; all rows or none.
    const f = row.f1 === null ? null : unitScore(row, "f1");
    if (typeof f === "string") throw bad(`${f} (nor null, for regex answers)`);
    if (em.length > 0 && (f === null) !== (noF1 > 0)) {
      throw bad(
        f === null
          ? "f1 null where the rows before have an f1"
          : "an f1 where the rows before have null",
      );
    }
    const b = row.bem === undefined ? undefined : unitScore(row, "bem");
    if (typeof b === "string") throw bad(b);
    if (em.length > 0 && (b === undefined) !== (bem.length === 0)) {
      throw bad(
        b === undefined
          ? "no bem where the rows before have one"
          : "a bem where the rows before have none",
      );
    }
    em.push(e);
    if (f === null) noF1++;
    else f1.push(f);
    if (b !== undefined) bem.push(b);
  }
  if (em.length === 0) return null;
  return {
    em: Float64Array.from(em),
    f1: noF1 === 0 ? Float64Array.from(f1) : null,
    bem: bem.length === em.length ? Float64Array.from(bem) : null,
  };
}

/**
 * The 95 % paired bootstrap interval of the mean of `scores`, in percent
 * (B = {@linkcode SUMMARY_RESAMPLES}, seed {@linkcode SUMMARY_SEED}).
 *
 * @example
 * ```ts
 * import { summaryInterval } from "./summary.ts";
 * const [low, high] = summaryInterval([1, 1, 1, 1]);
 * if (low !== 100 || high !== 100) throw new Error();
 * ```
 */
export function summaryInterval(scores: ArrayLike<number>): Ci {
  const r = pairedBootstrap([scores], { resamples: SUMMARY_RESAMPLES, seed: SUMMARY_SEED });
  return [100 * r.systems[0].low, 100 * r.systems[0].high];
}

/** The HasAns/NoAns EM of a SQuAD v2.0 result file, or `null` when it has none. */
function v2Of(r: Record<string, unknown> | null): SummaryRow["v2"] {
  const v = r?.v2 as Record<string, unknown> | undefined;
  if (typeof v !== "object" || v === null) return null;
  const n = (k: string) => typeof v[k] === "number" ? v[k] as number : null;
  return { hasAnsEm: n("has_ans_exact_match"), noAnsEm: n("no_ans_exact_match") };
}

/** The open columns of a result file, or `null` when it has none. */
function openOf(r: Record<string, unknown> | null): OpenSummary | null {
  const o = r?.open as Record<string, unknown> | undefined;
  const keys = [
    "exact_match",
    "f1",
    "k",
    "top_k_exact_match",
    "top_k_f1",
    "paragraph_recall",
    "mrr",
  ];
  if (typeof o !== "object" || o === null || !keys.every((k) => typeof o[k] === "number")) {
    return null;
  }
  const n = (k: string) => o[k] as number;
  return {
    em: n("exact_match"),
    f1: n("f1"),
    k: n("k"),
    topkEm: n("top_k_exact_match"),
    topkF1: n("top_k_f1"),
    paragraphRecall: n("paragraph_recall"),
    mrr: n("mrr"),
  };
}

/**
 * The summary rows of a run, from its result files (`null` where a result
 * is missing), with the intervals from its rows files (`null` where those
 * are missing). A rows file that is there but is not rows throws an
 * {@linkcode InputError} (`<file>: line N: <what is wrong>`), one that
 * cannot be read a `FileError`.
 */
export function readSummary(plan: Plan): SummaryRow[] {
  const L = runLayout(plan.runDir);
  const rows: SummaryRow[] = [];
  for (const ds of plan.config.datasets) {
    for (const m of plan.config.models) {
      let r: Record<string, unknown> | null = null;
      try {
        r = JSON.parse(Deno.readTextFileSync(L.result(m.abbr, ds.abbr)));
      } catch { /* no result */ }
      const num = (k: string) => typeof r?.[k] === "number" ? r[k] as number : null;
      const withBem = ds.metrics.includes("bem");
      const scores = r === null ? null : readRowScores(L.rows(m.abbr, ds.abbr));
      const bemScores = scores?.bem
        ? ds.bem?.report === "score" ? scores.bem : scores.bem.map((b) => b > BEM_THRESHOLD ? 1 : 0)
        : null;
      rows.push({
        dataset: ds.abbr,
        model: m.abbr,
        em: num("exact_match"),
        f1: num("f1"),
        bem: withBem ? num("bem") : undefined,
        emCi: scores ? summaryInterval(scores.em) : null,
        f1Ci: scores?.f1 ? summaryInterval(scores.f1) : null,
        bemCi: !withBem ? undefined : bemScores ? summaryInterval(bemScores) : null,
        ...(ds.open !== undefined ? { open: openOf(r) } : {}),
        ...(ds.type !== undefined && ds.type !== "squad" ? { kind: ds.type } : {}),
        ...(ds.type !== undefined && rulesOfKind(ds.type) === "v2.0" ? { v2: v2Of(r) } : {}),
        ...(typeof r?.lang === "string" ? { lang: r.lang } : {}),
      });
    }
  }
  return rows;
}
