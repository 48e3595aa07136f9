/**
 * `deno task full`: the main job on the bundled default, SQuAD v1.1 dev.
 * Splits the dataset the PI-SQuAD way (and checks the outputs against the
 * official split's sha256), counts it, and scores an oracle prediction file
 * (each question's first gold answer) with the official rules as a
 * self-check of the scorer. Everything goes to `outputs/<YYYYMMDD_HHMMSS>/`.
 *
 * @module
 */
import { Effect } from "effect";
import { FileError } from "../io/errors.ts";
import { countSquad, type SquadCounts, squadQuestions } from "../io/squad.ts";
import { Stream } from "effect";
import { evaluate } from "./evaluate.ts";
import { split } from "./split.ts";
import { runMain } from "./_cli.ts";

/** sha256 of the official PI-SQuAD split of SQuAD v1.1 dev. */
export const OFFICIAL_SPLIT_SHA256 = {
  context: "6b16725c1d0b4be78594941e9a2dae494cadbe97a34307e5dd52220f157e1c8c",
  question: "a236497f5a93db50f3825aa9f5c17155eba8db55bd7fd70f270c7765464115c4",
} as const;

/** The bundled default dataset. */
export const DEFAULT_DATA: string = new URL("../data/dev-v1.1.json.gz", import.meta.url).pathname;

/** Options of {@linkcode full}. */
export interface FullOptions {
  /** Dataset (default: the bundled dev set). */
  readonly data?: string;
  /** Output folder (default `outputs/<timestamp>`). */
  readonly out?: string;
}

/** What {@linkcode full} did. */
export interface FullReport {
  /** Output folder. */
  readonly out: string;
  /** Dataset counts. */
  readonly counts: SquadCounts;
  /** sha256 of the two split files and whether they equal the official ones. */
  readonly split: {
    readonly context: string;
    readonly question: string;
    readonly officialMatch: boolean;
    readonly seconds: number;
  };
  /** Oracle predictions scored by the official rules. */
  readonly oracle: { readonly stdout: string; readonly seconds: number };
}

/** `YYYYMMDD_HHMMSS` in UTC. */
export function timestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}${
    p(d.getUTCMinutes())
  }${p(d.getUTCSeconds())}`;
}

const sha256 = (path: string) =>
  Effect.tryPromise({
    try: async () => {
      const d = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
      return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
    },
    catch: (e) => new FileError({ file: path, message: String(e) }),
  });

const writeText = (path: string, text: string) =>
  Effect.tryPromise({
    try: () => Deno.writeTextFile(path, text),
    catch: (e) => new FileError({ file: path, message: String(e) }),
  });

/**
 * Runs the main job and returns its report.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { full } from "./full.ts";
 * const r = await Effect.runPromise(full({ out: "/tmp/run" }));
 * r.split.officialMatch; // true
 * ```
 */
export const full = (opts: FullOptions = {}) =>
  Effect.gen(function* () {
    const data = opts.data ?? DEFAULT_DATA;
    const out = opts.out ?? `outputs/${timestamp()}`;
    yield* Effect.tryPromise({
      try: () => Deno.mkdir(out, { recursive: true }),
      catch: (e) => new FileError({ file: out, message: String(e) }),
    });
    const counts = yield* countSquad(data);
    let t = performance.now();
    yield* split({ data, context: `${out}/context.json`, question: `${out}/question.json` });
    const splitSeconds = (performance.now() - t) / 1000;
    const context = yield* sha256(`${out}/context.json`);
    const question = yield* sha256(`${out}/question.json`);
    // Oracle predictions: each question's first gold answer.
    const oracle: Record<string, string> = {};
    yield* Stream.runForEach(
      squadQuestions(data),
      (q) =>
        Effect.sync(() => {
          if (q.answers?.length) oracle[q.id] = q.answers[0].text;
        }),
    );
    yield* writeText(`${out}/oracle_pred.json`, JSON.stringify(oracle));
    t = performance.now();
    const ev = yield* evaluate({ data, predictions: `${out}/oracle_pred.json` });
    const evalSeconds = (performance.now() - t) / 1000;
    const report: FullReport = {
      out,
      counts,
      split: {
        context,
        question,
        officialMatch: context === OFFICIAL_SPLIT_SHA256.context &&
          question === OFFICIAL_SPLIT_SHA256.question,
        seconds: splitSeconds,
      },
      oracle: { stdout: ev.stdout, seconds: evalSeconds },
    };
    yield* writeText(`${out}/report.json`, JSON.stringify(report, null, 2) + "\n");
    return report;
  });

/** The report as text for a terminal. */
export function formatReport(r: FullReport, dataName: string): string {
  const c = r.counts;
  return [
    `phraseval full: ${dataName}`,
    `  dataset   ${c.articles} articles, ${c.paragraphs} paragraphs, ${c.questions} questions, ${c.answers} gold answers (version ${c.version})`,
    `  split     context.json sha256 ${r.split.context}`,
    `            question.json sha256 ${r.split.question}`,
    `            ${
      r.split.officialMatch
        ? "identical to the official PI-SQuAD split"
        : "differs from the official PI-SQuAD split of SQuAD v1.1 dev"
    } (${r.split.seconds.toFixed(2)} s)`,
    `  evaluate  oracle (first gold answer) ${r.oracle.stdout} (${r.oracle.seconds.toFixed(2)} s)`,
    `  outputs   ${r.out}/`,
  ].join("\n");
}

if (import.meta.main) {
  await runMain(
    {
      name: "full",
      summary:
        "Run the main job on a SQuAD file (default: the bundled SQuAD v1.1 dev set): PI-SQuAD split, counts, official scoring.",
      args: [{
        name: "data.json",
        description: "dataset (default data/dev-v1.1.json.gz)",
        optional: true,
      }],
      flags: [{
        name: "out",
        type: "string",
        metavar: "DIR",
        description: "output folder (default outputs/<timestamp>)",
      }],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        const data = a.positional["data.json"] ?? DEFAULT_DATA;
        const r = yield* full({ data, out: a.flags["out"] as string | undefined });
        console.log(formatReport(r, a.positional["data.json"] ?? "bundled SQuAD v1.1 dev"));
      }),
  );
}
