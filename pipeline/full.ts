/**
 * `deno task full`: the PI-SQuAD pipeline end to end on the bundled SQuAD
 * v1.1 dev set (or `--data`), as a run of one model on one dataset
 * ({@linkcode full}, `runs/full.ts`). It prints each stage's time and the
 * EM/F1, and leaves `outputs/<YYYYMMDD_HHMMSS>/` with the split files, the
 * dumps (unless `--no-keep-dumps`), `pred.json`, `summary.json` and the
 * tasks' logs. `--open [--top-k K]` adds the open-domain search (index →
 * search) and prints its numbers beside the closed ones; `--corpus FILE`
 * makes it search a corpus instead of the dataset's own paragraphs (no
 * merge then: the numbers are the search's, with DPR's top-k passage
 * accuracy).
 *
 * @module
 */
import { Effect } from "effect";
import { DEFAULT_ENCODER } from "../encoders/registry.ts";
import { formatSingleRunSummary, full } from "../runs/mod.ts";
import { runMain, UsageError } from "./_cli.ts";

export { DEFAULT_DATA, encoderPermissions, full, OFFICIAL_SPLIT_SHA256 } from "../runs/mod.ts";
export type { FullOptions, FullSummary, StagePermissions } from "../runs/mod.ts";

if (import.meta.main) {
  await runMain(
    {
      name: "full",
      examples: [
        "",
        "--encoder piqa-lstm --out outputs/lstm",
        "--open --top-k 10",
        "--open --top-k 100 --corpus outputs/squad-open-lite.jsonl",
      ],
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
        { name: "encoder", type: "string", default: DEFAULT_ENCODER, description: "encoder name" },
        {
          name: "out",
          type: "string",
          metavar: "DIR",
          description: "output folder (default outputs/<YYYYMMDD_HHMMSS>)",
        },
        { name: "no-keep-dumps", type: "boolean", description: "delete the dumps at the end" },
        {
          name: "overwrite",
          type: "boolean",
          description:
            "start afresh when --out holds a run of another dataset or encoder (removes its files)",
        },
        {
          name: "unique-ids",
          type: "boolean",
          description: "rename repeated article titles (<title>#2, ...) instead of refusing them",
        },
        {
          name: "open",
          type: "boolean",
          description:
            "also open-domain search: index every phrase, answer each question from all of them, score beside the closed numbers",
        },
        {
          name: "top-k",
          type: "int",
          metavar: "K",
          description: "with --open: ranks kept per question (default 10)",
        },
        {
          name: "corpus",
          type: "string",
          metavar: "FILE",
          description:
            "with --open: search this corpus (DPR passage TSV, JSONL {id, title, text}, or a SQuAD/MRQA file's paragraphs) instead of the dataset's paragraphs; scores the search only (top-1 EM/F1, top-k passage accuracy)",
        },
      ],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        if (a.flags["top-k"] !== undefined && a.flags.open !== true) {
          return yield* Effect.fail(new UsageError("--top-k needs --open"));
        }
        const t0 = performance.now();
        const s = yield* full({
          data: a.flags.data,
          encoder: a.flags.encoder,
          out: a.flags.out,
          keepDumps: a.flags["no-keep-dumps"] !== true,
          overwrite: a.flags.overwrite,
          uniqueIds: a.flags["unique-ids"] === true,
          open: a.flags.open === true,
          topK: a.flags["top-k"],
          ...(a.flags.corpus !== undefined ? { corpus: a.flags.corpus } : {}),
          onStage: (name, sec, detail) =>
            console.log(`  ${name.padEnd(15)} ${sec.toFixed(1).padStart(6)} s  ${detail}`),
        });
        console.log(formatSingleRunSummary(s, (performance.now() - t0) / 1000));
      }),
  );
}
