/**
 * The embedding runners behind `embed_context` and `embed_question`: stream
 * paragraphs (or questions) from a SQuAD file or NDJSON records, encode them
 * in batches with the {@linkcode ContextEncoder} / {@linkcode QuestionEncoder}
 * service, and write each dump file atomically as soon as it is encoded.
 * A rerun skips complete files (unless `overwrite`), so a killed or
 * interrupted run resumes where it stopped and ends with the same bytes as an
 * uninterrupted one.
 *
 * A resume is checked first: before its first dump file a runner writes
 * the folder's manifest (`.phraseval-dump.json`, `io/manifest.ts`: the
 * sha256 of the input file, the encoder with the sha256 of its model files,
 * the dump format and the tool version), and a rerun into a folder whose
 * manifest differs, or that holds files but no manifest, or whose input is
 * stdin (which cannot be checked), is refused (exit 2) unless `overwrite`
 * (then every file of the input is rewritten and the manifest replaced). A
 * folder where a dump file should be, and an input inside the output
 * folder, are refused too.
 *
 * A run that fails on bad input met after items were written (an id
 * repeated at the end: a rerun would meet it again, so there is nothing to
 * resume) takes back what it wrote (`Ledger`): the files of every item it
 * wrote, then the manifest when it wrote it and nothing else needs it (a
 * folder that held another job's manifest, with `overwrite`, gets that one
 * back), and `tidyFolder` removes a folder it made that is empty again. Any
 * other end (SIGINT, SIGTERM, SIGKILL, an encoder's error, a write the
 * system refused) keeps the complete files, for a rerun to resume. The dump
 * is written in place, not in a folder renamed at the end, because a run's
 * partitions (`--range`) write one folder side by side, an encoder's process
 * may write only that folder (`runs/sandbox/sandbox.ts`), and a stopped run
 * is resumed from its complete files. On success the manifest is written
 * again, last.
 * {@linkcode embedContext} and {@linkcode embedQuestion} pick the encoder by
 * its registered name (what the two stages run).
 *
 * Paragraphs have a per-paragraph limit, for every encoder: at most
 * {@linkcode DEFAULT_MAX_PARAGRAPH_CHARS} characters (checked before the
 * paragraph is encoded) and {@linkcode DEFAULT_MAX_PARAGRAPH_PHRASES}
 * phrases (checked before its files are written), both options
 * (`--max-paragraph-chars`, `--max-paragraph-phrases`); a paragraph over
 * either is bad input naming the file, the paragraph, its size and the limit.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { dumpStem, type IdKind, StemRegistry, unsafeIdReason } from "../io/dump/names.ts";
import { DEFAULT_ENCODER } from "./names.ts";
import {
  dumpFileNames,
  type DumpFormat,
  writeContextDump,
  writeQuestionDump,
} from "../io/dump/writer.ts";
import {
  DUMP_MANIFEST,
  filesFingerprint,
  fileSha256,
  type Manifest,
  manifestDiff,
  readManifest,
  TOOL_VERSION,
  writeManifest,
} from "../io/manifest.ts";
import { aliasProblem } from "../io/paths.ts";
import { FileError, InputError, type UsageError } from "../io/errors.ts";
import {
  ndjsonRecords,
  type ParagraphRecord,
  type QuestionRecord,
  sniffNdjson,
} from "../io/ndjson.ts";
import { type ByteSource, openSource } from "../io/source.ts";
import { type DatasetFormat, settleFormat } from "../io/datasets/detect.ts";
import { isSquadShaped } from "../io/datasets/formats.ts";
import type { DatasetReadError } from "../io/datasets/types.ts";
import { type SquadArticle, type SquadReadOptions, squadRecordStream } from "../io/squad.ts";
import {
  ContextEncoder,
  type ContextInput,
  type EncoderError,
  QuestionEncoder,
  type QuestionInput,
} from "./types.ts";
import { contextEncoderLayer, type EncoderOptions, questionEncoderLayer } from "./registry.ts";

/** Options shared by both runners. */
export interface EmbedOptions {
  /**
   * Input: a SQuAD file (`.json`, `.json.gz`), NDJSON records, or any corpus
   * (`embed_context`) or question set (`embed_question`) of `io/datasets/`;
   * `-` is stdin.
   */
  readonly input: string;
  /**
   * The input's format, a `--format` name (`dpr-passages`, `passages`,
   * `dpr`, `open`, ...; see `io/datasets/detect.ts`); default: detected
   * (NDJSON records first).
   */
  readonly format?: string;
  /** Output folder (created if needed). */
  readonly out: string;
  /** Write scipy sparse CSR files (required for a sparse encoder). */
  readonly sparse?: boolean;
  /** Deflate the `.npz` entries. */
  readonly compressed?: boolean;
  /** Dense element type to store (default: the encoder's). */
  readonly dtype?: "f32" | "f16";
  /**
   * Rewrite files that already exist, and accept a folder made from another
   * input, encoder or format (its manifest is replaced).
   */
  readonly overwrite?: boolean;
  /** Paragraphs only: also write `<stem>.meta.json` (context, phrase offsets). */
  readonly metadata?: boolean;
  /** Items per encoder call (default 32). */
  readonly batchSize?: number;
  /**
   * Only the items with index in `[start, end)` (0-based, in input order),
   * so a run can be split into partitions.
   */
  readonly range?: readonly [number, number];
  /**
   * SQuAD input: rename repeated article titles (`io/squad_ids.ts`) instead
   * of refusing them. NDJSON records carry their ids: those are used as
   * they are, and a repeated one is refused.
   */
  readonly uniqueIds?: boolean;
  /** Called after each batch with the running counts (progress bars). */
  readonly onProgress?: (done: number) => void;
  /**
   * Paragraphs only: the longest context accepted, in characters (UTF-16
   * code units), checked before the paragraph is encoded (default
   * {@linkcode DEFAULT_MAX_PARAGRAPH_CHARS}).
   */
  readonly maxParagraphChars?: number;
  /**
   * Paragraphs only: the most phrases one paragraph may have, checked before
   * its files are written (default {@linkcode DEFAULT_MAX_PARAGRAPH_PHRASES}).
   */
  readonly maxParagraphPhrases?: number;
}

