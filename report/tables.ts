/**
 * The content of a report, whatever its format: the tables of a dataset
 * (scores with per-question and clustered intervals, the comparison with
 * the baseline, its clustered intervals and p with the MDE, ties and Holm /
 * BH adjusted p-values, the rank intervals, the breakdowns, the
 * disagreement lists, each system's metric disagreements and, with labels,
 * each metric's agreement with people and the label-corrected accuracy;
 * per kind, SQuAD v2.0's HasAns / NoAns table, an open search's top-1
 * scores and top-k curve; over the XQuAD/MLQA datasets one table with a
 * row per language), gathered into titled sections with their notes and
 * charts; what each dataset's scores were computed from; and the number
 * formats the tables share. `markdown.ts`, `html.ts` and `latex.ts` write
 * them out.
 *
 * @module
 */
import type { HarnessSystem } from "./harness.ts";
import type { Chart } from "./charts.ts";
import { type DisagreementKind, kindTitle } from "./disagree.ts";
import type { Agreement, LabelReport } from "./labels.ts";
import type { ClusterLevel } from "./clustering.ts";
import type {
  BreakdownGroup,
  DatasetReport,
  Difference,
  Interval,
  Range,
  RankRow,
  ReportJson,
} from "./report_json.ts";

/**
 * A p-value for a table: four decimals, or two significant digits in
 * exponent form below 0.0001.
 *
 * @example
 * ```ts
 * import { formatP } from "./tables.ts";
 * if (formatP(1) !== "1.0000" || formatP(0.00001234) !== "1.2e-5") throw new Error();
 * ```
 */
export function formatP(p: number): string {
  return p >= 0.0001 ? p.toFixed(4) : p.toExponential(1);
}

/** A number with two decimals. */
export const f2 = (x: number) => x.toFixed(2);
/** A signed difference with two decimals: `+3.95`, `−14.25`, `±0.00`. */
export const signed = (x: number) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(2);
const ci = (iv: { low: number; high: number }) => `[${f2(iv.low)}, ${f2(iv.high)}]`;
/** A difference's interval, both ends signed: `[−1.20, +3.40]`. */
export const dci = (d: Range) => `[${signed(d.low)}, ${signed(d.high)}]`;
/** The header of a clustered interval's column: `CI by article`. */
export const byName = (by: ClusterLevel) => `CI by ${by}`;

/** A table: header and rows of plain-text cells, and which columns are numbers. */
export interface Table {
  /** The header cells. */
  readonly head: readonly string[];
  /** The rows of cells. */
  readonly rows: readonly (readonly string[])[];
  /** Per column, whether it holds numbers (right-aligned). */
  readonly numeric: readonly boolean[];
}

/** Whether any system of the dataset has F1 (CuratedTREC's regular expressions have none). */
export const hasF1 = (r: DatasetReport) => r.systems.some((s) => s.f1 !== null);

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
export function languageTable(report: ReportJson): Table {
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

/** A titled part of a report: its note, its charts (HTML only) and its table, each optional. */
export interface Section {
  /** Its heading. */
  readonly title: string;
  /** The paragraph under the heading. */
  readonly note?: string;
  /** Its table. */
  readonly table?: Table;
  /** Its charts (inline SVG), above the table. */
  readonly charts?: readonly Chart[];
}

/** A dataset's sections, in the order every format writes them (`charts`: its charts, for HTML). */
export function sections(
  r: DatasetReport,
  o: ReportJson["options"],
  charts: readonly Chart[],
): Section[] {
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

/** The clusters of a dataset in words: `2,067 paragraphs`. */
const clusterWords = (r: DatasetReport) =>
  `${r.cluster.clusters.toLocaleString("en-US")} ${r.cluster.by}${
    r.cluster.clusters === 1 ? "" : "s"
  }`;

/**
 * What the scores of a dataset were computed from: the predictions against
 * the data file (with its sha256), and which rows files were checked.
 */
export function provenance(r: DatasetReport): string {
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

/** Each dataset kind's name in a report. */
export const KIND_NAME: Readonly<Record<DatasetReport["kind"], string>> = {
  squad: "SQuAD v1.1",
  squad2: "SQuAD v2.0",
  mrqa: "MRQA",
  xquad: "XQuAD",
  mlqa: "MLQA",
  open: "open-domain QA",
  jsonl: "generic question set",
};

/** The official tool (or rules) whose fold scores each kind. */
export const RULES_NAME: Readonly<Record<DatasetReport["rules"], string>> = {
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

/** The note under the language table. */
export const LANG_NOTE =
  "XQuAD and MLQA sets, one row per language: each system's EM and F1 (mlqa_evaluation_v1.py in that language), in percent, with 95% bootstrap intervals.";

/** The report's first paragraph: how it was generated, its baseline and its resampling. */
export const intro = (o: ReportJson["options"]) =>
  o.baseline === ""
    ? "Generated by `deno task report` (phraseval), with --search-error only (no INPUT)."
    : `Generated by \`deno task report\` (phraseval). Baseline: ${o.baseline}. Bootstrap: B = ${o.resamples}, seed ${o.seed}; randomization: ${o.shuffles} shuffles.`;
