/**
 * Where a system's metrics disagree, question by question: EM against F1
 * (F1 at or above a threshold counts as right), EM and F1 against BEM (a
 * score above 0.5 counts as right, as `metrics/bem` counts it), and on
 * SQuAD v2.0 the no-answer decisions. Each question of a system falls
 * under zero or more **kinds** ({@linkcode DISAGREEMENT_KINDS}):
 *
 * - `em0_f1hi`: EM 0 but F1 ≥ t (t = `--f1-threshold`, default 0.5);
 * - `em1_f1lo`: EM 1 but F1 < t (SQuAD v1.1 only, where an answer that
 *   normalizes to nothing, such as "the", matches exactly with F1 0);
 * - `em0_bem1`: EM 0 but BEM > 0.5; `em1_bem0`: EM 1 but BEM ≤ 0.5;
 * - `f1hi_bem0`: partial F1 (0 < F1 < 1) at or above t but BEM ≤ 0.5;
 *   `f1lo_bem1`: partial F1 below t but BEM > 0.5;
 * - SQuAD v2.0: `abstained_hasans`, the question has an answer and the
 *   prediction is empty after SQuAD normalization (EM and F1 are 0 only
 *   because it abstained); `answered_noans`, the question has no answer
 *   and the prediction is not empty (EM and F1 are 0 only because it
 *   answered). On these questions, and on the no-answer questions a system
 *   rightly leaves empty, BEM (which judges answer text) is not compared:
 *   its verdict is taken to be EM's.
 *
 * A kind applies when the dataset has its metrics (F1: not for regular
 * expression answers; BEM: when the system's rows carry it; the v2.0
 * kinds: SQuAD v2.0 sets). A question is **disagreeing** when it falls
 * under one kind at least; it is so exactly when its **stratum** (the
 * metrics' verdicts, `em0 f1hi bem1`, and the v2.0 decision kind when it
 * has one) is not unanimous.
 *
 * The **most telling** questions of a kind come first: by the gap between
 * the two metrics that disagree (F1 − EM for `em0_f1hi`, EM − F1 for
 * `em1_f1lo`, BEM − EM, EM − BEM, F1 − BEM, BEM − F1 for the BEM kinds;
 * 1 for the v2.0 kinds), larger first; then by |F1 − EM|, larger first;
 * then by BEM's margin |BEM − 0.5|, larger first; ties by question id
 * (code-unit order).
 *
 * The **slice** ({@linkcode sliceRecords}) is every disagreeing question
 * of every system as one NDJSON record, with an empty `label` for a person
 * to fill (`correct` or `incorrect`), in a random order drawn from the
 * seed: labelling from the top, any number of records, labels a random
 * sample of each stratum, which the label correction (`labels.ts`) needs.
 *
 * @module
 */
import { answerTokens } from "../metrics/squad_text.ts";
import { Xoshiro128StarStar } from "../metrics/stats/mod.ts";
import {
  bemCorrect,
  type ReportQuestion,
  type ScoredDataset,
  type ScoredSystem,
} from "./systems.ts";

/** The kinds of disagreement, in table order (see the module notes). */
export const DISAGREEMENT_KINDS = [
  "em0_f1hi",
  "em1_f1lo",
  "em0_bem1",
  "em1_bem0",
  "f1hi_bem0",
  "f1lo_bem1",
  "abstained_hasans",
  "answered_noans",
] as const;

/** A kind of disagreement (see the module notes). */
export type DisagreementKind = typeof DISAGREEMENT_KINDS[number];

/** The F1 at or above which F1 counts a question as right (`--f1-threshold`). */
export const DEFAULT_F1_THRESHOLD = 0.5;

/**
 * A kind in words, with the F1 threshold `t`.
 *
 * @example
 * ```ts
 * import { kindTitle } from "./disagree.ts";
 * if (kindTitle("em0_f1hi", 0.5) !== "EM 0 but F1 ≥ 0.5") throw new Error();
 * ```
 */
