/**
 * The one registry of dataset and corpus formats: per format its name and
 * aliases (the `--format` values), how it is sniffed, its readers (loaded
 * when first used), its kind (the run config `type`s it may be named
 * under), the name of its scoring rules and what a run config may say
 * about it (a field map, a language). Every other file asks this one:
 * `detect.ts` its names and sniffers, `read.ts` its readers, `metrics/`
 * maps its rules name to a scorer, `runs/config/` its kinds, `report/` its
 * kind and rules.
 *
 * Adding a format is one reader file, one metric (if its rules are new) and
 * one {@linkcode registerFormat} call (an entry of {@linkcode BUILTIN_FORMATS}
 * for a format of the product).
 *
 * The built-in formats are told from a file's first bytes by `detect.ts`
 * and `detect_json.ts` (their rules depend on one another's order: a
 * SQuAD-shaped head is `squad2`, `xquad` or `mlqa` by its version and
 * file name); a registered format brings its own `sniff`, asked first.
 *
 * The readers are loaded with `import()` when first used, so asking the
 * registry costs no reader's load (`detect_json.ts`, which `evaluate`'s
 * whole-file path loads, imports only its types).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { FileError, InputError, UsageError } from "../errors.ts";
import type { ByteSource } from "../source.ts";
import type {
  CorpusPassage,
  DatasetReadError,
  FieldMap,
  QaReadOptions,
  QaRecord,
} from "./types.ts";

/** The names of the built-in formats, in the order `--format`'s message lists them. */
export type BuiltinFormat =
  | "squad"
  | "squad2"
  | "xquad"
  | "mlqa"
  | "mrqa"
  | "dpr"
  | "trec"
  | "open"
  | "jsonl"
  | "csv"
  | "tsv"
  | "dpr-passages"
  | "passages";

/**
 * A dataset or corpus format: a built-in one, or the name of one
 * registered with {@linkcode registerFormat}.
 */
// deno-lint-ignore ban-types
export type DatasetFormat = BuiltinFormat | (string & {});

/** The dataset kinds of a run config (its datasets' `type`), in the Schema's order. */
export const DATASET_KINDS = ["squad", "squad2", "mrqa", "xquad", "mlqa", "open", "jsonl"] as const;

/** A dataset kind: how a run config's dataset is read and which metric its eval runs. */
export type DatasetKind = (typeof DATASET_KINDS)[number];

/**
 * The name of a format's scoring rules (`v1.1`: SQuAD v1.1, `v2.0`: SQuAD
 * v2.0, `MRQA`, `MLQA`, `open-domain`: a reader's top-1 answer, DrQA's
 * way). `metrics/` maps the name to its scorer.
 */
export type RulesName = "v1.1" | "v2.0" | "MRQA" | "MLQA" | "open-domain";

/** Options of the question and corpus readers (`read.ts`'s `readQuestions`, `readCorpus`). */
export interface DatasetOptions extends QaReadOptions {
  /** The format, or a `--format` name for it (see `parseFormatName`); default: detected. */
  readonly format?: DatasetFormat;
  /** The field map of a generic `jsonl`/`csv`/`tsv` file (required for those). */
  readonly fields?: FieldMap;
  /** The column separator of a `dpr` or generic `csv` file. */
  readonly delimiter?: string;
  /** Told the format the file is read as (named or detected), before its first record. */
  readonly onFormat?: (format: DatasetFormat) => void;
}

/** What a reader is given besides its source: the file's name for errors, the format, the options. */
export interface ReaderContext {
  /** The path the file was opened from (`-` is stdin): errors name it. */
  readonly path: string;
  /** The format the file is read as. */
  readonly format: DatasetFormat;
  /** The reader options. */
  readonly opts: DatasetOptions;
}

/**
 * A format's question reader: the records of `src`, or a
 * {@linkcode UsageError} (`path: what is missing`) when the options do not
 * let it read them (no language, no field map).
 */
export type QuestionReader = (
  src: ByteSource,
  ctx: ReaderContext,
) => Effect.Effect<Stream.Stream<QaRecord, DatasetReadError>, UsageError>;