/**
 * Default per-paragraph limit on characters: 100,000, about 25 times the
 * longest SQuAD v1.1 context (dev 3,706, train 25,651 characters). An
 * encoder's memory grows with the paragraph, so a longer one is refused
 * (bad input, naming the paragraph) before it is encoded.
 */
export const DEFAULT_MAX_PARAGRAPH_CHARS = 100_000;

/**
 * Default per-paragraph limit on phrases: 2,000,000 (the built-in encoders
 * give a few thousand for a SQuAD paragraph).
 */
export const DEFAULT_MAX_PARAGRAPH_PHRASES = 2_000_000;

/** What a runner did. */
export interface EmbedResult {
  /** Items encoded and written. */
  readonly written: number;
  /** Items skipped because their files were complete. */
  readonly skipped: number;
  /** Encoder name. */
  readonly encoder: string;
  /** Vector dimension. */
  readonly dim: number;
}

/** Errors of the runners (a {@linkcode UsageError}: a bad `format`). */
export type EmbedError = InputError | FileError | EncoderError | UsageError;

const mkdir = (dir: string) =>
  Effect.tryPromise({
    try: () => Deno.mkdir(dir, { recursive: true }),
    catch: (e) => new FileError({ file: dir, message: e instanceof Error ? e.message : String(e) }),
  });

/** `dir` and those of its parent folders that do not exist (yet), innermost first. */
function missingFolders(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir.replace(/\/+$/, ""); d !== "" && d !== "." && d !== "/";) {
    try {
      Deno.lstatSync(d);
      break;
    } catch {
      out.push(d);
    }
    const i = d.lastIndexOf("/");
    d = i < 0 ? "" : d.slice(0, i);
  }
  return out;
}

/**
 * Runs `body`; when it fails, removes `dir` again, and the parent folders made
 * for it, if they did not exist before it and are still empty, so refused
 * input leaves no empty output folder behind (a folder with files in it, or
 * one that existed, is kept).
 */
const tidyFolder = <A, E, R>(dir: string, body: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const made = missingFolders(dir);
    if (made.length === 0) return body;
    return body.pipe(
      Effect.onError(() =>
        Effect.promise(async () => {
          for (const d of made) {
            // Fails unless empty (or not this run's to remove): kept then, and those above it.
            if (!(await Deno.remove(d).then(() => true, () => false))) break;
          }
        })
      ),
    );
  });

/** A temporary file of an atomic write (`.<name>.<8 hex>.tmp`). */
const TEMP_NAME = /^\..+\.[0-9a-f]{8}\.tmp$/;

/**
 * Removes temporary files left in `dir` by a killed run (older than
 * `before`); files of a run still writing are younger and are kept.
 */
