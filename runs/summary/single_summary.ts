/**
 * The summary of a single run (`summary.json` of `full`): EM, F1, dataset
 * and dump counts, stage timings, the encoder, whether the split is the
 * official PI-SQuAD one, and the permission flags each encoder process ran
 * with (read from the tasks' own command lines).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError } from "../../io/errors.ts";
import type { SquadCounts } from "../../io/squad.ts";
import type { Plan, Stage } from "../plan/task.ts";
import type { OpenRecord } from "../plan/tasks.ts";
import type { CorpusTopK } from "../../metrics/open_corpus.ts";

/** sha256 of the official PI-SQuAD split of SQuAD v1.1 dev. */
export const OFFICIAL_SPLIT_SHA256 = {
  context: "6b16725c1d0b4be78594941e9a2dae494cadbe97a34307e5dd52220f157e1c8c",
  question: "a236497f5a93db50f3825aa9f5c17155eba8db55bd7fd70f270c7765464115c4",
} as const;

/** The permission flags an encoder process ran with. */
export interface StagePermissions {
  /** The stage. */
  readonly stage: "embed_context" | "embed_question";
  /** Deno permission flags, as passed. */
  readonly flags: readonly string[];
}

/** `summary.json`. */
export interface FullSummary {
  /** Dataset path. */
  readonly data: string;
  /** Output folder. */
  readonly out: string;
  /** Encoder name and dimension. */
  readonly encoder: { readonly name: string; readonly dim: number; readonly sparse: boolean };
  /** EM (official SQuAD v1.1 rules). */
  readonly exact_match: number;
  /** F1. */
  readonly f1: number;
  /** Dataset and dump counts. */
  readonly counts: SquadCounts & {
    readonly contextFiles: number;
    readonly questionFiles: number;
    readonly answered: number;
  };
  /** Whether the split equals the official PI-SQuAD split (dev only). */
  readonly splitMatchesOfficial: boolean;
  /** Seconds per stage. */
  readonly timings: Readonly<Record<string, number>>;
  /** The permission set each encoder process ran with. */
  readonly permissions: readonly StagePermissions[];
  /** The open search's numbers (`full --open`; `result.json`'s `open`), beside the closed ones. */
  readonly open?: OpenRecord;
  /**
   * A search over a corpus (`full --open --corpus FILE`): the corpus, and
   * the search's top-k numbers (`exact_match` and `f1` are then its top-1
   * answers'; there is no merge).
   */
  readonly corpus?: { readonly path: string; readonly passages: number } & CorpusTopK;
}

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

const sha256 = (path: string) =>
  fsDo(path, async () => {
    const d = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
    return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
  });

const countFiles = (dir: string) =>
  fsDo(dir, async () => {
    let n = 0;
    for await (const e of Deno.readDir(dir)) if (e.isFile && !e.name.startsWith(".")) n++;
    return n;
  });

/** What {@linkcode singleRunSummary} is given. */
export interface SingleRunFacts {
  /** The single run's plan (`planSingleRun`). */
  readonly plan: Plan;
  /** Dataset path. */
  readonly data: string;
  /** The encoder. */
  readonly encoder: { readonly name: string; readonly dim: number; readonly sparse: boolean };
  /** The dataset's counts. */
  readonly counts: SquadCounts;
  /** Seconds per stage. */
  readonly timings: Readonly<Record<string, number>>;
}

/**
 * The summary of a finished single run, from its files (`result.json`, the
 * split, the dump folders) and its plan.
 */
export const singleRunSummary = (f: SingleRunFacts): Effect.Effect<FullSummary, FileError> =>
  Effect.gen(function* () {
    const out = f.plan.runDir;
    const result = yield* fsDo(
      `${out}/result.json`,
      async () => JSON.parse(await Deno.readTextFile(`${out}/result.json`)),
    );
    const flags = (stage: Stage) =>
      f.plan.tasks.find((x) => x.stage === stage)!.argv.filter((a) => a.startsWith("--allow-"));
    return {
      data: f.data,
      out,
      encoder: f.encoder,
      exact_match: result.exact_match,
      f1: result.f1,
      counts: {
        ...f.counts,
        contextFiles: yield* countFiles(`${out}/dumps/context_emb`),
        questionFiles: yield* countFiles(`${out}/dumps/question_emb`),
        answered: result.answered,
      },
      splitMatchesOfficial:
        (yield* sha256(`${out}/context.json`)) === OFFICIAL_SPLIT_SHA256.context &&
        (yield* sha256(`${out}/question.json`)) === OFFICIAL_SPLIT_SHA256.question,
      timings: f.timings,
      permissions: [
        { stage: "embed_context", flags: flags("encode_context") },
        { stage: "embed_question", flags: flags("encode_question") },
      ],
      ...(result.open !== undefined ? { open: result.open as OpenRecord } : {}),
      ...(result.corpus !== undefined
        ? {
          corpus: {
            path: f.plan.config.datasets[0].corpus ?? "",
            passages: f.plan.scans[0].paragraphIds.length,
            ...(result.corpus as CorpusTopK),
          },
        }
        : {}),
    };
  });

