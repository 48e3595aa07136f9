/**
 * The report's charts: Vega-Lite specs compiled with `vega-lite` and
 * rendered to SVG by `vega` in Deno (headless, renderer `none`), ready to
 * inline: no `xmlns` URLs, ids made unique per chart (several SVGs share
 * one page), one generic font family (`sans-serif`), so nothing is fetched.
 *
 * Per dataset: scores with 95 % CI whiskers per system (EM, F1, BEM when
 * present); F1 by question type (when the dataset has that breakdown and
 * F1); F1 histograms (when it has F1); BEM score against F1 (a binned
 * scatter: circle area = questions) when BEM is present; the open search's
 * top-k curves (accuracy against k, one line per system) when the rows
 * carry an open search; the questions on which each system's metrics
 * disagree, by kind (when there are any); with labels, each metric's
 * accuracy beside the label-corrected accuracy with its interval.
 *
 * With `--search-error` (`search_error.ts`): the approximate searches' EM
 * against nprobe (or candidates) beside the exact search's, with each
 * point's questions per second and index bytes written by it; recall@k of
 * the exact top-1 against the same axis; EM against questions per second.
 * Their points carry an SVG `<title>` (the browser shows it on hover; no
 * script).
 *
 * @module
 */
import * as vega from "vega";
import * as vl from "vega-lite";
import { F1_BINS, QUESTION_TYPES } from "./breakdowns.ts";
import type { DatasetReport } from "./report_json.ts";
import type { ScoredDataset } from "./systems.ts";
import type { SearchErrorReport } from "./search_error.ts";

/** A chart: its title, its Vega-Lite spec and the rendered SVG. */
export interface Chart {
  /** Stable id (`<dataset>-<kind>`). */
  readonly id: string;
  /** Title shown above it. */
  readonly title: string;
  /** The Vega-Lite spec (data inline). */
  readonly spec: Record<string, unknown>;
  /** The SVG markup, safe to inline. */
  readonly svg: string;
}

const CONFIG = {
  font: "sans-serif",
  background: "white",
  view: { stroke: null },
  axis: { labelFontSize: 11, titleFontSize: 12 },
  legend: { labelFontSize: 11, titleFontSize: 12 },
};

/**
 * Renders a Vega-Lite spec to SVG markup fit to inline in a page: the
 * `xmlns` attributes are dropped and every `id` (and `url(#id)` reference)
 * gets the prefix `prefix`.
 *
 * @example
 * ```ts
 * import { renderSvg } from "./charts.ts";
 * const svg = await renderSvg({ data: { values: [{ a: "x", b: 1 }] }, mark: "bar",
 *   encoding: { x: { field: "a", type: "nominal" }, y: { field: "b", type: "quantitative" } } }, "c1");
 * if (!svg.startsWith("<svg") || /https?:/.test(svg)) throw new Error(svg.slice(0, 200));
 * ```
 */
export async function renderSvg(
  spec: Record<string, unknown>,
  prefix: string,
  titles = false,
): Promise<string> {
  // deno-lint-ignore no-explicit-any
  const compiled = vl.compile({ config: CONFIG, ...spec } as any).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none" });
  try {
    let svg = await view.toSVG();
    // A point's aria-label (its description) as a <title>: the browser shows it on hover.
    if (titles) {
      svg = svg.replace(
        /<path aria-label="([^"]*)" role="graphics-symbol"([^>]*?)\/>/g,
        (_, label, rest) =>
          `<path aria-label="${label}" role="graphics-symbol"${rest}>` +
          `<title>${label.replace(/; /g, "\n")}</title></path>`,
      );
    }
    return svg
      .replace(/\s+xmlns(:\w+)?="[^"]*"/g, "")
      .replace(/\bid="([^"]+)"/g, (_, id) => `id="${prefix}-${id}"`)
      .replace(/url\(#([^)]+)\)/g, (_, id) => `url(#${prefix}-${id})`)
      .replace(/href="#([^"]+)"/g, (_, id) => `href="#${prefix}-${id}"`);
  } finally {
    view.finalize();
  }
}

const slug = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, "_");

