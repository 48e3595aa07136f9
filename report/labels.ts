/**
 * People's labels against the metrics (`report --labels FILE`): each
 * metric's agreement with the labels, and each system's accuracy as people
 * would judge it, estimated from the labels with an interval that holds
 * both the sampling of the questions and that of the labelled sample.
 *
 * **The labels file** is NDJSON, one record per line (blank lines
 * skipped): the slice of `--export-slice` with `label` filled, or the
 * minimal `{"system"?, "id", "label"}`. `label` is `correct`, `incorrect`,
 * or `""` / `null` (not labelled yet: the record is skipped). `dataset`,
 * `system` and `prediction`, when given, narrow what the record labels:
 * the questions of that id on that dataset, of that system, whose
 * prediction is that string (a record whose `prediction` no longer is the
 * system's is a label of another answer: refused). Without `system`, a
 * record labels every system that gives the question the same prediction;
 * when systems answer it differently it must say which. Other fields are
 * ignored. Refused as bad input (one line: the file, the line, the
 * question id, what is wrong; exit 2): a line that is not a JSON object,
 * no `id`, a `label` that is none of those, a dataset, system or question
 * the report does not have, a stale or ambiguous record, two different
 * labels for one question of one system, and a file where no record has a
 * label.
 *
 * **Agreement** ({@linkcode agreement}), per metric (EM; F1 ≥ t; BEM >
 * 0.5), over a system's labelled questions: with TP (the metric says
 * right, people say correct), FP, FN, TN, accuracy (TP + TN) / n,
 * precision of "correct" TP / (TP + FP), recall TP / (TP + FN), and
 * Cohen's κ = (p_o − p_e) / (1 − p_e) with p_o the accuracy and p_e =
 * ((TP + FP)(TP + FN) + (FN + TN)(FP + TN)) / n². The labelled questions
 * are mostly disagreeing ones, so these describe the metrics where they
 * differ, not on all questions.
 *
 * **The corrected score** ({@linkcode labelCorrection}): the questions of
 * a system fall into strata by their metrics' verdicts (`disagree.ts`:
 * `em0 f1hi bem1`, …); N questions, N_h in stratum h, w_h = N_h / N, of
 * them n_h labelled, k_h correct. The share people judge correct in h is
 * p̂_h = k_h / n_h; a stratum without labels whose metrics all agree
 * counts at that verdict (the assumption: where EM, F1 and BEM agree,
 * people agree with them); a disagreeing stratum without labels leaves the
 * score unestimated (`missing`). The estimate is π̂ = Σ_h w_h p̂_h (double
 * sampling for stratification), with the standard error
 *
 *   SE² = Σ_h w_h² p̂_h (1 − p̂_h) / n_h + (1/N) Σ_h w_h (p̂_h − π̂)²
 *
 * (the first sum over labelled strata: the labelled sample; the second:
 * the questions), and the 95 % interval is the percentile interval of a
 * two-phase bootstrap that resamples both: replicate r draws N question
 * indices `g.below(N)` one after another and counts c_h, the draws that
 * fall in stratum h; then, for each labelled stratum in order, n_h indices
 * `g.below(n_h)` into its labels (in question order), whose mean is p*_h
 * (an unlabelled stratum keeps its verdict); π*_r = (Σ_h c_h p*_h) / N
 * (g a {@linkcode Xoshiro128StarStar} seeded with the report's seed; the
 * 2.5 and 97.5 percentiles by NumPy's linear rule). Its variance is SE²
 * plus Σ_h w_h (1 − w_h) / N · p̂_h (1 − p̂_h) / n_h (the strata counts vary
 * too; small beside SE² when N is large). Each metric's bias is its own score (the share of questions it
 * counts right) minus π̂, with the interval of (Σ_h c_h v_h) / N − π*_r
 * over the same replicates (v_h the metric's verdict in stratum h).
 * `bench/reference/label_correction.py` computes all of it again in
 * Python (the same generator and draws, and NumPy's own bootstrap).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../io/errors.ts";
import { statRegularFile } from "../io/regular.ts";
import {
  percentile,
  runSteps,
  sortedSteps,
  STEP_WORK,
  type Steps,
  Xoshiro128StarStar,
} from "../metrics/stats/mod.ts";
import { systemVerdicts } from "./disagree.ts";
import type { ScoredDataset } from "./systems.ts";
import { decodeUtf8Strict } from "../io/text.ts";

/** The labels of a report's systems, read from a labels file. */
export interface LabelSet {
  /** The labels file. */
  readonly file: string;
  /**
   * Per {@linkcode labelKey} of a dataset and system: per question (dataset
   * order) 1 correct, 0 incorrect, −1 not labelled.
   */
  readonly labels: ReadonlyMap<string, Int8Array>;
  /** Questions labelled (over all systems). */
  readonly count: number;
}

