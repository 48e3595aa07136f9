/**
 * The numbers of a report (everything `report.json` holds), from systems
 * scored question by question ({@linkcode ScoredDataset}), with the
 * statistics of `metrics/stats/`:
 *
 * - each system's EM, F1 (by its dataset kind's official rules,
 *   `systems.ts`; no F1 for regex answers) (and, when its rows carry BEM, BEM accuracy, the
 *   share of questions with a BEM score above 0.5, and the mean BEM score),
 *   in percent, with 95 % paired bootstrap percentile intervals
 *   ({@linkcode pairedBootstrap}, B resamples, the given seed; every system
 *   is resampled on the same question indices);
 * - each system against the baseline: the difference of the means (system −
 *   baseline) with its paired bootstrap interval, the two-sided paired
 *   approximate-randomization p ({@linkcode pairedRandomization}, R
 *   shuffles, the same seed), and for EM (and BEM accuracy) McNemar's exact
 *   p ({@linkcode mcnemarPaired});
 * - clustered, beside those (questions of one paragraph or article are not
 *   independent): each system's and each difference's 95 % interval by the
 *   paired cluster bootstrap ({@linkcode pairedClusterBootstrap}: whole
 *   clusters resampled, B and the seed as above) and the clustered
 *   randomization p ({@linkcode pairedClusterRandomization}: whole clusters
 *   swapped), the clusters being the dataset's paragraphs, articles or
 *   single questions ({@linkcode clusterLevel}, {@linkcode clusterIds});
 *   with single questions they equal the per-question numbers to the bit;
 * - per comparison, the minimum detectable effect at 80 % power and
 *   α = 0.05 ({@linkcode pairedMde}; for EM also from the discordance
 *   rate) and whether the two are tied (the clustered difference interval
 *   holds 0, {@linkcode tied}); with two or more comparisons (N ≥ 3
 *   systems), Holm and Benjamini–Hochberg adjusted p-values over the
 *   comparisons with the baseline, per dataset and metric, of the
 *   per-question and of the clustered randomization p ({@linkcode holm},
 *   {@linkcode benjaminiHochberg}); and with N ≥ 3 systems, each system's
 *   bootstrap rank interval and share of resamples ranked first, per
 *   metric, clustered ({@linkcode bootstrapRanks});
 * - breakdowns by question type ({@linkcode questionType}; English sets
 *   only, not XQuAD/MLQA), by gold answer length ({@linkcode answerLengthBin};
 *   not for regex answers) and by article (sets with titles), each group
 *   with its own bootstrap intervals; for SQuAD v2.0 by answerability
 *   (`HasAns`, `NoAns`: the official script's subsets, equal to its
 *   `HasAns_*` / `NoAns_*` numbers);
 * - with an open search in the rows (a SQuAD set's `open` option): each
 *   system's open top-1 EM/F1 with intervals and its top-k curve (the
 *   share of questions whose first EM-matching rank is at most k, k = 1 to
 *   the ranks kept);
 * - over the XQuAD/MLQA datasets, one row per language
 *   ({@linkcode LanguageRow}): each system's EM and F1 in it;
 * - the questions where the systems disagree most (largest spread of F1
 *   across systems), and for BEM the questions where BEM and EM disagree
 *   (with BEM accuracy per F1 bin);
 * - per system, where its own metrics disagree (EM, F1 ≥ t, BEM > 0.5, the
 *   SQuAD v2.0 no-answer decisions): the count of each kind and the most
 *   telling questions (`disagree.ts`); with labels (`labelSet`), each
 *   metric's agreement with people and the label-corrected accuracy
 *   (`labels.ts`);
 * - F1 histograms.
 *
 * Point values use the official formula (`100 · sum / n`, sums in dataset
 * order), so a system's EM and F1 equal `evaluate`'s to the bit; interval
 * ends are the bootstrap percentiles times 100.
 *
 * The breakdowns' groups are `breakdowns.ts`'s, the clusters
 * `clustering.ts`'s, and the shape of the result `report_json.ts`'s.
 *
 * The statistics are also written in steps ({@linkcode analyzeSteps}, on
 * the stepped resamplings of `metrics/stats/steps.ts`): the same numbers,
 * with pauses at which `report` goes back to the event loop.
 *
 * @module
 */
