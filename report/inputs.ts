/**
 * What `report` compares: each INPUT on the command line becomes one or more
 * systems, each a prediction file on a dataset.
 *
 * - A `full` output folder (`summary.json` and `pred.json`): one system,
 *   named by the encoder in `summary.json`, on the dataset `summary.json`
 *   names (or `--data` when that file is gone). A `full --open --corpus`
 *   folder has no `pred.json` (no merge over a corpus): its system's
 *   answers are the search's, `open/pred.json`.
 * - A `run` work folder (`configs/<name>.json` and `predictions/`): one
 *   system per model × dataset with a prediction file
 *   (`predictions/<model>/<dataset>.json`, see `runs/plan/layout.ts`), named
 *   `<model>` (an encoder or a `predictions` model alike; over a dataset's
 *   `corpus` an encoder's answers are its search's, `open/<model>/<dataset>.json`,
 *   as there is no merge), on the dataset
 *   `<dataset>`, of every dataset kind: the system carries the dataset's
 *   `type`, `format`, `lang`, field map and `open` ranks from the run's
 *   resolved config, so `systems.ts` scores it with its kind's metric.
 * - An lm-evaluation-harness `--output_path` folder (`<model>/samples_<task>_<date>.jsonl`)
 *   or an OpenCompass work folder (`predictions/<model>/<dataset>.json`): one
 *   system per model, named by its folder, on `--data` (the answers matched
 *   to its questions and checked by `io/predictions_harness.ts`).
 * - `NAME=pred.json`: one system named NAME on `--data` (the file may be a
 *   harness's log too: told from its content). `NAME=FOLDER`
 *   renames the system of a `full` folder. The kind of `--data` (and of a
 *   `full` folder's dataset) is told from the file as `evaluate` tells it
 *   (`systems.ts`).
 *
 * A dataset's name is its run `abbr`, or the data file's name without
 * `.json`/`.json.gz` (`dev-v1.1`). A system's per-question rows are found
 * by the one rule of `runs/plan/layout.ts`: `rows.ndjson` next to a `full`
 * folder's `pred.json`, `<stem>.rows.ndjson` next to any other prediction
 * file (a run's `predictions/<model>/<dataset>.rows.ndjson`), when present;
 * `systems.ts` then takes the scores from them.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { InputError, UsageError } from "../io/errors.ts";
import { statRegularFile } from "../io/regular.ts";
import { runLayout } from "../runs/plan/layout.ts";
import { singleRunLayout } from "../runs/single.ts";
import type { DatasetKind, ResolvedDataset } from "../runs/config/config.ts";
import type { DatasetFormat } from "../io/datasets/detect.ts";
import type { FieldMap } from "../io/datasets/types.ts";
import { baseOf, exists, isDir, isFile, listNames, trimSlash } from "../io/fs.ts";
import { isDataPath } from "../io/datasets/parquet_path.ts";
import type { PredFormat } from "../io/predictions_harness.ts";
import { readTextStrict } from "../io/text.ts";

/** One system of a report: a prediction file on a dataset. */
export interface SystemSpec {
  /** The system's name (unique per dataset). */
  readonly name: string;
  /** The dataset's name. */
  readonly dataset: string;
  /** The data file the predictions answer. */
  readonly data: string;
  /**
   * How the dataset is read and scored (a run dataset's `type`); absent:
   * told from the data file (`full` folders, `NAME=pred.json`).
   */
  readonly type?: DatasetKind;
  /** The format its reader is told (a run dataset's `format`); absent: detected. */
  readonly format?: DatasetFormat;
  /** The language of an `xquad`/`mlqa` set (absent: its file name's). */
  readonly lang?: string;
  /** The field map of a generic `jsonl`/`csv`/`tsv` set. */
  readonly fields?: FieldMap;
  /** The ranks its open search kept (a run dataset's `open` option), when it has one. */
  readonly topK?: number;
  /** The prediction file. */
  readonly predictions: string;
  /** Its format, where the INPUT tells it (a harness's folder); absent: told from its content. */
  readonly predFormat?: PredFormat;
  /** Per-question rows (with `bem`) next to the predictions, or `null`. */
  readonly rows: string | null;
  /** The INPUT it came from. */
  readonly input: string;
  /** Which kind of INPUT. */
  readonly kind: "full" | "run" | "pred";
}