/** The key of a dataset's system in {@linkcode LabelSet.labels}. */
export const labelKey = (dataset: string, system: string): string => `${dataset}\u0000${system}`;

/**
 * Reads a labels file against the report's scored datasets (see the
 * module notes for the format and what is refused: an
 * {@linkcode InputError} naming the line and question).
 *
 * @example
 * ```ts
 * import { parseLabels } from "./labels.ts";
 * import type { ScoredDataset } from "./systems.ts";
 * const spec = { name: "A", dataset: "d", data: "d.json", predictions: "p.json", rows: null, input: "A", kind: "pred" as const };
 * const ds = { name: "d", questions: [{ id: "q1", title: "", question: "Q?", golds: ["x"] }],
 *   systems: [{ spec, predictions: ["x"] }] } as unknown as ScoredDataset;
 * const set = parseLabels('{"id": "q1", "label": "correct"}\n', "l.ndjson", [ds]);
 * if (set.count !== 1 || set.labels.get("d\u0000A")![0] !== 1) throw new Error();
 * try {
 *   parseLabels('{"id": "q1", "label": "yes"}\n', "l.ndjson", [ds]);
 *   throw new Error("accepted");
 * } catch (e) {
 *   if (!String(e).startsWith('l.ndjson: line 1: question "q1": label must be')) throw e;
 * }
 * ```
 */
