/**
 * SQuAD v1.1 dev (all 48 articles, bundled as `data/dev-v1.1.json.gz`),
 * scored with the official EM and F1.
 *
 * @example
 * ```ts
 * import { squadDev } from "./squad_dev.ts";
 * const firstTen = { ...squadDev, abbr: "squad-dev-10", reader: { articles: [0, 10] } };
 * if (firstTen.path !== squadDev.path) throw new Error("a spread keeps the path");
 * ```
 *
 * @module
 */
import type { DatasetConfig } from "../types.ts";

/** SQuAD v1.1 dev: 48 articles, 2067 paragraphs, 10570 questions. */
export const squadDev: DatasetConfig = {
  abbr: "squad-dev",
  type: "squad",
  path: new URL("../../data/dev-v1.1.json.gz", import.meta.url),
  eval: { metrics: ["em", "f1"] },
};
