/**
 * The contract between a run's plan and the tasks that are no stage of
 * their own (`prepare`, `eval`, a sharded search's `search-shard` and
 * `search-merge`, the task command `pipeline/_run_task.ts`): each kind's
 * arguments are one type, written to a command line by its `toArgv` (the
 * planner, `plan.ts`) and read back by its `fromFlags` (the task command,
 * after its parser has read the flags as its spec says), which refuses a
 * missing or malformed flag with one {@linkcode UsageError} line. A flag
 * is written only when its value is set, in a fixed order, so a plan's
 * command lines are the same from run to run.
 *
 * @example
 * ```ts
 * import { TASK_ARGS } from "./task_args.ts";
 * const argv = TASK_ARGS["search-merge"].toArgv({ parts: "/h", shards: 2, pred: "/p.json" });
 * if (argv.join(" ") !== "search-merge --parts=/h --shards=2 --pred=/p.json") throw new Error();
 * const back = TASK_ARGS["search-merge"].fromFlags({ parts: "/h", shards: 2, pred: "/p.json" });
 * if (back.shards !== 2 || back.topk !== undefined) throw new Error();
 * ```
 *
 * @module
 */
import { UsageError } from "../../io/errors.ts";
import type { DatasetFormat } from "../../io/datasets/detect.ts";
import type { FieldMap } from "../../io/datasets/types.ts";
import type { SearchShardOptions } from "../../search/open/sharded.ts";
import type { CorpusEvalOptions, EvalOptions, PrepareOptions } from "./tasks.ts";

/** The flags of a task command as its parser read them (name without `--` → value). */
export type TaskFlags = Readonly<Record<string, string | number | boolean | undefined>>;

/** One task kind's contract: its arguments `A` to a command line and back. */
export interface TaskArgs<A> {
  /** The task command's first argument (`pipeline/_run_task.ts <kind>`). */
  readonly kind: string;
  /** The command line after the task script: the kind, then the flags of `args`. */
  readonly toArgv: (args: A) => string[];
  /**
   * The arguments from the flags the command's parser read; throws a
   * {@linkcode UsageError} (one line) when a flag is missing or malformed.
   */
  readonly fromFlags: (flags: TaskFlags) => A;
}

/** A sharded search's merge task: the shards' hits files into the search's outputs. */
export interface SearchMergeArgs {
  /** The folder of the shards' hits files. */
  readonly parts: string;
  /** Shards of the index. */
  readonly shards: number;
  /** The predictions to write. */
  readonly pred: string;
  /** The top-k records to write. */
  readonly topk?: string;
}

/**
 * An `eval` task: a model's answers scored (`predictions`: merge's, a
 * predictions model's copied in with `from`, the open search's beside
 * them), or a corpus search scored alone (`corpusSearch`).
 */
export type EvalArgs =
  | { readonly predictions: EvalOptions }
  | { readonly corpusSearch: CorpusEvalOptions };

/** The arguments of a `search-shard` task (no `onMissing`: the command prints). */
export type SearchShardArgs = Omit<SearchShardOptions, "onMissing">;

/** `--name=value` when `v` is set. */
const flag = (name: string, v: string | number | undefined): string[] =>
  v === undefined ? [] : [`--${name}=${v}`];

/** `--name` when `on`. */
const bool = (name: string, on: boolean | undefined): string[] => on ? [`--${name}`] : [];

/** How a set that is not SQuAD's is read: `--format`, `--lang`, `--fields` (JSON). */
const questionSetArgv = (
  q: { readonly format?: string; readonly lang?: string; readonly fields?: FieldMap },
): string[] => [
  ...flag("format", q.format),
  ...flag("lang", q.lang),
  ...flag("fields", q.fields !== undefined ? JSON.stringify(q.fields) : undefined),
];

const str = (f: TaskFlags, name: string): string | undefined => {
  const v = f[name];
  return typeof v === "string" ? v : undefined;
};

