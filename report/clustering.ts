/**
 * The clusters of a report's clustered statistics: questions of one
 * paragraph or one article are not independent, so intervals and p-values
 * are also computed over whole clusters ({@linkcode clusterLevel} chooses
 * the level, {@linkcode clusterIds} numbers each question's cluster).
 *
 * @module
 */
import type { ClusterId } from "../metrics/stats/mod.ts";
import type { ReportQuestion } from "./systems.ts";

/**
 * How the questions are grouped for the clustered statistics: by article,
 * by paragraph, or each question alone.
 */
export type ClusterLevel = "article" | "paragraph" | "question";

/** The cluster levels, coarsest first (`report --cluster`). */
export const CLUSTER_LEVELS: readonly ClusterLevel[] = ["article", "paragraph", "question"];

/**
 * The cluster level used for a dataset's questions: the one asked for when
 * the dataset has it, else the next finer one it has (`article` needs an
 * article for every question, SQuAD-shaped sets; `paragraph` a paragraph
 * id for every question, SQuAD-shaped and MRQA sets, generic sets with a
 * `paragraphId` field; `question` always). Without a request: `paragraph`
 * where the set has paragraphs, else `question` (open sets). A level that
 * gives fewer than two clusters is passed over too (one cluster has no
 * spread to resample: its interval would be a point).
 *
 * @example
 * ```ts
 * import { clusterLevel } from "./clustering.ts";
 * const q = (id: string, paragraph?: string, article?: number) =>
 *   ({ id, title: "", question: "Q?", golds: [], paragraph, article });
 * const squad = [q("a", "T_0", 0), q("b", "T_0", 0), q("c", "U_0", 1)];
 * if (clusterLevel(squad) !== "paragraph" || clusterLevel(squad, "article") !== "article") throw new Error();
 * const mrqa = [q("m1", "c1"), q("m2", "c2")]; // no articles
 * if (clusterLevel(mrqa, "article") !== "paragraph" || clusterLevel([q("0"), q("1")]) !== "question") throw new Error();
 * // one paragraph in all: no spread between clusters, so by question
 * if (clusterLevel([q("a", "T_0", 0), q("b", "T_0", 0)]) !== "question") throw new Error();
 * ```
 */
export function clusterLevel(
  questions: readonly ReportQuestion[],
  requested?: ClusterLevel,
): ClusterLevel {
  const has = (l: ClusterLevel) =>
    l === "question" ||
    (questions.length > 0 &&
      questions.every((q) => (l === "article" ? q.article : q.paragraph) !== undefined) &&
      new Set(clusterIds(questions, l)).size >= 2);
  const order = requested === undefined
    ? ["paragraph", "question"] as const
    : CLUSTER_LEVELS.slice(CLUSTER_LEVELS.indexOf(requested));
  return order.find(has) ?? "question";
}

/**
 * One cluster id per question at a level ({@linkcode clusterLevel}): the
 * article's index; the paragraph's id within its article (two articles'
 * paragraphs of one id are two clusters); the question's position.
 *
 * @example
 * ```ts
 * import { clusterIds } from "./clustering.ts";
 * const q = (paragraph: string, article: number) => ({ id: "", title: "", question: "", golds: [], paragraph, article });
 * const qs = [q("T_0", 0), q("T_0", 0), q("T_1", 0), q("T_0", 1)];
 * if (new Set(clusterIds(qs, "paragraph")).size !== 3 || clusterIds(qs, "article").join() !== "0,0,0,1") throw new Error();
 * if (clusterIds(qs, "question").join() !== "0,1,2,3") throw new Error();
 * ```
 */
export function clusterIds(
  questions: readonly ReportQuestion[],
  level: ClusterLevel,
): ClusterId[] {
  return questions.map((q, i) =>
    level === "article"
      ? q.article!
      : level === "paragraph"
      ? `${q.article ?? ""}\u0000${q.paragraph}`
      : i
  );
}