/** The Vega-Lite specs of one dataset's charts (data inline), in page order. */
export function chartSpecs(
  r: DatasetReport,
  ds: ScoredDataset,
): { id: string; title: string; spec: Record<string, unknown> }[] {
  const names = r.systems.map((s) => s.name);
  const color = { field: "system", type: "nominal", sort: names, title: "system" };
  const out: { id: string; title: string; spec: Record<string, unknown> }[] = [];
  const scores = r.systems.flatMap((s) =>
    ([["EM", s.em], ["F1", s.f1], ["BEM", s.bem]] as const).flatMap(([metric, iv]) =>
      iv ? [{ system: s.name, metric, value: iv.value, low: iv.low, high: iv.high }] : []
    )
  );
  out.push({
    id: `${slug(r.name)}-scores`,
    title: `${r.name}: scores with 95% bootstrap intervals`,
    spec: {
      data: { values: scores },
      facet: { column: { field: "metric", type: "nominal", title: null } },
      spec: {
        width: Math.max(120, 40 * names.length),
        height: 220,
        layer: [
          {
            mark: { type: "rule", strokeWidth: 2 },
            encoding: {
              x: { field: "system", type: "nominal", sort: names, title: null },
              y: { field: "low", type: "quantitative", title: "percent", scale: { zero: false } },
              y2: { field: "high" },
              color,
            },
          },
          {
            mark: { type: "point", filled: true, size: 70 },
            encoding: {
              x: { field: "system", type: "nominal", sort: names },
              y: { field: "value", type: "quantitative" },
              color,
              tooltip: [{ field: "value", format: ".2f" }],
            },
          },
        ],
      },
      resolve: { scale: { y: "independent" } },
    },
  });
  const qt = r.breakdowns.question_type.flatMap((g) =>
    g.systems.flatMap((s) =>
      s.f1 ? [{ type: g.group, system: s.name, f1: s.f1.value, n: g.questions }] : []
    )
  );
  if (qt.length > 0) {
    out.push({
      id: `${slug(r.name)}-qtype`,
      title: `${r.name}: F1 by question type`,
      spec: {
        data: { values: qt },
        width: 460,
        height: 220,
        mark: "bar",
        encoding: {
          x: { field: "type", type: "nominal", sort: QUESTION_TYPES, title: "question type" },
          xOffset: { field: "system", sort: names },
          y: { field: "f1", type: "quantitative", title: "F1 (percent)" },
          color,
        },
      },
    });
  }
  const hist = r.f1_histogram.flatMap((h) =>
    h.counts.map((count, i) => ({ system: h.system, bin: F1_BINS[i], count }))
  );
  if (hist.length > 0) {
    out.push({
      id: `${slug(r.name)}-f1hist`,
      title: `${r.name}: F1 histograms`,
      spec: {
        data: { values: hist },
        width: 460,
        height: 220,
        mark: "bar",
        encoding: {
          x: { field: "bin", type: "ordinal", sort: F1_BINS, title: "F1 of a question" },
          xOffset: { field: "system", sort: names },
          y: { field: "count", type: "quantitative", title: "questions" },
          color,
        },
      },
    });
  }
  if (r.open) {
    const curve = r.open.systems.flatMap((s) =>
      s.curve.map((accuracy, i) => ({ system: s.name, k: i + 1, accuracy }))
    );
    out.push({
      id: `${slug(r.name)}-topk`,
      title: `${r.name}: open search, top-k accuracy (first EM-matching rank ≤ k)`,
      spec: {
        data: { values: curve },
        width: 460,
        height: 220,
        mark: { type: "line", point: true },
        encoding: {
          x: {
            field: "k",
            type: "quantitative",
            title: "k",
            scale: { domain: [1, r.open.k] },
            axis: { tickMinStep: 1, format: "d" },
          },
          y: { field: "accuracy", type: "quantitative", title: "accuracy (percent)" },
          color,
        },
      },
    });
  }
  const withBem = ds.systems.filter((s) => s.bem !== null);
  if (withBem.length > 0) {
    const cells = new Map<string, { system: string; f1: number; bem: number; questions: number }>();
    for (const s of withBem) {
      const f1 = s.f1!; // BEM is scored on SQuAD v1.1 sets, which have F1
      for (let i = 0; i < f1.length; i++) {
        const f = Math.min(9, Math.floor(f1[i] * 10));
        const b = Math.min(9, Math.floor(s.bem![i] * 10));
        const key = `${s.spec.name}\u0000${f}\u0000${b}`;
        const c = cells.get(key);
        if (c) c.questions++;
        else {cells.set(key, {
            system: s.spec.name,
            f1: (f + 0.5) / 10,
            bem: (b + 0.5) / 10,
            questions: 1,
          });}
      }
    }
    out.push({
      id: `${slug(r.name)}-bemf1`,
      title: `${r.name}: BEM score against F1 (binned; circle area = questions)`,
      spec: {
        data: { values: [...cells.values()] },
        facet: {
          column: {
            field: "system",
            type: "nominal",
            sort: withBem.map((s) => s.spec.name),
            title: null,
          },
        },
        spec: {
          width: 180,
          height: 180,
          mark: { type: "circle", opacity: 0.7 },
          encoding: {
            x: { field: "f1", type: "quantitative", title: "F1", scale: { domain: [0, 1] } },
            y: {
              field: "bem",
              type: "quantitative",
              title: "BEM score",
              scale: { domain: [0, 1] },
            },
            size: { field: "questions", type: "quantitative", title: "questions" },
            color: { field: "system", type: "nominal", sort: names, legend: null },
          },
        },
      },
    });
  }
  const m = r.metric_disagreements;
  const counts = m.systems.flatMap((s) =>
    m.kinds.flatMap((kind) => {
      const n = s.counts[kind];
      return n === null ? [] : [{ system: s.system, kind, questions: n }];
    })
  );
  if (counts.some((c) => c.questions > 0)) {
    out.push({
      id: `${slug(r.name)}-disagree`,
      title: `${r.name}: questions on which the metrics disagree, by kind`,
      spec: {
        data: { values: counts },
        width: Math.max(300, 70 * m.kinds.length),
        height: 220,
        mark: "bar",
        encoding: {
          x: {
            field: "kind",
            type: "nominal",
            sort: m.kinds,
            title: "kind",
            axis: { labelAngle: -30 },
          },
          xOffset: { field: "system", sort: names },
          y: { field: "questions", type: "quantitative", title: "questions" },
          color,
        },
      },
    });
  }
  const labelled = r.labels?.systems.filter((s) => s.corrected !== null) ?? [];
  if (labelled.length > 0) {
    const t = m.f1_threshold;
    const measures = ["EM", `F1 ≥ ${t}`, "BEM > 0.5", "people (corrected)"];
    const points = labelled.flatMap((s) => {
      const c = s.corrected!;
      const raw =
        ([["EM", c.metrics.em], [`F1 ≥ ${t}`, c.metrics.f1], ["BEM > 0.5", c.metrics.bem]] as const)
          .flatMap(([measure, x]) =>
            x ? [{ system: s.system, measure, value: x.score, low: x.score, high: x.score }] : []
          );
      return [
        ...raw,
        {
          system: s.system,
          measure: "people (corrected)",
          value: c.value,
          low: c.low,
          high: c.high,
        },
      ];
    });
    const mcolor = { field: "measure", type: "nominal", sort: measures, title: "measure" };
    out.push({
      id: `${slug(r.name)}-labels`,
      title: `${r.name}: each metric's accuracy and the label-corrected accuracy (95% interval)`,
      spec: {
        data: { values: points },
        width: Math.max(160, 90 * labelled.length),
        height: 220,
        layer: [
          {
            mark: { type: "rule", strokeWidth: 2 },
            encoding: {
              x: { field: "system", type: "nominal", sort: names, title: null },
              xOffset: { field: "measure", sort: measures },
              y: { field: "low", type: "quantitative", title: "percent", scale: { zero: false } },
              y2: { field: "high" },
              color: mcolor,
            },
          },
          {
            mark: { type: "point", filled: true, size: 70 },
            encoding: {
              x: { field: "system", type: "nominal", sort: names },
              xOffset: { field: "measure", sort: measures },
              y: { field: "value", type: "quantitative" },
              color: mcolor,
            },
          },
        ],
      },
    });
  }
  return out;
}