const int = (f: TaskFlags, name: string): number | undefined => {
  const v = f[name];
  return typeof v === "number" ? v : undefined;
};

/** A `number` flag (as its parser read it: a finite number), or `undefined`. */
const num = int;

/** `format`, `lang` and `fields` (parsed) when given. */
const questionSetOf = (f: TaskFlags) => ({
  ...(str(f, "format") !== undefined ? { format: str(f, "format") as DatasetFormat } : {}),
  ...(str(f, "lang") !== undefined ? { lang: str(f, "lang")! } : {}),
  ...(str(f, "fields") !== undefined ? { fields: JSON.parse(str(f, "fields")!) as FieldMap } : {}),
});

/** `--articles A:B`, A < B. */
const articlesOf = (v: string | undefined): [number, number] | undefined => {
  if (v === undefined) return undefined;
  const m = /^(\d+):(\d+)$/.exec(v);
  if (!m || Number(m[1]) >= Number(m[2])) {
    throw new UsageError(`--articles expects A:B with A < B, got "${v}"`);
  }
  return [Number(m[1]), Number(m[2])];
};

/** `prepare`: take a dataset's articles, write its split or its question-only file. */
export const PREPARE_ARGS: TaskArgs<PrepareOptions> = {
  kind: "prepare",
  toArgv: (a) => [
    "prepare",
    ...flag("data", a.data),
    ...flag("out", a.out),
    ...flag("articles", a.articles ? `${a.articles[0]}:${a.articles[1]}` : undefined),
    ...bool("unique-ids", a.uniqueIds),
    ...bool("subset-only", a.subsetOnly),
    ...(a.questionsOnly !== undefined
      ? ["--questions-only", ...questionSetArgv(a.questionsOnly)]
      : []),
    ...flag("corpus", a.corpus),
  ],
  fromFlags: (f) => {
    const data = str(f, "data"), out = str(f, "out");
    if (!data || !out) throw new UsageError("--data and --out are required");
    return {
      data,
      out,
      articles: articlesOf(str(f, "articles")),
      uniqueIds: f["unique-ids"] === true,
      subsetOnly: f["subset-only"] === true,
      ...(f["questions-only"] === true ? { questionsOnly: questionSetOf(f) } : {}),
      ...(str(f, "corpus") !== undefined ? { corpus: str(f, "corpus") } : {}),
    };
  },
};

/** `eval`: score a model's answers (and its open search's), or a corpus search alone. */
export const EVAL_ARGS: TaskArgs<EvalArgs> = {
  kind: "eval",
  toArgv: (a) => {
    if ("corpusSearch" in a) {
      const c = a.corpusSearch;
      return [
        "eval",
        ...flag("data", c.data),
        ...flag("out", c.out),
        ...flag("rows", c.rows),
        ...flag("open-pred", c.pred),
        ...flag("topk", c.topk),
        ...flag("corpus-index", c.index),
        ...flag("top-k", c.ranks),
        ...questionSetArgv(c),
      ];
    }
    const p = a.predictions;
    return [
      "eval",
      ...flag("data", p.data),
      ...flag("pred", p.pred),
      ...flag("from", p.from),
      ...flag("out", p.out),
      ...flag("rows", p.rows),
      ...questionSetArgv(p),
      ...(p.open !== undefined
        ? [
          ...flag("open-pred", p.open.pred),
          ...flag("topk", p.open.topk),
          ...bool("unique-ids", p.open.uniqueIds),
        ]
        : []),
      ...flag("bem", p.bem),
      ...flag("bem-report", p.bemReport),
    ];
  },
  fromFlags: (f) => {
    const data = str(f, "data"), out = str(f, "out"), rows = str(f, "rows");
    const openPred = str(f, "open-pred"), topk = str(f, "topk");
    const index = str(f, "corpus-index");
    if (index !== undefined) {
      if (!data || !out || !openPred || !topk) {
        throw new UsageError("--corpus-index needs --data, --out, --open-pred and --topk");
      }
      return {
        corpusSearch: {
          data,
          out,
          rows,
          pred: openPred,
          topk,
          index,
          ranks: int(f, "top-k"),
          ...questionSetOf(f),
        },
      };
    }
    const pred = str(f, "pred");
    if (!data || !pred || !out) throw new UsageError("--data, --pred and --out are required");
    if ((openPred === undefined) !== (topk === undefined)) {
      throw new UsageError("--open-pred and --topk go together");
    }
    return {
      predictions: {
        data,
        pred,
        out,
        rows,
        bem: str(f, "bem"),
        bemReport: str(f, "bem-report") as EvalOptions["bemReport"],
        ...(str(f, "from") !== undefined ? { from: str(f, "from") } : {}),
        ...questionSetOf(f),
        ...(openPred !== undefined && topk !== undefined
          ? { open: { pred: openPred, topk, uniqueIds: f["unique-ids"] === true } }
          : {}),
      },
    };
  },
};

