/**
 * `embed_context context.json context_emb/ [--encoder NAME] [--sparse]
 * [--compressed] [--metadata]`: runs a context encoder over every paragraph
 * and writes `<pid>.npz` + `<pid>.json` per paragraph, each file atomically
 * as soon as its paragraph is encoded. A rerun skips complete paragraphs
 * unless `--overwrite`, so a stopped run resumes; one that meets bad input
 * late (a rerun would meet it again) removes the files it wrote, its
 * manifest and the folder it made (`docs/stages.md`). The input may be a SQuAD file, the split's context
 * file, NDJSON paragraph records, or any corpus `io/datasets/` reads (DPR's
 * passage TSV, a JSONL corpus, MRQA's contexts: the passage id is the
 * paragraph id), `-` for stdin; `--format` names it. The library part is
 * `encoders/embed.ts`.
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_embed_context.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import { EMBED_FLAGS } from "./_embed_flags.ts";

export type { EmbedContextOptions } from "../encoders/embed.ts";

/** The command line of `embed_context`. */
export const EMBED_CONTEXT_SPEC = {
  name: "embed_context",
  examples: [
    "out/context.json out/dumps/context_emb --sparse",
    "out/context.json out/dumps/context_emb --encoder piqa-lstm --dtype f16",
    "psgs_w100.tsv out/dumps/context_emb --sparse",
  ],
  summary:
    "Encode every paragraph into phrases and phrase vectors: <pid>.npz (N×d) + <pid>.json (N phrases) per paragraph, written atomically; complete files are skipped on a rerun.",
  args: [
    {
      name: "context.json",
      description:
        "SQuAD/context file, NDJSON paragraph records, or any corpus (DPR passage TSV, JSONL, MRQA; - for stdin)",
    },
    { name: "context_emb", description: "output folder" },
  ],
  flags: [
    ...EMBED_FLAGS,
    {
      name: "metadata",
      type: "boolean",
      description: "also write <pid>.meta.json (context, phrase offsets in code points) for a demo",
    },
    {
      name: "max-paragraph-chars",
      type: "int",
      metavar: "N",
      min: 1,
      description: "refuse a paragraph longer than N characters (default 100000)",
    },
    {
      name: "max-paragraph-phrases",
      type: "int",
      metavar: "N",
      min: 1,
      description: "refuse a paragraph of more than N phrases (default 2000000)",
    },
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the encoders (ONNX Runtime) load only to run.
  exitOnHelpOrUsageError(EMBED_CONTEXT_SPEC, Deno.args);
  const [{ runMain }, { embedContextCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_embed_context.ts"),
  ]);
  await runMain(EMBED_CONTEXT_SPEC, Deno.args, embedContextCommand);
}
