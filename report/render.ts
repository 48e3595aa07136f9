/**
 * `report.md` and `report.html` from the numbers of `report.json`: the same
 * tables in both (scores with per-question and clustered intervals, the
 * comparison with the baseline, its clustered intervals and p with the
 * MDE, ties and Holm / BH adjusted p-values, the rank intervals,
 * the breakdowns, the disagreement lists, each system's metric
 * disagreements (counts per kind and the most telling questions) and, with
 * labels, each metric's agreement with people and the label-corrected
 * accuracy; per kind, SQuAD v2.0's HasAns /
 * NoAns table, an open search's top-1 scores and top-k curve, and over the
 * XQuAD/MLQA datasets one table with a row per language and a column group
 * per system), and in the HTML the charts as inline SVG; each dataset
 * opens with its kind and what its scores were computed from (the
 * predictions against the data file and its sha256 with the kind's
 * official rules, and the rows files checked). A dataset without F1
 * (CuratedTREC's regular expressions) has no F1 columns. The page is self-contained (inline CSS, no script, no image,
 * font or style sheet from anywhere) and prints cleanly (`@media print`).
 * Every text from the inputs is escaped. With `--latex`, `report.tex`
 * ({@linkcode renderLatex}): a LaTeX tabular per dataset. `report --diff`'s
 * `report.md` and `report.html` ({@linkcode renderDiffMarkdown},
 * {@linkcode renderDiffHtml}): the provenance differences, the paired tests
 * and the changed questions of `diff.ts`.
 *
 * With `--search-error`, a "Search error" part before the datasets: the
 * split of the questions by the exact and each approximate search (under
 * the EM chart), recall@k of the exact top-1 (under the recall chart), and
 * each search's speed and memory (under the EM against q/s chart); in
 * `report.tex` one more table.
 *
 * @module
 */
import type { HarnessSystem } from "./harness.ts";
import type { Chart } from "./charts.ts";
import { type DisagreementKind, kindTitle } from "./disagree.ts";
import type { Agreement, LabelReport } from "./labels.ts";
import {
  type DiffJson,
  type DiffTest,
  type PairDiff,
  type ProvenanceChange,
  type ProvenanceDiff,
  shortValue,
} from "./diff.ts";
import type {
  BreakdownGroup,
  ClusterLevel,
  DatasetReport,
  Difference,
  Interval,
  Range,
  RankRow,
  ReportJson,
} from "./analysis.ts";
import type { SearchErrorReport, SearchErrorSetting, SearchSide } from "./search_error.ts";

/**
 * A p-value for a table: four decimals, or two significant digits in
 * exponent form below 0.0001.
 *
 * @example
 * ```ts
 * import { formatP } from "./render.ts";
 * if (formatP(1) !== "1.0000" || formatP(0.00001234) !== "1.2e-5") throw new Error();
 * ```
 */
export function formatP(p: number): string {
  return p >= 0.0001 ? p.toFixed(4) : p.toExponential(1);
}

const f2 = (x: number) => x.toFixed(2);
const signed = (x: number) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(2);
const ci = (iv: { low: number; high: number }) => `[${f2(iv.low)}, ${f2(iv.high)}]`;
const dci = (d: Range) => `[${signed(d.low)}, ${signed(d.high)}]`;
const byName = (by: ClusterLevel) => `CI by ${by}`;

/** A table: header and rows of plain-text cells, and which columns are numbers. */
interface Table {
  readonly head: readonly string[];
  readonly rows: readonly (readonly string[])[];
  readonly numeric: readonly boolean[];
}

const hasF1 = (r: DatasetReport) => r.systems.some((s) => s.f1 !== null);