/** `search-shard`: one shard's top k of every question, into a hits file. */
export const SEARCH_SHARD_ARGS: TaskArgs<SearchShardArgs> = {
  kind: "search-shard",
  toArgv: (a) => [
    "search-shard",
    ...flag("data", a.data),
    ...flag("index", a.index),
    ...flag("shard", a.shard),
    ...flag("question-emb", a.questionEmb),
    ...flag("out", a.out),
    ...flag("top-k", a.topK),
    ...flag("nprobe", a.nprobe),
    ...flag("probe-tau", a.probeTau),
    ...flag("candidates", a.candidates),
    ...flag("format", a.format),
    ...flag("lang", a.lang),
    ...bool("unique-ids", a.uniqueIds),
  ],
  fromFlags: (f) => {
    const data = str(f, "data"), index = str(f, "index"), out = str(f, "out");
    const questionEmb = str(f, "question-emb");
    const shard = int(f, "shard"), topK = int(f, "top-k");
    if (
      !data || !index || shard === undefined || !questionEmb || !out || topK === undefined
    ) {
      throw new UsageError(
        "--data, --index, --shard, --question-emb, --out and --top-k are required",
      );
    }
    return {
      data,
      index,
      shard,
      questionEmb,
      out,
      topK,
      nprobe: int(f, "nprobe"),
      ...(num(f, "probe-tau") !== undefined ? { probeTau: num(f, "probe-tau") } : {}),
      candidates: int(f, "candidates"),
      uniqueIds: f["unique-ids"] === true,
      ...(str(f, "format") !== undefined ? { format: str(f, "format") } : {}),
      ...(str(f, "lang") !== undefined ? { lang: str(f, "lang") } : {}),
    };
  },
};

/** `search-merge`: the shards' hits files merged into the search's predictions and top k. */
export const SEARCH_MERGE_ARGS: TaskArgs<SearchMergeArgs> = {
  kind: "search-merge",
  toArgv: (a) => [
    "search-merge",
    ...flag("parts", a.parts),
    ...flag("shards", a.shards),
    ...flag("pred", a.pred),
    ...flag("topk", a.topk),
  ],
  fromFlags: (f) => {
    const parts = str(f, "parts"), shards = int(f, "shards"), pred = str(f, "pred");
    if (!parts || shards === undefined || shards < 1 || !pred) {
      throw new UsageError("--parts, --shards and --pred are required");
    }
    return {
      parts,
      shards,
      pred,
      ...(str(f, "topk") !== undefined ? { topk: str(f, "topk") } : {}),
    };
  },
};

/** Every task kind's contract, by the kind the task command is given. */
export const TASK_ARGS = {
  prepare: PREPARE_ARGS,
  eval: EVAL_ARGS,
  "search-shard": SEARCH_SHARD_ARGS,
  "search-merge": SEARCH_MERGE_ARGS,
} as const;

/** A task kind of the task command. */
export type TaskKind = keyof typeof TASK_ARGS;