/** Options of {@linkcode resolveInputs}. */
export interface ResolveOptions {
  /** The dataset of `NAME=pred.json` inputs (and of `full` folders whose dataset is gone). */
  readonly data?: string;
}

const KINDS =
  "a report INPUT is a full output folder (summary.json and pred.json), a run work folder (configs/<name>.json and predictions/), an lm-evaluation-harness output folder or OpenCompass work folder (with --data), or NAME=pred.json";

/**
 * The dataset name of a data file: its name without `.gz` and `.json`.
 *
 * @example
 * ```ts
 * import { datasetName } from "./inputs.ts";
 * if (datasetName("data/dev-v1.1.json.gz") !== "dev-v1.1") throw new Error();
 * ```
 */
export function datasetName(path: string): string {
  return baseOf(path).replace(/\.gz$/, "").replace(/\.(json|parquet)$/, "");
}

/** The rows file of a prediction file by the rule of `runs/plan/layout.ts`, when it is there. */
const rowsNext = (pred: string): string | null => {
  const f = `${pred.replace(/\.json$/, "")}.rows.ndjson`;
  return isFile(f) ? f : null;
};

const present = (f: string): string | null => isFile(f) ? f : null;

const bad = (file: string, message: string) => new InputError({ file, where: "", message });

function readJson(file: string): unknown {
  let text: string;
  try {
    statRegularFile(file);
    text = readTextStrict(file);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw bad(file, e instanceof Error ? e.message : String(e));
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw bad(file, `invalid JSON (${e instanceof Error ? e.message : e})`);
  }
}

function fullSystem(dir: string, input: string, opts: ResolveOptions, rename?: string) {
  const summaryFile = `${dir}/summary.json`;
  const s = readJson(summaryFile) as { encoder?: { name?: unknown }; data?: unknown };
  const name = rename ?? s?.encoder?.name;
  if (typeof name !== "string" || name === "") {
    throw bad(summaryFile, 'no "encoder.name": not a summary.json of full');
  }
  if (typeof s.data !== "string") throw bad(summaryFile, 'no "data": not a summary.json of full');
  let data = s.data;
  if (!isDataPath(data)) {
    if (opts.data === undefined) {
      throw bad(summaryFile, `its dataset ${data} is not there: give it with --data`);
    }
    data = opts.data;
  }
  const L = singleRunLayout(dir);
  // Over a corpus there is no merge: the system's answers are the search's.
  const predictions = isFile(L.prediction(name, "")) || !isFile(L.openPrediction(name, ""))
    ? L.prediction(name, "")
    : L.openPrediction(name, "");
  return {
    name,
    dataset: datasetName(data),
    data,
    predictions,
    rows: present(L.rows(name, "")),
    input,
    kind: "full" as const,
  };
}