export function kindTitle(kind: DisagreementKind, t: number): string {
  switch (kind) {
    case "em0_f1hi":
      return `EM 0 but F1 ≥ ${t}`;
    case "em1_f1lo":
      return `EM 1 but F1 < ${t}`;
    case "em0_bem1":
      return "EM 0 but BEM > 0.5";
    case "em1_bem0":
      return "EM 1 but BEM ≤ 0.5";
    case "f1hi_bem0":
      return `partial F1 ≥ ${t} but BEM ≤ 0.5`;
    case "f1lo_bem1":
      return `partial F1 < ${t} but BEM > 0.5`;
    case "abstained_hasans":
      return "abstained on a question with an answer";
    case "answered_noans":
      return "answered a question without an answer";
  }
}

/** One question of one system: its metrics' verdicts, stratum and kinds. */
export interface QuestionVerdict {
  /** EM's verdict (1: right). */
  readonly em: 0 | 1;
  /** F1 ≥ t (`null`: no F1). */
  readonly f1: 0 | 1 | null;
  /** BEM > 0.5 (`null`: no BEM); EM's verdict where BEM is not compared (v2.0 no-answers). */
  readonly bem: 0 | 1 | null;
  /** The v2.0 decision kind, if any. */
  readonly decision: "abstained_hasans" | "answered_noans" | null;
  /** The stratum: `em1 f1hi bem0`, with the decision kind appended when there is one. */
  readonly stratum: string;
  /** Every verdict is the same and there is no decision kind. */
  readonly unanimous: boolean;
  /** The kinds it falls under (table order); empty exactly when unanimous. */
  readonly kinds: readonly DisagreementKind[];
}

/** The kinds that apply to a system of a dataset (see the module notes), in table order. */
export function applicableKinds(ds: ScoredDataset, s: ScoredSystem): DisagreementKind[] {
  const f1 = ds.hasF1 && s.f1 !== null;
  const bem = s.bem !== null;
  return DISAGREEMENT_KINDS.filter((k) =>
    k === "em0_f1hi" || k === "em1_f1lo"
      ? f1
      : k === "em0_bem1" || k === "em1_bem0"
      ? bem
      : k === "f1hi_bem0" || k === "f1lo_bem1"
      ? f1 && bem
      : ds.rules === "v2.0"
  );
}

/** Whether a prediction is empty after SQuAD normalization (an abstention). */
const abstains = (p: string | null) => p === null || answerTokens(p).length === 0;

/**
 * The verdicts, stratum and kinds of every question of a system (dataset
 * order), F1 counting as right at or above `t`.
 *
 * @example
 * ```ts
 * import { systemVerdicts } from "./disagree.ts";
 * import type { ScoredDataset } from "./systems.ts";
 * const spec = { name: "A", dataset: "d", data: "d.json", predictions: "p.json", rows: null, input: "A", kind: "pred" as const };
 * const s = { spec, result: { exact_match: 0, f1: 0, total: 2, answered: 2 }, predictions: ["Broncos", "x"],
 *   em: Float64Array.of(0, 0), f1: Float64Array.of(2 / 3, 0), bem: Float64Array.of(0.2, 0.9), rows: null, open: null };
 * const ds = { name: "d", data: "d.json", sha256: "", kind: "squad", rules: "v1.1", format: "squad", hasF1: true,
 *   questions: [{ id: "a", title: "", question: "Q?", golds: ["Denver Broncos"] }, { id: "b", title: "", question: "Q?", golds: ["y"] }],
 *   systems: [s] } as ScoredDataset;
 * const v = systemVerdicts(ds, s, 0.5);
 * if (v[0].kinds.join() !== "em0_f1hi,f1hi_bem0" || v[0].stratum !== "em0 f1hi bem0") throw new Error();
 * // F1 0 is not partial: only EM against BEM.
 * if (v[1].kinds.join() !== "em0_bem1" || v[1].unanimous) throw new Error(v[1].kinds.join());
 * ```
 */
