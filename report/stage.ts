/**
 * The `report` stage as a library call: {@linkcode report} (INPUTs, or
 * `--search-error` alone, into `report.json`, `report.md`, `report.html`
 * and with `latex` `report.tex`, one folder written all or nothing) and
 * {@linkcode reportDiff} (`report --diff`: two runs' provenance, changed
 * answers and paired tests), their options and their checks. The
 * statistics run in steps resumed from the event loop, so an interruption
 * of the fiber stops them within a step; the folder write, interrupted,
 * finishes removing its temporary folder before the fiber ends.
 *
 * @module
 */
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import { type ExitCode, FileError, type InputError, UsageError, WriteError } from "../io/errors.ts";
import { statRegularFile } from "../io/regular.ts";
import type { Steps } from "../metrics/stats/mod.ts";
import { timestamp } from "../runs/run_dir.ts";
import { analyzeSteps } from "./analysis.ts";
import { CLUSTER_LEVELS } from "./clustering.ts";
import type { AnalysisOptions, ReportJson } from "./report_json.ts";
import { renderCharts, renderSearchErrorCharts } from "./charts.ts";
import { DEFAULT_F1_THRESHOLD, sliceRecords } from "./disagree.ts";
import { absPath, baseOf, dirOf, isDir, writeTextAtomically } from "../io/fs.ts";
import { readLabels } from "./labels.ts";
import { resolveInputs } from "./inputs.ts";
import { renderDiffHtml, renderHtml } from "./html.ts";
import { renderLatex } from "./latex.ts";
import { renderDiffMarkdown, renderMarkdown } from "./markdown.ts";
import { type ScoredDataset, scoreSystems } from "./systems.ts";
import { searchError } from "./search_error.ts";
import {
  diffInputs,
  type DiffJson,
  type DiffOptions,
  diffSteps,
  pairSpecs,
  renderDiffText,
} from "./diff.ts";
import { type ReportProvenance, reportProvenance } from "../runs/summary/provenance.ts";
import { writeFolderAtomic } from "../io/fs.ts";

/**
 * A failure of the work itself (statistics, charts): exit 1, not bad input.
 *
 * @example
 * ```ts
 * import { ReportError } from "./stage.ts";
 * const e = new ReportError("statistics: no questions");
 * if (e._tag !== "ReportError" || e.message !== "statistics: no questions" || e.exitCode !== 1) {
 *   throw new Error();
 * }
 * ```
 */
export class ReportError extends Data.TaggedError("ReportError")<{
  /** What failed, on one line. */
  readonly message: string;
}> {
  /**
   * The error, with what failed.
   *
   * @param message what failed, on one line
   */
  constructor(message: string) {
    super({ message });
  }

  /** Exit code of a command that fails with it: 1, the work failed. */
  get exitCode(): ExitCode {
    return 1;
  }
}

/** Options of {@linkcode report}. */
export interface ReportOptions extends AnalysisOptions {
  /** The INPUTs (see `inputs.ts`). */
  readonly inputs: readonly string[];
  /** The dataset of `NAME=pred.json` INPUTs. */
  readonly data?: string;
  /** The output folder (default `outputs/report_<YYYYMMDD_HHMMSS>` in the working folder). */
  readonly out?: string;
  /** Also write `report.tex` (a LaTeX tabular per dataset, {@linkcode renderLatex}). */
  readonly latex?: boolean;
  /**
   * Write the slice of disagreeing questions here (NDJSON, `disagree.ts`:
   * {@linkcode sliceRecords}), atomically; a file in `out` is written with
   * the report, all or nothing.
   */
  readonly exportSlice?: string;
  /** People's labels of questions (NDJSON, `labels.ts`). */
  readonly labels?: string;
  /**
   * `--search-error EXACT APPROX...`: the exact search and the approximate
   * ones (`search_error.ts`); the report then has a search-error part, and
   * may have no INPUT.
   */
  readonly searchError?: { readonly exact: string; readonly approx: readonly string[] };
  /**
   * The command line's flags as parsed, recorded in `report.json`'s
   * `provenance` (default: these options).
   */
  readonly flags?: Readonly<Record<string, unknown>>;
}

/** What {@linkcode report} did. */
export interface ReportResult {
  /** The output folder. */
  readonly out: string;
  /** Systems compared (over all datasets). */
  readonly systems: number;
  /** Approximate searches of the search-error part (0 without it). */
  readonly searches: number;
  /** The numbers (`report.json`). */
  readonly report: ReportJson;
  /** The slice written (`exportSlice`): its file and records. */
  readonly slice?: { readonly file: string; readonly records: number };
  /** Seconds spent: scoring (reading and scoring), statistics, charts, writing. */
  readonly timings: {
    readonly score: number;
    readonly stats: number;
    readonly charts: number;
    readonly write: number;
  };
}