/** Renders every chart of every dataset (datasets in report order). */
export async function renderCharts(
  reports: readonly DatasetReport[],
  datasets: readonly ScoredDataset[],
): Promise<Chart[][]> {
  const out: Chart[][] = [];
  let k = 0;
  for (let d = 0; d < reports.length; d++) {
    const charts: Chart[] = [];
    for (const c of chartSpecs(reports[d], datasets[d])) {
      charts.push({ ...c, svg: await renderSvg(c.spec, `c${++k}`) });
    }
    out.push(charts);
  }
  return out;
}

/** Vega's default categorical colors (`tableau10`), for colors fixed across charts. */
const TABLEAU10 = [
  "#4c78a8",
  "#f58518",
  "#e45756",
  "#72b7b2",
  "#54a24b",
  "#eeca3b",
  "#b279a2",
  "#ff9da6",
  "#9d755d",
  "#bab0ac",
];

/** Bytes in MB (10⁶ bytes), one decimal. */
const mb = (b: number | null) => b === null ? null : Math.round(b / 1e5) / 10;

/**
 * The Vega-Lite specs of the search-error charts (data inline), in page
 * order: EM against the varying setting (`r.axis`), the exact EM as a
 * dashed rule, each point labelled with its questions per second and its
 * `ivf/` bytes, one line per value of the other setting (and of adaptive
 * probing's tau, for the searches that had one); recall@k of the exact
 * top-1 against the same axis, one line per k; EM against questions per
 * second, the exact search among the points.
 */