export function parseLabels(
  text: string,
  file: string,
  datasets: readonly ScoredDataset[],
): LabelSet {
  const bad = (where: string, message: string) => new InputError({ file, where, message });
  const index = datasets.map((ds) => {
    const m = new Map<string, number>();
    ds.questions.forEach((q, i) => {
      if (!m.has(q.id)) m.set(q.id, i);
    });
    return m;
  });
  const labels = new Map<string, Int8Array>();
  const lines = new Map<string, Int32Array>();
  for (const ds of datasets) {
    for (const s of ds.systems) {
      labels.set(labelKey(ds.name, s.spec.name), new Int8Array(ds.questions.length).fill(-1));
      lines.set(labelKey(ds.name, s.spec.name), new Int32Array(ds.questions.length));
    }
  }
  const names = (xs: readonly string[]) => [...new Set(xs)].join(", ");
  let count = 0;
  let line = 0;
  for (const l of text.split("\n")) {
    line++;
    if (l.trim() === "") continue;
    let r: unknown;
    try {
      r = JSON.parse(l);
    } catch {
      throw bad(`line ${line}`, "invalid JSON");
    }
    if (typeof r !== "object" || r === null || Array.isArray(r)) {
      throw bad(`line ${line}`, "not a JSON object");
    }
    const o = r as Record<string, unknown>;
    if (typeof o.id !== "string") throw bad(`line ${line}`, 'a record needs an "id" (a string)');
    const where = `line ${line}: question ${JSON.stringify(o.id)}`;
    if (!("label" in o)) {
      throw bad(where, 'no "label" (correct, incorrect, or "" for not labelled yet)');
    }
    const label = o.label;
    if (label !== "correct" && label !== "incorrect" && label !== "" && label !== null) {
      throw bad(
        where,
        `label must be "correct" or "incorrect" ("" or null: not labelled yet), got ${
          JSON.stringify(label)
        }`,
      );
    }
    for (const f of ["dataset", "system"]) {
      if (o[f] !== undefined && typeof o[f] !== "string") {
        throw bad(where, `"${f}" is not a string`);
      }
    }
    const hasPred = o.prediction !== undefined;
    if (hasPred && o.prediction !== null && typeof o.prediction !== "string") {
      throw bad(where, '"prediction" is neither a string nor null');
    }
    const dataset = o.dataset as string | undefined;
    const system = o.system as string | undefined;
    const dsIdx = datasets.flatMap((ds, d) =>
      dataset === undefined || ds.name === dataset ? [d] : []
    );
    if (dsIdx.length === 0) {
      throw bad(
        where,
        `no dataset "${dataset}" in this report (datasets: ${names(datasets.map((d) => d.name))})`,
      );
    }
    if (
      system !== undefined &&
      !dsIdx.some((d) => datasets[d].systems.some((s) => s.spec.name === system))
    ) {
      throw bad(
        where,
        `no system "${system}"${
          dataset === undefined ? "" : ` on dataset "${dataset}"`
        } (systems: ${names(dsIdx.flatMap((d) => datasets[d].systems.map((s) => s.spec.name)))})`,
      );
    }
    const entries: { d: number; s: number; i: number }[] = [];
    for (const d of dsIdx) {
      const i = index[d].get(o.id);
      if (i === undefined) continue;
      datasets[d].systems.forEach((s, k) => {
        if (system === undefined || s.spec.name === system) entries.push({ d, s: k, i });
      });
    }
    if (entries.length === 0) {
      throw bad(
        where,
        `not a question of ${
          dataset !== undefined
            ? `dataset "${dataset}"`
            : system !== undefined
            ? `the datasets of system "${system}"`
            : "this report's datasets"
        }${
          datasets.some((d) => d.rules === "v2.0") ? " (SQuAD v2.0: of its answered questions)" : ""
        }`,
      );
    }
    const sys = (e: { d: number; s: number }) => datasets[e.d].systems[e.s];
    const predOf = (e: { d: number; s: number; i: number }) => sys(e).predictions[e.i];
    const nameOf = (e: { d: number; s: number }) =>
      dsIdx.length > 1
        ? `"${sys(e).spec.name}" on "${datasets[e.d].name}"`
        : `"${sys(e).spec.name}"`;
    let matched = entries;
    if (hasPred) {
      matched = entries.filter((e) => predOf(e) === o.prediction);
      if (matched.length === 0) {
        const e = entries[0];
        throw bad(
          where,
          entries.length === 1
            ? `prediction ${JSON.stringify(o.prediction)} here but ${
              JSON.stringify(predOf(e))
            } in ${sys(e).spec.predictions}: a label of another answer (stale)`
            : `prediction ${JSON.stringify(o.prediction)} is no system's (${
              entries.map(nameOf).join(", ")
            } answer otherwise): a label of another answer (stale)`,
        );
      }
    } else if (new Set(matched.map(predOf)).size > 1) {
      throw bad(
        where,
        `answered differently by ${matched.map(nameOf).join(", ")}: say which with "system"${
          dsIdx.length > 1 ? ' and "dataset"' : ""
        } or "prediction"`,
      );
    }
    if (label === "" || label === null) continue;
    const v = label === "correct" ? 1 : 0;
    for (const e of matched) {
      const key = labelKey(datasets[e.d].name, sys(e).spec.name);
      const arr = labels.get(key)!;
      const at = lines.get(key)!;
      if (arr[e.i] >= 0 && arr[e.i] !== v) {
        throw bad(
          where,
          `labelled "${arr[e.i] ? "correct" : "incorrect"}" for ${nameOf(e)} on line ${
            at[e.i]
          } and "${label}" here`,
        );
      }
      if (arr[e.i] < 0) {
        arr[e.i] = v;
        at[e.i] = line;
        count++;
      }
    }
  }
  if (count === 0) {
    throw bad("", "no record has a label (correct or incorrect): nothing to compare with");
  }
  return { file, labels, count };
}

