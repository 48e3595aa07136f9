/**
 * phraseval: evaluation tools for phrase-indexed question answering
 * (PI-SQuAD) and QA answers in general, as Effect streams.
 *
 * Each room's public modules, re-exported: `io/` (SQuAD, Python-json,
 * NDJSON, npy/npz/zip, dumps, `split`, `validate`, `inspectFile`),
 * `encoders/` (the encoder services and `embedContext`/`embedQuestion`),
 * `metrics/` (EM/F1 v1.1/v2.0, `evaluate`, `scoreDataset`, BEM), `search/`
 * (`merge`), `runs/` (config runs, `run`, `full`), `serve/` (the demo
 * server, `startServer`) and, as the namespace `report` (its names would
 * clash with `io/`'s), `report/` (`report.report`, the statistics and
 * renderers). The command-line
 * scripts are in `pipeline/`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { squadQuestions } from "./mod.ts";
 * const n = await Effect.runPromise(Stream.runCount(squadQuestions("data/dev-v1.1.json.gz")));
 * if (n !== 10570) throw new Error(`${n} questions`);
 * ```
 *
 * @module
 */
export * from "./io/mod.ts";
export * from "./encoders/mod.ts";
export * from "./metrics/mod.ts";
export * from "./search/mod.ts";
export * from "./runs/mod.ts";
export * as report from "./report/mod.ts";
export * from "./serve/mod.ts";