function runSystems(dir: string, input: string): SystemSpec[] {
  const L = runLayout(dir);
  const out: SystemSpec[] = [];
  const configs = listNames(`${dir}/configs`).filter((n) => n.endsWith(".json"));
  for (const c of configs) {
    const file = `${dir}/configs/${c}`;
    const cfg = readJson(file) as {
      datasets?: ResolvedDataset[];
      models?: { abbr: string }[];
    };
    if (!Array.isArray(cfg?.datasets) || !Array.isArray(cfg?.models)) {
      throw bad(file, "no datasets and models: not a resolved run config");
    }
    for (const ds of cfg.datasets) {
      for (const m of cfg.models) {
        // An encoder model over a corpus has no merge: its answers are the search's
        // (`open/<model>/<dataset>.json`), scored with the rows next to where merge's would be.
        const closed = L.prediction(m.abbr, ds.abbr);
        const open = L.openPrediction(m.abbr, ds.abbr);
        const predictions = ds.corpus !== undefined && !isFile(closed) && isFile(open)
          ? open
          : closed;
        if (!isFile(predictions)) continue;
        const data = L.data(ds);
        if (!isDataPath(data)) throw bad(file, `dataset "${ds.abbr}": ${data} is not there`);
        if (out.some((x) => x.predictions === predictions)) continue;
        out.push({
          name: m.abbr,
          dataset: ds.abbr,
          data,
          type: ds.type ?? "squad",
          ...(ds.format !== undefined ? { format: ds.format } : {}),
          ...(ds.lang !== undefined ? { lang: ds.lang } : {}),
          ...(ds.fields !== undefined ? { fields: ds.fields } : {}),
          ...(ds.open ? { topK: ds.open.topK } : {}),
          predictions,
          rows: present(L.rows(m.abbr, ds.abbr)),
          input,
          kind: "run",
        });
      }
    }
  }
  if (out.length === 0) throw bad(input, "a run folder without any prediction file");
  return out;
}

const SAMPLES = /^samples_(.+)_(\d{4}-\d\d-\d\dT[0-9.-]+)\.jsonl(?:\.gz)?$/;

/** A model folder's samples file: the latest of its one task (several tasks: name one). */
function samplesOf(dir: string): string | undefined {
  const files = listNames(dir).filter((n) => SAMPLES.test(n) && isFile(`${dir}/${n}`)).sort();
  if (files.length === 0) return undefined;
  const tasks = [...new Set(files.map((n) => SAMPLES.exec(n)![1]))];
  if (tasks.length > 1) {
    throw bad(dir, `samples of ${tasks.length} tasks (${tasks.join(", ")}): give one as NAME=FILE`);
  }
  return `${dir}/${files[files.length - 1]}`;
}

/** An OpenCompass model folder's predictions file (its one dataset). */
function ocPredictionsOf(dir: string): string | undefined {
  const files = listNames(dir).filter((n) => n.endsWith(".json") && isFile(`${dir}/${n}`)).sort();
  if (files.length === 0) return undefined;
  if (files.length > 1) {
    throw bad(
      dir,
      `predictions of ${files.length} datasets (${files.join(", ")}): give one as NAME=FILE`,
    );
  }
  return `${dir}/${files[0]}`;
}

/**
 * The systems of a harness's output folder, or `undefined` when `dir` is
 * none: an lm-evaluation-harness `--output_path` (a folder per model
 * holding `samples_<task>_<date>.jsonl`, or one such model folder) or an
 * OpenCompass work folder (`predictions/<model>/<dataset>.json`, or a
 * folder of timestamped runs, the latest read). Each model is a system
 * named by its folder, on `--data`.
 */
function harnessSystems(
  dir: string,
  input: string,
  opts: ResolveOptions,
): SystemSpec[] | undefined {
  const system = (name: string, predictions: string, predFormat: PredFormat): SystemSpec => {
    if (opts.data === undefined) {
      throw new UsageError(
        `${input}: a ${predFormat} folder's systems need --data (their question set)`,
      );
    }
    return {
      name,
      dataset: datasetName(opts.data),
      data: opts.data,
      predictions,
      predFormat,
      rows: null,
      input,
      kind: "pred",
    };
  };
  const own = samplesOf(dir);
  if (own !== undefined) return [system(baseOf(dir), own, "lm-eval")];
  const models = listNames(dir).filter((n) => isDir(`${dir}/${n}`)).sort();
  const lm = models.flatMap((m) => {
    const f = samplesOf(`${dir}/${m}`);
    return f === undefined ? [] : [system(m, f, "lm-eval")];
  });
  if (lm.length > 0) return lm;
  const runs = isDir(`${dir}/predictions`)
    ? [dir]
    : models.map((m) => `${dir}/${m}`).filter((d) => isDir(`${d}/predictions`));
  if (runs.length === 0) return undefined;
  const run = `${runs[runs.length - 1]}/predictions`;
  const oc = listNames(run).filter((n) => isDir(`${run}/${n}`)).sort().flatMap((m) => {
    const f = ocPredictionsOf(`${run}/${m}`);
    return f === undefined ? [] : [system(m, f, "opencompass")];
  });
  return oc.length > 0 ? oc : undefined;
}

