/**
 * `report.tex` (`--latex`): a LaTeX tabular per dataset, and the
 * search-error table, to `\\input` into a paper.
 *
 * @module
 */
import type { DatasetReport, Range, ReportJson } from "./report_json.ts";
import type { SearchErrorReport } from "./search_error.ts";
import { formatP, hasF1, KIND_NAME } from "./tables.ts";

/**
 * Escapes text for LaTeX (outside math): `\ { } $ & # ^ _ % ~` become
 * their commands, and a few non-ASCII signs used in names (−, Δ, …) their
 * LaTeX forms.
 *
 * @example
 * ```ts
 * import { escapeLatex } from "./latex.ts";
 * if (escapeLatex("piqa_lstm+sparse 100%") !== "piqa\\_lstm+sparse 100\\%") throw new Error();
 * if (escapeLatex("a\\b{c}") !== "a\\textbackslash{}b\\{c\\}") throw new Error();
 * ```
 */
export function escapeLatex(s: string): string {
  return s.replace(
    /[\\{}$&#^_%~]/g,
    (c) =>
      c === "\\"
        ? "\\textbackslash{}"
        : c === "^"
        ? "\\textasciicircum{}"
        : c === "~"
        ? "\\textasciitilde{}"
        : `\\${c}`,
  ).replace(/\s*\n\s*/g, " ");
}

/** A number for LaTeX: two decimals, the minus sign in math mode. */
const tex2 = (x: number) => (x < 0 ? `$-$${Math.abs(x).toFixed(2)}` : x.toFixed(2));

/** A signed difference for LaTeX: `+3.95`, `$-$14.25`, `$\pm$0.00`. */
const texSigned = (x: number) => (x > 0 ? "+" : x < 0 ? "$-$" : "$\\pm$") + Math.abs(x).toFixed(2);

/** A p-value for LaTeX ({@linkcode formatP}, exponent as `$\times 10^{-5}$`). */
const texP = (p: number | undefined) => {
  if (p === undefined) return "--";
  const s = formatP(p);
  const m = s.match(/^([0-9.]+)e([+-]?[0-9]+)$/);
  return m ? `$${m[1]}\\times 10^{${Number(m[2])}}$` : s;
};

/**
 * One dataset's LaTeX tabular: per system EM and F1 with the clustered
 * 95 % interval, the difference with the baseline with its clustered
 * interval and clustered randomization p, the Holm / BH adjusted clustered
 * p (two or more comparisons), and the rank interval (by F1, else EM; three
 * or more systems).
 */
function latexTable(r: DatasetReport, o: ReportJson["options"]): string {
  const f1 = hasF1(r);
  const adjust = r.comparisons.length > 1;
  const rank = r.ranks !== undefined;
  const rankBy = r.ranks?.f1 ? "F1" : "EM";
  const metrics = f1 ? (["em", "f1"] as const) : (["em"] as const);
  const cols = [
    "System",
    "EM [95\\% CI]",
    ...(f1 ? ["F1 [95\\% CI]"] : []),
    ...metrics.flatMap((m) => [
      `$\\Delta$${m.toUpperCase()} [95\\% CI]`,
      "$p$",
      ...(adjust ? ["Holm", "BH"] : []),
    ]),
    ...(rank ? [`Rank (${rankBy}) [95\\%]`] : []),
  ];
  const iv = (v: number, x: Range) => `${tex2(v)} [${tex2(x.low)}, ${tex2(x.high)}]`;
  const rows = r.systems.map((s, i) => {
    const c = r.comparisons.find((x) => x.system === s.name);
    const cells = [
      escapeLatex(s.name) + (s.name === r.baseline ? " (baseline)" : ""),
      iv(s.em.value, s.cluster.em),
      ...(f1 ? [s.f1 && s.cluster.f1 ? iv(s.f1.value, s.cluster.f1) : "--"] : []),
      ...metrics.flatMap((m) => {
        const d = c?.[m];
        if (!d) return ["--", "--", ...(adjust ? ["--", "--"] : [])];
        return [
          `${texSigned(d.difference)} [${texSigned(d.cluster.low)}, ${texSigned(d.cluster.high)}]`,
          texP(d.cluster.randomization_p),
          ...(adjust ? [texP(d.cluster.holm_p), texP(d.cluster.bh_p)] : []),
        ];
      }),
    ];
    if (rank) {
      const x = (r.ranks!.f1 ?? r.ranks!.em)[i];
      cells.push(`${x.rank} [${x.low}, ${x.high}]`);
    }
    return `${cells.join(" & ")} \\\\`;
  });
  const how = r.cluster.by === "question"
    ? "bootstrap and randomization over questions"
    : `cluster bootstrap and randomization over ${
      r.cluster.clusters.toLocaleString("en-US").replace(/,/g, "{,}")
    } ${r.cluster.by}s`;
  const caption = `${
    escapeLatex(r.name)
  }: ${r.questions} questions; 95\\% intervals and $p$ by the paired ${how} (B = ${o.resamples}, ${o.shuffles} shuffles, seed ${o.seed})${
    r.baseline ? `; $\\Delta$: system $-$ ${escapeLatex(r.baseline)}` : ""
  }${adjust ? "; Holm, BH: adjusted over the comparisons with it" : ""}.`;
  return [
    `% ${r.name.replace(/\s+/g, " ")} (${
      KIND_NAME[r.kind]
    }), clusters: ${r.cluster.by} (${r.cluster.clusters})`,
    "\\begin{table}[ht]",
    "\\centering",
    "\\small",
    `\\begin{tabular}{l${"r".repeat(cols.length - 1)}}`,
    "\\hline",
    `${cols.join(" & ")} \\\\`,
    "\\hline",
    ...rows,
    "\\hline",
    "\\end{tabular}",
    `\\caption{${caption}}`,
    "\\end{table}",
  ].join("\n");
}

/**
 * `report.tex`: one LaTeX `table` per dataset (plain `tabular`, `\hline`
 * rules, no package beyond LaTeX itself), per system EM and F1 with their
 * clustered 95 % intervals, the difference with the baseline with its
 * clustered interval and p, Holm / BH adjusted p-values (three or more
 * systems) and the rank interval, to `\input` into a paper.
 *
 * @example
 * ```ts
 * import { renderLatex } from "./latex.ts";
 * import type { ReportJson } from "./report_json.ts";
 * const options = { resamples: 10, shuffles: 9, seed: 0, baseline: "A" };
 * const tex = renderLatex({ options, datasets: [] } as unknown as ReportJson);
 * if (!tex.startsWith("% Generated by phraseval's report. Baseline: A.")) throw new Error(tex);
 * ```
 */
export function renderLatex(report: ReportJson): string {
  const o = report.options;
  return [
    o.baseline === ""
      ? "% Generated by phraseval's report, with --search-error only (no INPUT)."
      : `% Generated by phraseval's report. Baseline: ${
        o.baseline.replace(/\s+/g, " ")
      }. Bootstrap: B = ${o.resamples}, seed ${o.seed}; randomization: ${o.shuffles} shuffles.`,
    ...(report.search_error ? [latexSearchError(report.search_error)] : []),
    ...report.datasets.map((r) => latexTable(r, o)),
    "",
  ].join("\n\n");
}

/**
 * The search-error table for LaTeX: per approximate search its nprobe,
 * adaptive probing's tau (a column only when a search had one; `--` for
 * the others), candidates, EM, the four cells, the EM lost to search,
 * recall@1 and questions per second; the exact search's EM and model error
 * in the caption.
 */
function latexSearchError(r: SearchErrorReport): string {
  const taus = r.settings.some((s) => s.probe_tau !== undefined);
  const cols = [
    "nprobe",
    ...(taus ? ["$\\tau$"] : []),
    "cand.",
    "EM",
    "both right",
    "lost",
    "both wrong",
    "saved",
    "EM lost",
    "R@1",
    "q/s",
  ];
  const rows = r.settings.map((s) =>
    [
      String(s.nprobe),
      ...(taus ? [s.probe_tau === undefined ? "--" : String(s.probe_tau)] : []),
      String(s.candidates),
      tex2(s.em),
      String(s.cells.right_both),
      String(s.cells.lost),
      String(s.cells.wrong_both),
      String(s.cells.saved),
      texSigned(s.em_lost_net),
      tex2(s.recall[0]?.value ?? 0),
      s.questions_per_second.toFixed(0),
    ].join(" & ") + " \\\\"
  );
  const caption = `${escapeLatex(r.dataset)}: search error of the approximate searches against ` +
    `the exact one (EM ${tex2(r.exact.em)}, model error ${
      tex2(r.exact.model_error)
    }\\%; n = ${r.questions}). EM lost: (lost $-$ saved) / n in points; R@1: percent of ` +
    "questions whose exact top-1 phrase is the approximate top-1.";
  return [
    `% search error: ${r.dataset.replace(/\s+/g, " ")}`,
    "\\begin{table}[ht]",
    "\\centering",
    "\\small",
    `\\begin{tabular}{${"r".repeat(cols.length)}}`,
    "\\hline",
    `${cols.join(" & ")} \\\\`,
    "\\hline",
    ...rows,
    "\\hline",
    "\\end{tabular}",
    `\\caption{${caption}}`,
    "\\end{table}",
  ].join("\n");
}
