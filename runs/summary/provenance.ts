/**
 * Provenance blocks: what a run was made from and with, so that two runs
 * can be told apart key by key (`report --diff`). `full` writes
 * `<out>/provenance.json`, `run` writes `<run folder>/provenance.json`
 * after it scores (one entry per model × dataset with a prediction file),
 * and `report` puts its own block into `report.json` (`provenance`). A
 * block holds:
 *
 * - `format` ({@linkcode PROVENANCE_FORMAT}), `command` (`full`, `run`,
 *   `report`) and `flags`: the command line's flags as parsed (defaults
 *   filled in; `null` when called as a library function without them);
 * - `tool`: `deno.json`'s version and the git commit when the repository
 *   has a `.git` (`io/provenance.ts`); `normalizer`: the revision of the
 *   SQuAD answer normalizer (`NORMALIZER_VERSION`, `metrics/squad_text.ts`);
 * - `machine`: OS, architecture, CPUs, Deno / V8 / TypeScript versions (no
 *   host name);
 * - `seeds`: every seed the command drew from (`full`: none, nothing in it
 *   is random; `run`: its summary's bootstrap; `report`: its bootstrap and
 *   randomization seed);
 * - `config`: the run's config after inheritance (`run`: what
 *   `configs/<name>.json` holds, with the run settings; `full`: the
 *   one-model, one-dataset config it runs, `runs/single.ts`);
 * - `systems` (`full`, `run`): per model × dataset the dataset file, the
 *   corpus of an open search over one, the encoder (name, stored dtype,
 *   sparse, device) with the sha256 of each model file by name, the dump
 *   folders' sha256 (`io/provenance.ts`: `sha256sum` over the files in
 *   name order), and the prediction, rows and open-search prediction files'
 *   sha256. Paths inside the run folder are relative to it.
 *
 * `full` hashes its dumps while the merge runs, so the block costs it no
 * wall time worth the name; `run` hashes them after its tasks.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError } from "../../io/errors.ts";
import {
  type FileHash,
  filesSha256,
  type FolderHash,
  hashFile,
  hashFolder,
  type MachineInfo,
  machineInfo,
  PROVENANCE_FORMAT,
  recordedPath,
  type ToolInfo,
  toolInfo,
} from "../../io/provenance.ts";
import { NORMALIZER_VERSION } from "../../metrics/squad_text.ts";
import type { ResolvedDataset, ResolvedModel } from "../config/config.ts";
import type { RunLayout } from "../plan/layout.ts";

export { PROVENANCE_FILE, PROVENANCE_FORMAT } from "../../io/provenance.ts";

/** The dump folders of a system and their hashes. */
export interface DumpHashes {
  /** The context dump. */
  readonly context: FolderHash;
  /** The question dump. */
  readonly question: FolderHash;
}

/** One model on one dataset: what its answers were made from. */
export interface SystemProvenance {
  /** The model's name (`abbr`; `full`: the encoder's). */
  readonly model: string;
  /** The dataset's name (`abbr`; `full`: `data`). */
  readonly dataset: string;
  /** The dataset file the answers were scored against. */
  readonly data: FileHash;
  /** The corpus an open search ran over, when it did. */
  readonly corpus?: FileHash;
  /**
   * The encoder: name, the dtype its dumps store (`null`: the encoder's
   * own), sparse, device, and the sha256 of each model file per half (by
   * base name); `null` for a `predictions` model.
   */
  readonly encoder: {
    readonly name: string;
    readonly model: string | null;
    readonly dtype: "f32" | "f16" | null;
    readonly sparse: boolean;
    readonly device: string;
    readonly files: {
      readonly context: Readonly<Record<string, string>>;
      readonly question: Readonly<Record<string, string>>;
    };
  } | null;
  /** The dump folders (`null`: none, a `predictions` model). */
  readonly dumps: DumpHashes | null;
  /** `false` when `full --no-keep-dumps` removed the dumps after hashing them. */
  readonly dumps_kept?: boolean;
  /** The prediction file. */
  readonly predictions: FileHash | null;
  /** Its per-question rows. */
  readonly rows: FileHash | null;
  /** The open search's top-1 predictions, when it ran. */
  readonly open_predictions?: FileHash;
}