/** The numbers of a search over a corpus: top-1 and best-of-k EM/F1, MRR, passage accuracy@k. */
function corpusTable(s: FullSummary, c: NonNullable<FullSummary["corpus"]>): string[] {
  const f = (x: number | null) => x === null ? "-" : x.toFixed(2);
  const rows: [string, string][] = [
    ["corpus", `${c.path} (${c.passages} passages)`],
    ["EM", f(s.exact_match)],
    ["F1", f(s.f1)],
    [`top-${c.k} EM`, f(c.top_k_exact_match)],
    [`top-${c.k} F1`, f(c.top_k_f1)],
    [`MRR@${c.k}`, c.mrr.toFixed(4)],
    ...Object.entries(c.top_k_accuracy).map(([k, v]): [string, string] => [
      `top-${k} acc`,
      `${v.toFixed(2)}${c.short[k] ? `  (${c.short[k]} questions had < ${k} passages)` : ""}`,
    ]),
  ];
  const w = Math.max(9, ...rows.map((r) => r[0].length + 1));
  return rows.map(([a, b]) => `${a.padEnd(w)} ${b}`);
}

/** The closed (merge) and open (search) numbers side by side. */
function openTable(s: FullSummary, o: OpenRecord): string[] {
  const k = o.k;
  const rows: [string, string, string][] = [
    ["", "closed", "open"],
    ["EM", s.exact_match.toFixed(2), o.exact_match.toFixed(2)],
    ["F1", s.f1.toFixed(2), o.f1.toFixed(2)],
    [`top-${k} EM`, "-", o.top_k_exact_match.toFixed(2)],
    [`top-${k} F1`, "-", o.top_k_f1.toFixed(2)],
    [`paragraph recall@${k}`, "-", o.paragraph_recall.toFixed(2)],
    [`MRR@${k}`, "-", o.mrr.toFixed(4)],
  ];
  const w = Math.max(9, ...rows.map((r) => r[0].length + 1));
  return rows.map(([a, b, c]) => `${a.padEnd(w)} ${b.padStart(6)} ${c.padStart(7)}`.trimEnd());
}

/**
 * The report `full` prints after its stage lines: encoder, data, split,
 * dumps, the encoders' permission flags, EM, F1 (with the open search, a
 * table of the closed and open numbers: EM, F1, top-k EM/F1, paragraph
 * recall@k, MRR@k), total time, outputs.
 *
 * @example
 * ```ts
 * import { formatSingleRunSummary } from "./single_summary.ts";
 * const s = {
 *   data: "/d.json", out: "/o", encoder: { name: "e", dim: 4, sparse: true },
 *   exact_match: 39.243, f1: 46.949,
 *   counts: { articles: 1, paragraphs: 2, questions: 3, answers: 3, contextFiles: 4, questionFiles: 3, answered: 3 },
 *   splitMatchesOfficial: false, timings: {},
 *   permissions: [{ stage: "embed_context", flags: ["-c"] }, { stage: "embed_question", flags: ["-q"] }],
 * } as const;
 * const lines = formatSingleRunSummary(s, 9.04).split("\n");
 * if (lines[7] !== "EM        39.24" || lines[9] !== "total     9.0 s") throw new Error(lines.join("|"));
 * ```
 */
export function formatSingleRunSummary(s: FullSummary, totalSeconds: number): string {
  const c = s.counts;
  return [
    ``,
    `encoder   ${s.encoder.name} (d=${s.encoder.dim}${s.encoder.sparse ? ", sparse" : ""})`,
    `data      ${s.data} (${c.paragraphs} paragraphs, ${c.questions} questions)`,
    `split     ${
      s.splitMatchesOfficial
        ? "identical to the official PI-SQuAD split"
        : "written (not the official dev split)"
    }`,
    `dumps     ${c.contextFiles} context files, ${c.questionFiles} question files`,
    `encoders  separate processes: embed_context ${s.permissions[0].flags.join(" ")}`,
    `                              embed_question ${s.permissions[1].flags.join(" ")}`,
    ...(s.corpus !== undefined
      ? corpusTable(s, s.corpus)
      : s.open === undefined
      ? [`EM        ${s.exact_match.toFixed(2)}`, `F1        ${s.f1.toFixed(2)}`]
      : openTable(s, s.open)),
    `total     ${totalSeconds.toFixed(1)} s`,
    s.corpus !== undefined
      ? `outputs   ${s.out}/ (summary.json, open/pred.json, open/topk.ndjson, rows.ndjson)`
      : `outputs   ${s.out}/ (summary.json, pred.json${
        s.open !== undefined ? ", open/pred.json, open/topk.ndjson" : ""
      })`,
  ].join("\n");
}