export function searchErrorChartSpecs(
  r: SearchErrorReport,
): { id: string; title: string; spec: Record<string, unknown> }[] {
  const other = r.axis === "nprobe" ? "candidates" : "nprobe";
  // Adaptive probing's tau, when a search had one: in its series and its label.
  const tau = (s: { probe_tau?: number }) =>
    s.probe_tau === undefined ? "" : `, tau ${s.probe_tau}`;
  const series = (s: { nprobe: number | null; candidates: number | null; probe_tau?: number }) =>
    `${other} ${s[other]}${tau(s)}`;
  const seriesNames = [...new Set(r.settings.map(series))];
  const rows = r.settings.map((s) => ({
    setting: s.name,
    x: s[r.axis],
    series: series(s),
    em: s.em,
    qps: s.questions_per_second,
    label: `${Math.round(s.questions_per_second)} q/s, ${mb(s.index.ivf_bytes)} MB`,
    tip: [
      s.name,
      `EM ${s.em.toFixed(2)}`,
      `lost ${s.cells.lost}, saved ${s.cells.saved}`,
      `recall@1 ${(s.recall[0]?.value ?? 0).toFixed(2)}`,
      `${s.questions_per_second.toFixed(1)} q/s`,
      `ivf/ ${mb(s.index.ivf_bytes)} MB, index ${mb(s.index.bytes)} MB`,
      `peak RSS ${mb(s.peak_rss_bytes) ?? "-"} MB`,
    ].join("; "),
  }));
  // Padding keeps the points' labels inside the plot.
  const xScale = r.axis === "nprobe"
    ? { type: "log", base: 2, padding: 24 }
    : { type: "symlog", padding: 24 };
  const x = {
    field: "x",
    type: "quantitative",
    title: r.axis === "nprobe" ? "nprobe (IVF lists probed)" : "candidates re-scored exactly",
    scale: xScale,
    axis: { values: [...new Set(rows.map((d) => d.x))], format: "d" },
  };
  // One color per series in every chart; the exact search gray.
  const palette = seriesNames.map((_, i) => TABLEAU10[i % TABLEAU10.length]);
  // A series with a tau is named in full in a legend (its default width cuts the name short).
  const whole = r.settings.some((s) => s.probe_tau !== undefined)
    ? { legend: { labelLimit: 0 } }
    : {};
  const color = {
    field: "series",
    type: "nominal",
    scale: { domain: seriesNames, range: palette },
    title: null,
    ...(seriesNames.length === 1 ? { legend: null } : whole),
  };
  // A point's description is its aria-label, which renderSvg makes its hover <title>.
  const tip = { field: "tip" };
  const exactEm = r.exact.em;
  const out: { id: string; title: string; spec: Record<string, unknown> }[] = [];
  out.push({
    id: "search-error-em",
    title: `${r.dataset}: approximate EM against ${r.axis} (dashed: exact search, EM ${
      exactEm.toFixed(2)
    }); labels: questions per second, ivf/ MB`,
    spec: {
      width: 460,
      height: 240,
      layer: [
        {
          data: { values: [{ em: exactEm }] },
          mark: { type: "rule", strokeDash: [6, 4], color: "#888" },
          encoding: { y: { field: "em", type: "quantitative" } },
        },
        {
          data: { values: rows },
          mark: { type: "line", point: { filled: true, size: 60 } },
          encoding: {
            x,
            y: {
              field: "em",
              type: "quantitative",
              title: "EM (percent)",
              scale: { zero: false, padding: 16 },
            },
            color,
            description: tip,
          },
        },
        {
          data: { values: rows },
          mark: { type: "text", dy: -10, fontSize: 10, color: "#333" },
          encoding: {
            x: { field: "x", type: "quantitative", scale: xScale },
            y: { field: "em", type: "quantitative" },
            text: { field: "label" },
          },
        },
      ],
    },
  });
  const recall = r.settings.flatMap((s) =>
    s.recall.map((c) => ({
      setting: s.name,
      x: s[r.axis],
      k: `recall@${c.k}`,
      series: series(s),
      recall: c.value,
      tip: `${s.name}; recall@${c.k} ${c.value.toFixed(2)}`,
    }))
  );
  out.push({
    id: "search-error-recall",
    title: `${r.dataset}: recall@k of the exact top-1 phrase in the approximate ranks`,
    spec: {
      data: { values: recall },
      width: 460,
      height: 240,
      mark: { type: "line", point: { filled: true, size: 50 } },
      encoding: {
        x,
        y: {
          field: "recall",
          type: "quantitative",
          title: "recall (percent)",
          scale: { domain: [0, 100] },
        },
        color: {
          field: "k",
          type: "nominal",
          sort: r.recall_ks.map((k) => `recall@${k}`),
          title: null,
        },
        ...(seriesNames.length > 1
          ? {
            strokeDash: {
              field: "series",
              type: "nominal",
              sort: seriesNames,
              title: null,
              ...whole,
            },
          }
          : {}),
        description: tip,
      },
    },
  });
  const speed = [
    {
      setting: "exact",
      em: exactEm,
      qps: r.exact.questions_per_second,
      series: "exact",
      label: "exact",
      tip: `exact; EM ${exactEm.toFixed(2)}; ${r.exact.questions_per_second.toFixed(1)} q/s; ` +
        `index ${mb(r.exact.index.bytes)} MB; peak RSS ${mb(r.exact.peak_rss_bytes) ?? "-"} MB`,
    },
    ...rows.map((d, i) => ({
      setting: d.setting,
      em: d.em,
      qps: d.qps,
      series: d.series,
      label: `${r.axis} ${d.x}${tau(r.settings[i])}`,
      tip: d.tip,
    })),
  ];
  out.push({
    id: "search-error-speed",
    title: `${r.dataset}: EM against questions per second (one process, its threads)`,
    spec: {
      data: { values: speed },
      width: 460,
      height: 240,
      layer: [
        {
          mark: { type: "point", filled: true, size: 60 },
          encoding: {
            x: {
              field: "qps",
              type: "quantitative",
              title: "questions per second (log)",
              scale: { type: "log", padding: 24 },
            },
            y: {
              field: "em",
              type: "quantitative",
              title: "EM (percent)",
              scale: { zero: false, padding: 16 },
            },
            color: {
              field: "series",
              type: "nominal",
              scale: { domain: ["exact", ...seriesNames], range: ["#888888", ...palette] },
              title: null,
              ...whole,
            },
            description: tip,
          },
        },
        {
          mark: { type: "text", dy: -10, fontSize: 10, color: "#333" },
          encoding: {
            x: { field: "qps", type: "quantitative", scale: { type: "log" } },
            y: { field: "em", type: "quantitative" },
            text: { field: "label" },
          },
        },
      ],
    },
  });
  return out;
}

/** Renders the search-error charts (see {@linkcode searchErrorChartSpecs}). */
export async function renderSearchErrorCharts(r: SearchErrorReport): Promise<Chart[]> {
  const out: Chart[] = [];
  let k = 0;
  for (const c of searchErrorChartSpecs(r)) {
    out.push({ ...c, svg: await renderSvg(c.spec, `se${++k}`, true) });
  }
  return out;
}