/** The block of `full` and `run` (`provenance.json`). */
export interface RunProvenance {
  /** {@linkcode PROVENANCE_FORMAT}. */
  readonly format: typeof PROVENANCE_FORMAT;
  /** The command that made it. */
  readonly command: "full" | "run";
  /** The command line's flags as parsed, or `null` (a library call). */
  readonly flags: Readonly<Record<string, unknown>> | null;
  /** Version and commit. */
  readonly tool: ToolInfo;
  /** `NORMALIZER_VERSION`. */
  readonly normalizer: string;
  /** The machine. */
  readonly machine: MachineInfo;
  /** The seeds it drew from, by use. */
  readonly seeds: Readonly<Record<string, number>>;
  /** The config after inheritance. */
  readonly config: unknown;
  /** One entry per model × dataset with a prediction file. */
  readonly systems: readonly SystemProvenance[];
}

/** The block of `report` (`report.json`'s `provenance`). */
export interface ReportProvenance {
  /** {@linkcode PROVENANCE_FORMAT}. */
  readonly format: typeof PROVENANCE_FORMAT;
  /** `report`. */
  readonly command: "report";
  /** Its options (the flags and the INPUTs). */
  readonly flags: Readonly<Record<string, unknown>>;
  /** Version and commit. */
  readonly tool: ToolInfo;
  /** `NORMALIZER_VERSION`. */
  readonly normalizer: string;
  /** The machine. */
  readonly machine: MachineInfo;
  /** `{ bootstrap_randomization: seed }`. */
  readonly seeds: Readonly<Record<string, number>>;
  /** Each INPUT folder's `provenance.json` (`null`: it has none). */
  readonly inputs: readonly { readonly input: string; readonly provenance: FileHash | null }[];
}

const isDir = (p: string) => {
  try {
    return Deno.statSync(p).isDirectory;
  } catch {
    return false;
  }
};

const isFile = (p: string) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
};

/**
 * The sha256 of a system's two dump folders (`null` when either is not
 * there: a `predictions` model).
 */
export const hashDumps = (
  layout: RunLayout,
  model: string,
  dataset: string,
): Effect.Effect<DumpHashes | null, FileError> =>
  Effect.gen(function* () {
    const c = layout.contextEmb(model, dataset), q = layout.questionEmb(model, dataset);
    if (!isDir(c) || !isDir(q)) return null;
    const [context, question] = yield* Effect.all([
      hashFolder(c, layout.runDir),
      hashFolder(q, layout.runDir),
    ]);
    return { context, question };
  });

/**
 * The entry of `model` on `ds` in the run folder of `layout`: every file
 * hashed now, but the dumps when `dumps` gives them (hashed earlier), and
 * a dataset or corpus whose sha256 `known` holds (path → sha256: taken
 * earlier, as `full`'s manifest does; the ones hashed here are added, so
 * one map shared by the systems of a run hashes each dataset once).
 */
