/**
 * `full`: the PI-SQuAD pipeline end to end on the bundled SQuAD v1.1 dev
 * set (or another dataset), as a run of one model on one dataset
 * (`single.ts`): split → embed_context and embed_question side by
 * side, each in its own Deno process whose permissions are narrowed to its
 * own input, its model files and its output folder (the question encoder
 * cannot read the context file) → validate → merge → evaluate. It prints
 * each stage's time and the EM/F1, and leaves `outputs/<YYYYMMDD_HHMMSS>/`
 * with the split files, the dumps (unless `--no-keep-dumps`), `pred.json`,
 * its per-question rows `rows.ndjson` (from the scoring pass that makes
 * `result.json`; `runs/plan/layout.ts`), `summary.json` and the tasks' logs. With
 * `open`, the open-domain search runs too (index → search, scored in the
 * same eval task): `index/`, `open/pred.json`, `open/topk.ndjson`, the
 * open fields in every row, and `open` in `result.json` and `summary.json`.
 * Last it writes `provenance.json` (`runs/summary/provenance.ts`: the flags, tool,
 * machine, config, and the sha256 of the dataset, the model files, the
 * dumps, hashed while the merge runs, and the prediction and rows files).
 *
 * Rerun into the same `out`, it resumes (the encoders skip complete dump
 * files), but only a run of the same job: `<out>/.phraseval-run.json`
 * (`io/manifest.ts`: the dataset's sha256, the split, the encoder with the
 * sha256 of its model files, the dumps' dtype when given, the tool
 * version) is written before the first
 * task, and a folder whose manifest differs, or that holds an earlier run's
 * files without one, is refused (exit 2) unless `overwrite`, which removes
 * the files `full` owns there and starts afresh. The dataset may not be
 * one of those files.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import { FileError, InputError, UsageError } from "../io/errors.ts";
import {
  filesFingerprint,
  fileSha256,
  type Manifest,
  manifestDiff,
  readManifest,
  RUN_MANIFEST,
  TOOL_VERSION,
  writeManifest,
} from "../io/manifest.ts";
import { writeTextFileAtomic } from "../io/fs.ts";
import { aliasProblem } from "../io/paths.ts";
import { REPO_ROOT } from "../io/repo.ts";
import { countSquad, type SquadReadError } from "../io/squad.ts";
import { validate } from "../io/dump/validate.ts";
import { readIndexHeader } from "../search/index/read.ts";
import { DEFAULT_ENCODER, type EncoderSpec, encoderSpec } from "../encoders/registry.ts";
import { OPEN_TOP_K } from "./config/config.ts";
import { RunError } from "./errors.ts";
import { PROVENANCE_FILE, writeProvenance } from "../io/provenance.ts";
import {
  type DumpHashes,
  hashDumps,
  runProvenance,
  systemProvenance,
} from "./summary/provenance.ts";
import {
  planSingleRun,
  removeEmptyRunFolders,
  runStages,
  SINGLE_STAGE_NAMES,
  singleRunLayout,
  taskDetail,
  taskSeconds,
} from "./single.ts";
import type { Plan, Stage } from "./plan/task.ts";
import { PASSAGES_FILE } from "./plan/layout.ts";
import { type FullSummary, singleRunSummary } from "./summary/single_summary.ts";
import type { TaskStatus } from "./runners/status.ts";
import { timestamp } from "./run_dir.ts";

/** The bundled default dataset. */
export const DEFAULT_DATA: string = `${REPO_ROOT}/data/dev-v1.1.json.gz`;