/** A format's corpus reader: the passages of `src`. */
export type PassageReader = (
  src: ByteSource,
  ctx: ReaderContext,
) => Effect.Effect<Stream.Stream<CorpusPassage, DatasetReadError>, UsageError>;

/** One format of the registry. */
export interface FormatSpec {
  /** Its name, as `--format` takes it and as records and summaries name it. */
  readonly name: DatasetFormat;
  /** Other names `--format` takes for it (lower case). */
  readonly aliases?: readonly string[];
  /** `questions`: a question set (it may give a corpus too, see `paragraphs`); `corpus`: passages only. */
  readonly role: "questions" | "corpus";
  /**
   * The run config `type`s it may be read as, its own first (the kind a
   * report gives a file detected as it); none for a corpus.
   */
  readonly kinds: readonly DatasetKind[];
  /** The name of its scoring rules (none for a corpus). */
  readonly rules?: RulesName;
  /** Its files have paragraphs: they give a corpus too. */
  readonly paragraphs?: boolean;
  /**
   * A SQuAD file (a JSON document with `data`): the stages read it with
   * their SQuAD reader (PI-SQuAD paragraph ids, `--unique-ids`).
   */
  readonly squadShaped?: boolean;
  /** Its answers are regular expressions (CuratedTREC). */
  readonly regex?: boolean;
  /** A question set needs a language (given, or from the file's name). */
  readonly needsLang?: boolean;
  /** A generic file: read with a field map (a run config's `reader.fields`). */
  readonly fields?: boolean;
  /** The file extension a run config's `jsonl` set of this format has (`.csv`, `.tsv`). */
  readonly extension?: string;
  /**
   * How it is told from a file's first bytes (`head`, decoded, BOM and
   * leading white space removed) and its name; built-in formats are told by
   * `detect.ts`'s ordered rules instead. A registered format's sniff is
   * asked before those rules.
   */
  readonly sniff?: (head: string, name: string) => boolean;
  /** Its question reader (question sets). */
  readonly questions?: QuestionReader;
  /** Its corpus reader (corpora, and question sets with paragraphs). */
  readonly passages?: PassageReader;
}

/** A reader loaded with `import()` when first used: `load` gives its stream. */
const lazy = <A>(
  load: () => Promise<Stream.Stream<A, DatasetReadError>>,
): Effect.Effect<Stream.Stream<A, DatasetReadError>> => Effect.promise(load);

/** A {@linkcode UsageError} naming `path`, the source given up. */
const usage = (src: ByteSource, path: string, message: string) => {
  void src.stream.cancel().catch(() => {});
  return Effect.fail(new UsageError(`${path}: ${message}`));
};

const squadQuestions = (needsLang: boolean): QuestionReader => (src, { path, format, opts }) => {
  if (!needsLang) {
    return lazy(async () => (await import("./squad.ts")).squadQuestionRecords(src, opts));
  }
  return Effect.flatMap(Effect.promise(() => import("./squad.ts")), (m) => {
    const lang = opts.lang ?? m.langFromFileName(path);
    if (lang === undefined) {
      return usage(src, path, `a ${format} file needs a language code (--lang)`);
    }
    return Effect.succeed(m.squadQuestionRecords(src, { ...opts, lang }));
  });
};

const squadCorpus: PassageReader = (src) =>
  lazy(async () => (await import("./squad.ts")).squadPassages(src));

const genericQuestions: QuestionReader = (src, { path, format, opts }) => {
  const fields = opts.fields;
  if (fields === undefined) {
    return usage(
      src,
      path,
      `a generic ${format} file needs a field map ({question, answers, id, ...})`,
    );
  }
  return lazy(async () => {
    const { csvQuestions, jsonlQuestions } = await import("./generic.ts");
    if (format === "jsonl") return jsonlQuestions(src, { ...opts, fields });
    const delimiter = opts.delimiter ?? (format === "tsv" ? "\t" : undefined);
    return csvQuestions(src, { ...opts, fields, delimiter });
  });
};

