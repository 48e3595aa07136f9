/**
 * `deno task run configs/eval_kinds_mini.ts`: one predictions model over
 * four dataset kinds, scored without running an encoder: SQuAD v1.1 (its
 * first article, Super_Bowl_50, 810 questions), a SQuAD v2.0 set, an MRQA
 * set and a CuratedTREC-style open set (regex answers, with its passage
 * corpus), each with its own official metric. The answers in
 * `tests/testdata/predictions/eval_kinds_mini/` are hand-made, standing in
 * for a generative reader's, an API's or an earlier run's
 * (`<dataset abbr>.json` each).
 *
 * @example
 * ```ts
 * import { config } from "./eval_kinds_mini.ts";
 * if (config.datasets.map((d) => d.type).join() !== "squad,squad2,mrqa,open") throw new Error();
 * if (config.models[0].type !== "predictions") throw new Error("expected a predictions model");
 * ```
 *
 * @module
 */
import type { DatasetConfig, ModelConfig, RunConfig } from "./types.ts";
import { squadDev } from "./datasets/squad_dev.ts";

const fixture = (name: string) => new URL(`../tests/testdata/datasets/${name}`, import.meta.url);

/** SQuAD v1.1 dev, article 0 only. */
export const squadDevA0: DatasetConfig = {
  ...squadDev,
  abbr: "squad-dev-a0",
  reader: { articles: [0, 1] },
};

/** The four kinds: v1.1, v2.0, MRQA and open (CuratedTREC regexes). */
export const kindsMini: DatasetConfig[] = [
  squadDevA0,
  { abbr: "squad2-fixture", type: "squad2", path: fixture("squad_v2.json") },
  { abbr: "mrqa-fixture", type: "mrqa", path: fixture("mrqa.jsonl") },
  {
    abbr: "trec-fixture",
    type: "open",
    path: fixture("curatedtrec-test.qa.csv"),
    corpus: fixture("psgs_w100.tsv"),
  },
];

/** Existing answers: one `<dataset abbr>.json` per dataset. */
export const handMade: ModelConfig = {
  abbr: "hand-made",
  type: "predictions",
  predictions: new URL("../tests/testdata/predictions/eval_kinds_mini/", import.meta.url),
};

/** One predictions model × four dataset kinds. */
export const config: RunConfig = {
  datasets: kindsMini,
  models: [handMade],
};
