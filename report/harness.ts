/**
 * The harness's own per-question metric beside phraseval's: where a system's
 * answers come from an lm-evaluation-harness samples file that logged its
 * `exact_match` per document, the report shows that metric's mean beside
 * the official-rules EM scored here, and lists the questions where the two
 * disagree (where an answer normalization differs: lm-eval's `exact_match`
 * on `nq_open` compares case- and punctuation-folded strings whole, the
 * official SQuAD script also drops articles and collapses white space).
 *
 * @module
 */
import type { ScoredDataset } from "./systems.ts";

/** One question on which the harness's metric and the official EM differ. */
export interface HarnessDisagreement {
  /** Question id. */
  readonly id: string;
  /** The question text. */
  readonly question: string;
  /** The gold answers. */
  readonly golds: readonly string[];
  /** The system's answer. */
  readonly prediction: string | null;
  /** The harness's metric (0 or 1). */
  readonly harness: number;
  /** The official EM (0 or 1). */
  readonly em: number;
}

/** One system's harness metric against the official EM. */
export interface HarnessSystem {
  /** The system's name. */
  readonly name: string;
  /** The log's format (`lm-eval`). */
  readonly format: string;
  /** The harness's metric's name (`exact_match`). */
  readonly metric: string;
  /** Its mean over the questions, in percent. */
  readonly harness: number;
  /** The official EM, in percent. */
  readonly em: number;
  /** Questions right by the harness and wrong by the official EM. */
  readonly harness_only: number;
  /** Questions right by the official EM and wrong by the harness. */
  readonly em_only: number;
  /** The first `top` disagreements, in dataset order. */
  readonly examples: readonly HarnessDisagreement[];
}

/**
 * Each system of `ds` with a harness metric, against its official EM; empty
 * when none logged one.
 *
 * @example
 * ```ts
 * import { harnessComparison } from "./harness.ts";
 * import type { ScoredDataset } from "./systems.ts";
 * const ds = {
 *   questions: [{ id: "q1", title: "", question: "Who?", golds: ["Ann"] },
 *     { id: "q2", title: "", question: "Where?", golds: ["Rome"] }],
 *   systems: [{ spec: { name: "A" }, predictions: ["the Ann", "Rome"], em: new Float64Array([1, 1]),
 *     harness: { format: "lm-eval", metric: "exact_match", values: new Float64Array([0, 1]) } }],
 * } as unknown as ScoredDataset;
 * const [a] = harnessComparison(ds, 20);
 * if (a.harness !== 50 || a.em !== 100 || a.em_only !== 1 || a.examples[0].id !== "q1") {
 *   throw new Error(JSON.stringify(a));
 * }
 * ```
 */
export function harnessComparison(ds: ScoredDataset, top: number): HarnessSystem[] {
  const out: HarnessSystem[] = [];
  for (const s of ds.systems) {
    const h = s.harness;
    if (h === undefined) continue;
    let sumH = 0, sumE = 0, harnessOnly = 0, emOnly = 0;
    const examples: HarnessDisagreement[] = [];
    ds.questions.forEach((q, i) => {
      const a = h.values[i] > 0 ? 1 : 0, e = s.em[i] > 0 ? 1 : 0;
      sumH += a;
      sumE += e;
      if (a === e) return;
      if (a === 1) harnessOnly++;
      else emOnly++;
      if (examples.length < top) {
        examples.push({
          id: q.id,
          question: q.question,
          golds: q.golds,
          prediction: s.predictions[i],
          harness: a,
          em: e,
        });
      }
    });
    const n = ds.questions.length || 1;
    out.push({
      name: s.spec.name,
      format: h.format,
      metric: h.metric,
      harness: (100 * sumH) / n,
      em: (100 * sumE) / n,
      harness_only: harnessOnly,
      em_only: emOnly,
      examples,
    });
  }
  return out;
}