export const systemProvenance = (
  layout: RunLayout,
  model: ResolvedModel,
  ds: ResolvedDataset,
  dumps?: DumpHashes | null,
  known?: Map<string, string>,
): Effect.Effect<SystemProvenance, FileError> =>
  Effect.gen(function* () {
    const run = layout.runDir;
    const once = (p: string): Effect.Effect<FileHash, FileError> => {
      const sha = known?.get(p);
      if (sha === undefined) {
        return Effect.tap(hashFile(p, run), (h) => Effect.sync(() => known?.set(p, h.sha256)));
      }
      return Effect.try({
        try: () => ({ path: recordedPath(p, run), sha256: sha, bytes: Deno.statSync(p).size }),
        catch: (e) =>
          new FileError({ file: p, message: e instanceof Error ? e.message : String(e) }),
      });
    };
    const m = model.abbr, d = ds.abbr;
    const optional = (p: string) => isFile(p) ? hashFile(p, run) : null;
    const modelFiles = (files: readonly string[]) =>
      Effect.tryPromise({
        try: () => filesSha256(files),
        catch: (e) =>
          new FileError({
            file: files.join(", "),
            message: e instanceof Error ? e.message : String(e),
          }),
      });
    const pred = optional(layout.prediction(m, d));
    const rows = optional(layout.rows(m, d));
    const open = ds.open !== undefined ? optional(layout.openPrediction(m, d)) : null;
    const encoder = model.predictions !== undefined ? null : {
      name: model.encoder,
      model: model.model,
      dtype: model.dtype,
      sparse: model.sparse,
      device: model.device,
      files: {
        context: yield* modelFiles(model.contextFiles),
        question: yield* modelFiles(model.questionFiles),
      },
    };
    return {
      model: m,
      dataset: d,
      data: yield* once(layout.data(ds)),
      ...(ds.corpus !== undefined ? { corpus: yield* once(ds.corpus) } : {}),
      encoder,
      dumps: dumps !== undefined ? dumps : yield* hashDumps(layout, m, d),
      predictions: pred === null ? null : yield* pred,
      rows: rows === null ? null : yield* rows,
      ...(open !== null ? { open_predictions: yield* open } : {}),
    };
  });

/**
 * A `full` or `run` block around its systems' entries (see the module
 * notes).
 *
 * @example
 * ```ts
 * import { runProvenance } from "./provenance.ts";
 * const p = runProvenance({ command: "full", flags: { encoder: "sparse-pi" }, seeds: {}, config: {}, systems: [] });
 * if (p.format !== "phraseval-provenance/1" || p.tool.version !== "0.1.0") throw new Error(JSON.stringify(p));
 * if (!p.normalizer.startsWith("squad-normalize_answer/")) throw new Error(p.normalizer);
 * ```
 */
export function runProvenance(o: {
  readonly command: "full" | "run";
  readonly flags: Readonly<Record<string, unknown>> | null;
  readonly seeds: Readonly<Record<string, number>>;
  readonly config: unknown;
  readonly systems: readonly SystemProvenance[];
}): RunProvenance {
  return {
    format: PROVENANCE_FORMAT,
    command: o.command,
    flags: o.flags,
    tool: toolInfo(),
    normalizer: NORMALIZER_VERSION,
    machine: machineInfo(),
    seeds: o.seeds,
    config: o.config,
    systems: o.systems,
  };
}

/**
 * `report`'s block: its options, tool, normalizer, machine, seed, and the
 * sha256 of each INPUT folder's `provenance.json`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { reportProvenance } from "./provenance.ts";
 * const p = await Effect.runPromise(reportProvenance({ seed: 3 }, ["/nonexistent"]));
 * if (p.seeds.bootstrap_randomization !== 3 || p.inputs[0].provenance !== null) throw new Error();
 * ```
 */
export const reportProvenance = (
  flags: Readonly<Record<string, unknown>>,
  inputs: readonly string[],
): Effect.Effect<ReportProvenance, FileError> =>
  Effect.gen(function* () {
    const found: { input: string; provenance: FileHash | null }[] = [];
    for (const input of inputs) {
      const dir = input.includes("=") && !isDir(input)
        ? input.slice(input.indexOf("=") + 1)
        : input;
      const f = `${dir.replace(/\/+$/, "")}/provenance.json`;
      found.push({ input, provenance: isFile(f) ? yield* hashFile(f, "") : null });
    }
    return {
      format: PROVENANCE_FORMAT,
      command: "report",
      flags,
      tool: toolInfo(),
      normalizer: NORMALIZER_VERSION,
      machine: machineInfo(),
      seeds: { bootstrap_randomization: typeof flags.seed === "number" ? flags.seed : 0 },
      inputs: found,
    };
  });
