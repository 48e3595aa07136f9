/**
 * The summary of a run: one row per (dataset, model) with EM, F1 and BEM
 * from the result files, as txt (aligned), Markdown and CSV.
 *
 * @module
 */
import { runLayout } from "./layout.ts";
import { textTable } from "./table.ts";
import type { Plan } from "./task.ts";

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
}

/**
 * The summary table as txt (aligned), Markdown and CSV. A metric that is not
 * configured is `-`; a missing result is `n/a`.
 *
 * @example
 * ```ts
 * import { formatSummary } from "./summary.ts";
 * const s = formatSummary([{ dataset: "d", model: "m", em: 50, f1: 60.5, bem: undefined }]);
 * if (s.csv !== "dataset,model,em,f1,bem\nd,m,50,60.5,-\n") throw new Error(s.csv);
 * ```
 */
export function formatSummary(rows: readonly SummaryRow[]): {
  txt: string;
  md: string;
  csv: string;
} {
  const head = ["dataset", "model", "EM", "F1", "BEM"];
  const fmt = (v: number | null | undefined) =>
    v === undefined ? "-" : v === null ? "n/a" : v.toFixed(2);
  const raw = (v: number | null | undefined) =>
    v === undefined ? "-" : v === null ? "n/a" : String(v);
  const cells = rows.map((r) => [r.dataset, r.model, fmt(r.em), fmt(r.f1), fmt(r.bem)]);
  const txt = textTable(head, cells).join("\n") + "\n";
  const md = [
    `| ${head.join(" | ")} |`,
    `| --- | --- | ---: | ---: | ---: |`,
    ...cells.map((c) => `| ${c.join(" | ")} |`),
  ].join("\n") + "\n";
  const csvCell = (s: string) => /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  const csv = ["dataset,model,em,f1,bem"].concat(
    rows.map((r) => [r.dataset, r.model, raw(r.em), raw(r.f1), raw(r.bem)].map(csvCell).join(",")),
  ).join("\n") + "\n";
  return { txt, md, csv };
}

/** The summary rows of a run, from its result files (`null` where a result is missing). */
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
      rows.push({
        dataset: ds.abbr,
        model: m.abbr,
        em: num("exact_match"),
        f1: num("f1"),
        bem: ds.metrics.includes("bem") ? num("bem") : undefined,
      });
    }
  }
  return rows;
}