/**
 * {@linkcode parseLabels} of a file, decoded as strict UTF-8 (`text.ts`: a byte that is not
 * UTF-8 is an {@linkcode InputError} naming the line and the byte); a file that cannot be read:
 * {@linkcode FileError}.
 */
export const readLabels = (
  file: string,
  datasets: readonly ScoredDataset[],
): Effect.Effect<LabelSet, InputError | FileError> =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise({
      try: async () => {
        statRegularFile(file);
        return decodeUtf8Strict(await Deno.readFile(file), file);
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
    });
    return yield* Effect.try({
      try: () => parseLabels(text, file, datasets),
      catch: (e) =>
        e instanceof InputError ? e : new InputError({ file, where: "", message: String(e) }),
    });
  });

/** A metric's agreement with people over the labelled questions (see the module notes). */
export interface Agreement {
  /** Labelled questions. */
  readonly labelled: number;
  /** Metric right, people correct. */
  readonly tp: number;
  /** Metric right, people incorrect. */
  readonly fp: number;
  /** Metric wrong, people correct. */
  readonly fn: number;
  /** Metric wrong, people incorrect. */
  readonly tn: number;
  /** (TP + TN) / n in percent (`null`: nothing labelled). */
  readonly accuracy: number | null;
  /** Cohen's κ (`null`: undefined, p_e = 1 or nothing labelled). */
  readonly kappa: number | null;
  /** TP / (TP + FP) in percent (`null`: the metric says right nowhere). */
  readonly precision: number | null;
  /** TP / (TP + FN) in percent (`null`: no label is correct). */
  readonly recall: number | null;
}

/**
 * A metric's agreement with labels: `verdicts[i]` 1 when the metric
 * counts question i right, `labels[i]` 1 correct, 0 incorrect, −1 not
 * labelled (see the module notes for the formulas).
 *
 * @example
 * ```ts
 * import { agreement } from "./labels.ts";
 * const a = agreement([1, 1, 0, 0, 1], [1, 0, 0, 1, -1]);
 * if (a.labelled !== 4 || a.accuracy !== 50 || a.kappa !== 0 || a.precision !== 50) throw new Error();
 * ```
 */
export function agreement(verdicts: ArrayLike<number>, labels: ArrayLike<number>): Agreement {
  let tp = 0, fp = 0, fn = 0, tn = 0;
  for (let i = 0; i < labels.length; i++) {
    if (labels[i] < 0) continue;
    const m = verdicts[i] === 1, y = labels[i] === 1;
    if (m && y) tp++;
    else if (m) fp++;
    else if (y) fn++;
    else tn++;
  }
  const n = tp + fp + fn + tn;
  const po = (tp + tn) / n;
  const pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n);
  return {
    labelled: n,
    tp,
    fp,
    fn,
    tn,
    accuracy: n === 0 ? null : 100 * po,
    kappa: n === 0 || pe === 1 ? null : (po - pe) / (1 - pe),
    precision: tp + fp === 0 ? null : (100 * tp) / (tp + fp),
    recall: tp + fn === 0 ? null : (100 * tp) / (tp + fn),
  };
}