const dprQuestionReader = (regex: boolean): QuestionReader => (src, { opts }) =>
  lazy(async () =>
    (await import("./dpr.ts")).dprQuestions(src, { ...opts, regex: regex || opts.regex })
  );

/**
 * Every open-domain layout: NQ-open/TriviaQA JSONL, and DPR's question
 * CSV/TSV (its answers plain strings: `trec` reads CuratedTREC's as
 * patterns), told from the file's first line.
 */
const openQuestionReader: QuestionReader = (src, { path, opts }) =>
  lazy(async () => {
    const { formatOfHead, readHead } = await import("./detect.ts");
    const { headText } = await import("./detect_json.ts");
    const { dprQuestions } = await import("./dpr.ts");
    const { openQuestions } = await import("./open.ts");
    const asError = (e: unknown): DatasetReadError =>
      e instanceof InputError || e instanceof FileError || e instanceof UsageError
        ? e
        : new InputError({
          file: path,
          where: "",
          message: e instanceof Error ? e.message : String(e),
        });
    return Stream.unwrap(Effect.map(
      Effect.tryPromise({ try: () => readHead(src), catch: asError }),
      ([head, rest]) => {
        const text = headText(head);
        const dpr = text !== "" && !text.startsWith("{") &&
          (formatOfHead(head, path) === "dpr" || formatOfHead(head, path) === "trec");
        return dpr ? dprQuestions(rest, opts) : openQuestions(rest, opts);
      },
    ));
  });

/** The built-in formats, in the order `--format`'s message lists them. */
export const BUILTIN_FORMATS: readonly FormatSpec[] = [
  {
    name: "squad",
    aliases: ["squad1", "squad1.1", "squad-v1.1"],
    role: "questions",
    kinds: ["squad"],
    rules: "v1.1",
    paragraphs: true,
    squadShaped: true,
    questions: squadQuestions(false),
    passages: squadCorpus,
  },
  {
    name: "squad2",
    aliases: ["squad2.0", "squad-v2.0"],
    role: "questions",
    kinds: ["squad2"],
    rules: "v2.0",
    paragraphs: true,
    squadShaped: true,
    questions: squadQuestions(false),
    passages: squadCorpus,
  },
  {
    name: "xquad",
    role: "questions",
    kinds: ["xquad"],
    rules: "MLQA",
    paragraphs: true,
    squadShaped: true,
    needsLang: true,
    questions: squadQuestions(true),
    passages: squadCorpus,
  },
  {
    name: "mlqa",
    role: "questions",
    kinds: ["mlqa"],
    rules: "MLQA",
    paragraphs: true,
    squadShaped: true,
    needsLang: true,
    questions: squadQuestions(true),
    passages: squadCorpus,
  },
  {
    name: "mrqa",
    aliases: ["mrqa2019"],
    role: "questions",
    kinds: ["mrqa"],
    rules: "MRQA",
    paragraphs: true,
    questions: (src, { opts }) =>
      lazy(async () => (await import("./mrqa.ts")).mrqaQuestions(src, opts)),
    passages: (src, { opts }) =>
      lazy(async () => (await import("./mrqa.ts")).mrqaPassages(src, opts)),
  },
  {
    name: "dpr",
    aliases: ["dpr-csv", "dpr-tsv"],
    role: "questions",
    kinds: ["open"],
    rules: "open-domain",
    questions: dprQuestionReader(false),
  },
  {
    name: "trec",
    aliases: ["curatedtrec"],
    role: "questions",
    kinds: ["open"],
    rules: "open-domain",
    regex: true,
    questions: dprQuestionReader(true),
  },
  {
    name: "open",
    aliases: ["nq-open", "nq_open", "efficientqa", "triviaqa-open"],
    role: "questions",
    kinds: ["open"],
    rules: "open-domain",
    questions: openQuestionReader,
  },
  {
    name: "jsonl",
    role: "questions",
    kinds: ["jsonl", "open"],
    rules: "open-domain",
    fields: true,
    questions: genericQuestions,
  },
  {
    name: "csv",
    role: "questions",
    kinds: ["jsonl", "open"],
    rules: "open-domain",
    fields: true,
    extension: ".csv",
    questions: genericQuestions,
  },
  {
    name: "tsv",
    role: "questions",
    kinds: ["jsonl", "open"],
    rules: "open-domain",
    fields: true,
    extension: ".tsv",
    questions: genericQuestions,
  },
  {
    name: "dpr-passages",
    aliases: ["psgs_w100", "dpr-psgs"],
    role: "corpus",
    kinds: [],
    passages: (src, { opts }) =>
      lazy(async () => (await import("./dpr.ts")).dprPassages(src, opts)),
  },
  {
    name: "passages",
    aliases: ["passages-jsonl"],
    role: "corpus",
    kinds: [],
    passages: (src, { opts }) =>
      lazy(async () => (await import("./passages.ts")).jsonlPassages(src, opts)),
  },
];

