/**
 * `deno task full`: the PI-SQuAD pipeline end to end on the bundled SQuAD
 * v1.1 dev set (or `--data`): split → embed_context and embed_question, each
 * in its own Deno process whose permissions are narrowed to its own input,
 * its model files and its output folder (the question encoder cannot read
 * the context file) → validate → merge → evaluate. It prints each stage's
 * time and the EM/F1, and leaves `outputs/<YYYYMMDD_HHMMSS>/` with the split
 * files, the dumps (unless `--no-keep-dumps`), `pred.json` and
 * `summary.json`.
 *
 * @module
 */
import { Effect } from "effect";
import { FileError } from "../io/errors.ts";
import { countSquad, type SquadCounts } from "../io/squad.ts";
import { type EncoderSpec, encoderSpec } from "../encoders/registry.ts";
import { evaluate } from "./evaluate.ts";
import { merge } from "../search/merge.ts";
import { split } from "./split.ts";
import { validate, type ValidateReport } from "./validate.ts";
import { runMain, WorkError } from "./_cli.ts";

/** sha256 of the official PI-SQuAD split of SQuAD v1.1 dev. */
export const OFFICIAL_SPLIT_SHA256 = {
  context: "6b16725c1d0b4be78594941e9a2dae494cadbe97a34307e5dd52220f157e1c8c",
  question: "a236497f5a93db50f3825aa9f5c17155eba8db55bd7fd70f270c7765464115c4",
} as const;

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** The bundled default dataset. */
export const DEFAULT_DATA: string = `${ROOT}/data/dev-v1.1.json.gz`;

/** Options of {@linkcode full}. */
export interface FullOptions {
  /** Dataset (default: the bundled dev set). */
  readonly data?: string;
  /** Encoder name (default `sparse-pi`). */
  readonly encoder?: string;
  /** Output folder (default `outputs/<timestamp>`). */
  readonly out?: string;
  /** Keep the dump folders (default true). */
  readonly keepDumps?: boolean;
  /** Called when a stage ends (name, seconds, one-line detail). */
  readonly onStage?: (stage: string, seconds: number, detail: string) => void;
}

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
  /** EM and F1 (official SQuAD v1.1 rules). */
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
}

/** `YYYYMMDD_HHMMSS` in UTC. */
export function timestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}${
    p(d.getUTCMinutes())
  }${p(d.getUTCSeconds())}`;
}

const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;

/**
 * The Deno permission flags for an encoder process: read its input file,
 * its model files and its own output folder (to skip complete files), write
 * only its output folder. Nothing else: no network, no env, no other file.
 *
 * @example
 * ```ts
 * import { encoderPermissions } from "./full.ts";
 * encoderPermissions({ input: "/r/question.json", out: "/r/question_emb", files: ["/m/q.json"] });
 * // ["--allow-read=/r/question.json,/m/q.json,/r/question_emb", "--allow-write=/r/question_emb"]
 * ```
 */
export function encoderPermissions(
  p: { input: string; out: string; files: readonly string[] },
): string[] {
  return [
    `--allow-read=${[p.input, ...p.files, p.out].map(abs).join(",")}`,
    `--allow-write=${abs(p.out)}`,
  ];
}

/** Runs a stage script in a subprocess with the given permission flags. */
const runStageProcess = (
  stage: string,
  script: string,
  permissions: readonly string[],
  args: readonly string[],
) =>
  Effect.tryPromise({
    try: async () => {
      const cmd = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--no-prompt",
          `--config=${ROOT}/deno.json`,
          ...permissions,
          `${ROOT}/pipeline/${script}`,
          ...args,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      });
      const out = await cmd.output();
      const stderr = new TextDecoder().decode(out.stderr);
      if (out.code !== 0) {
        const tail = stderr.trim().split("\n").slice(-3).join(" | ");
        throw new WorkError(`${stage} failed (exit ${out.code}): ${tail}`);
      }
      return stderr.trim();
    },
    catch: (e) => e instanceof WorkError ? e : new WorkError(`${stage}: ${e}`),
  });

const sha256 = (path: string) =>
  Effect.tryPromise({
    try: async () => {
      const d = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
      return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
    },
    catch: (e) => new FileError({ file: path, message: String(e) }),
  });

const fsDo = <A>(file: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (e) => new FileError({ file, message: e instanceof Error ? e.message : String(e) }),
  });

const countFiles = (dir: string) =>
  fsDo(dir, async () => {
    let n = 0;
    for await (const e of Deno.readDir(dir)) if (e.isFile && !e.name.startsWith(".")) n++;
    return n;
  });

/**
 * Runs the pipeline and returns its summary (also written to
 * `<out>/summary.json`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { full } from "./full.ts";
 * const s = await Effect.runPromise(full({ out: "/tmp/run" }));
 * console.log(s.exact_match, s.f1);
 * ```
 */
