/**
 * `embed_context context.json context_emb/ [--encoder NAME] [--sparse]
 * [--compressed] [--metadata]`: runs a context encoder over every paragraph
 * and writes `<pid>.npz` + `<pid>.json` per paragraph, each file atomically
 * as soon as its paragraph is encoded. A rerun skips complete paragraphs
 * unless `--overwrite`. The input may be a SQuAD file, the split's context
 * file, NDJSON paragraph records, or any corpus `io/datasets/` reads (DPR's
 * passage TSV, a JSONL corpus, MRQA's contexts: the passage id is the
 * paragraph id), `-` for stdin; `--format` names it. The library part is
 * `encoders/embed.ts`.
 *
 * @module
 */
import { Effect } from "effect";
import { embedContext } from "../encoders/embed.ts";
import { progress, runMain } from "./_cli.ts";
import { checkOutputFolder, EMBED_FLAGS, embedOptions, encoderOptions } from "./_embed_cli.ts";

export { embedContext } from "../encoders/embed.ts";
export type { EmbedContextOptions } from "../encoders/embed.ts";

if (import.meta.main) {
  await runMain(
    {
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
          description:
            "also write <pid>.meta.json (context, phrase offsets in code points) for a demo",
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
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        yield* checkOutputFolder(
          "context",
          a.positional["context.json"],
          a.positional["context_emb"],
        );
        const bar = progress("embed_context");
        const r = yield* embedContext({
          ...embedOptions(a, a.positional["context.json"], a.positional["context_emb"]),
          encoder: a.flags.encoder,
          ...encoderOptions(a),
          maxParagraphChars: a.flags["max-paragraph-chars"],
          maxParagraphPhrases: a.flags["max-paragraph-phrases"],
          onProgress: (n) => bar.update(n, "paragraphs"),
        });
        bar.done();
        console.error(
          `embed_context: ${r.written} paragraphs written, ${r.skipped} already complete (${r.encoder}, d=${r.dim})`,
        );
      }),
  );
}