const isFullDir = (d: string) =>
  isFile(`${d}/summary.json`) && (isFile(`${d}/pred.json`) || isFile(`${d}/open/pred.json`));
const isRunDir = (d: string) =>
  isDir(`${d}/predictions`) && listNames(`${d}/configs`).some((n) => n.endsWith(".json"));

function resolveOne(arg: string, opts: ResolveOptions): SystemSpec[] {
  const named = !exists(arg) ? /^([^=/]+)=(.+)$/.exec(arg) : null;
  if (named) {
    const [, name, p] = named;
    const path = trimSlash(p);
    if (isDir(path)) {
      if (isFullDir(path)) return [fullSystem(path, arg, opts, name)];
      throw bad(arg, `NAME=FOLDER names the system of a full output folder; ${KINDS}`);
    }
    if (!isFile(path)) {
      statRegularFile(path); // a pipe, a device: refused as what it is
      throw bad(path, "no such prediction file");
    }
    if (opts.data === undefined) throw new UsageError(`${arg}: NAME=pred.json needs --data`);
    return [{
      name,
      dataset: datasetName(opts.data),
      data: opts.data,
      predictions: path,
      rows: rowsNext(path),
      input: arg,
      kind: "pred",
    }];
  }
  const path = trimSlash(arg);
  if (!exists(path)) throw bad(arg, `no such file or folder (${KINDS})`);
  if (!isDir(path)) throw bad(arg, `a file without NAME= (${KINDS})`);
  if (listNames(path).length === 0) throw bad(arg, `an empty folder (${KINDS})`);
  if (isFullDir(path)) return [fullSystem(path, arg, opts)];
  if (isRunDir(path)) return runSystems(path, arg);
  const harness = harnessSystems(path, arg, opts);
  if (harness !== undefined) return harness;
  throw bad(arg, `none of these kinds: ${KINDS}`);
}

/**
 * The systems of the INPUTs, in order. Fails with {@linkcode InputError}
 * (an INPUT of none of these kinds, an empty folder, a missing file) or
 * {@linkcode UsageError} (no INPUT; `NAME=pred.json` without `--data`; two
 * systems of one name on one dataset).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { resolveInputs } from "./inputs.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/p.json`, "{}");
 * const [s] = await Effect.runPromise(resolveInputs([`A=${dir}/p.json`], { data: "d/dev.json.gz" }));
 * await Deno.remove(dir, { recursive: true });
 * if (s.name !== "A" || s.dataset !== "dev" || s.kind !== "pred") throw new Error(JSON.stringify(s));
 * ```
 */
export const resolveInputs = (
  inputs: readonly string[],
  opts: ResolveOptions = {},
): Effect.Effect<SystemSpec[], InputError | UsageError> =>
  Effect.try({
    try: () => {
      if (inputs.length === 0) throw new UsageError("give at least one INPUT");
      const all = inputs.flatMap((a) => resolveOne(a, opts));
      const seen = new Map<string, SystemSpec>();
      for (const s of all) {
        const key = `${s.dataset}\u0000${s.name}`;
        const other = seen.get(key);
        if (other) {
          throw new UsageError(
            `two systems named "${s.name}" on dataset "${s.dataset}" (${other.input} and ${s.input}): name one with NAME=${s.input}`,
          );
        }
        seen.set(key, s);
      }
      return all;
    },
    catch: (e) => e instanceof InputError || e instanceof UsageError ? e : bad("report", String(e)),
  });