export const full = (opts: FullOptions = {}) =>
  Effect.gen(function* () {
    const data = abs(opts.data ?? DEFAULT_DATA);
    const out = abs(opts.out ?? `outputs/${timestamp()}`);
    const spec: EncoderSpec = yield* encoderSpec(opts.encoder ?? "sparse-pi");
    const timings: Record<string, number> = {};
    const stage = <A, E>(name: string, eff: Effect.Effect<A, E>, detail: (a: A) => string) =>
      Effect.gen(function* () {
        const t = performance.now();
        const a = yield* eff;
        const s = (performance.now() - t) / 1000;
        timings[name] = Math.round(s * 1000) / 1000;
        opts.onStage?.(name, s, detail(a));
        return a;
      });
    yield* fsDo(out, () => Deno.mkdir(`${out}/dumps`, { recursive: true }));
    const contextFile = `${out}/context.json`;
    const questionFile = `${out}/question.json`;
    const contextEmb = `${out}/dumps/context_emb`;
    const questionEmb = `${out}/dumps/question_emb`;
    const counts = yield* countSquad(data);
    yield* stage(
      "split",
      split({ data, context: contextFile, question: questionFile }),
      (r) => `${r.paragraphs} paragraphs, ${r.questions} questions`,
    );
    const splitMatchesOfficial = (yield* sha256(contextFile)) === OFFICIAL_SPLIT_SHA256.context &&
      (yield* sha256(questionFile)) === OFFICIAL_SPLIT_SHA256.question;
    const fmt = spec.sparse ? ["--sparse"] : [];
    // spec.permissions: what the encoder's runtime needs (ONNX encoders: --allow-ffi=<addon>).
    const cPerm = [
      ...encoderPermissions({ input: contextFile, out: contextEmb, files: spec.contextFiles }),
      ...(spec.permissions ?? []),
    ];
    const qPerm = [
      ...encoderPermissions({ input: questionFile, out: questionEmb, files: spec.questionFiles }),
      ...(spec.permissions ?? []),
    ];
    // The two encoders are independent processes; run them side by side.
    yield* Effect.all([
      stage(
        "embed_context",
        runStageProcess("embed_context", "embed_context.ts", cPerm, [
          contextFile,
          contextEmb,
          `--encoder=${spec.name}`,
          ...fmt,
        ]),
        (msg) => msg.replace(/^embed_context: /, ""),
      ),
      stage(
        "embed_question",
        runStageProcess("embed_question", "embed_question.ts", qPerm, [
          questionFile,
          questionEmb,
          `--encoder=${spec.name}`,
          ...fmt,
        ]),
        (msg) => msg.replace(/^embed_question: /, ""),
      ),
    ], { concurrency: 2 });
    const report: ValidateReport = yield* stage(
      "validate",
      validate({ data, contextEmb, questionEmb, sparse: spec.sparse }),
      (r) =>
        `${r.contextFiles} context files, ${r.questionFiles} question files, d=${r.dim}, ${
          r.violations.length === 0 ? "no violations" : `${r.violations.length} violations`
        }`,
    );
    if (report.violations.length > 0) {
      return yield* Effect.fail(new WorkError(`validate: ${report.violations[0]}`));
    }
    const predFile = `${out}/pred.json`;
    const merged = yield* stage(
      "merge",
      merge({
        data,
        contextEmb,
        questionEmb,
        predictions: predFile,
        sparse: spec.sparse,
        onMissing: () => {},
      }),
      (r) => `${r.answered} questions answered`,
    );
    const ev = yield* stage(
      "evaluate",
      evaluate({ data, predictions: predFile }),
      (r) => r.stdout,
    );
    const result = ev.result as { exact_match: number; f1: number };
    const summary: FullSummary = {
      data,
      out,
      encoder: { name: spec.name, dim: report.dim, sparse: spec.sparse },
      exact_match: result.exact_match,
      f1: result.f1,
      counts: {
        ...counts,
        contextFiles: yield* countFiles(contextEmb),
        questionFiles: yield* countFiles(questionEmb),
        answered: merged.answered,
      },
      splitMatchesOfficial,
      timings,
      permissions: [
        { stage: "embed_context", flags: cPerm },
        { stage: "embed_question", flags: qPerm },
      ],
    };
    if (opts.keepDumps === false) {
      yield* fsDo(out, () => Deno.remove(`${out}/dumps`, { recursive: true }));
    }
    yield* fsDo(
      `${out}/summary.json`,
      () => Deno.writeTextFile(`${out}/summary.json`, JSON.stringify(summary, null, 2) + "\n"),
    );
    return summary;
  });