/** What {@linkcode labelCorrection} estimates from. */
export interface CorrectionInput {
  /** Per question, its stratum (0 .. H − 1). */
  readonly strata: ArrayLike<number>;
  /** Per stratum, the labels (0/1) of its labelled questions, in question order. */
  readonly labels: readonly (readonly number[])[];
  /**
   * Per stratum, its share judged correct when it has no labels (the
   * verdict its metrics agree on); `null`: none, it needs labels.
   */
  readonly fallback: readonly (number | null)[];
  /** Per metric, per stratum, the metric's verdict (0/1). */
  readonly metrics: readonly (readonly number[])[];
}

/** The label-corrected accuracy, as shares (0..1; see the module notes). */
export interface Correction {
  /** π̂. */
  readonly value: number;
  /** Lower end of the two-phase bootstrap's 95 % interval. */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
  /** The closed-form standard error. */
  readonly se: number;
  /** The standard deviation of the bootstrap replicates (≈ `se`). */
  readonly replicateSd: number;
  /** Per metric: its score, and its bias (score − π̂) with the interval. */
  readonly metrics: readonly {
    readonly score: number;
    readonly bias: number;
    readonly low: number;
    readonly high: number;
  }[];
}

/**
 * The label-corrected accuracy with its closed-form standard error and
 * two-phase bootstrap interval, and each metric's bias (see the module
 * notes for the exact procedure). Throws a `RangeError` when a stratum
 * with questions has neither labels nor a fallback, or on bad options.
 */
export function labelCorrection(
  input: CorrectionInput,
  opts: { readonly resamples?: number; readonly seed?: number } = {},
): Correction {
  return runSteps(labelCorrectionSteps(input, opts));
}

/** {@linkcode labelCorrection} in steps (`metrics/stats/steps.ts`), the same draws and result. */
export function* labelCorrectionSteps(
  input: CorrectionInput,
  opts: { readonly resamples?: number; readonly seed?: number } = {},
): Steps<Correction> {
  const B = opts.resamples ?? 1000;
  if (!Number.isSafeInteger(B) || B < 1) {
    throw new RangeError(`resamples must be a positive integer, got ${B}`);
  }
  const { strata, labels, fallback, metrics } = input;
  const H = labels.length;
  const N = strata.length;
  if (N === 0) throw new RangeError("no questions");
  const size = new Float64Array(H);
  for (let i = 0; i < N; i++) size[strata[i]]++;
  const p = new Float64Array(H);
  for (let h = 0; h < H; h++) {
    const n = labels[h].length;
    if (n > 0) {
      let k = 0;
      for (const y of labels[h]) k += y;
      p[h] = k / n;
    } else if (fallback[h] !== null) p[h] = fallback[h]!;
    else if (size[h] > 0) throw new RangeError(`stratum ${h} has questions but no labels`);
  }
  let value = 0;
  for (let h = 0; h < H; h++) value += size[h] * p[h];
  value /= N;
  let within = 0, between = 0;
  for (let h = 0; h < H; h++) {
    const w = size[h] / N;
    const n = labels[h].length;
    if (n > 0) within += (w * w * p[h] * (1 - p[h])) / n;
    between += w * (p[h] - value) ** 2;
  }
  const se = Math.sqrt(within + between / N);
  const reps = new Float64Array(B);
  const biasReps = metrics.map(() => new Float64Array(B));
  const g = new Xoshiro128StarStar(opts.seed ?? 0);
  const c = new Float64Array(H);
  const pStar = new Float64Array(H);
  let work = 0;
  for (let r = 0; r < B; r++) {
    c.fill(0);
    for (let j = 0; j < N; j++) c[strata[g.below(N)]]++;
    for (let h = 0; h < H; h++) {
      const L = labels[h];
      const n = L.length;
      if (n === 0) {
        pStar[h] = p[h];
        continue;
      }
      let k = 0;
      for (let j = 0; j < n; j++) k += L[g.below(n)];
      pStar[h] = k / n;
      work += n;
    }
    let s = 0;
    for (let h = 0; h < H; h++) s += c[h] * pStar[h];
    reps[r] = s / N;
    metrics.forEach((v, m) => {
      let sm = 0;
      for (let h = 0; h < H; h++) sm += c[h] * v[h];
      biasReps[m][r] = sm / N - reps[r];
    });
    work += N;
    if (work >= STEP_WORK) {
      work = 0;
      yield;
    }
  }
  let mean = 0;
  for (const x of reps) mean += x;
  mean /= B;
  let ss = 0;
  for (const x of reps) ss += (x - mean) ** 2;
  const sorted = yield* sortedSteps(reps);
  const out: Correction["metrics"][number][] = [];
  for (let m = 0; m < metrics.length; m++) {
    let score = 0;
    for (let h = 0; h < H; h++) score += size[h] * metrics[m][h];
    score /= N;
    const sb = yield* sortedSteps(biasReps[m]);
    out.push({
      score,
      bias: score - value,
      low: percentile(sb, 2.5),
      high: percentile(sb, 97.5),
    });
  }
  return {
    value,
    low: percentile(sorted, 2.5),
    high: percentile(sorted, 97.5),
    se,
    replicateSd: Math.sqrt(ss / B),
    metrics: out,
  };
}