/** Options of {@linkcode full}. */
export interface FullOptions {
  /** Dataset (default: the bundled dev set). */
  readonly data?: string;
  /** Encoder name (default `DEFAULT_ENCODER`, `sparse-pi`). */
  readonly encoder?: string;
  /** Output folder, the run folder (default `outputs/<timestamp>`). */
  readonly out?: string;
  /**
   * Rename repeated article titles (`<title>#2`, ...: `io/squad_ids.ts`) in
   * every stage instead of refusing the dataset.
   */
  readonly uniqueIds?: boolean;
  /** Keep the dump folders (default true). */
  readonly keepDumps?: boolean;
  /**
   * Start afresh in an `out` made from another dataset or encoder (or
   * without a manifest): remove the files `full` owns there first.
   */
  readonly overwrite?: boolean;
  /**
   * Open-domain search too: an exact phrase index of the context dump
   * (`<out>/index/`), every question against every phrase of it
   * (`<out>/open/pred.json`, `<out>/open/topk.ndjson`), scored beside the
   * closed (merge) answers in the eval task; `summary.json` gains `open`.
   */
  readonly open?: boolean;
  /** Ranks the open search keeps (default 10; implies nothing without `open`). */
  readonly topK?: number;
  /**
   * The element type dense dumps store (`embed_* --dtype`; default: the
   * encoder's own, f16 for the bundled ONNX encoders); refused for a sparse
   * encoder, whose dumps it would not change.
   */
  readonly dtype?: "f32" | "f16";
  /**
   * The command line's flags as parsed, recorded in `provenance.json`
   * (default `null`: called as a library function).
   */
  readonly flags?: Readonly<Record<string, unknown>>;
  /**
   * With `open`: search this corpus instead of the dataset's own paragraphs
   * (a DPR passage TSV, a JSONL corpus, or the paragraphs of a SQuAD or MRQA
   * file: `io/datasets/`). The context encoder encodes the corpus's
   * passages (`<out>/passages.jsonl`, written by the split task: ids,
   * titles, texts; never the corpus as given, which may be the dataset),
   * the index holds them, and the numbers are the search's (top-1 EM/F1
   * over the gold answers, DPR's top-k passage accuracy); there is no merge.
   */
  readonly corpus?: string;
  /** Called when a stage ends (name, seconds, one-line detail). */
  readonly onStage?: (stage: string, seconds: number, detail: string) => void;
}