if (import.meta.main) {
  await runMain(
    {
      name: "full",
      summary:
        "Run the PI-SQuAD pipeline end to end (split → embed_context ∥ embed_question in permission-narrowed processes → validate → merge → evaluate) and print EM/F1.",
      args: [],
      flags: [
        {
          name: "data",
          type: "string",
          metavar: "FILE",
          description: "SQuAD file (default: the bundled data/dev-v1.1.json.gz)",
        },
        { name: "encoder", type: "string", default: "sparse-pi", description: "encoder name" },
        {
          name: "out",
          type: "string",
          metavar: "DIR",
          description: "output folder (default outputs/<YYYYMMDD_HHMMSS>)",
        },
        { name: "no-keep-dumps", type: "boolean", description: "delete the dumps at the end" },
      ],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        const t0 = performance.now();
        const s = yield* full({
          data: a.flags["data"] as string | undefined,
          encoder: a.flags["encoder"] as string,
          out: a.flags["out"] as string | undefined,
          keepDumps: a.flags["no-keep-dumps"] !== true,
          onStage: (name, sec, detail) =>
            console.log(`  ${name.padEnd(15)} ${sec.toFixed(1).padStart(6)} s  ${detail}`),
        });
        console.log(
          [
            ``,
            `encoder   ${s.encoder.name} (d=${s.encoder.dim}${s.encoder.sparse ? ", sparse" : ""})`,
            `data      ${s.data} (${s.counts.paragraphs} paragraphs, ${s.counts.questions} questions)`,
            `split     ${
              s.splitMatchesOfficial
                ? "identical to the official PI-SQuAD split"
                : "written (not the official dev split)"
            }`,
            `dumps     ${s.counts.contextFiles} context files, ${s.counts.questionFiles} question files`,
            `encoders  separate processes: embed_context ${s.permissions[0].flags.join(" ")}`,
            `                              embed_question ${s.permissions[1].flags.join(" ")}`,
            `EM        ${s.exact_match.toFixed(2)}`,
            `F1        ${s.f1.toFixed(2)}`,
            `total     ${((performance.now() - t0) / 1000).toFixed(1)} s`,
            `outputs   ${s.out}/ (summary.json, pred.json)`,
          ].join("\n"),
        );
      }),
  );
}