export function systemVerdicts(
  ds: ScoredDataset,
  s: ScoredSystem,
  t: number,
): QuestionVerdict[] {
  const v2 = ds.rules === "v2.0";
  const hasF1 = ds.hasF1 && s.f1 !== null;
  return ds.questions.map((q, i) => {
    const em = s.em[i] === 1 ? 1 : 0;
    const f1v = hasF1 ? s.f1![i] : null;
    const f1 = f1v === null ? null : f1v >= t ? 1 : 0;
    const pred = s.predictions[i];
    let decision: QuestionVerdict["decision"] = null;
    let bemCompared = true;
    if (v2) {
      const empty = abstains(pred);
      if (q.golds.length > 0 && empty && em === 0) decision = "abstained_hasans";
      else if (q.golds.length === 0 && !empty) decision = "answered_noans";
      bemCompared = q.golds.length > 0 && !empty;
    }
    const bemv = s.bem ? s.bem[i] : null;
    const bem = bemv === null ? null : bemCompared ? (bemCorrect(bemv) ? 1 : 0) : em;
    const kinds: DisagreementKind[] = [];
    if (decision === null) {
      if (f1 !== null) {
        if (em === 0 && f1 === 1) kinds.push("em0_f1hi");
        if (em === 1 && f1 === 0) kinds.push("em1_f1lo");
      }
      if (bem !== null) {
        if (em === 0 && bem === 1) kinds.push("em0_bem1");
        if (em === 1 && bem === 0) kinds.push("em1_bem0");
        if (f1v !== null && f1v > 0 && f1v < 1) {
          if (f1 === 1 && bem === 0) kinds.push("f1hi_bem0");
          if (f1 === 0 && bem === 1) kinds.push("f1lo_bem1");
        }
      }
    } else kinds.push(decision);
    const stratum = `em${em}${f1 === null ? "" : f1 ? " f1hi" : " f1lo"}${
      bem === null ? "" : ` bem${bem}`
    }${decision ? ` ${decision}` : ""}`;
    const unanimous = decision === null && (f1 === null || f1 === em) &&
      (bem === null || bem === em);
    return { em, f1, bem, decision, stratum, unanimous, kinds };
  });
}

/** A question of a disagreement list. */
export interface DisagreementExample {
  /** Question id. */
  readonly id: string;
  /** Article title (`""`: none). */
  readonly title: string;
  /** The question. */
  readonly question: string;
  /** Gold answers (empty: a v2.0 question without answer). */
  readonly golds: readonly string[];
  /** The system's prediction (`null`: none). */
  readonly prediction: string | null;
  /** EM 0/1. */
  readonly em: number;
  /** F1 0..1 (`null`: no F1). */
  readonly f1: number | null;
  /** BEM score 0..1, when the system has BEM. */
  readonly bem?: number;
  /** The gap between the two metrics that disagree (0..1; the first sort key). */
  readonly gap: number;
}

/** One system's disagreements on a dataset. */
export interface SystemDisagreements {
  /** The system. */
  readonly system: string;
  /** Questions (v2.0: the answered ones). */
  readonly questions: number;
  /** Questions under one kind at least. */
  readonly disagreeing: number;
  /** Per applicable kind, the number of questions under it (`null`: the kind does not apply). */
  readonly counts: Readonly<Record<DisagreementKind, number | null>>;
  /** Per applicable kind, its most telling questions (at most `top`). */
  readonly examples: Readonly<Partial<Record<DisagreementKind, readonly DisagreementExample[]>>>;
}

/** The metric disagreements of a dataset's systems (`report.json`: `metric_disagreements`). */
export interface MetricDisagreements {
  /** F1 at or above it counts as right. */
  readonly f1_threshold: number;
  /** BEM above it counts as right. */
  readonly bem_threshold: 0.5;
  /** The kinds that apply to some system, in table order. */
  readonly kinds: readonly DisagreementKind[];
  /** Per system, in INPUT order. */
  readonly systems: readonly SystemDisagreements[];
}

/** The gap between the two metrics of a kind that disagree (see the module notes). */
function gap(kind: DisagreementKind, em: number, f1: number | null, bem: number | null): number {
  const f = f1 ?? 0;
  const b = bem ?? 0;
  switch (kind) {
    case "em0_f1hi":
      return f - em;
    case "em1_f1lo":
      return em - f;
    case "em0_bem1":
      return b - em;
    case "em1_bem0":
      return em - b;
    case "f1hi_bem0":
      return f - b;
    case "f1lo_bem1":
      return b - f;
    default:
      return 1;
  }
}