/** The largest `resamples`: the bootstrap keeps B replicate means per system in memory. */
export const MAX_RESAMPLES = 100_000_000;

/**
 * The option that is out of range, as a {@linkcode UsageError} worded with
 * the command's flag, or `null`: `resamples` an integer in [1,
 * {@linkcode MAX_RESAMPLES}], `shuffles` an integer of at least 1 (and at
 * most 2⁵³ − 1), `top` an integer of at least 0, `seed` an integer in [0,
 * 2⁵³ − 1], `cluster` one of {@linkcode CLUSTER_LEVELS}.
 *
 * @example
 * ```ts
 * import { checkOptions } from "./stage.ts";
 * if (checkOptions({ resamples: 0 })?.message !== "--resamples must be an integer from 1 to 100000000, got 0") {
 *   throw new Error();
 * }
 * if (checkOptions({ resamples: 10, shuffles: 99, top: 0, seed: 3 }) !== null) throw new Error();
 * ```
 */
export function checkOptions(opts: AnalysisOptions): UsageError | null {
  const limits: [keyof AnalysisOptions, number, number][] = [
    ["resamples", 1, MAX_RESAMPLES],
    ["shuffles", 1, Number.MAX_SAFE_INTEGER],
    ["top", 0, Number.MAX_SAFE_INTEGER],
    ["seed", 0, Number.MAX_SAFE_INTEGER],
  ];
  const t = opts.f1Threshold;
  if (t !== undefined && !(typeof t === "number" && t > 0 && t <= 1)) {
    return new UsageError(`--f1-threshold must be a number above 0 and at most 1, got ${t}`);
  }
  if (opts.cluster !== undefined && !CLUSTER_LEVELS.includes(opts.cluster)) {
    return new UsageError(
      `--cluster must be one of ${CLUSTER_LEVELS.join(", ")}, got "${opts.cluster}"`,
    );
  }
  for (const [name, lo, hi] of limits) {
    const v = opts[name];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) {
      return new UsageError(`--${name} must be an integer from ${lo} to ${hi}, got ${v}`);
    }
  }
  return null;
}

/**
 * Runs a computation in steps to its end on the fiber, going back to the
 * event loop (`Effect.yieldNow`) whenever 20 ms have passed since the last
 * time: signals are handled and the fiber can be interrupted between two
 * steps. A throw is a {@linkcode ReportError}.
 */
const runStepsYielding = <T>(steps: Steps<T>): Effect.Effect<T, ReportError> =>
  Effect.gen(function* () {
    let last = performance.now();
    for (;;) {
      let r: IteratorResult<void, T>;
      try {
        r = steps.next();
      } catch (e) {
        return yield* Effect.fail(
          new ReportError(`statistics: ${e instanceof Error ? e.message : e}`),
        );
      }
      if (r.done) return r.value;
      if (performance.now() - last >= 20) {
        yield* Effect.yieldNow;
        last = performance.now();
      }
    }
  });

/**
 * {@linkcode writeFolderAtomic} on the fiber: interrupted, it aborts the
 * write (which removes its temporary folder, or completes when it was
 * already renaming into place) and waits for that before the fiber goes on.
 */
const writeFolder = (
  out: string,
  files: Readonly<Record<string, string>>,
): Effect.Effect<void, FileError> =>
  Effect.callback<void, FileError>((resume) => {
    const ac = new AbortController();
    const done = writeFolderAtomic(out, files, ac.signal);
    done.then(
      () => resume(Effect.void),
      (e) =>
        resume(Effect.fail(
          e instanceof FileError ? e : new FileError({ file: out, message: String(e) }),
        )),
    );
    return Effect.promise(() => {
      ac.abort();
      return done.catch(() => {});
    });
  });

/** The files of the report folder, which a slice written into it must not replace. */
const REPORT_FILES = ["report.json", "report.md", "report.html", "report.tex"];

/**
 * Where the slice goes, checked before any work: its file name when it is
 * in the report folder `out` (written with the report, all or nothing),
 * else `null` (written after it, atomically), failing with a
 * {@linkcode FileError} when its folder does not exist or it is a folder,
 * and with a {@linkcode UsageError} when it would replace a report file,
 * the `--labels` file or any file that holds a filled label.
 */