function scoreTable(r: DatasetReport): Table {
  const bem = r.systems.some((s) => s.bem);
  const f1 = hasF1(r);
  const by = byName(r.cluster.by);
  const head = [
    "system",
    "answered",
    "EM",
    "95% CI",
    by,
    ...(f1 ? ["F1", "95% CI", by] : []),
  ];
  if (bem) head.push("BEM", "95% CI", by);
  const rows = r.systems.map((s) => {
    const c = s.cluster;
    const row = [
      s.name,
      String(s.answered),
      f2(s.em.value),
      ci(s.em),
      ci(c.em),
      ...(f1 ? (s.f1 && c.f1 ? [f2(s.f1.value), ci(s.f1), ci(c.f1)] : ["-", "-", "-"]) : []),
    ];
    if (bem) {
      row.push(...(s.bem && c.bem ? [f2(s.bem.value), ci(s.bem), ci(c.bem)] : ["-", "-", "-"]));
    }
    return row;
  });
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

function comparisonTable(r: DatasetReport): Table {
  const bem = r.comparisons.some((c) => c.bem);
  const f1 = r.comparisons.some((c) => c.f1);
  const head = [
    "system",
    "ΔEM",
    "95% CI",
    "p (rand.)",
    "p (McNemar)",
    ...(f1 ? ["ΔF1", "95% CI", "p (rand.)"] : []),
  ];
  if (bem) head.push("ΔBEM", "95% CI", "p (rand.)", "p (McNemar)");
  const rows = r.comparisons.map((c) => {
    const row = [
      c.system,
      signed(c.em.difference),
      dci(c.em),
      formatP(c.em.randomization_p),
      formatP(c.em.mcnemar_p!),
      ...(f1
        ? (c.f1
          ? [signed(c.f1.difference), dci(c.f1), formatP(c.f1.randomization_p)]
          : ["-", "-", "-"])
        : []),
    ];
    if (bem) {
      row.push(
        ...(c.bem
          ? [
            signed(c.bem.difference),
            dci(c.bem),
            formatP(c.bem.randomization_p),
            formatP(c.bem.mcnemar_p!),
          ]
          : ["-", "-", "-", "-"]),
      );
    }
    return row;
  });
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** A p-value, or `-` when it is not there. */
const pOr = (p: number | undefined) => p === undefined ? "-" : formatP(p);

/**
 * The clustered differences, power and ties: one row per system and metric
 * (EM, F1, BEM), with the clustered interval and p, the Holm and
 * Benjamini–Hochberg adjusted p-values (clustered, then per question), the
 * MDE at 80 % power and whether the two are tied.
 */
function clusterTable(r: DatasetReport): Table {
  const head = [
    "system",
    "metric",
    "Δ",
    byName(r.cluster.by),
    "p (clust.)",
    "Holm",
    "BH",
    "Holm (per q.)",
    "BH (per q.)",
    "MDE",
    "MDE (disc.)",
    "tied",
  ];
  const rows = r.comparisons.flatMap((c) =>
    (["em", "f1", "bem"] as const).flatMap((m) => {
      const d: Difference | null | undefined = c[m];
      if (!d) return [];
      return [[
        c.system,
        m.toUpperCase(),
        signed(d.difference),
        dci(d.cluster),
        formatP(d.cluster.randomization_p),
        pOr(d.cluster.holm_p),
        pOr(d.cluster.bh_p),
        pOr(d.holm_p),
        pOr(d.bh_p),
        f2(d.mde),
        d.mde_discordant === undefined ? "-" : f2(d.mde_discordant),
        d.tied ? "tied" : "no",
      ]];
    })
  );
  return { head, rows, numeric: head.map((_, i) => i > 1) };
}

/** A rank with its interval: `2 [1, 3]`. */
const rankCell = (x: RankRow) => `${x.rank} [${x.low}, ${x.high}]`;

/** The share of resamples ranked first, in percent. */
const firstCell = (x: RankRow) => `${(100 * x.first).toFixed(1)}%`;

/** The rank intervals (N ≥ 3): per system, by EM and F1. */
function rankTable(r: DatasetReport): Table {
  const k = r.ranks!;
  const head = [
    "system",
    "EM rank [95%]",
    "first (EM)",
    ...(k.f1 ? ["F1 rank [95%]", "first (F1)"] : []),
  ];
  const rows = k.em.map((e, i) => [
    e.system,
    rankCell(e),
    firstCell(e),
    ...(k.f1 ? [rankCell(k.f1[i]), firstCell(k.f1[i])] : []),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

function breakdownTable(label: string, groups: readonly BreakdownGroup[]): Table {
  const names = groups[0]?.systems.map((s) => s.name) ?? [];
  const bem = groups[0]?.systems.some((s) => s.bem) ?? false;
  const f1 = groups[0]?.systems.some((s) => s.f1) ?? false;
  const head = [
    label,
    "n",
    ...names.flatMap((n) => [
      `${n} EM`,
      ...(f1 ? [`${n} F1`] : []),
      ...(bem ? [`${n} BEM`] : []),
    ]),
  ];
  const rows = groups.map((g) => [
    g.group,
    String(g.questions),
    ...g.systems.flatMap((s) => [
      f2(s.em.value),
      ...(f1 ? [s.f1 ? f2(s.f1.value) : "-"] : []),
      ...(s.bem ? [f2(s.bem.value)] : []),
    ]),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

const answerCell = (
  a: { prediction: string | null; em: number; f1: number | null; bem?: number },
) =>
  `${a.prediction === null ? "(none)" : `“${a.prediction}”`} (EM ${a.em}${
    a.f1 === null ? "" : `, F1 ${f2(a.f1)}`
  }${a.bem === undefined ? "" : `, BEM ${f2(a.bem)}`})`;

/**
 * SQuAD v2.0's HasAns / NoAns table: per system the official script's
 * `HasAns_exact`, `HasAns_f1`, `HasAns_total`, `NoAns_exact`, `NoAns_f1`,
 * `NoAns_total`, with the bootstrap intervals of the answerability
 * breakdown.
 */
function v2Table(r: DatasetReport): Table {
  const groups = r.breakdowns.answerability;
  const at = (label: string, name: string) =>
    groups.find((g) => g.group === label)?.systems.find((s) => s.name === name);
  const cell = (v: number | undefined, iv: Interval | null | undefined) =>
    v === undefined ? ["-", "-"] : [f2(v), iv ? ci(iv) : "-"];
  const head = [
    "system",
    "HasAns EM",
    "95% CI",
    "HasAns F1",
    "95% CI",
    "HasAns n",
    "NoAns EM",
    "95% CI",
    "NoAns F1",
    "95% CI",
    "NoAns n",
  ];
  const rows = r.systems.map((s) => {
    const v = s.v2 ?? {};
    const h = at("HasAns", s.name);
    const n = at("NoAns", s.name);
    return [
      s.name,
      ...cell(v.HasAns_exact, h?.em),
      ...cell(v.HasAns_f1, h?.f1),
      String(v.HasAns_total ?? 0),
      ...cell(v.NoAns_exact, n?.em),
      ...cell(v.NoAns_f1, n?.f1),
      String(v.NoAns_total ?? 0),
    ];
  });
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** The open search's top-1 scores per system. */
function openTable(r: DatasetReport): Table {
  const o = r.open!;
  const head = ["system", "open EM", "95% CI", "open F1", "95% CI", `top-${o.k} accuracy`];
  const rows = o.systems.map((s) => [
    s.name,
    f2(s.em.value),
    ci(s.em),
    f2(s.f1.value),
    ci(s.f1),
    f2(s.curve[s.curve.length - 1] ?? 0),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** The open search's top-k curve: one row per k, one column per system. */
function curveTable(r: DatasetReport): Table {
  const o = r.open!;
  const head = ["k", ...o.systems.map((s) => s.name)];
  const rows = Array.from(
    { length: o.k },
    (_, i) => [String(i + 1), ...o.systems.map((s) => f2(s.curve[i]))],
  );
  return { head, rows, numeric: head.map(() => true) };
}

/** The language table: one row per XQuAD/MLQA dataset, an EM/F1 column group per system. */
function languageTable(report: ReportJson): Table {
  const names = report.language_systems;
  const head = [
    "language",
    "dataset",
    "n",
    ...names.flatMap((n) => [`${n} EM`, "95% CI", `${n} F1`, "95% CI"]),
  ];
  const rows = report.languages.map((l) => [
    l.lang,
    l.dataset,
    String(l.questions),
    ...l.systems.flatMap((s) =>
      s ? [f2(s.em.value), ci(s.em), f2(s.f1.value), ci(s.f1)] : ["-", "-", "-", "-"]
    ),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 1) };
}

/** Each system's logged harness metric against the official EM. */
function harnessTable(hs: readonly HarnessSystem[]): Table {
  const head = [
    "system",
    "log",
    "harness metric",
    "harness",
    "official EM",
    "harness only",
    "EM only",
  ];
  const rows = hs.map((h) => [
    h.name,
    h.format,
    h.metric,
    f2(h.harness),
    f2(h.em),
    String(h.harness_only),
    String(h.em_only),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 2) };
}

/** The questions on which a system's harness metric and the official EM differ. */
function harnessExampleTable(h: HarnessSystem): Table {
  const head = ["question", "gold answers", "answer", "harness", "EM"];
  const rows = h.examples.map((d) => [
    `${d.question} (${d.id})`,
    d.golds.map((g) => `“${g}”`).join(" · "),
    d.prediction === null ? "-" : `“${d.prediction}”`,
    String(d.harness),
    String(d.em),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 2) };
}

function disagreementTable(r: DatasetReport): Table {
  const names = r.systems.map((s) => s.name);
  const head = ["question", "gold answers", ...names, "F1 spread"];
  const rows = r.disagreements.map((d) => [
    `${d.question} (${d.id}, ${d.title})`,
    d.golds.map((g) => `“${g}”`).join(" · "),
    ...d.answers.map(answerCell),
    f2(d.spread),
  ]);
  return { head, rows, numeric: head.map((_, i) => i === head.length - 1) };
}

/** The counts of each kind of metric disagreement: a row per kind, a column per system. */
function kindCountTable(r: DatasetReport): Table {
  const m = r.metric_disagreements;
  const head = ["kind", "definition", ...m.systems.map((s) => s.system)];
  const cell = (n: number | null) => (n === null ? "-" : String(n));
  const rows = [
    ...m.kinds.map((k) => [
      k,
      kindTitle(k, m.f1_threshold),
      ...m.systems.map((s) => cell(s.counts[k])),
    ]),
    ["any", "questions under one kind at least", ...m.systems.map((s) => String(s.disagreeing))],
    ["questions", "all scored questions", ...m.systems.map((s) => String(s.questions))],
  ];
  return { head, rows, numeric: head.map((_, i) => i > 1) };
}

/** The most telling questions of each kind, per system (kinds with none are left out). */
function kindExampleTables(r: DatasetReport): { title: string; table: Table }[] {
  const m = r.metric_disagreements;
  const out: { title: string; table: Table }[] = [];
  const f1 = hasF1(r);
  for (const s of m.systems) {
    for (const k of m.kinds) {
      const items = s.examples[k as DisagreementKind] ?? [];
      const n = s.counts[k];
      if (items.length === 0 || n === null) continue;
      const bem = items.some((x) => x.bem !== undefined);
      out.push({
        title: `${s.system}: ${kindTitle(k, m.f1_threshold)} (${k}): ${n} question${
          n === 1 ? "" : "s"
        }${items.length < n ? `, the ${items.length} most telling` : ""}`,
        table: {
          head: [
            "question",
            "gold answers",
            "prediction",
            "EM",
            ...(f1 ? ["F1"] : []),
            ...(bem ? ["BEM"] : []),
            "gap",
          ],
          rows: items.map((x) => [
            `${x.question} (${x.id}${x.title ? `, ${x.title}` : ""})`,
            x.golds.length === 0 ? "(no answer)" : x.golds.map((g) => `“${g}”`).join(" · "),
            x.prediction === null ? "(none)" : `“${x.prediction}”`,
            String(x.em),
            ...(f1 ? [x.f1 === null ? "-" : f2(x.f1)] : []),
            ...(bem ? [x.bem === undefined ? "-" : f2(x.bem)] : []),
            f2(x.gap),
          ]),
          numeric: [false, false, false, true, ...(f1 ? [true] : []), ...(bem ? [true] : []), true],
        },
      });
    }
  }
  return out;
}

/** A percentage or `-`. */
const pctOr = (x: number | null | undefined) => (x === null || x === undefined ? "-" : f2(x));

/** Each metric's agreement with the labels: a row per system and metric. */
function agreementTable(l: LabelReport, t: number): Table {
  const head = [
    "system",
    "metric",
    "labelled",
    "TP",
    "FP",
    "FN",
    "TN",
    "accuracy",
    "κ",
    "precision",
    "recall",
    "agreement (all, est.)",
  ];
  const rows = l.systems.flatMap((s) =>
    ([["em", "EM"], ["f1", `F1 ≥ ${t}`], ["bem", "BEM > 0.5"]] as const).flatMap(([m, name]) => {
      const a: Agreement | null = s.agreement[m];
      if (!a) return [];
      return [[
        s.system,
        name,
        String(a.labelled),
        String(a.tp),
        String(a.fp),
        String(a.fn),
        String(a.tn),
        pctOr(a.accuracy),
        a.kappa === null ? "-" : a.kappa.toFixed(3),
        pctOr(a.precision),
        pctOr(a.recall),
        pctOr(s.corrected?.metrics[m]?.agreement),
      ]];
    })
  );
  return { head, rows, numeric: head.map((_, i) => i > 1) };
}

/** The label-corrected accuracy per system, with each metric's score and bias. */
function correctedTable(l: LabelReport, t: number): Table {
  const present = (["em", "f1", "bem"] as const).filter((m) =>
    l.systems.some((s) => s.agreement[m] !== null)
  );
  const label = { em: "EM", f1: `F1 ≥ ${t}`, bem: "BEM" };
  const head = [
    "system",
    "labelled",
    "corrected",
    "95% CI",
    "SE",
    ...present.flatMap((m) => [label[m], `${label[m]} bias`, "95% CI"]),
    "missing strata",
  ];
  const rows = l.systems.map((s) => {
    const c = s.corrected;
    return [
      s.system,
      String(s.labelled),
      c ? f2(c.value) : "-",
      c ? ci(c) : "-",
      c ? f2(c.se) : "-",
      ...present.flatMap((m) => {
        const x = c?.metrics[m];
        return x ? [f2(x.score), signed(x.bias.value), dci(x.bias)] : ["-", "-", "-"];
      }),
      s.missing.length === 0 ? "none" : s.missing.join("; "),
    ];
  });
  return { head, rows, numeric: head.map((_, i) => i > 0 && i < head.length - 1) };
}

/** Every system's strata: questions, labels, the share judged correct and its source. */
function strataTable(l: LabelReport): Table {
  const head = ["system", "stratum", "questions", "labelled", "correct", "judged correct", "from"];
  const rows = l.systems.flatMap((s) =>
    s.strata.map((x) => [
      s.system,
      x.stratum,
      String(x.questions),
      String(x.labelled),
      String(x.correct),
      pctOr(x.estimate),
      x.source,
    ])
  );
  return { head, rows, numeric: head.map((_, i) => i > 1 && i < head.length - 1) };
}

/** The F1 histograms as a table: a row per bin, a column per system. */
function f1HistogramTable(r: DatasetReport, bins: readonly string[]): Table {
  const head = ["F1", ...r.f1_histogram.map((h) => h.system)];
  const rows = bins.map((b, i) => [b, ...r.f1_histogram.map((h) => String(h.counts[i]))]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** BEM accuracy per F1 bin: a row per bin, two columns per system with BEM. */
function bemByF1Table(r: DatasetReport, bins: readonly string[]): Table {
  const b = r.bem_disagreements;
  const head = ["F1", ...b.flatMap((x) => [`${x.system} n`, `${x.system} BEM`])];
  const rows = bins.map((bin, i) => [
    bin,
    ...b.flatMap((x) => [String(x.by_f1[i]?.questions ?? 0), pctOr(x.by_f1[i]?.bem_accuracy)]),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** The sections of a dataset's metric disagreements and labels. */
function disagreementSections(
  r: DatasetReport,
  o: ReportJson["options"],
  chart: (suffix: string) => Chart[],
): Section[] {
  const m = r.metric_disagreements;
  const t = m.f1_threshold;
  const out: Section[] = [];
  if (m.kinds.length === 0) {
    out.push({
      title: "Metric disagreements",
      note: "Only one metric (EM) for these systems: nothing to compare.",
    });
  } else {
    out.push({
      title: "Metric disagreements",
      note:
        `Per system, the questions on which its metrics disagree: EM; F1 counted right at F1 ≥ ${t} (--f1-threshold)${
          m.kinds.includes("em0_bem1") ? "; BEM counted right above 0.5" : ""
        }${
          r.rules === "v2.0"
            ? "; and the no-answer decisions (a question with an answer left empty, or one without an answer answered: EM and F1 are 0 by the decision alone)"
            : ""
        }.${
          m.kinds.includes("f1hi_bem0") ? " Partial F1: 0 < F1 < 1." : ""
        } A question may fall under several kinds. Each list below shows the ${o.top} most telling: the largest gap between the two metrics that disagree first, then the largest |F1 − EM|, then the largest BEM margin |BEM − 0.5|, ties by question id.`,
      table: kindCountTable(r),
      charts: chart("-disagree"),
    });
    for (const x of kindExampleTables(r)) out.push({ title: x.title, table: x.table });
  }
  const l = r.labels;
  if (l) {
    const any = l.systems.some((s) => s.labelled > 0);
    out.push({
      title: "Agreement with people",
      note: any
        ? `Labels of ${l.file}: each metric's verdict against people's (correct or incorrect) on each system's labelled questions (mostly disagreeing ones, so these describe the metrics where they differ): TP metric right and people correct, FP metric right and people incorrect; accuracy, precision and recall of "correct" in percent; κ Cohen's kappa. Agreement (all, est.): the share of all questions on which it agrees with people, estimated by stratum (where the metrics all agree, people are taken to agree).`
        : `No label of ${l.file} is for this dataset.`,
      ...(any ? { table: agreementTable(l, t) } : {}),
    });
    if (any) {
      out.push({
        title: "Label-corrected accuracy",
        note:
          `The share of questions people would judge correct, in percent: π = Σ_h w_h p_h over the strata h of each system's questions (by its metrics' verdicts), w_h the stratum's share of questions and p_h the share of its labelled questions labelled correct (a stratum whose metrics all agree and has no labels counts at their verdict). 95% CI: a two-phase bootstrap over both the questions and the labelled sample (B = ${o.resamples}, seed ${o.seed}); SE: its closed form. A metric's bias: its score (the share it counts right) minus the corrected accuracy, in points. Missing: disagreeing strata without labels (no corrected score).`,
        table: correctedTable(l, t),
        charts: chart("-labels"),
      });
      out.push({ title: "Strata of the labels", table: strataTable(l) });
    }
  }
  return out;
}

interface Section {
  readonly title: string;
  readonly note?: string;
  readonly table?: Table;
  readonly charts?: readonly Chart[];
}

function sections(r: DatasetReport, o: ReportJson["options"], charts: readonly Chart[]): Section[] {
  const chart = (suffix: string) => charts.filter((c) => c.id.endsWith(suffix));
  const out: Section[] = [
    {
      title: "Scores",
      note: `${
        RULES_NOTE[r.rules]
      } Percent; 95% paired bootstrap percentile intervals (B = ${o.resamples}, seed ${o.seed}): over questions (95% CI) and over ${
        clusterWords(r)
      } (${byName(r.cluster.by)}: the paired cluster bootstrap).${
        r.systems.some((s) => s.bem) ? " BEM: share of questions with a BEM score above 0.5." : ""
      }`,
      table: scoreTable(r),
      charts: chart("-scores"),
    },
  ];
  for (const [i, h] of (r.harness_metric ?? []).entries()) {
    if (i === 0) {
      out.push({
        title: "The harness's own metric",
        note:
          "The per-question metric the harness logged with each answer (lm-evaluation-harness: exact_match of its samples file), in percent, beside the official-rules EM scored here on the same answers; harness only / EM only: questions right by one and wrong by the other (where the answer normalizations differ).",
        table: harnessTable(r.harness_metric!),
      });
    }
    if (h.examples.length > 0) {
      out.push({
        title:
          `${h.name}: where the harness and the official EM disagree (first ${h.examples.length})`,
        table: harnessExampleTable(h),
      });
    }
  }
  if (r.breakdowns.answerability.length > 0) {
    out.push({
      title: "HasAns / NoAns",
      note:
        "The official v2.0 script's subsets: questions with a gold answer (HasAns) and without (NoAns; right when the prediction is empty). EM and F1 in percent, with 95% bootstrap intervals over each subset.",
      table: v2Table(r),
    });
  }
  if (r.open) {
    out.push(
      {
        title: "Open search",
        note:
          `Top-1 of the open search (official v1.1 EM/F1, from the rows) with 95% bootstrap intervals, and top-${r.open.k} accuracy: the share of questions whose first EM-matching rank is at most ${r.open.k}.`,
        table: openTable(r),
        charts: chart("-topk"),
      },
      {
        title: "Top-k accuracy",
        note: "Percent of questions whose first EM-matching rank is at most k.",
        table: curveTable(r),
      },
    );
  }
  if (r.comparisons.length > 0) {
    out.push({
      title: `Against the baseline ${r.baseline}`,
      note:
        `Differences in points (system − ${r.baseline}) with paired bootstrap 95% intervals; p (rand.): two-sided paired approximate randomization (${o.shuffles} shuffles, seed ${o.seed}); p (McNemar): exact McNemar test on EM.`,
      table: comparisonTable(r),
    });
    out.push({
      title: "Clustered differences, power and ties",
      note: `The paired 95% interval of each difference and its randomization p over ${
        clusterWords(r)
      } (${r.cluster.by} clusters resampled and swapped whole; by question they equal the per-question numbers). Holm, BH: ${
        r.comparisons.length > 1
          ? `adjusted p-values over the ${r.comparisons.length} comparisons with ${r.baseline} on this metric (Holm: family-wise error; BH: false discovery rate), of the clustered p and of the per-question p`
          : "with one comparison nothing to adjust"
      }. MDE: the smallest difference in points the test detects with 80% power at α = 0.05 (from the per-question differences; clustering makes it larger); MDE (disc.): from the share of questions on which exactly one is right (EM, BEM). tied: the clustered interval holds 0.`,
      table: clusterTable(r),
    });
  } else {
    out.push({
      title: "Against the baseline",
      note: r.baseline === null
        ? `The baseline ${o.baseline} has no predictions on this dataset: no comparison.`
        : "Only the baseline: no comparison.",
    });
  }
  if (r.ranks) {
    out.push({
      title: "Ranks",
      note:
        `Each system's rank (1 = best; ties share the better rank) by the scores over all questions, its 95% bootstrap interval and the share of resamples in which it ranks first (resampling ${
          clusterWords(r)
        }, B = ${o.resamples}, seed ${o.seed}).`,
      table: rankTable(r),
    });
  }
  if (r.breakdowns.question_type.length > 0) {
    out.push({
      title: "By question type",
      note:
        "The question's first word among what, who, when, where, why, how, which (case ignored; whom/whose are other); EM and F1 in percent.",
      table: breakdownTable("type", r.breakdowns.question_type),
      charts: chart("-qtype"),
    });
  }
  if (r.breakdowns.answer_length.length > 0) {
    out.push({
      title: "By gold answer length",
      note:
        "Words in the first gold answer after SQuAD normalization (lower case, no punctuation, no a/an/the).",
      table: breakdownTable("words", r.breakdowns.answer_length),
    });
  }
  if (r.breakdowns.article.length > 0) {
    out.push({ title: "By article", table: breakdownTable("article", r.breakdowns.article) });
  }
  if (r.f1_histogram.length > 0) {
    out.push({
      title: "F1 histograms",
      note: "Questions per F1 bin (0 and 1 exactly, and four ranges between).",
      table: f1HistogramTable(r, o.f1_bins),
      charts: chart("-f1hist"),
    });
  }
  if (r.systems.length > 1) {
    out.push({
      title: `Where the systems disagree most (top ${r.disagreements.length})`,
      note: `Largest spread of ${
        hasF1(r) ? "F1" : "EM"
      } across the systems; ties in dataset order.`,
      table: disagreementTable(r),
    });
  }
  if (r.bem_disagreements.length > 0) {
    out.push({
      title: "BEM against F1",
      note:
        "Per F1 bin, the questions in it and the share of them with a BEM score above 0.5 (percent).",
      table: bemByF1Table(r, o.f1_bins),
      charts: chart("-bemf1"),
    });
  }
  out.push(...disagreementSections(r, o, chart));
  return out;
}

/** Bytes as MB (10⁶ bytes), one decimal, or `-`. */
const mbCell = (b: number | null) => b === null ? "-" : (b / 1e6).toFixed(1);

const pOrDash = (x: number | null) => x === null ? "-" : f2(x);

/** The split table: the four cells and the EM lost to search, per approximate search. */
function splitTable(r: SearchErrorReport): Table {
  const f1 = r.exact.f1 !== null;
  const head = [
    "search",
    "EM",
    ...(f1 ? ["F1"] : []),
    "right in both",
    "lost",
    "wrong in both",
    "saved",
    "EM lost to search",
    "lost / n",
    "saved / n",
    "of exact EM",
    ...(f1 ? ["ΔF1"] : []),
    "p (McNemar)",
  ];
  const rows = r.settings.map((s: SearchErrorSetting) => [
    s.name,
    f2(s.em),
    ...(f1 ? [pOrDash(s.f1)] : []),
    String(s.cells.right_both),
    String(s.cells.lost),
    String(s.cells.wrong_both),
    String(s.cells.saved),
    signed(s.em_lost_net),
    f2(s.em_lost),
    f2(s.em_saved),
    s.em_lost_of_exact === null ? "-" : `${signed(s.em_lost_of_exact)}%`,
    ...(f1 ? [s.f1_difference === null ? "-" : signed(s.f1_difference)] : []),
    formatP(s.mcnemar_p),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** Recall@k of the exact top-1 per approximate search. */
function recallTable(r: SearchErrorReport): Table {
  const head = ["search", ...r.recall_ks.map((k) => `recall@${k}`)];
  const rows = r.settings.map((s) => [s.name, ...s.recall.map((c) => f2(c.value))]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** Speed and memory of every search, the exact one first. */
function costTable(r: SearchErrorReport): Table {
  const head = [
    "search",
    "index",
    "EM",
    "q/s",
    "search s",
    "search CPU s",
    "q / CPU s",
    "load s",
    "threads",
    "ivf/ MB",
    "index MB",
    "peak RSS MB",
  ];
  const row = (s: SearchSide, cpu = s.seconds.search_cpu ?? null) => [
    s.name,
    s.index.kind === "ivf-pq"
      ? `ivf-pq nlist ${s.index.nlist} bpv ${s.index.bpv}${
        s.index.dense_dims === null ? "" : ` dense ${s.index.dense_dims}`
      }${s.nprobe === null ? " (--exact)" : ""}`
      : s.index.kind,
    f2(s.em),
    s.questions_per_second.toFixed(1),
    s.seconds.search.toFixed(1),
    cpu === null ? "-" : cpu.toFixed(1),
    cpu === null || cpu === 0 ? "-" : (s.questions_per_second * s.seconds.search / cpu).toFixed(1),
    s.seconds.load.toFixed(1),
    String(s.threads),
    mbCell(s.index.ivf_bytes),
    mbCell(s.index.bytes),
    mbCell(s.peak_rss_bytes),
  ];
  const rows = [row(r.exact), ...r.settings.map((s) => row(s))];
  return { head, rows, numeric: head.map((_, i) => i > 1) };
}

/** The search-error part: its sections (tables under their charts). */
function searchErrorSections(r: SearchErrorReport, charts: readonly Chart[]): Section[] {
  const chart = (id: string) => charts.filter((c) => c.id === id);
  const n = r.questions;
  return [
    {
      title: "Lost to search, and model error",
      note: `${r.exact.name}: EM ${f2(r.exact.em)}${
        r.exact.f1 === null ? "" : `, F1 ${f2(r.exact.f1)}`
      }; model error (questions it gets wrong) ${
        f2(r.exact.model_error)
      }% of the n = ${n} questions. Per approximate search, the questions right in both, lost to the search (exact right, approximate wrong), wrong in both and saved by chance (exact wrong, approximate right), adding up to n; EM lost to search = (lost − saved) / n (the exact EM − this EM, points); lost / n and saved / n in percent; of exact EM = (lost − saved) / the questions the exact search gets right; ΔF1 = this F1 − the exact F1; p (McNemar): exact two-sided test of lost against saved.`,
      table: splitTable(r),
      charts: chart("search-error-em"),
    },
    {
      title: "Recall@k of the exact top-1",
      note:
        `Percent of the ${r.answered} questions the exact search answers whose exact top-1 phrase (paragraph, phrase index) is among the first k ranks of the approximate search.`,
      table: recallTable(r),
      charts: chart("search-error-recall"),
    },
    {
      title: "Speed and memory",
      note:
        "From each search's record (<stem>.search.json): q/s = questions answered / search seconds (the search and the writing of its predictions and top-k records, the index already open); search CPU s = the CPU seconds of the search (user + system, all its threads), q / CPU s = questions answered per CPU second (on a machine shared with other work, steadier than q/s); load s = opening the index; ivf/ MB = the IVF-PQ files (lists, codes, quantizers) on disk, index MB = all the index's files (its exact vectors included), peak RSS = the process's peak resident set (MB = 10⁶ bytes).",
      table: costTable(r),
      charts: chart("search-error-speed"),
    },
  ];
}

/** What the search-error part was computed from. */
const searchErrorIntro = (r: SearchErrorReport) =>
  `The same question vectors searched exactly (${r.exact.predictions}) and approximately (${
    r.settings.map((s) => s.predictions).join(", ")
  }), on ${r.dataset}: ${r.questions} questions; EM and F1 recomputed from each search's predictions against ${r.data} (sha256 ${r.data_sha256}) with the ${
    RULES_NAME[r.rules]
  } rules.`;

/** The clusters of a dataset in words: `2,067 paragraphs`. */
const clusterWords = (r: DatasetReport) =>
  `${r.cluster.clusters.toLocaleString("en-US")} ${r.cluster.by}${
    r.cluster.clusters === 1 ? "" : "s"
  }`;

const mdCell = (s: string) =>
  s.replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");

function mdTable(t: Table): string {
  const lines = [
    `| ${t.head.map(mdCell).join(" | ")} |`,
    `| ${t.numeric.map((n) => (n ? "---:" : "---")).join(" | ")} |`,
    ...t.rows.map((r) => `| ${r.map(mdCell).join(" | ")} |`),
  ];
  return lines.join("\n");
}

/**
 * What the scores of a dataset were computed from: the predictions against
 * the data file (with its sha256), and which rows files were checked.
 */
function provenance(r: DatasetReport): string {
  const withRows = r.systems.filter((s) => s.rows !== null);
  const rows = withRows.length === 0
    ? "no system has per-question rows."
    : `the per-question rows of ${
      withRows.map((s) => `${s.name} (${s.rows})`).join(", ")
    } were checked against them question by question (prediction, gold answers, EM, F1)${
      withRows.some((s) => s.bem) ? "; BEM comes from those rows" : ""
    }.`;
  const f1 = hasF1(r) ? "EM and F1" : "EM";
  const kind = `${KIND_NAME[r.kind]}${r.lang ? ` (${r.lang})` : ""}`;
  return `${kind}, ${r.questions} questions${
    r.rules === "v2.0" ? " with a prediction" : ""
  }. ${f1} recomputed from each system's predictions against ${r.data} (sha256 ${r.data_sha256}) with the ${
    RULES_NAME[r.rules]
  } fold that evaluate uses; ${rows}`;
}

const KIND_NAME: Readonly<Record<DatasetReport["kind"], string>> = {
  squad: "SQuAD v1.1",
  squad2: "SQuAD v2.0",
  mrqa: "MRQA",
  xquad: "XQuAD",
  mlqa: "MLQA",
  open: "open-domain QA",
  jsonl: "generic question set",
};

const RULES_NAME: Readonly<Record<DatasetReport["rules"], string>> = {
  "v1.1": "official SQuAD v1.1",
  "v2.0": "official SQuAD v2.0",
  "MRQA": "mrqa_official_eval.py",
  "MLQA": "mlqa_evaluation_v1.py",
  "open-domain": "open-domain top-1 (DrQA/DPR)",
};

const RULES_NOTE: Readonly<Record<DatasetReport["rules"], string>> = {
  "v1.1": "SQuAD v1.1 EM and F1.",
  "v2.0":
    "SQuAD v2.0 EM (exact) and F1 over the questions with a prediction; no-answer questions are right when the prediction is empty.",
  "MRQA": "MRQA 2019 EM and F1 (best over the answers).",
  "MLQA": "MLQA EM and F1 in the set's language (its articles and punctuation removed).",
  "open-domain":
    "Open-domain top-1 EM and F1 (best over the gold answers; regular-expression answers: EM only).",
};

const LANG_NOTE =
  "XQuAD and MLQA sets, one row per language: each system's EM and F1 (mlqa_evaluation_v1.py in that language), in percent, with 95% bootstrap intervals.";

const intro = (o: ReportJson["options"]) =>
  o.baseline === ""
    ? "Generated by `deno task report` (phraseval), with --search-error only (no INPUT)."
    : `Generated by \`deno task report\` (phraseval). Baseline: ${o.baseline}. Bootstrap: B = ${o.resamples}, seed ${o.seed}; randomization: ${o.shuffles} shuffles.`;

/** `report.md`: every table of the report in Markdown (no charts). */
export function renderMarkdown(report: ReportJson): string {
  const parts = ["# Report", "", intro(report.options), ""];
  if (report.search_error) {
    const se = report.search_error;
    parts.push("## Search error", "", searchErrorIntro(se), "");
    for (const s of searchErrorSections(se, [])) {
      parts.push(`### ${s.title}`, "", s.note!, "", mdTable(s.table!), "");
    }
  }
  if (report.languages.length > 0) {
    parts.push("## By language", "", LANG_NOTE, "", mdTable(languageTable(report)), "");
  }
  for (const r of report.datasets) {
    parts.push(`## ${r.name}`, "", provenance(r), "");
    for (const s of sections(r, report.options, [])) {
      if (!s.table && !s.note) continue;
      parts.push(`### ${s.title}`, "");
      if (s.note) parts.push(s.note, "");
      if (s.table) parts.push(mdTable(s.table), "");
    }
  }
  return parts.join("\n");
}

/**
 * HTML-escapes text (`&`, `<`, `>`, `"`, `'`).
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./render.ts";
 * if (escapeHtml('<a href="x">') !== "&lt;a href=&quot;x&quot;&gt;") throw new Error();
 * ```
 */
export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  ).replace(/'/g, "&#39;");
}

function htmlTable(t: Table): string {
  const cls = (i: number) => (t.numeric[i] ? ' class="num"' : "");
  return [
    "<table>",
    `<thead><tr>${
      t.head.map((h, i) => `<th${cls(i)}>${escapeHtml(h)}</th>`).join("")
    }</tr></thead>`,
    "<tbody>",
    ...t.rows.map((r) =>
      `<tr>${r.map((c, i) => `<td${cls(i)}>${escapeHtml(c)}</td>`).join("")}</tr>`
    ),
    "</tbody>",
    "</table>",
  ].join("\n");
}

const CSS = `
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px; padding: 0 1rem; color: #1b1b1b; background: #fff; line-height: 1.4; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.3rem; border-bottom: 2px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
p.note { color: #555; font-size: 0.9rem; margin: 0.2rem 0 0.6rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.4rem 0 1rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.2rem 0.45rem; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 0.6rem 0 1.2rem; overflow-x: auto; }
figcaption { font-size: 0.85rem; color: #555; margin-bottom: 0.2rem; }
figure svg { max-width: 100%; height: auto; }
@media print {
  body { margin: 0; max-width: none; font-size: 10pt; color: #000; }
  h2 { break-before: page; }
  h2:first-of-type { break-before: auto; }
  h3, figcaption { break-after: avoid; }
  table, figure { break-inside: avoid; }
  table { font-size: 8pt; }
  tbody tr:nth-child(even) { background: none; }
  figure { overflow: visible; }
}
`;

/**
 * `report.html`: the tables and the charts (inline SVG, one `<svg>` per
 * chart), with inline CSS and nothing to fetch.
 */
export function renderHtml(
  report: ReportJson,
  charts: readonly (readonly Chart[])[],
  searchErrorCharts: readonly Chart[] = [],
): string {
  const body: string[] = [
    `<h1>Report</h1>`,
    `<p class="note">${escapeHtml(intro(report.options))}</p>`,
  ];
  const section = (s: Section) => {
    body.push(`<h3>${escapeHtml(s.title)}</h3>`);
    if (s.note) body.push(`<p class="note">${escapeHtml(s.note)}</p>`);
    for (const c of s.charts ?? []) {
      body.push(
        `<figure id="${c.id}"><figcaption>${escapeHtml(c.title)}</figcaption>${c.svg}</figure>`,
      );
    }
    if (s.table) body.push(htmlTable(s.table));
  };
  if (report.search_error) {
    const se = report.search_error;
    body.push(
      "<h2>Search error</h2>",
      `<p class="note">${escapeHtml(searchErrorIntro(se))}</p>`,
    );
    for (const s of searchErrorSections(se, searchErrorCharts)) section(s);
  }
  if (report.languages.length > 0) {
    body.push(
      "<h2>By language</h2>",
      `<p class="note">${escapeHtml(LANG_NOTE)}</p>`,
      htmlTable(languageTable(report)),
    );
  }
  report.datasets.forEach((r, d) => {
    body.push(
      `<h2>${escapeHtml(r.name)}</h2>`,
      `<p class="note">${escapeHtml(provenance(r))}</p>`,
    );
    for (const s of sections(r, report.options, charts[d] ?? [])) section(s);
  });
  return [
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    // Nothing may be fetched, whatever the page holds.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    "<title>phraseval report</title>",
    `<style>${CSS}</style>`,
    "</head>",
    "<body>",
    ...body,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

/**
 * Escapes text for LaTeX (outside math): `\ { } $ & # ^ _ % ~` become
 * their commands, and a few non-ASCII signs used in names (−, Δ, …) their
 * LaTeX forms.
 *
 * @example
 * ```ts
 * import { escapeLatex } from "./render.ts";
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
 * import { renderLatex } from "./render.ts";
 * import type { ReportJson } from "./analysis.ts";
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
 * candidates, EM, the four cells, the EM lost to search, recall@1 and
 * questions per second; the exact search's EM and model error in the
 * caption.
 */
function latexSearchError(r: SearchErrorReport): string {
  const cols = [
    "nprobe",
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

// ---------------------------------------------------------------------------
// report --diff
// ---------------------------------------------------------------------------

/**
 * A provenance diff as a table: key, A's value, B's value (location flags
 * last); `code` wraps the values in backticks (Markdown, where `<run>`
 * would be taken for a tag).
 */
function provenanceTable(d: ProvenanceDiff, code: boolean): Table {
  const v = (x: string) => code ? `\`${x.replace(/`/g, "'")}\`` : x;
  const row = (c: ProvenanceChange, where: boolean) => [
    where ? `${c.key} (where written)` : c.key,
    v(shortValue(c.a, "a" in c)),
    v(shortValue(c.b, "b" in c)),
  ];
  return {
    head: ["key", "A", "B"],
    rows: [...d.changed.map((c) => row(c, false)), ...d.location.map((c) => row(c, true))],
    numeric: [false, false, false],
  };
}

/** EM and F1 of A and B, B − A with its intervals and p-values, and the up/down counts. */
function diffTestTable(p: PairDiff): Table {
  const by = p.em.cluster.by;
  const row = (name: string, t: DiffTest) => [
    name,
    f2(t.a),
    f2(t.b),
    signed(t.difference),
    dci(t),
    formatP(t.randomization_p),
    dci(t.cluster),
    formatP(t.cluster.randomization_p),
    String(t.up),
    String(t.down),
    t.mcnemar_p !== undefined ? formatP(t.mcnemar_p) : "-",
  ];
  return {
    head: [
      "metric",
      "A",
      "B",
      "B − A",
      "95% CI",
      "p (rand.)",
      byName(by),
      `p by ${by}`,
      "up",
      "down",
      "p (McNemar)",
    ],
    rows: [row("EM", p.em), ...(p.f1 ? [row("F1", p.f1)] : [])],
    numeric: [false, true, true, true, true, true, true, true, true, true, true],
  };
}

/** The first `top` changed questions of a pair. */
function changedTable(p: PairDiff, top: number): Table {
  const withF1 = p.f1 !== null;
  return {
    head: ["id", "question", "gold", "A", "B", "EM A→B", ...(withF1 ? ["F1 A→B"] : [])],
    rows: p.changed.slice(0, top).map((q) => [
      q.id,
      q.question,
      q.golds[0] ?? "",
      q.a ?? "(none)",
      q.b ?? "(none)",
      `${q.em_a}→${q.em_b}`,
      ...(withF1 ? [`${f2(q.f1_a ?? 0)}→${f2(q.f1_b ?? 0)}`] : []),
    ]),
    numeric: [false, false, false, false, false, true, ...(withF1 ? [true] : [])],
  };
}

/** The sections of a diff report: a title, a note, a table (each optional but the title). */
function diffSections(
  d: DiffJson,
  code: boolean,
): { level: 2 | 3; title: string; note?: string; table?: Table }[] {
  const out: { level: 2 | 3; title: string; note?: string; table?: Table }[] = [];
  const tag = (name: string) => code ? `\`<${name}>\`` : `<${name}>`;
  const n = d.provenance_diff.changed.length;
  out.push({
    level: 2,
    title: "Provenance",
    note: `${n} key${n === 1 ? "" : "s"} of the two run blocks differ${
      n === 1 ? "s" : ""
    } (flags, tool, normalizer, machine, seeds, config after inheritance); each run folder's own path is written ${
      tag("run")
    } and this repository's ${tag("repo")} before they are compared.`,
    ...(n + d.provenance_diff.location.length > 0
      ? { table: provenanceTable(d.provenance_diff, code) }
      : {}),
  });
  for (const p of d.pairs) {
    const who = p.system_a === p.system_b ? p.system_a : `${p.system_a} → ${p.system_b}`;
    out.push({
      level: 2,
      title: `${who} on ${p.dataset}`,
      note: `${p.questions} questions; ${p.answers_changed} answers changed (${
        (100 * p.answers_changed / p.questions).toFixed(2)
      }%). Scored against ${p.data} (sha256 ${p.data_sha256}).`,
    });
    const m = p.provenance.changed.length;
    out.push({
      level: 3,
      title: "System provenance",
      note: `${m} key${m === 1 ? "" : "s"} of the two systems' entries differ${
        m === 1 ? "s" : ""
      } (dataset, encoder and model files, dumps, prediction and rows files).`,
      ...(m > 0 ? { table: provenanceTable(p.provenance, code) } : {}),
    });
    out.push({
      level: 3,
      title: "Scores and paired tests",
      note:
        `B − A in points with the paired bootstrap 95% interval and approximate-randomization p, per question and by ${p.em.cluster.by} (${p.em.cluster.clusters} clusters); up/down: questions whose score rose/fell (EM: gained/lost).`,
      table: diffTestTable(p),
    });
    if (p.changed.length > 0) {
      const k = Math.min(d.options.top, p.changed.length);
      out.push({
        level: 3,
        title: "Changed questions",
        note:
          `${k} of the ${p.changed.length} questions whose answer or score changed, largest F1 change first (report.json lists them all).`,
        ...(k > 0 ? { table: changedTable(p, d.options.top) } : {}),
      });
    }
  }
  if (d.unpaired.a.length + d.unpaired.b.length > 0) {
    out.push({
      level: 2,
      title: "Without a partner",
      note: `A: ${d.unpaired.a.join(", ") || "-"}. B: ${d.unpaired.b.join(", ") || "-"}.`,
    });
  }
  return out;
}

const diffIntro = (d: DiffJson) =>
  `Generated by \`deno task report --diff\` (phraseval). A: ${d.a}. B: ${d.b}. Paired tests of B − A: bootstrap B = ${d.options.resamples}, seed ${d.options.seed}; randomization: ${d.options.shuffles} shuffles.`;

/** `report.md` of `report --diff`: the provenance differences, scores, tests, changed questions. */
export function renderDiffMarkdown(d: DiffJson): string {
  const parts = ["# Diff of two runs", "", diffIntro(d), ""];
  for (const s of diffSections(d, true)) {
    parts.push(`${"#".repeat(s.level)} ${s.title}`, "");
    if (s.note) parts.push(s.note, "");
    if (s.table) parts.push(mdTable(s.table), "");
  }
  return parts.join("\n");
}

/** `report.html` of `report --diff`: the tables of {@linkcode renderDiffMarkdown}, self-contained. */
export function renderDiffHtml(d: DiffJson): string {
  const body = [`<h1>Diff of two runs</h1>`, `<p class="note">${escapeHtml(diffIntro(d))}</p>`];
  for (const s of diffSections(d, false)) {
    body.push(`<h${s.level}>${escapeHtml(s.title)}</h${s.level}>`);
    if (s.note) body.push(`<p class="note">${escapeHtml(s.note)}</p>`);
    if (s.table) body.push(htmlTable(s.table));
  }
  return [
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    "<title>phraseval diff</title>",
    `<style>${CSS}</style>`,
    "</head>",
    "<body>",
    ...body,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}