/**
 * Sorts question indices of one kind most telling first (see the module
 * notes): the gap, then |F1 − EM|, then |BEM − 0.5|, each larger first,
 * then the question id.
 *
 * @example
 * ```ts
 * import { mostTelling } from "./disagree.ts";
 * const em = [0, 0, 0], f1 = [0.6, 0.9, 0.6], bem = null;
 * const ids = ["b", "c", "a"];
 * if (mostTelling("em0_f1hi", [0, 1, 2], ids, em, f1, bem).join() !== "1,2,0") throw new Error();
 * ```
 */
export function mostTelling(
  kind: DisagreementKind,
  idx: readonly number[],
  ids: readonly string[],
  em: ArrayLike<number>,
  f1: ArrayLike<number> | null,
  bem: ArrayLike<number> | null,
): number[] {
  const key = (i: number) => {
    const f = f1 ? f1[i] : null;
    const b = bem ? bem[i] : null;
    return [
      gap(kind, em[i], f, b),
      Math.abs((f ?? em[i]) - em[i]),
      b === null ? 0 : Math.abs(b - 0.5),
    ];
  };
  const keys = new Map(idx.map((i) => [i, key(i)]));
  return [...idx].sort((a, b) => {
    const ka = keys.get(a)!, kb = keys.get(b)!;
    for (let j = 0; j < 3; j++) if (ka[j] !== kb[j]) return kb[j] - ka[j];
    return ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : a - b;
  });
}

/**
 * The metric disagreements of a dataset: per system the count of each
 * applicable kind, the questions under any, and the `top` most telling
 * questions of each kind.
 */
export function metricDisagreements(
  ds: ScoredDataset,
  t: number,
  top: number,
): MetricDisagreements {
  const ids = ds.questions.map((q) => q.id);
  const kindsOf = new Set<DisagreementKind>();
  const systems = ds.systems.map((s): SystemDisagreements => {
    const applicable = applicableKinds(ds, s);
    for (const k of applicable) kindsOf.add(k);
    const verdicts = systemVerdicts(ds, s, t);
    const byKind = new Map<DisagreementKind, number[]>(applicable.map((k) => [k, []]));
    let disagreeing = 0;
    verdicts.forEach((v, i) => {
      if (v.kinds.length > 0) disagreeing++;
      for (const k of v.kinds) byKind.get(k)!.push(i);
    });
    const f1 = ds.hasF1 ? s.f1 : null;
    const counts = Object.fromEntries(
      DISAGREEMENT_KINDS.map((k) => [k, byKind.get(k)?.length ?? null]),
    ) as Record<DisagreementKind, number | null>;
    const examples: Partial<Record<DisagreementKind, DisagreementExample[]>> = {};
    for (const [k, idx] of byKind) {
      examples[k] = mostTelling(k, idx, ids, s.em, f1, s.bem).slice(0, top).map((i) => {
        const q = ds.questions[i];
        const f = f1 ? f1[i] : null;
        const b = s.bem ? s.bem[i] : null;
        return {
          id: q.id,
          title: q.title,
          question: q.question,
          golds: q.golds,
          prediction: s.predictions[i],
          em: s.em[i],
          f1: f,
          ...(b === null ? {} : { bem: b }),
          gap: gap(k, s.em[i], f, b),
        };
      });
    }
    return {
      system: s.spec.name,
      questions: ds.questions.length,
      disagreeing,
      counts,
      examples,
    };
  });
  return {
    f1_threshold: t,
    bem_threshold: 0.5,
    kinds: DISAGREEMENT_KINDS.filter((k) => kindsOf.has(k)),
    systems,
  };
}

/** The label of a slice record: `""` until a person fills it. */
export type SliceLabel = "" | "correct" | "incorrect";