const sliceTarget = (
  file: string | undefined,
  out: string,
  labels: string | undefined,
): Effect.Effect<string | null, FileError | UsageError> =>
  Effect.gen(function* () {
    if (file === undefined) return null;
    const labelled = labels !== undefined && absPath(labels) === absPath(file)
      ? "it is the --labels file"
      : labelledLine(file);
    if (labelled !== null) {
      return yield* Effect.fail(
        new UsageError(
          `--export-slice ${file} would replace people's labels (${labelled}): give another file`,
        ),
      );
    }
    if (absPath(dirOf(file)) === absPath(out)) {
      const name = baseOf(file);
      if (REPORT_FILES.includes(name)) {
        return yield* Effect.fail(
          new UsageError(`--export-slice ${file} would replace the report's ${name}`),
        );
      }
      return name;
    }
    if (isDir(file)) return yield* Effect.fail(new FileError({ file, message: "is a folder" }));
    if (!isDir(dirOf(file))) {
      return yield* Effect.fail(
        new FileError({ file, message: `no such folder ${dirOf(file)} (for the slice)` }),
      );
    }
    return null;
  });

/**
 * Where an existing file holds a filled label (`line N`), or `null`: a
 * slice written over it would lose a person's work.
 */
function labelledLine(file: string): string | null {
  let text: string;
  try {
    if (statRegularFile(file) === undefined) return null;
    // Decoded leniently on purpose: this only looks for a filled label to keep it from
    // being written over (the file is an output, not read as input), and a stray byte
    // must not hide one.
    text = Deno.readTextFileSync(file);
  } catch {
    return null; // not there (or not a file: refused next)
  }
  const i = text.split("\n").findIndex((l) => /"label"\s*:\s*"(correct|incorrect)"/.test(l));
  return i < 0 ? null : `line ${i + 1} has a label`;
}

