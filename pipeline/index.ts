/**
 * `index CONTEXT_EMB INDEX_DIR [--sparse] [--context context.json] [--exact]
 * [--metric ip|l2] [--overwrite]`: builds a phrase index from a context dump
 * (the stage is `buildIndex` in `search/index/build.ts`, which see; the
 * folder format is `search/index/format.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { buildIndex } from "../search/index/build.ts";
import { type CommandSpec, progress, runMain } from "./_cli.ts";

/** `index`'s command line. */
export const INDEX_SPEC = {
  name: "index",
  summary: "Builds a phrase index from a context dump: every phrase's vector (flat, as dumped: " +
    "f32, f16 or CSR), paragraph id, phrase index, text and (with --context or --metadata dumps) " +
    "character offsets. Written paragraph by paragraph into INDEX_DIR.<hex>.tmp, fsynced, then " +
    "renamed; a killed build, rerun, gives the same bytes.",
  args: [
    { name: "context_emb", description: "context dump: a folder or a .zip of one" },
    { name: "index_dir", description: "the index folder to create" },
  ],
  flags: [
    { name: "sparse", type: "boolean", description: "the dump is scipy sparse (CSR or CSC)" },
    {
      name: "context",
      type: "string",
      metavar: "FILE",
      description: "context.json: the dataset's paragraph order, ids and texts (for offsets)",
    },
    { name: "exact", type: "boolean", description: "an exact (flat) index: the only kind yet" },
    {
      name: "metric",
      type: "string",
      choices: ["ip", "l2"],
      default: "ip",
      description: "inner product, or squared L2 distance (score -|q-p|^2)",
    },
    { name: "overwrite", type: "boolean", description: "replace an existing index folder" },
  ],
  epilog: "Example:\n  index out/dumps/context_emb out/index --sparse --context out/context.json",
} as const satisfies CommandSpec;

if (import.meta.main) {
  await runMain(INDEX_SPEC, Deno.args, (a) => {
    const bar = progress("index");
    return Effect.andThen(
      refuseAliases(
        [
          { name: "context_emb", path: a.positional["context_emb"], folder: true },
          { name: "--context", path: a.flags.context },
        ],
        [{ name: "index_dir", path: a.positional["index_dir"], folder: true }],
      ),
      Effect.map(
        buildIndex({
          contextEmb: a.positional["context_emb"],
          out: a.positional["index_dir"],
          sparse: a.flags.sparse,
          context: a.flags.context,
          metric: a.flags.metric as "ip" | "l2",
          overwrite: a.flags.overwrite,
          onProgress: (p, n) => bar.update(p, `paragraphs, ${n} phrases`),
        }),
        ({ header: h }) => {
          bar.done();
          console.error(
            `index: ${h.paragraphs} paragraphs, ${h.phrases} phrases, d=${h.d}, ${h.vectors} ${h.dtype}, metric ${h.metric}`,
          );
        },
      ),
    );
  });
}