/** One record of the slice (`--export-slice`): a disagreeing question of a system. */
export interface SliceRecord {
  /** The dataset's name. */
  readonly dataset: string;
  /** The system's name. */
  readonly system: string;
  /** Question id. */
  readonly id: string;
  /** Article title (`""`: none). */
  readonly title: string;
  /** Its paragraph's id (`null`: the set has none). */
  readonly paragraph: string | null;
  /** The question. */
  readonly question: string;
  /** A snippet of its paragraph around the prediction ({@linkcode contextSnippet}; `null`: none). */
  readonly context: string | null;
  /** The prediction (`null`: none). */
  readonly prediction: string | null;
  /** Gold answers. */
  readonly golds: readonly string[];
  /** EM 0/1. */
  readonly em: number;
  /** F1 0..1 (`null`: no F1). */
  readonly f1: number | null;
  /** BEM score, when the system has BEM. */
  readonly bem?: number;
  /** The kinds it falls under (table order). */
  readonly kind: readonly DisagreementKind[];
  /** Empty: `correct` or `incorrect`, for a person to fill. */
  readonly label: SliceLabel;
}

/**
 * A snippet of `context` around the first of `anchors` found in it (the
 * prediction, then the gold answers; none found: the beginning): up to
 * `radius` characters on each side of it, cut at a space when there is one
 * within the window (never inside a surrogate pair), with `…` where text
 * was cut. The whole context when it fits.
 *
 * @example
 * ```ts
 * import { contextSnippet } from "./disagree.ts";
 * const c = "aaaa bbbb cccc Paris dddd eeee ffff";
 * if (contextSnippet(c, ["Paris"], 8) !== "…cccc Paris dddd…") throw new Error(contextSnippet(c, ["Paris"], 8));
 * if (contextSnippet("short", ["x"], 8) !== "short") throw new Error();
 * ```
 */
export function contextSnippet(context: string, anchors: readonly string[], radius = 300): string {
  let at = 0, len = 0;
  for (const a of anchors) {
    if (a.trim() === "") continue;
    const k = context.indexOf(a);
    if (k >= 0) {
      at = k;
      len = a.length;
      break;
    }
  }
  let lo = Math.max(0, at - radius);
  let hi = Math.min(context.length, at + len + radius);
  if (lo > 0) {
    const k = context.indexOf(" ", lo);
    if (k >= 0 && k < at) lo = k + 1;
    else if (/[\uDC00-\uDFFF]/.test(context[lo])) lo++;
  }
  if (hi < context.length) {
    const k = context.lastIndexOf(" ", hi);
    if (k > at + len) hi = k;
    else if (/[\uD800-\uDBFF]/.test(context[hi - 1])) hi--;
  }
  return `${lo > 0 ? "…" : ""}${context.slice(lo, hi)}${hi < context.length ? "…" : ""}`;
}

/** A question's record of the slice. */
function sliceRecord(
  ds: ScoredDataset,
  s: ScoredSystem,
  q: ReportQuestion,
  i: number,
  kinds: readonly DisagreementKind[],
): SliceRecord {
  const pred = s.predictions[i];
  return {
    dataset: ds.name,
    system: s.spec.name,
    id: q.id,
    title: q.title,
    paragraph: q.paragraph ?? null,
    question: q.question,
    context: q.context === undefined
      ? null
      : contextSnippet(q.context, [...(pred === null ? [] : [pred]), ...q.golds]),
    prediction: pred,
    golds: q.golds,
    em: s.em[i],
    f1: ds.hasF1 && s.f1 ? s.f1[i] : null,
    ...(s.bem ? { bem: s.bem[i] } : {}),
    kind: kinds,
    label: "",
  };
}

/**
 * The slice: one record per disagreeing question of every system of every
 * dataset, in a random order (a Fisher–Yates shuffle of the records in
 * dataset, system, question order: for i from the last index down to 1,
 * swap record i with record `g.below(i + 1)`, g a
 * {@linkcode Xoshiro128StarStar} seeded with `seed`).
 */
export function sliceRecords(
  datasets: readonly ScoredDataset[],
  t: number,
  seed: number,
): SliceRecord[] {
  const out: SliceRecord[] = [];
  for (const ds of datasets) {
    for (const s of ds.systems) {
      systemVerdicts(ds, s, t).forEach((v, i) => {
        if (v.kinds.length > 0) out.push(sliceRecord(ds, s, ds.questions[i], i, v.kinds));
      });
    }
  }
  const g = new Xoshiro128StarStar(seed);
  for (let i = out.length - 1; i >= 1; i--) {
    const j = g.below(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
