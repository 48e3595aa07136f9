/**
 * Three articles of SQuAD v1.1 dev (Sky_(United_Kingdom),
 * Victoria_(Australia), Huguenot: 91 paragraphs, 449 questions) for quick
 * runs and tests. Inherits everything else from {@linkcode squadDev}.
 *
 * @example
 * ```ts
 * import { squadDevMini } from "./squad_dev_mini.ts";
 * if (squadDevMini.reader?.articles?.join() !== "8,11") throw new Error("wrong range");
 * ```
 *
 * @module
 */
import type { DatasetConfig } from "../types.ts";
import { squadDev } from "./squad_dev.ts";

/** Articles 8, 9 and 10 of SQuAD v1.1 dev. */
export const squadDevMini: DatasetConfig = {
  ...squadDev,
  abbr: "squad-dev-mini",
  reader: { articles: [8, 11] },
};