import { harnessComparison } from "./harness.ts";
import { kindTakes } from "../io/datasets/formats.ts";
import {
  benjaminiHochberg,
  bootstrapRanksSteps,
  type ClusterId,
  holm,
  mcnemarPaired,
  pairedBootstrapSteps,
  pairedClusterBootstrapSteps,
  pairedClusterRandomizationSteps,
  pairedMde,
  pairedRandomizationSteps,
  runSteps,
  type Steps,
  tied,
} from "../metrics/stats/mod.ts";
import { bemCorrect, type ScoredDataset, type ScoredSystem } from "./systems.ts";
import { DEFAULT_F1_THRESHOLD, metricDisagreements } from "./disagree.ts";
import { labelReportSteps } from "./labels.ts";
import {
  answerLengthBin,
  F1_BINS,
  f1Bin,
  LENGTH_BINS,
  QUESTION_TYPES,
  questionType,
} from "./breakdowns.ts";
import { clusterIds, type ClusterLevel, clusterLevel } from "./clustering.ts";
import type {
  AnalysisOptions,
  Answer,
  BemDisagreements,
  BreakdownGroup,
  ClusterDifference,
  Comparison,
  DatasetReport,
  Difference,
  Interval,
  LanguageRow,
  OpenReport,
  QuestionDetail,
  Range,
  RankRow,
  Ranks,
  ReportJson,
  SystemScores,
} from "./report_json.ts";

/** `100 · Σx / n`, summed in order: the official formula. */
function pct(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return (100.0 * s) / x.length;
}

const pick = (x: Float64Array, idx: readonly number[]) => Float64Array.from(idx, (i) => x[i]);

const binary = (bem: Float64Array) => Float64Array.from(bem, (b) => bemCorrect(b) ? 1 : 0);

/** Each column's value and bootstrap interval, all resampled on the same indices. */
function* intervals(cols: readonly Float64Array[], B: number, seed: number): Steps<Interval[]> {
  if (cols.length === 0) return [];
  const r = yield* pairedBootstrapSteps(cols, { resamples: B, seed });
  return r.systems.map((s, i) => ({ value: pct(cols[i]), low: 100 * s.low, high: 100 * s.high }));
}

/** Each column's clustered bootstrap interval, all resampled on the same clusters. */
function* clusterRanges(
  cols: readonly Float64Array[],
  ids: readonly ClusterId[],
  B: number,
  seed: number,
): Steps<Range[]> {
  if (cols.length === 0) return [];
  const r = yield* pairedClusterBootstrapSteps(cols, ids, { resamples: B, seed });
  return r.systems.map((s) => ({ low: 100 * s.low, high: 100 * s.high }));
}

/** The clusters of a dataset: level, ids, count. */
interface Clusters {
  readonly by: ClusterLevel;
  readonly ids: readonly ClusterId[];
  readonly count: number;
}

function* difference(
  a: Float64Array,
  b: Float64Array,
  o: Required<Pick<AnalysisOptions, "resamples" | "seed" | "shuffles">>,
  isBinary: boolean,
  cl: Clusters,
): Steps<Difference> {
  const d = (yield* pairedBootstrapSteps([a, b], { resamples: o.resamples, seed: o.seed }))
    .differences[0];
  const p = (yield* pairedRandomizationSteps(a, b, { shuffles: o.shuffles, seed: o.seed })).pValue;
  const cd = (yield* pairedClusterBootstrapSteps([a, b], cl.ids, {
    resamples: o.resamples,
    seed: o.seed,
  })).differences[0];
  const cp = (yield* pairedClusterRandomizationSteps(a, b, cl.ids, {
    shuffles: o.shuffles,
    seed: o.seed,
  })).pValue;
  const cluster: ClusterDifference = {
    by: cl.by,
    clusters: cl.count,
    low: 100 * cd.low,
    high: 100 * cd.high,
    randomization_p: cp,
  };
  const power = pairedMde(a, b);
  const out: Difference = {
    difference: pct(a) - pct(b),
    low: 100 * d.low,
    high: 100 * d.high,
    randomization_p: p,
    cluster,
    mde: 100 * power.mde,
    tied: tied(cluster),
  };
  if (!isBinary) return out;
  const m = mcnemarPaired(a, b);
  return {
    ...out,
    mcnemar_p: m.pValue,
    mcnemar_b: m.b,
    mcnemar_c: m.c,
    ...(power.discordantMde !== undefined
      ? {
        mde_discordant: 100 * power.discordantMde,
        discordance_rate: 100 * power.discordanceRate!,
      }
      : {}),
  };
}

/**
 * The comparisons with Holm and Benjamini–Hochberg adjusted p-values over
 * them, per metric (per-question and clustered p), when there are two or
 * more; as they are otherwise.
 */