/**
 * The formats a run config's `type` reads, in the order its messages list
 * them (`open`: DPR's and NQ-open's own layouts first, then the generic
 * ones; a registered format is added at the end of each of its kinds).
 */
const KIND_FORMATS: Record<DatasetKind, DatasetFormat[]> = {
  squad: ["squad"],
  squad2: ["squad2"],
  mrqa: ["mrqa"],
  xquad: ["xquad"],
  mlqa: ["mlqa"],
  open: ["dpr", "trec", "open", "csv", "tsv", "jsonl"],
  jsonl: ["jsonl", "csv", "tsv"],
};

/** The rules of each dataset kind (as its formats'). */
const RULES_OF_KIND: Readonly<Record<DatasetKind, RulesName>> = {
  squad: "v1.1",
  squad2: "v2.0",
  mrqa: "MRQA",
  xquad: "MLQA",
  mlqa: "MLQA",
  open: "open-domain",
  jsonl: "open-domain",
};

const registry: FormatSpec[] = [...BUILTIN_FORMATS];

/**
 * Adds a format to the registry: from then on `--format` takes its name
 * and aliases, detection asks its `sniff`, `readQuestions`/`readCorpus`
 * read it, `evaluate` scores it by its rules, and a run config may name it
 * under each of its kinds. A name or alias already taken is refused.
 *
 * @example
 * ```ts
 * import { formatSpec, registerFormat } from "./formats.ts";
 * registerFormat({ name: "doc-example", role: "corpus", kinds: [] });
 * if (formatSpec("doc-example")?.role !== "corpus") throw new Error();
 * ```
 */
export function registerFormat(spec: FormatSpec): void {
  const taken = new Set(registry.flatMap((f) => [f.name, ...(f.aliases ?? [])]));
  for (const n of [spec.name, ...(spec.aliases ?? [])]) {
    if (taken.has(n.toLowerCase())) throw new Error(`dataset format name "${n}" is taken`);
  }
  for (const k of spec.kinds) {
    if (spec.rules !== RULES_OF_KIND[k]) {
      throw new Error(`a format of type "${k}" is scored by ${RULES_OF_KIND[k]} rules`);
    }
  }
  registry.push(spec);
  for (const k of spec.kinds) KIND_FORMATS[k].push(spec.name);
}

/**
 * Every format of the registry, built-in ones first.
 *
 * @example
 * ```ts
 * import { allFormats } from "./formats.ts";
 * if (allFormats()[0].name !== "squad") throw new Error();
 * ```
 */
export function allFormats(): readonly FormatSpec[] {
  return registry;
}

/**
 * The entry of the format named `name` (its name, not an alias), or `undefined`.
 *
 * @example
 * ```ts
 * import { formatSpec } from "./formats.ts";
 * if (formatSpec("trec")?.regex !== true || formatSpec("hotpot") !== undefined) throw new Error();
 * ```
 */
export function formatSpec(name: DatasetFormat): FormatSpec | undefined {
  return registry.find((f) => f.name === name);
}

/**
 * The format a name or alias names (case does not matter), or `undefined`.
 *
 * @example
 * ```ts
 * import { lookupFormat } from "./formats.ts";
 * if (lookupFormat("NQ-open")?.name !== "open" || lookupFormat("x") !== undefined) throw new Error();
 * ```
 */