/** Writes the slice's text to `file` atomically (a temporary file renamed into place). */
const writeSlice = (file: string, text: string): Effect.Effect<void, WriteError> =>
  Effect.tryPromise({
    try: () => writeTextAtomically(file, text),
    catch: (e) => new WriteError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/** The options of a report as its provenance records them when no flags are given. */
const optionsRecord = (o: ReportOptions & { diff?: boolean }): Record<string, unknown> => ({
  inputs: [...o.inputs],
  data: o.data,
  out: o.out,
  baseline: o.baseline,
  seed: o.seed ?? 0,
  resamples: o.resamples ?? 1000,
  shuffles: o.shuffles ?? 10000,
  top: o.top ?? 20,
  cluster: o.cluster,
  latex: o.latex,
  f1Threshold: o.f1Threshold,
  exportSlice: o.exportSlice,
  labels: o.labels,
  searchError: o.searchError,
  ...(o.diff ? { diff: true } : {}),
});

/**
 * Builds the report of the INPUTs and writes `report.json`, `report.md` and
 * `report.html` (and with `latex` `report.tex`) into `opts.out` (all or
 * nothing). Bad input (see
 * `inputs.ts` and `systems.ts`) fails with {@linkcode InputError} before
 * anything is written; `--baseline` naming no system, or an option out of
 * range ({@linkcode checkOptions}), with {@linkcode UsageError}.
 * Interrupted, it stops within about 20 ms of statistics and leaves no
 * file or temporary folder behind.
 */
export const report = (
  opts: ReportOptions,
): Effect.Effect<ReportResult, InputError | FileError | UsageError | ReportError> =>
  Effect.gen(function* () {
    const t0 = performance.now();
    const usage = checkOptions(opts);
    if (usage) return yield* Effect.fail(usage);
    if (opts.inputs.length === 0 && opts.searchError === undefined) {
      return yield* Effect.fail(
        new UsageError("give at least one INPUT, or --search-error EXACT APPROX"),
      );
    }
    const specs = opts.inputs.length === 0
      ? []
      : yield* resolveInputs(opts.inputs, { data: opts.data });
    if (opts.baseline !== undefined && !specs.some((s) => s.name === opts.baseline)) {
      return yield* Effect.fail(
        new UsageError(
          `--baseline ${opts.baseline}: no such system (systems: ${
            [...new Set(specs.map((s) => s.name))].join(", ")
          })`,
        ),
      );
    }
    const out = opts.out ?? `outputs/report_${timestamp()}`;
    const sliceName = yield* sliceTarget(opts.exportSlice, out, opts.labels);
    const se = opts.searchError === undefined ? undefined : yield* searchError({
      ...opts.searchError,
      ...(opts.data !== undefined ? { data: opts.data } : {}),
    });
    const datasets = yield* scoreSystems(specs);
    const labelSet = opts.labels === undefined
      ? undefined
      : yield* readLabels(opts.labels, datasets);
    const t1 = performance.now();
    const analysed = yield* runStepsYielding(analyzeSteps(datasets, { ...opts, labelSet }));
    const provenance: ReportProvenance = yield* reportProvenance(
      opts.flags ?? optionsRecord(opts),
      opts.inputs,
    );
    const json: ReportJson = se === undefined
      ? { ...analysed, provenance }
      : { ...analysed, search_error: se, provenance };
    const t2 = performance.now();
    const [charts, seCharts] = yield* Effect.tryPromise({
      try: () =>
        Promise.all([
          renderCharts(json.datasets, datasets),
          se === undefined ? Promise.resolve([]) : renderSearchErrorCharts(se),
        ]),
      catch: (e) =>
        new FileError({
          file: "report.html",
          message: `charts: ${e instanceof Error ? e.message : e}`,
        }),
    });
    const t3 = performance.now();
    const slice = opts.exportSlice === undefined ? null : sliceRecords(
      datasets,
      opts.f1Threshold ?? DEFAULT_F1_THRESHOLD,
      opts.seed ?? 0,
    );
    const sliceText = slice === null ? "" : slice.map((r) => JSON.stringify(r) + "\n").join("");
    yield* writeFolder(out, {
      "report.json": JSON.stringify(json, null, 2) + "\n",
      "report.md": renderMarkdown(json),
      "report.html": renderHtml(json, charts, seCharts),
      ...(opts.latex ? { "report.tex": renderLatex(json) } : {}),
      ...(sliceName !== null ? { [sliceName]: sliceText } : {}),
    });
    if (slice !== null && sliceName === null) yield* writeSlice(opts.exportSlice!, sliceText);
    const t4 = performance.now();
    const s = (a: number, b: number) => Math.round(b - a) / 1000;
    return {
      out,
      systems: specs.length,
      searches: se?.settings.length ?? 0,
      report: json,
      ...(slice !== null ? { slice: { file: opts.exportSlice!, records: slice.length } } : {}),
      timings: { score: s(t0, t1), stats: s(t1, t2), charts: s(t2, t3), write: s(t3, t4) },
    };
  });

/** Options of {@linkcode reportDiff}. */
export interface ReportDiffOptions extends DiffOptions {
  /** Write `report.json`, `report.md` and `report.html` here (default: write nothing). */
  readonly out?: string;
  /** The command line's flags as parsed, recorded in `report.json`'s `provenance`. */
  readonly flags?: Readonly<Record<string, unknown>>;
}

/** What {@linkcode reportDiff} did. */
export interface ReportDiffResult {
  /** The numbers (`report.json` with `--out`), with the report's own `provenance`. */
  readonly report: DiffJson & { readonly provenance: ReportProvenance };
  /** What the command prints (`renderDiffText`). */
  readonly text: string;
  /** The folder written, or `null`. */
  readonly out: string | null;
}

/**
 * `report --diff RUN_A RUN_B` (`diff.ts`): reads both run folders and their
 * provenance blocks, pairs their systems, scores each pair together (the
 * two must be on one question set), computes the diff and, with `out`,
 * writes `report.json` (every changed question), `report.md` and
 * `report.html` (the first `top`), all or nothing. Bad input fails with
 * {@linkcode InputError} before anything is written; an option out of
 * range with {@linkcode UsageError}. Interrupted, it stops within about
 * 20 ms of statistics and leaves nothing behind.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { reportDiff } from "./stage.ts";
 * const dir = await Deno.makeTempDir();
 * const e = await Effect.runPromise(Effect.flip(reportDiff({ a: dir, b: dir })));
 * await Deno.remove(dir, { recursive: true });
 * if (e._tag !== "InputError") throw new Error(String(e));
 * ```
 */
export const reportDiff = (
  opts: ReportDiffOptions,
): Effect.Effect<ReportDiffResult, InputError | FileError | UsageError | ReportError> =>
  Effect.gen(function* () {
    const usage = checkOptions(opts);
    if (usage) return yield* Effect.fail(usage);
    const { a, b, pairs, unpaired } = yield* diffInputs(opts);
    const scored: ScoredDataset[] = [];
    for (const [s, t] of pairs) scored.push((yield* scoreSystems(pairSpecs(s, t)))[0]);
    const diff = yield* runStepsYielding(diffSteps({ a, b }, pairs, scored, unpaired, opts));
    const provenance = yield* reportProvenance(
      opts.flags ?? optionsRecord({ ...opts, inputs: [opts.a, opts.b], diff: true }),
      [opts.a, opts.b],
    );
    const json = { ...diff, provenance };
    if (opts.out !== undefined) {
      yield* writeFolder(opts.out, {
        "report.json": JSON.stringify(json, null, 2) + "\n",
        "report.md": renderDiffMarkdown(json),
        "report.html": renderDiffHtml(json),
      });
    }
    return { report: json, text: renderDiffText(json), out: opts.out ?? null };
  });
