/**
 * `deno task full`: the PI-SQuAD pipeline end to end on the bundled SQuAD
 * v1.1 dev set (or `--data`), as a run of one model on one dataset
 * (`full` in `runs/full.ts`). It prints each stage's time and the
 * EM/F1, and leaves `outputs/<YYYYMMDD_HHMMSS>/` with the split files, the
 * dumps (unless `--no-keep-dumps`), `pred.json`, `summary.json` and the
 * tasks' logs. `--open [--top-k K]` adds the open-domain search (index →
 * search) and prints its numbers beside the closed ones; `--corpus FILE`
 * makes it search a corpus instead of the dataset's own paragraphs (no
 * merge then: the numbers are the search's, with DPR's top-k passage
 * accuracy). `--dtype f32|f16` sets the element type of dense dumps (the
 * bundled ONNX encoders store f16 by default).
 * It also writes `provenance.json` (what the run was made from and with:
 * `runs/summary/provenance.ts`), which `report --diff` compares.
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_full.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import { DEFAULT_ENCODER } from "../encoders/names.ts";

export type { FullOptions, FullSummary, StagePermissions } from "../runs/mod.ts";

/** The command line of `full`. */
export const FULL_SPEC = {
  name: "full",
  examples: [
    "",
    "--encoder piqa-lstm --out outputs/lstm",
    "--encoder piqa-lstm --dtype f16 --out outputs/lstm-f16",
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
      name: "dtype",
      type: "string",
      choices: ["f32", "f16"],
      description:
        "element type of dense dumps (default: the encoder's own, f16 for piqa-lstm; not for sparse encoders)",
    },
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
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the runner loads only to run.
  exitOnHelpOrUsageError(FULL_SPEC, Deno.args);
  const [{ runMain }, { fullCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_full.ts"),
  ]);
  await runMain(FULL_SPEC, Deno.args, fullCommand);
}