/** One stratum of a system's questions (see the module notes). */
export interface StratumRow {
  /** Its metrics' verdicts (`em0 f1hi bem1`, and the v2.0 decision kind). */
  readonly stratum: string;
  /** Whether its metrics all agree. */
  readonly unanimous: boolean;
  /** Questions in it. */
  readonly questions: number;
  /** Of them labelled. */
  readonly labelled: number;
  /** Of those labelled correct. */
  readonly correct: number;
  /** The share judged correct in percent (`null`: missing). */
  readonly estimate: number | null;
  /** Where the estimate comes from. */
  readonly source: "labels" | "metrics agree" | "missing";
}

/** A metric's part of a corrected score. */
export interface MetricCorrection {
  /** The share of questions the metric counts right, in percent (F1: F1 ≥ t). */
  readonly score: number;
  /** Score − corrected score, in points, with its 95 % interval. */
  readonly bias: { readonly value: number; readonly low: number; readonly high: number };
  /** The estimated share of all questions on which it agrees with people, in percent. */
  readonly agreement: number;
}

/** A system's label-corrected accuracy (percent). */
export interface CorrectedScore {
  /** The estimate π̂. */
  readonly value: number;
  /** Lower end of the 95 % two-phase bootstrap interval. */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
  /** Closed-form standard error. */
  readonly se: number;
  /** Per metric (`null`: the system does not have it). */
  readonly metrics: {
    readonly em: MetricCorrection;
    readonly f1: MetricCorrection | null;
    readonly bem: MetricCorrection | null;
  };
}

/** A system against the labels. */
export interface LabelSystem {
  /** The system. */
  readonly system: string;
  /** Its questions labelled. */
  readonly labelled: number;
  /** Of them correct. */
  readonly correct: number;
  /** Each metric's agreement with the labels (`null`: the system does not have it). */
  readonly agreement: {
    readonly em: Agreement;
    readonly f1: Agreement | null;
    readonly bem: Agreement | null;
  };
  /** Its strata, in order of first question. */
  readonly strata: readonly StratumRow[];
  /** The disagreeing strata without labels (the corrected score needs them). */
  readonly missing: readonly string[];
  /** The corrected score (`null`: strata missing). */
  readonly corrected: CorrectedScore | null;
}

/** The labels part of a dataset's report (`report.json`: `labels`). */
export interface LabelReport {
  /** The labels file. */
  readonly file: string;
  /** The F1 threshold of the verdicts. */
  readonly f1_threshold: number;
  /** Per system, in INPUT order. */
  readonly systems: readonly LabelSystem[];
}

/**
 * The labels part of a dataset's report: per system each metric's
 * agreement with the labels, its strata and the corrected score (B
 * resamples, the seed).
 */