const existsSync = (p: string) => {
  try {
    Deno.lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/** What `full` writes into its output folder (and removes with `overwrite`). */
export const FULL_OUTPUTS: readonly { readonly name: string; readonly folder: boolean }[] = [
  { name: "context.json", folder: false },
  { name: "question.json", folder: false },
  { name: PASSAGES_FILE, folder: false },
  { name: "dumps", folder: true },
  { name: "pred.json", folder: false },
  { name: "rows.ndjson", folder: false },
  { name: "result.json", folder: false },
  { name: "summary.json", folder: false },
  { name: "logs", folder: true },
  { name: "index", folder: true },
  { name: "open", folder: true },
  { name: RUN_MANIFEST, folder: false },
  { name: PROVENANCE_FILE, folder: false },
];

/**
 * The manifest of a `full` run: what its output folder is made from (the dataset's and encoder's
 * sha256, the options that change the outputs; no paths). A folder whose manifest differs is
 * refused unless `--overwrite`.
 */
export const runManifest = (
  data: string,
  spec: EncoderSpec,
  uniqueIds: boolean,
  open: { readonly topK: number; readonly corpus?: string } | undefined,
  dtype: "f32" | "f16" | undefined,
): Effect.Effect<Manifest, FileError | InputError> =>
  Effect.gen(function* () {
    return {
      // Only an open run records it, so a closed run's manifest is as before.
      ...(open !== undefined ? { open_top_k: open.topK } : {}),
      // Likewise the dtype, only when given.
      ...(dtype !== undefined ? { dtype } : {}),
      ...(open?.corpus !== undefined ? { corpus_sha256: yield* fileSha256(open.corpus) } : {}),
      kind: "phraseval-run",
      tool: TOOL_VERSION,
      data_sha256: yield* fileSha256(data),
      split: "pi-squad",
      unique_ids: uniqueIds,
      encoder: spec.name,
      sparse: spec.sparse,
      context_files: yield* fsDo(data, () => filesFingerprint(spec.contextFiles)),
      question_files: yield* fsDo(data, () => filesFingerprint(spec.questionFiles)),
    };
  });

/**
 * Checks that `out` may take this run (see the module doc); with
 * `overwrite`, removes an earlier run's files. Returns whether `out` already
 * holds this run's manifest.
 */
const claimOut = (
  data: string,
  corpus: string | undefined,
  out: string,
  manifest: Manifest,
  overwrite: boolean,
) =>
  Effect.gen(function* () {
    const refuse = (message: string) =>
      Effect.fail(new InputError({ file: out, where: "", message }));
    const alias = aliasProblem(
      [
        { name: "--data", path: data },
        ...(corpus !== undefined ? [{ name: "--corpus", path: corpus }] : []),
      ],
      FULL_OUTPUTS.map((o) => ({
        name: `--out's ${o.name}`,
        path: `${out}/${o.name}`,
        folder: o.folder,
      })),
    );
    if (alias !== undefined) return yield* refuse(alias);
    const present = FULL_OUTPUTS.filter((o) => {
      try {
        Deno.lstatSync(`${out}/${o.name}`);
        return true;
      } catch {
        return false;
      }
    });
    const found = yield* fsDo(out, () => readManifest(`${out}/${RUN_MANIFEST}`));
    const why = found === undefined
      ? present.length === 0
        ? undefined
        : `holds an earlier run (${present.map((o) => o.name).join(", ")}) without ${RUN_MANIFEST}`
      : manifestDiff(found, manifest) === undefined
      ? undefined
      : `was made from another dataset or encoder (${manifestDiff(found, manifest)})`;
    if (why === undefined) return found !== undefined;
    if (!overwrite) return yield* refuse(`${why}: pass --overwrite to start afresh`);
    for (const o of present) {
      yield* fsDo(`${out}/${o.name}`, () => Deno.remove(`${out}/${o.name}`, { recursive: true }));
    }
    return false;
  });

/**
 * Writes `<out>/provenance.json` of a finished run (`runs/summary/provenance.ts`), with
 * the dumps hashed earlier (`dumps_kept: false` when they are gone) and the
 * dataset's and corpus's sha256 from the run's manifest.
 */
const writeFullProvenance = (
  plan: Plan,
  opts: FullOptions,
  dumps: DumpHashes | null,
  manifest: Manifest,
): Effect.Effect<void, FileError> =>
  Effect.gen(function* () {
    const out = plan.runDir;
    const ds = plan.config.datasets[0];
    // The manifest hashed the dataset and the corpus before the run: not again.
    const known = new Map<string, string>();
    if (typeof manifest.data_sha256 === "string") known.set(ds.path, manifest.data_sha256);
    if (ds.corpus !== undefined && typeof manifest.corpus_sha256 === "string") {
      known.set(ds.corpus, manifest.corpus_sha256);
    }
    const system = yield* systemProvenance(
      singleRunLayout(out),
      plan.config.models[0],
      ds,
      dumps,
      known,
    );
    const block = runProvenance({
      command: "full",
      flags: opts.flags ?? null,
      seeds: {},
      config: plan.config,
      systems: [opts.keepDumps === false ? { ...system, dumps_kept: false } : system],
    });
    yield* writeProvenance(`${out}/${PROVENANCE_FILE}`, block);
  });

/**
 * Runs the pipeline and returns its summary (also written to
 * `<out>/summary.json`, and its provenance to `<out>/provenance.json`).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { full } from "./full.ts";
 * const dir = await Deno.makeTempDir();
 * const context = "Paris is the capital and largest city of France.";
 * await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: "1.1", data: [{
 *   title: "Paris", paragraphs: [{ context, qas: [{ id: "q1",
 *     question: "What is the capital of France?", answers: [{ text: "Paris", answer_start: 0 }] }] }],
 * }] }));
 * const s = await Effect.runPromise(full({ data: `${dir}/d.json`, out: `${dir}/run` }));
 * if (s.counts.questions !== 1 || s.counts.answered !== 1) throw new Error(JSON.stringify(s.counts));
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export const full = (
  opts: FullOptions = {},
): Effect.Effect<FullSummary, UsageError | SquadReadError | RunError> => {
  // What to tidy when it fails: the folders it made that are still empty.
  let made: { plan: Plan; outExisted: boolean } | undefined;
  return Effect.gen(function* () {
    const data = abs(opts.data ?? DEFAULT_DATA);
    const out = abs(opts.out ?? `outputs/${timestamp()}`);
    const spec = yield* encoderSpec(opts.encoder ?? DEFAULT_ENCODER);
    const uniqueIds = opts.uniqueIds === true;
    const topK = opts.topK ?? OPEN_TOP_K;
    if (!(Number.isSafeInteger(topK) && topK >= 1)) {
      return yield* Effect.fail(new UsageError(`--top-k must be an integer >= 1, got ${topK}`));
    }
    if (opts.corpus !== undefined && opts.open !== true) {
      return yield* Effect.fail(new UsageError("--corpus needs --open"));
    }
    const corpus = opts.corpus === undefined ? undefined : abs(opts.corpus);
    const open = opts.open === true
      ? { topK, ...(corpus !== undefined ? { corpus } : {}) }
      : undefined;
    if (opts.dtype !== undefined && opts.dtype !== "f32" && opts.dtype !== "f16") {
      return yield* Effect.fail(new UsageError(`--dtype must be f32 or f16, got ${opts.dtype}`));
    }
    if (opts.dtype !== undefined && spec.sparse) {
      return yield* Effect.fail(
        new UsageError(
          `--dtype sets the dense dumps' element type; ${spec.name} writes sparse ones`,
        ),
      );
    }
    const outExisted = existsSync(out);
    const manifest = yield* runManifest(data, spec, uniqueIds, open, opts.dtype);
    const claimed = yield* claimOut(data, corpus, out, manifest, opts.overwrite === true);
    // Reads (and checks) the dataset.
    const plan = yield* planSingleRun(data, spec, out, uniqueIds, open, opts.dtype ?? null);
    made = { plan, outExisted };
    const layout = singleRunLayout(out);
    if (!claimed) yield* writeManifest(`${out}/${RUN_MANIFEST}`, manifest);
    const timings: Record<string, number> = {};
    const report = (name: string, s: number, detail: string) => {
      timings[name] = Math.round(s * 1000) / 1000;
      opts.onStage?.(name, s, detail);
    };
    const onDone = (st: TaskStatus) =>
      report(SINGLE_STAGE_NAMES[st.task.stage], taskSeconds(st), taskDetail(st));
    yield* runStages(plan, ["prepare"], onDone);
    // The counts for the summary are taken while the encoder processes work.
    const [, counts] = yield* Effect.all([
      runStages(plan, ["encode_context", "encode_question"], onDone),
      countSquad(data),
    ], { concurrency: 2 });
    const t = performance.now();
    // The stages after the encoders: merge ∥ index, then search, then eval (the
    // groups of `runs/plan/task.ts`; no merge over a corpus); the dumps are
    // hashed for provenance.json meanwhile.
    const rest = (stages: readonly Stage[]) =>
      Effect.all([runStages(plan, stages, onDone), hashDumps(layout, spec.name, "data")], {
        concurrency: 2,
      }).pipe(Effect.map(([, dumps]) => dumps));
    let dim: number;
    let dumps: DumpHashes | null;
    if (corpus !== undefined) {
      // The context dump is the corpus's, not the dataset's: index checks it
      // (rows, phrases, values) as it builds, and search checks the questions.
      report("validate", 0, "skipped over a corpus: index and search check the dumps");
      dumps = yield* rest(["index", "search", "eval"]);
      const header = yield* Effect.try({
        try: () => readIndexHeader(`${out}/index`),
        catch: (e) => new RunError(`index: ${e instanceof Error ? e.message : String(e)}`),
      });
      dim = header.d;
    } else {
      const checked = yield* validate({
        data,
        contextEmb: `${out}/dumps/context_emb`,
        questionEmb: `${out}/dumps/question_emb`,
        sparse: spec.sparse,
        uniqueIds,
      });
      const v = checked.violations.length;
      report(
        "validate",
        (performance.now() - t) / 1000,
        `${checked.contextFiles} context files, ${checked.questionFiles} question files, d=${checked.dim}, ${
          v === 0 ? "no violations" : `${v} violations`
        }`,
      );
      if (v > 0) return yield* Effect.fail(new RunError(`validate: ${checked.violations[0]}`));
      dumps = yield* rest(["merge", "index", "search", "eval"]);
      dim = checked.dim;
    }
    const summary = yield* singleRunSummary({
      plan,
      data,
      encoder: { name: spec.name, dim, sparse: spec.sparse },
      counts,
      timings,
    });
    if (opts.keepDumps === false) {
      yield* fsDo(out, () => Deno.remove(`${out}/dumps`, { recursive: true }));
    }
    const file = `${out}/summary.json`;
    yield* writeTextFileAtomic(
      file,
      JSON.stringify(summary, null, 2) + "\n",
      (message) => new FileError({ file, message }),
    );
    yield* writeFullProvenance(plan, opts, dumps, manifest);
    return summary;
  }).pipe(
    Effect.onExit((exit) =>
      Exit.isFailure(exit) && made !== undefined
        ? removeEmptyRunFolders(made.plan, !made.outExisted)
        : Effect.void
    ),
  );
};