export function lookupFormat(name: string): FormatSpec | undefined {
  const n = name.trim().toLowerCase();
  return registry.find((f) => f.name === n) ??
    registry.find((f) => (f.aliases ?? []).includes(n));
}

/**
 * The formats a run config's `type` reads, in the order its messages list them.
 *
 * @example
 * ```ts
 * import { formatsOfKind } from "./formats.ts";
 * if (formatsOfKind("jsonl").join() !== "jsonl,csv,tsv") throw new Error();
 * ```
 */
export function formatsOfKind(kind: DatasetKind): readonly DatasetFormat[] {
  return KIND_FORMATS[kind];
}

/**
 * The rules a dataset kind is scored by.
 *
 * @example
 * ```ts
 * import { rulesOfKind } from "./formats.ts";
 * if (rulesOfKind("xquad") !== "MLQA" || rulesOfKind("jsonl") !== "open-domain") throw new Error();
 * ```
 */
export function rulesOfKind(kind: DatasetKind): RulesName {
  return RULES_OF_KIND[kind];
}

/**
 * The kind a report gives a file detected as `format` (its first kind), or
 * `undefined` for a corpus.
 *
 * @example
 * ```ts
 * import { kindOfFormat } from "./formats.ts";
 * if (kindOfFormat("csv") !== "jsonl" || kindOfFormat("passages") !== undefined) throw new Error();
 * ```
 */
export function kindOfFormat(format: DatasetFormat): DatasetKind | undefined {
  return formatSpec(format)?.kinds[0];
}

/**
 * Whether `format` is scored by SQuAD's own rules (v1.1 or v2.0:
 * `metrics/evaluate.ts`), not by `metrics/qa_eval.ts`.
 *
 * @example
 * ```ts
 * import { hasSquadRules } from "./formats.ts";
 * if (!hasSquadRules("squad2") || hasSquadRules("xquad")) throw new Error();
 * ```
 */
export function hasSquadRules(format: DatasetFormat): boolean {
  const r = formatSpec(format)?.rules;
  return r === "v1.1" || r === "v2.0";
}

/**
 * What a run config may say about a dataset of `kind` beyond its path and
 * format: `fields`, a field map (`reader.fields`: its kind reads generic
 * files); `lang`, a language (its rules are per language: XQuAD, MLQA);
 * `articles`, a range of articles (`reader.articles`) and `uniqueIds` (its
 * files are SQuAD JSON, scored by SQuAD's rules).
 *
 * @example
 * ```ts
 * import { kindTakes } from "./formats.ts";
 * if (!kindTakes("open", "fields") || kindTakes("mrqa", "fields")) throw new Error();
 * if (!kindTakes("xquad", "lang") || kindTakes("squad2", "lang")) throw new Error();
 * if (!kindTakes("squad2", "articles") || kindTakes("mlqa", "articles")) throw new Error();
 * ```
 */
export function kindTakes(
  kind: DatasetKind | undefined,
  option: "fields" | "lang" | "articles" | "uniqueIds",
): boolean {
  if (kind === undefined) return false;
  const specs = formatsOfKind(kind).map(formatSpec);
  switch (option) {
    case "fields":
      return specs.some((f) => f?.fields === true);
    case "lang":
      return specs.some((f) => f?.needsLang === true);
    case "articles":
    case "uniqueIds":
      return specs.every((f) => f !== undefined && hasSquadRules(f.name));
  }
}

/**
 * The formats read as SQuAD files (a JSON document with `data`): SQuAD
 * v1.1 and v2.0, XQuAD and MLQA. The stages keep their SQuAD reader (PI-SQuAD
 * paragraph ids `title_index`, `--unique-ids`) for these, and read every
 * other format with `read.ts` `readQuestions` / `readCorpus`.
 *
 * @example
 * ```ts
 * import { isSquadShaped } from "./formats.ts";
 * if (!isSquadShaped("xquad") || isSquadShaped("dpr-passages")) throw new Error();
 * ```
 */
export function isSquadShaped(format: DatasetFormat): boolean {
  return formatSpec(format)?.squadShaped === true;
}