export function* labelReportSteps(
  ds: ScoredDataset,
  set: LabelSet,
  t: number,
  B: number,
  seed: number,
): Steps<LabelReport> {
  const systems: LabelSystem[] = [];
  for (const s of ds.systems) {
    const labs = set.labels.get(labelKey(ds.name, s.spec.name)) ??
      new Int8Array(ds.questions.length).fill(-1);
    const v = systemVerdicts(ds, s, t);
    const col = (f: (x: typeof v[number]) => number | null) =>
      v[0] === undefined || f(v[0]) === null ? null : Int8Array.from(v, (x) => f(x)!);
    const em = Int8Array.from(v, (x) => x.em);
    const f1 = col((x) => x.f1);
    const bem = col((x) => x.bem);
    const order = new Map<string, number>();
    const strata = new Int32Array(v.length);
    v.forEach((x, i) => {
      if (!order.has(x.stratum)) order.set(x.stratum, order.size);
      strata[i] = order.get(x.stratum)!;
    });
    const H = order.size;
    const first = new Int32Array(H).fill(-1);
    strata.forEach((h, i) => {
      if (first[h] < 0) first[h] = i;
    });
    const byStratum: number[][] = Array.from({ length: H }, () => []);
    const size = new Int32Array(H);
    let labelled = 0, correct = 0;
    for (let i = 0; i < v.length; i++) {
      size[strata[i]]++;
      if (labs[i] >= 0) {
        byStratum[strata[i]].push(labs[i]);
        labelled++;
        correct += labs[i];
      }
    }
    const fallback = [...first].map((i) => v[i].unanimous ? v[i].em : null);
    const rows: StratumRow[] = [...first].map((i, h) => {
      const L = byStratum[h];
      const k = L.reduce((a, b) => a + b, 0);
      return {
        stratum: v[i].stratum,
        unanimous: v[i].unanimous,
        questions: size[h],
        labelled: L.length,
        correct: k,
        estimate: L.length > 0
          ? (100 * k) / L.length
          : fallback[h] !== null
          ? 100 * fallback[h]!
          : null,
        source: L.length > 0 ? "labels" : fallback[h] !== null ? "metrics agree" : "missing",
      };
    });
    const missing = rows.filter((r) => r.source === "missing").map((r) => r.stratum);
    const cols: Int8Array[] = [em, ...(f1 ? [f1] : []), ...(bem ? [bem] : [])];
    let corrected: CorrectedScore | null = null;
    if (missing.length === 0 && v.length > 0) {
      const r = yield* labelCorrectionSteps({
        strata,
        labels: byStratum,
        fallback,
        metrics: cols.map((c) => [...first].map((i) => c[i])),
      }, { resamples: B, seed });
      const part = (m: number): MetricCorrection => {
        const x = r.metrics[m];
        let agree = 0;
        rows.forEach((row, h) => {
          const p = row.estimate! / 100;
          agree += size[h] * (cols[m][first[h]] === 1 ? p : 1 - p);
        });
        return {
          score: 100 * x.score,
          bias: { value: 100 * x.bias, low: 100 * x.low, high: 100 * x.high },
          agreement: (100 * agree) / v.length,
        };
      };
      corrected = {
        value: 100 * r.value,
        low: 100 * r.low,
        high: 100 * r.high,
        se: 100 * r.se,
        metrics: {
          em: part(0),
          f1: f1 ? part(1) : null,
          bem: bem ? part(f1 ? 2 : 1) : null,
        },
      };
    }
    systems.push({
      system: s.spec.name,
      labelled,
      correct,
      agreement: {
        em: agreement(em, labs),
        f1: f1 ? agreement(f1, labs) : null,
        bem: bem ? agreement(bem, labs) : null,
      },
      strata: rows,
      missing,
      corrected,
    });
  }
  return { file: set.file, f1_threshold: t, systems };
}