function adjusted(comparisons: readonly Comparison[]): Comparison[] {
  if (comparisons.length < 2) return [...comparisons];
  const out = comparisons.map((c) => ({ ...c }));
  for (const metric of ["em", "f1", "bem"] as const) {
    const at = comparisons.flatMap((c, i) => (c[metric] ? [i] : []));
    if (at.length < 2) continue;
    const ds = at.map((i) => comparisons[i][metric]!);
    const h = holm(ds.map((d) => d.randomization_p));
    const bh = benjaminiHochberg(ds.map((d) => d.randomization_p));
    const ch = holm(ds.map((d) => d.cluster.randomization_p));
    const cbh = benjaminiHochberg(ds.map((d) => d.cluster.randomization_p));
    at.forEach((i, j) => {
      const d = ds[j];
      out[i] = {
        ...out[i],
        [metric]: {
          ...d,
          holm_p: h[j],
          bh_p: bh[j],
          cluster: { ...d.cluster, holm_p: ch[j], bh_p: cbh[j] },
        },
      };
    });
  }
  return out;
}

/** Rank intervals of the systems on each column set (N ≥ 3), clustered. */
function* rankRows(
  names: readonly string[],
  cols: readonly Float64Array[],
  cl: Clusters,
  B: number,
  seed: number,
): Steps<RankRow[]> {
  const r = yield* bootstrapRanksSteps(cols, { resamples: B, seed, clusters: cl.ids });
  return r.systems.map((s, i) => ({
    system: names[i],
    rank: s.rank,
    low: s.low,
    high: s.high,
    first: s.first,
  }));
}

function* breakdown(
  ds: ScoredDataset,
  keyOf: (i: number) => string,
  order: readonly string[] | null,
  B: number,
  seed: number,
): Steps<BreakdownGroup[]> {
  const groups = new Map<string, number[]>();
  if (order) { for (const k of order) groups.set(k, []); }
  for (let i = 0; i < ds.questions.length; i++) {
    const k = keyOf(i);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(i);
  }
  const out: BreakdownGroup[] = [];
  for (const [group, idx] of groups) {
    if (idx.length === 0) continue;
    const em = yield* intervals(ds.systems.map((s) => pick(s.em, idx)), B, seed);
    const f1 = ds.hasF1 ? yield* intervals(ds.systems.map((s) => pick(s.f1!, idx)), B, seed) : null;
    const withBem = ds.systems.every((s) => s.bem !== null);
    const bem = withBem
      ? yield* intervals(ds.systems.map((s) => pick(binary(s.bem!), idx)), B, seed)
      : null;
    out.push({
      group,
      questions: idx.length,
      systems: ds.systems.map((s, j) => ({
        name: s.spec.name,
        em: em[j],
        f1: f1 ? f1[j] : null,
        ...(bem ? { bem: bem[j] } : {}),
      })),
    });
  }
  return out;
}

function answersAt(systems: readonly ScoredSystem[], i: number): Answer[] {
  return systems.map((s) => ({
    system: s.spec.name,
    prediction: s.predictions[i],
    em: s.em[i],
    f1: s.f1 ? s.f1[i] : null,
    ...(s.bem ? { bem: s.bem[i] } : {}),
  }));
}

/** The open search report of a dataset's systems whose rows carry it (`null`: none). */
function* openReport(
  ds: ScoredDataset,
  B: number,
  seed: number,
): Steps<OpenReport | null> {
  const S = ds.systems.filter((s) => s.open !== null);
  if (S.length === 0) return null;
  let k = ds.topK ?? 1;
  if (ds.topK === undefined) {
    for (const s of S) {
      for (const r of s.open!.rank) k = Math.max(k, r);
    }
  }
  const em = yield* intervals(S.map((s) => s.open!.em), B, seed);
  const f1 = yield* intervals(S.map((s) => s.open!.f1), B, seed);
  const n = ds.questions.length;
  const systems = S.map((s, j) => {
    const hits = new Array<number>(k + 1).fill(0);
    for (const r of s.open!.rank) if (r >= 1 && r <= k) hits[r]++;
    const curve: number[] = [];
    let c = 0;
    for (let r = 1; r <= k; r++) {
      c += hits[r];
      curve.push((100.0 * c) / n);
    }
    return { name: s.spec.name, em: em[j], f1: f1[j], curve };
  });
  return { k, systems };
}