const removeStaleTemps = (dir: string, before: number) =>
  Effect.promise(async () => {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !TEMP_NAME.test(e.name)) continue;
      try {
        const st = await Deno.lstat(`${dir}/${e.name}`);
        if ((st.mtime?.getTime() ?? 0) < before) await Deno.remove(`${dir}/${e.name}`);
      } catch { /* gone already */ }
    }
  });

const fsTry = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

/** The manifest a runner writes into its folder (see `io/manifest.ts`). */
const dumpManifest = (
  half: "context" | "question",
  opts: EmbedOptions,
  info: { name: string; dim: number; files: readonly string[] },
  format: DumpFormat,
): Effect.Effect<Manifest, FileError | InputError> =>
  Effect.gen(function* () {
    const input = opts.input === "-" ? null : yield* fileSha256(opts.input);
    const files = yield* fsTry(opts.input, () => filesFingerprint(info.files));
    return {
      kind: "phraseval-dump",
      half,
      tool: TOOL_VERSION,
      input_sha256: input,
      encoder: info.name,
      dim: info.dim,
      encoder_files: files,
      sparse: format.sparse,
      compressed: format.compressed,
      dtype: format.dtype ?? null,
      metadata: half === "context" && opts.metadata === true,
      unique_ids: opts.uniqueIds === true,
    };
  });

/**
 * What a failed run does with a manifest it wrote (see {@linkcode Ledger}):
 * `same`, the folder held this job's manifest already: keep it; `fresh`, the
 * folder held no dump file: remove it unless dump files of another runner of
 * this job (a partition beside this one) are there by then; `foreign`, the
 * folder held dump files of another job, or of no known one (`overwrite`):
 * put back the manifest it held (its files that this run did not rewrite are
 * still that job's), else remove it, so that what is left is never taken for
 * this job's.
 */
type ManifestFate = "same" | "fresh" | "foreign";

/** Where a runner's folder stood when it started ({@linkcode checkFolder}). */
interface FolderStart {
  /** The manifest still has to be written (before the first dump file). */
  readonly unwritten: boolean;
  /** What a failed run does with a manifest it wrote. */
  readonly fate: ManifestFate;
  /** `foreign`: the bytes of the other job's manifest, when the folder held one. */
  readonly previous?: Uint8Array;
}

/**
 * Checks that the output folder may be resumed into (see the module doc),
 * creating it when missing. Returns whether the manifest still has to be
 * written (before the first dump file), and what a failed run does with it.
 */
const checkFolder = (
  half: "context" | "question",
  opts: EmbedOptions,
  manifest: Manifest,
): Effect.Effect<FolderStart, InputError | FileError> =>
  Effect.gen(function* () {
    const out = opts.out;
    const refuse = (message: string, file = out) =>
      Effect.fail(new InputError({ file, where: "", message }));
    const alias = aliasProblem(
      [{ name: `${half} input`, path: opts.input }],
      [{ name: "output folder", path: out, folder: true }],
    );
    if (alias !== undefined) return yield* refuse(alias);
    yield* mkdir(out);
    // List first, then read the manifest: a runner writing into the same
    // folder (another partition) writes its manifest before any dump file.
    const entries = yield* fsTry(out, async () => {
      const list: Deno.DirEntry[] = [];
      for await (const e of Deno.readDir(out)) list.push(e);
      return list;
    });
    const dir = entries.find((e) => e.isDirectory);
    if (dir !== undefined) {
      return yield* refuse(
        "a folder where only dump files belong (not counted as a complete dump)",
        `${out}/${dir.name}`,
      );
    }
    const found = yield* fsTry(out, () => readManifest(`${out}/${DUMP_MANIFEST}`));
    const dumps = entries.filter((e) => e.name !== DUMP_MANIFEST && !TEMP_NAME.test(e.name));
    const diff = found === undefined ? undefined : manifestDiff(found, manifest);
    const fate: ManifestFate = found !== undefined && diff === undefined
      ? "same"
      : dumps.length === 0
      ? "fresh"
      : "foreign";
    if (opts.overwrite) {
      const previous = fate === "foreign" && found !== undefined
        ? yield* fsTry(out, () => Deno.readFile(`${out}/${DUMP_MANIFEST}`))
        : undefined;
      return { unwritten: true, fate, ...(previous !== undefined ? { previous } : {}) };
    }
    const afresh = "pass --overwrite to start afresh";
    if (found === undefined) {
      if (dumps.length === 0) return { unwritten: true, fate };
      return yield* refuse(
        `holds ${dumps.length} files (e.g. ${dumps[0].name}) but no ${DUMP_MANIFEST}, so it ` +
          `cannot be checked to come from this input and encoder: ${afresh}`,
      );
    }
    if (opts.input === "-") {
      return yield* refuse(
        `holds an earlier run and the input is stdin, which cannot be checked against it: ${afresh}`,
      );
    }
    if (diff !== undefined) {
      return yield* refuse(`was made from another input, encoder or format (${diff}): ${afresh}`);
    }
    return { unwritten: false, fate };
  });