/**
 * The report of one dataset (see the module notes).
 *
 * @example
 * ```ts
 * import { analyzeDataset } from "./analysis.ts";
 * import type { ScoredDataset } from "./systems.ts";
 * const spec = { dataset: "d", data: "d.json", predictions: "p.json", rows: null, input: "x", kind: "pred" as const };
 * const sys = (name: string, em: number[]) => ({
 *   spec: { ...spec, name }, result: { exact_match: 0, f1: 0, total: 2, answered: 2 },
 *   predictions: ["a", "b"], em: Float64Array.from(em), f1: Float64Array.from(em), bem: null,
 *   rows: null, open: null,
 * });
 * const ds: ScoredDataset = { name: "d", data: "d.json", sha256: "0".repeat(64), kind: "squad",
 *   rules: "v1.1", format: "squad", hasF1: true, systems: [sys("A", [1, 0]), sys("B", [1, 0])],
 *   questions: [{ id: "q1", title: "T", question: "Who?", golds: ["a"] }, { id: "q2", title: "T", question: "What?", golds: ["c"] }] };
 * const r = analyzeDataset(ds, "A", { resamples: 50, shuffles: 99 });
 * if (r.comparisons[0].em.difference !== 0 || r.comparisons[0].em.randomization_p !== 1) throw new Error();
 * ```
 */
export function analyzeDataset(
  ds: ScoredDataset,
  baseline: string,
  opts: AnalysisOptions = {},
): DatasetReport {
  return runSteps(analyzeDatasetSteps(ds, baseline, opts));
}

/**
 * {@linkcode analyzeDataset} in steps (`metrics/stats/steps.ts`): the same
 * numbers, pausing about every millisecond of the statistics so that a
 * caller can stop it (`report` does on SIGINT and SIGTERM).
 */