/** Whether `dir` holds a dump file (any plain file but the manifest and temporary files). */
const holdsDumpFiles = (dir: string): boolean => {
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (e.isFile && e.name !== DUMP_MANIFEST && !TEMP_NAME.test(e.name)) return true;
    }
  } catch { /* gone, or unreadable: nothing to keep the manifest for */ }
  return false;
};

/** Writes `bytes` back to `dir/name` (a temporary file renamed into place); best effort. */
const restore = (dir: string, name: string, bytes: Uint8Array): void => {
  const tmp = `${dir}/.${name}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  try {
    Deno.writeFileSync(tmp, bytes, { createNew: true });
    Deno.renameSync(tmp, `${dir}/${name}`);
  } catch {
    try {
      Deno.removeSync(tmp);
    } catch { /* not made */ }
  }
};

/**
 * What a runner has written into its folder, taken back when the run fails
 * on bad input (an `InputError`: a rerun would meet it again), so that such a
 * run does not leave a folder that looks like a dump: every file of every
 * item this run wrote (rewrote, with `overwrite`), then the manifest if this
 * run wrote it and nothing needs it ({@linkcode ManifestFate}). Files that
 * were there before the run and that it did not write (a resumed run's
 * earlier items, another partition's) stay. On success the manifest is
 * written again, last. A run stopped otherwise (a signal, an encoder's
 * error, a refused write) takes nothing back: its complete files are
 * resumed.
 */
class Ledger {
  /** Ids of the items written (or being written), in order. */
  readonly #ids: string[] = [];
  #manifest = false;

  constructor(
    private readonly dir: string,
    private readonly kind: IdKind,
    private readonly metadata: boolean,
    private readonly start: FolderStart,
    private readonly manifest: Manifest,
  ) {}

  /** Writes the manifest, before the first dump file, when the folder still lacks it. */
  first(): Effect.Effect<void, FileError | InputError> {
    if (!this.start.unwritten || this.#manifest) return Effect.void;
    return Effect.tap(
      writeManifest(`${this.dir}/${DUMP_MANIFEST}`, this.manifest),
      () =>
        Effect.sync(() => {
          this.#manifest = true;
        }),
    );
  }

  /** Records items about to be written. */
  add(ids: Iterable<string>): void {
    for (const id of ids) this.#ids.push(id);
  }

  /** On success: the manifest written again, last, when this run wrote any item. */
  done(): Effect.Effect<void, FileError | InputError> {
    return this.#manifest
      ? writeManifest(`${this.dir}/${DUMP_MANIFEST}`, this.manifest)
      : Effect.void;
  }

  /**
   * Runs `run` (the encoding and the writes), then writes the manifest again,
   * last, and removes the temporary files older than `started` a killed run
   * left, returning `result()`; on bad input takes back what the run wrote
   * ({@linkcode Ledger.undo}).
   */
  settle<A, E, R>(
    run: Effect.Effect<void, E, R>,
    started: number,
    result: () => A,
  ): Effect.Effect<A, E | FileError | InputError, R> {
    return Effect.gen({ self: this }, function* () {
      yield* run;
      yield* this.done();
      yield* removeStaleTemps(this.dir, started);
      return result();
    }).pipe(Effect.tapError((e) => e instanceof InputError ? this.undo() : Effect.void));
  }

  /** On bad input: takes back what this run wrote (see the class notes). */
  undo(): Effect.Effect<void> {
    return Effect.sync(() => {
      const gone = (f: string) => {
        try {
          Deno.removeSync(`${this.dir}/${f}`);
        } catch { /* not written, or gone already */ }
      };
      for (const id of this.#ids) {
        try {
          for (const f of dumpFileNames(id, this.kind, this.metadata)) gone(f);
        } catch { /* an id that names no file: nothing was written for it */ }
      }
      this.#ids.length = 0;
      const { fate, previous } = this.start;
      if (!this.#manifest || fate === "same") return;
      if (fate === "fresh" && holdsDumpFiles(this.dir)) return;
      if (previous !== undefined) restore(this.dir, DUMP_MANIFEST, previous);
      else gone(DUMP_MANIFEST);
    });
  }
}

/** Whether every one of `names` is a plain file in `dir`; a folder there is refused. */
const complete = (dir: string, names: readonly string[]) =>
  Effect.flatMap(
    fsTry(dir, async () => {
      for (const n of names) {
        try {
          const st = await Deno.lstat(`${dir}/${n}`);
          if (!st.isFile) return `${dir}/${n}`;
        } catch (e) {
          if (e instanceof Deno.errors.NotFound) return false;
          throw e;
        }
      }
      return true;
    }),
    (r) =>
      typeof r === "string"
        ? Effect.fail(
          new InputError({
            file: r,
            where: "",
            message: "not a plain file where a dump file belongs",
          }),
        )
        : Effect.succeed(r),
  );

function formatFor(
  opts: EmbedOptions,
  info: { name: string; sparse: boolean },
): Effect.Effect<DumpFormat, InputError> {
  if (info.sparse && !opts.sparse) {
    return Effect.fail(
      new InputError({
        file: opts.out,
        where: "",
        message: `encoder ${info.name} writes sparse vectors: pass --sparse`,
      }),
    );
  }
  return Effect.succeed({
    sparse: opts.sparse ?? false,
    compressed: opts.compressed ?? false,
    dtype: opts.dtype,
  });
}

function checkId(file: string, kind: IdKind, id: string, reg: StemRegistry): void {
  const why = unsafeIdReason(id, kind);
  if (why !== undefined) {
    throw new InputError({ file, where: `${kind} ${JSON.stringify(id)}`, message: why });
  }
  const owner = reg.claimOnce(id);
  if (owner !== undefined) {
    throw new InputError({
      file,
      where: `${kind} ${JSON.stringify(id)}`,
      message: owner === id
        ? `occurs twice in the input (${kind} ids must be unique)`
        : `same dump file name as ${kind} ${JSON.stringify(owner)} ('/' becomes '_')`,
    });
  }
}

/**
 * {@linkcode checkId} of a question, and its text: a question with no text
 * (a SQuAD question without `"question"`, which the readers take as `""`,
 * or one of white space) is refused, naming it, where the encoder would
 * have encoded nothing in its place.
 */
function checkQuestion(file: string, q: QuestionInput, reg: StemRegistry): void {
  if (q.question.trim() === "") {
    throw new InputError({
      file,
      where: `question ${JSON.stringify(q.id)}`,
      message: 'no question text (its "question" is missing or empty): nothing to encode',
    });
  }
  checkId(file, "question", q.id, reg);
}

const guard = <A>(f: () => A): Effect.Effect<A, InputError> =>
  Effect.try({
    try: f,
    catch: (e) =>
      e instanceof InputError ? e : new InputError({ file: "", where: "", message: String(e) }),
  });

/** The items of `s` whose index is in `[start, end)`; all of them without a range. */
export function inRange<A, E>(
  s: Stream.Stream<A, E>,
  range: readonly [number, number] | undefined,
): Stream.Stream<A, E> {
  if (range === undefined) return s;
  const [start, end] = range;
  return s.pipe(Stream.drop(start), Stream.take(Math.max(0, end - start)));
}

/**
 * Items of a SQuAD file, of NDJSON records of `kind` when the input starts
 * with `{"kind": ...}` (see `io/ndjson.ts`), or of any other question set
 * or corpus of `io/datasets/` (`fromOther`). The format is the one `format`
 * names, else the detected one; SQuAD-shaped files (SQuAD, XQuAD, MLQA)
 * keep the SQuAD reader (PI-SQuAD ids, `--unique-ids`).
 */
const datasetItems = <K extends "paragraph" | "question", A>(
  path: string,
  kind: K,
  format: string | undefined,
  read: SquadReadOptions,
  fromRecord: (r: K extends "paragraph" ? ParagraphRecord : QuestionRecord) => A,
  fromArticle: (a: SquadArticle) => A[],
  fromOther: (
    format: DatasetFormat,
    src: ByteSource,
  ) => Effect.Effect<Stream.Stream<A, DatasetReadError>, UsageError>,
): Stream.Stream<A, InputError | FileError | UsageError> =>
  Stream.unwrap(
    Effect.flatMap(openSource(path), (src) =>
      Effect.flatMap(
        Effect.promise(() => sniffNdjson(src)),
        ([isNd, s]): Effect.Effect<
          Stream.Stream<A, InputError | FileError | UsageError>,
          InputError | FileError | UsageError
        > =>
          isNd && format === undefined
            ? Effect.succeed(Stream.map(
              ndjsonRecords(s, kind) as Stream.Stream<
                K extends "paragraph" ? ParagraphRecord : QuestionRecord,
                InputError
              >,
              fromRecord,
            ))
            : Effect.flatMap(settleFormat(s, format, true), ([f, s2]) =>
              isSquadShaped(f)
                ? Effect.succeed(Stream.flattenIterable(
                  Stream.map(
                    Stream.fromReadableStream({
                      evaluate: () => squadRecordStream(s2, read),
                      onError: (e) =>
                        e instanceof InputError
                          ? e
                          : new InputError({ file: path, where: "", message: String(e) }),
                    }),
                    (r) => r.kind === "article" ? fromArticle(r) : [],
                  ),
                ))
                : fromOther(f, s2)),
      )),
  );

/**
 * The readers of the formats that are not SQuAD-shaped (`io/datasets/read.ts`),
 * loaded with `import()` when such a file is read: a SQuAD file or NDJSON
 * records need none of them.
 */
const readers = () => Effect.promise(() => import("../io/datasets/read.ts"));

/** How the runners read ids from a SQuAD file (see `io/squad_ids.ts`). */
const idMode = (uniqueIds: boolean | undefined) =>
  uniqueIds ? "unique" as const : "distinct" as const;

/**
 * Paragraphs of a SQuAD file (ids checked, or repeated titles renamed with
 * `uniqueIds`: `io/squad_ids.ts`), of NDJSON paragraph records, or of any
 * corpus `readCorpus` reads (DPR's passage TSV, a JSONL corpus, MRQA's
 * contexts: the passage id is the paragraph id). `format` names the input's
 * format (a `--format` value; default: detected).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { contextInputs } from "./embed.ts";
 * const path = await Deno.makeTempFile({ suffix: ".tsv" });
 * await Deno.writeTextFile(path, "id\ttext\ttitle\nwiki:12\tZürich is a city.\tZürich\n");
 * const [p] = await Effect.runPromise(Stream.runCollect(contextInputs(path)));
 * if (p.id !== "wiki:12" || p.context !== "Zürich is a city.") throw new Error(JSON.stringify(p));
 * await Deno.remove(path);
 * ```
 */
export const contextInputs = (
  path: string,
  uniqueIds?: boolean,
  format?: string,
): Stream.Stream<ContextInput, InputError | FileError | UsageError> =>
  datasetItems(
    path,
    "paragraph",
    format,
    { context: "required", qas: "optional", ids: idMode(uniqueIds) },
    (r) => ({ id: r.id, context: r.context }),
    (a) => a.paragraphs.map((p) => ({ id: p.id, context: p.context! })),
    (f, src) =>
      Effect.map(
        Effect.flatMap(readers(), (r) => r.passagesOfSource(path, f, src)),
        (s) => Stream.map(s, (p): ContextInput => ({ id: p.id, context: p.text })),
      ),
  );

/**
 * Questions (id and text only) of a SQuAD file (ids checked as for
 * {@linkcode contextInputs}), of NDJSON question records, or of any
 * question set `readQuestions` reads (a set without ids numbered from 0 in
 * file order). `format` names the input's format (default: detected).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { questionInputs } from "./embed.ts";
 * const path = await Deno.makeTempFile({ suffix: ".qa.csv" });
 * await Deno.writeTextFile(path, "who built the bridge\t['Ada']\n");
 * const [q] = await Effect.runPromise(Stream.runCollect(questionInputs(path)));
 * if (q.id !== "0" || q.question !== "who built the bridge") throw new Error(JSON.stringify(q));
 * await Deno.remove(path);
 * ```
 */
export const questionInputs = (
  path: string,
  uniqueIds?: boolean,
  format?: string,
): Stream.Stream<QuestionInput, InputError | FileError | UsageError> =>
  datasetItems(
    path,
    "question",
    format,
    { context: "optional", qas: "required", ids: idMode(uniqueIds) },
    (r) => ({ id: r.id, question: r.question }),
    (a) =>
      a.paragraphs.flatMap((p) => p.questions.map((q) => ({ id: q.id, question: q.question }))),
    (f, src) =>
      Effect.map(
        Effect.flatMap(
          readers(),
          (r) => r.questionsOfSource(path, f, src, { answers: "optional" }),
        ),
        (s) => Stream.map(s, (q): QuestionInput => ({ id: q.id, question: q.question })),
      ),
  );

/**
 * Encodes every paragraph of `opts.input` into `opts.out/<stem>.npz` +
 * `<stem>.json` with the {@linkcode ContextEncoder} in context.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import * as Effect from "effect/Effect";
 * import { embedContexts } from "./embed.ts";
 * import { SPARSE_PI_MODEL, sparsePiLayers } from "./sparse_pi/encoder.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/context.ndjson`,
 *   JSON.stringify({ kind: "paragraph", id: "T_0", context: "Paris is in France." }) + "\n",
 * );
 * const r = await Effect.runPromise(
 *   embedContexts({ input: `${dir}/context.ndjson`, out: `${dir}/context_emb`, sparse: true })
 *     .pipe(Effect.provide(sparsePiLayers(SPARSE_PI_MODEL))),
 * );
 * const files = [...Deno.readDirSync(`${dir}/context_emb`)].map((e) => e.name).sort();
 * await Deno.remove(dir, { recursive: true });
 * assert.deepEqual([r.written, r.skipped, r.encoder], [1, 0, "sparse-pi"]);
 * assert.deepEqual(files, [".phraseval-dump.json", "T_0.json", "T_0.npz"]);
 * ```
 */
export const embedContexts = (
  opts: EmbedOptions,
): Effect.Effect<EmbedResult, EmbedError, ContextEncoder> =>
  tidyFolder(
    opts.out,
    Effect.gen(function* () {
      const enc = yield* ContextEncoder;
      const format = yield* formatFor(opts, enc.info);
      const started = Date.now();
      const manifest = yield* dumpManifest("context", opts, enc.info, format);
      const start = yield* checkFolder("context", opts, manifest);
      const ledger = new Ledger(opts.out, "paragraph", opts.metadata === true, start, manifest);
      const reg = new StemRegistry();
      let written = 0, skipped = 0;
      const contexts = new Map<string, string>();
      const maxChars = opts.maxParagraphChars ?? DEFAULT_MAX_PARAGRAPH_CHARS;
      const maxPhrases = opts.maxParagraphPhrases ?? DEFAULT_MAX_PARAGRAPH_PHRASES;
      const run = inRange(contextInputs(opts.input, opts.uniqueIds, opts.format), opts.range).pipe(
        Stream.mapEffect((p) =>
          Effect.flatMap(
            guard(() => {
              checkId(opts.input, "paragraph", p.id, reg);
              if (p.context.length > maxChars) {
                throw new InputError({
                  file: opts.input,
                  where: `paragraph ${JSON.stringify(p.id)}`,
                  message:
                    `context of ${p.context.length} characters is longer than the limit of ${maxChars} (--max-paragraph-chars)`,
                });
              }
            }),
            () =>
              opts.overwrite ? Effect.succeed({ p, done: false }) : Effect.map(
                complete(opts.out, [`${dumpStem(p.id)}.npz`, `${dumpStem(p.id)}.json`]),
                (done) => ({ p, done }),
              ),
          )
        ),
        Stream.grouped(opts.batchSize ?? 32),
        Stream.runForEach((group) =>
          Effect.gen(function* () {
            const todo = group.filter((g) => !g.done).map((g) => g.p);
            skipped += group.length - todo.length;
            if (todo.length === 0) return;
            const encoded = yield* enc.encode(todo);
            const over = encoded.find((e) => e.phrases.length > maxPhrases);
            if (over !== undefined) {
              return yield* Effect.fail(
                new InputError({
                  file: opts.input,
                  where: `paragraph ${JSON.stringify(over.id)}`,
                  message:
                    `${over.phrases.length} phrases, more than the limit of ${maxPhrases} (--max-paragraph-phrases)`,
                }),
              );
            }
            yield* ledger.first();
            ledger.add(encoded.map((e) => e.id));
            if (opts.metadata) { for (const p of todo) contexts.set(p.id, p.context); }
            for (const e of encoded) {
              yield* writeContextDump(opts.out, e, format, contexts.get(e.id));
              contexts.delete(e.id);
            }
            written += todo.length;
            opts.onProgress?.(written + skipped);
          })
        ),
      );
      return yield* ledger.settle(run, started, () => ({
        written,
        skipped,
        encoder: enc.info.name,
        dim: enc.info.dim,
      }));
    }),
  );

/**
 * Encodes every question of `opts.input` into `opts.out/<stem>.npz` with
 * the {@linkcode QuestionEncoder} in context. The encoder sees ids and
 * question texts only.
 */
export const embedQuestions = (
  opts: EmbedOptions,
): Effect.Effect<EmbedResult, EmbedError, QuestionEncoder> =>
  tidyFolder(
    opts.out,
    Effect.gen(function* () {
      const enc = yield* QuestionEncoder;
      const format = yield* formatFor(opts, enc.info);
      const started = Date.now();
      const manifest = yield* dumpManifest("question", opts, enc.info, format);
      const start = yield* checkFolder("question", opts, manifest);
      const ledger = new Ledger(opts.out, "question", false, start, manifest);
      const reg = new StemRegistry();
      let written = 0, skipped = 0;
      const run = inRange(questionInputs(opts.input, opts.uniqueIds, opts.format), opts.range).pipe(
        Stream.mapEffect((q) =>
          Effect.flatMap(guard(() => checkQuestion(opts.input, q, reg)), () =>
            opts.overwrite
              ? Effect.succeed({ q, done: false })
              : Effect.map(complete(opts.out, [`${dumpStem(q.id)}.npz`]), (done) => ({ q, done })))
        ),
        Stream.grouped(opts.batchSize ?? 256),
        Stream.runForEach((group) =>
          Effect.gen(function* () {
            const todo = group.filter((g) =>
              !g.done
            ).map((g) => g.q);
            skipped += group.length - todo.length;
            if (todo.length === 0) return;
            const encoded = yield* enc.encode(todo);
            yield* ledger.first();
            ledger.add(encoded.map((e) => e.id));
            for (const e of encoded) yield* writeQuestionDump(opts.out, e, format);
            written += todo.length;
            opts.onProgress?.(written + skipped);
          })
        ),
      );
      return yield* ledger.settle(run, started, () => ({
        written,
        skipped,
        encoder: enc.info.name,
        dim: enc.info.dim,
      }));
    }),
  );

/** Options of {@linkcode embedContext}: the runner's, plus the encoder and its options. */
export interface EmbedContextOptions extends EmbedOptions, EncoderOptions {
  /** Encoder name (see `ENCODER_NAMES` in `./registry.ts`; default `sparse-pi`). */
  readonly encoder?: string;
}

/** Options of {@linkcode embedQuestion}: the runner's, plus the encoder and its options. */
export interface EmbedQuestionOptions extends EmbedOptions, EncoderOptions {
  /** Encoder name (see `ENCODER_NAMES` in `./registry.ts`; default `sparse-pi`). */
  readonly encoder?: string;
}

/**
 * Encodes the paragraphs of a file with a registered encoder (what
 * `embed_context` runs): {@linkcode embedContexts} with that encoder's layer.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { embedContext } from "./embed.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/context.ndjson`,
 *   JSON.stringify({ kind: "paragraph", id: "T_0", context: "Paris is in France." }) + "\n",
 * );
 * const r = await Effect.runPromise(
 *   embedContext({ input: `${dir}/context.ndjson`, out: `${dir}/emb`, sparse: true }),
 * );
 * await Deno.remove(dir, { recursive: true });
 * if (r.written !== 1 || r.encoder !== "sparse-pi") throw new Error(JSON.stringify(r));
 * ```
 */
export const embedContext = (
  opts: EmbedContextOptions,
): Effect.Effect<EmbedResult, EmbedError | UsageError> =>
  Effect.gen(function* () {
    const layer = yield* contextEncoderLayer(opts.encoder ?? DEFAULT_ENCODER, {
      model: opts.model,
      device: opts.device,
      threads: opts.threads,
    });
    return yield* embedContexts(opts).pipe(Effect.provide(layer));
  });

/**
 * Encodes the questions of a file with a registered encoder (what
 * `embed_question` runs): {@linkcode embedQuestions} with that encoder's
 * layer.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { embedQuestion } from "./embed.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(
 *   `${dir}/question.ndjson`,
 *   JSON.stringify({ kind: "question", id: "q1", question: "Where is Paris?" }) + "\n",
 * );
 * const r = await Effect.runPromise(
 *   embedQuestion({ input: `${dir}/question.ndjson`, out: `${dir}/emb`, sparse: true }),
 * );
 * await Deno.remove(dir, { recursive: true });
 * if (r.written !== 1 || r.encoder !== "sparse-pi") throw new Error(JSON.stringify(r));
 * ```
 */
export const embedQuestion = (
  opts: EmbedQuestionOptions,
): Effect.Effect<EmbedResult, EmbedError | UsageError> =>
  Effect.gen(function* () {
    const layer = yield* questionEncoderLayer(opts.encoder ?? DEFAULT_ENCODER, {
      model: opts.model,
      device: opts.device,
      threads: opts.threads,
    });
    return yield* embedQuestions(opts).pipe(Effect.provide(layer));
  });