export function* analyzeDatasetSteps(
  ds: ScoredDataset,
  baseline: string,
  opts: AnalysisOptions = {},
): Steps<DatasetReport> {
  const o = {
    resamples: opts.resamples ?? 1000,
    seed: opts.seed ?? 0,
    shuffles: opts.shuffles ?? 10000,
  };
  const top = opts.top ?? 20;
  const S = ds.systems;
  const by = clusterLevel(ds.questions, opts.cluster);
  const ids = clusterIds(ds.questions, by);
  const cl: Clusters = { by, ids, count: new Set(ids).size };
  const em = yield* intervals(S.map((s) => s.em), o.resamples, o.seed);
  const f1 = ds.hasF1 ? yield* intervals(S.map((s) => s.f1!), o.resamples, o.seed) : null;
  const bemSys = S.filter((s) => s.bem !== null);
  const bemAcc = yield* intervals(bemSys.map((s) => binary(s.bem!)), o.resamples, o.seed);
  const bemScore = yield* intervals(bemSys.map((s) => s.bem!), o.resamples, o.seed);
  const cEm = yield* clusterRanges(S.map((s) => s.em), ids, o.resamples, o.seed);
  const cF1 = ds.hasF1 ? yield* clusterRanges(S.map((s) => s.f1!), ids, o.resamples, o.seed) : null;
  const cBem = yield* clusterRanges(bemSys.map((s) => binary(s.bem!)), ids, o.resamples, o.seed);
  const systems: SystemScores[] = S.map((s, i) => {
    const j = bemSys.indexOf(s);
    return {
      name: s.spec.name,
      input: s.spec.input,
      predictions: s.spec.predictions,
      answered: s.result.answered,
      scored_from: "predictions",
      rows: s.rows,
      // The official totals, to the bit.
      em: { ...em[i], value: s.result.exact_match },
      f1: f1 && s.result.f1 !== null ? { ...f1[i], value: s.result.f1 } : null,
      ...(j >= 0 ? { bem: bemAcc[j], bem_score: bemScore[j] } : {}),
      ...(s.v2 ? { v2: s.v2 } : {}),
      cluster: {
        by,
        clusters: cl.count,
        em: cEm[i],
        f1: cF1 && s.result.f1 !== null ? cF1[i] : null,
        ...(j >= 0 ? { bem: cBem[j] } : {}),
      },
    };
  });
  const base = S.find((s) => s.spec.name === baseline) ?? null;
  const compared: Comparison[] = [];
  if (base) {
    for (const s of S) {
      if (s === base) continue;
      const em = yield* difference(s.em, base.em, o, true, cl);
      const f1 = s.f1 && base.f1 ? yield* difference(s.f1, base.f1, o, false, cl) : null;
      const bem = s.bem && base.bem
        ? yield* difference(binary(s.bem), binary(base.bem), o, true, cl)
        : null;
      compared.push({ system: s.spec.name, baseline, em, f1, ...(bem ? { bem } : {}) });
    }
  }
  const comparisons = adjusted(compared);
  const names = S.map((s) => s.spec.name);
  const ranks: Ranks | null = S.length >= 3
    ? {
      by,
      clusters: cl.count,
      em: yield* rankRows(names, S.map((s) => s.em), cl, o.resamples, o.seed),
      f1: ds.hasF1 ? yield* rankRows(names, S.map((s) => s.f1!), cl, o.resamples, o.seed) : null,
    }
    : null;
  const qs = ds.questions;
  const english = ds.rules !== "MLQA";
  const titled = qs.length > 0 && qs.every((q) => q.title !== "");
  const breakdowns = {
    question_type: english
      ? yield* breakdown(
        ds,
        (i) => questionType(qs[i].question),
        QUESTION_TYPES,
        o.resamples,
        o.seed,
      )
      : [],
    answer_length: ds.hasF1
      ? yield* breakdown(
        ds,
        (i) => answerLengthBin(qs[i].golds),
        LENGTH_BINS,
        o.resamples,
        o.seed,
      )
      : [],
    article: titled ? yield* breakdown(ds, (i) => qs[i].title, null, o.resamples, o.seed) : [],
    answerability: ds.rules === "v2.0"
      ? yield* breakdown(
        ds,
        (i) => qs[i].golds.length > 0 ? "HasAns" : "NoAns",
        ["HasAns", "NoAns"],
        o.resamples,
        o.seed,
      )
      : [],
  };
  const open = yield* openReport(ds, o.resamples, o.seed);
  const disagreements: QuestionDetail[] = [];
  if (S.length > 1) {
    const spread = new Float64Array(qs.length);
    for (let i = 0; i < qs.length; i++) {
      let lo = Infinity, hi = -Infinity;
      for (const s of S) {
        const v = (s.f1 ?? s.em)[i];
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      spread[i] = hi - lo;
    }
    const order = [...spread.keys()].filter((i) => spread[i] > 0)
      .sort((a, b) => spread[b] - spread[a] || a - b).slice(0, top);
    for (const i of order) {
      disagreements.push({
        id: qs[i].id,
        title: qs[i].title,
        question: qs[i].question,
        golds: qs[i].golds,
        spread: spread[i],
        answers: answersAt(S, i),
      });
    }
  }
  const bem_disagreements: BemDisagreements[] = bemSys.map((s) => {
    const bem = s.bem!;
    const idx: number[] = [];
    let em0 = 0, em1 = 0;
    for (let i = 0; i < qs.length; i++) {
      const yes = bemCorrect(bem[i]);
      if (s.em[i] === 0 && yes && s.predictions[i] !== null) em0++;
      else if (s.em[i] === 1 && !yes) em1++;
      else continue;
      idx.push(i);
    }
    idx.sort((a, b) => Math.abs(bem[b] - s.em[b]) - Math.abs(bem[a] - s.em[a]) || a - b);
    const inBin = F1_BINS.map(() => 0);
    const yesInBin = F1_BINS.map(() => 0);
    for (let i = 0; i < (s.f1 ? qs.length : 0); i++) {
      const k = F1_BINS.indexOf(f1Bin(s.f1![i]));
      inBin[k]++;
      if (bemCorrect(bem[i])) yesInBin[k]++;
    }
    return {
      system: s.spec.name,
      em0_bem1: em0,
      em1_bem0: em1,
      by_f1: inBin.map((n, k) => ({
        questions: n,
        bem_accuracy: n === 0 ? null : (100 * yesInBin[k]) / n,
      })),
      items: idx.slice(0, top).map((i) => ({
        id: qs[i].id,
        question: qs[i].question,
        golds: qs[i].golds,
        prediction: s.predictions[i],
        em: s.em[i],
        f1: s.f1![i], // BEM is scored on SQuAD v1.1 sets, which have F1
        bem: bem[i],
      })),
    };
  });
  const t = opts.f1Threshold ?? DEFAULT_F1_THRESHOLD;
  const metric_disagreements = metricDisagreements(ds, t, top);
  const labels = opts.labelSet
    ? yield* labelReportSteps(ds, opts.labelSet, t, o.resamples, o.seed)
    : null;
  const f1_histogram = S.flatMap((s) => {
    if (s.f1 === null) return [];
    const counts = F1_BINS.map(() => 0);
    for (const v of s.f1) counts[F1_BINS.indexOf(f1Bin(v))]++;
    return [{ system: s.spec.name, counts }];
  });
  const harness_metric = harnessComparison(ds, top);
  return {
    name: ds.name,
    kind: ds.kind,
    rules: ds.rules,
    format: ds.format,
    ...(ds.lang !== undefined ? { lang: ds.lang } : {}),
    data: ds.data,
    data_sha256: ds.sha256,
    questions: qs.length,
    baseline: base ? baseline : null,
    cluster: { by, requested: opts.cluster ?? null, clusters: cl.count },
    systems,
    comparisons,
    ...(ranks ? { ranks } : {}),
    breakdowns,
    ...(open ? { open } : {}),
    disagreements,
    bem_disagreements,
    metric_disagreements,
    ...(labels ? { labels } : {}),
    f1_histogram,
    ...(harness_metric.length > 0 ? { harness_metric } : {}),
  };
}

/**
 * The whole report: every dataset against the baseline (default the first
 * system of the first dataset).
 */
export function analyze(
  datasets: readonly ScoredDataset[],
  opts: AnalysisOptions = {},
): ReportJson {
  return runSteps(analyzeSteps(datasets, opts));
}

/**
 * {@linkcode analyze} in steps (`metrics/stats/steps.ts`): the same
 * numbers, pausing about every millisecond of the statistics; `report`
 * resumes it from its event loop, so SIGINT and SIGTERM stop it at once.
 */
export function* analyzeSteps(
  datasets: readonly ScoredDataset[],
  opts: AnalysisOptions = {},
): Steps<ReportJson> {
  const baseline = opts.baseline ?? datasets[0]?.systems[0].spec.name ?? "";
  const reports: DatasetReport[] = [];
  for (const d of datasets) reports.push(yield* analyzeDatasetSteps(d, baseline, opts));
  const { systems: language_systems, rows: languages } = languageTable(reports);
  return {
    format: "phraseval-report/1",
    options: {
      resamples: opts.resamples ?? 1000,
      seed: opts.seed ?? 0,
      shuffles: opts.shuffles ?? 10000,
      top: opts.top ?? 20,
      confidence: 95,
      baseline,
      cluster: opts.cluster ?? null,
      alpha: 0.05,
      power: 0.8,
      question_types: QUESTION_TYPES,
      answer_length_bins: LENGTH_BINS,
      f1_bins: F1_BINS,
      f1_threshold: opts.f1Threshold ?? DEFAULT_F1_THRESHOLD,
      bem_threshold: 0.5,
      labels: opts.labelSet?.file ?? null,
    },
    datasets: reports,
    language_systems,
    languages,
  };
}

/**
 * The language table of a report: one row per XQuAD/MLQA dataset (its
 * language), one column group per system that appears on any of them (in
 * order of appearance), each cell the system's EM and F1 there (`null`: it
 * has no predictions on that dataset).
 *
 * @example
 * ```ts
 * import { languageTable } from "./analysis.ts";
 * import type { DatasetReport } from "./report_json.ts";
 * const iv = (value: number) => ({ value, low: value, high: value });
 * const ds = (name: string, lang: string, systems: string[]) =>
 *   ({ name, kind: lang ? "xquad" : "squad", lang, questions: 2,
 *      systems: systems.map((n, i) => ({ name: n, em: iv(i), f1: iv(i + 1) })) }) as unknown as DatasetReport;
 * const t = languageTable([ds("xq.de", "de", ["A"]), ds("sq", "", []), ds("xq.es", "es", ["B", "A"])]);
 * if (t.systems.join() !== "A,B" || t.rows.length !== 2 || t.rows[0].systems[1] !== null) throw new Error();
 * if (t.rows[1].systems[0]!.em.value !== 1) throw new Error();
 * ```
 */
export function languageTable(
  reports: readonly DatasetReport[],
): { systems: string[]; rows: LanguageRow[] } {
  const multi = reports.filter((r) => kindTakes(r.kind, "lang"));
  const systems: string[] = [];
  for (const r of multi) {
    for (const s of r.systems) if (!systems.includes(s.name)) systems.push(s.name);
  }
  const rows = multi.map((r) => ({
    lang: r.lang ?? "",
    dataset: r.name,
    kind: r.kind,
    questions: r.questions,
    systems: systems.map((n) => {
      const s = r.systems.find((x) => x.name === n);
      return s && s.f1 ? { name: n, em: s.em, f1: s.f1 } : null;
    }),
  }));
  return { systems, rows };
}
