/**
 * `index CONTEXT_EMB INDEX_DIR [--sparse] [--context FILE [--format NAME]] [--exact |
 * --nlist N --bpv B [--train-paragraphs N] [--dense-dims D]] [--metric ip|l2] [--overwrite]`:
 * builds a phrase index from a context dump (the stage is `buildIndex` in
 * `search/index/build.ts`, which see; the folder format is
 * `search/index/format.ts`; the IVF-PQ kind is `search/index/ivfpq.ts`; a
 * hybrid dump's IVF-PQ over its dense block, `--sparse --dense-dims D`, is
 * `search/index/hybrid.ts`). `--context` is a SQuAD/context file or any
 * corpus (DPR's passage TSV, a JSONL corpus, MRQA): the paragraph order,
 * ids, titles and texts of the index.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { buildIndex } from "../search/index/build.ts";
import { DEFAULT_TRAIN_PARAGRAPHS } from "../search/index/ivfpq.ts";
import { type CommandSpec, progress, runMain, UsageError } from "./_cli.ts";

/** `index`'s command line. */
export const INDEX_SPEC = {
  name: "index",
  summary: "Builds a phrase index from a context dump: every phrase's vector (flat, as dumped: " +
    "f32, f16 or CSR), paragraph id, phrase index, text and (with --context or --metadata dumps) " +
    "character offsets. Written paragraph by paragraph into INDEX_DIR.<hex>.tmp, fsynced, then " +
    "renamed; one build of a folder at a time (a second exits 2); a killed build, rerun, gives " +
    "the same bytes.",
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
      description: "context.json, or any corpus (DPR passage TSV, JSONL, MRQA): the paragraph " +
        "order, ids, titles and texts (for offsets)",
    },
    {
      name: "format",
      type: "string",
      metavar: "NAME",
      description: "--context's format (default: detected), as evaluate's: squad, mrqa; " +
        "corpora: dpr-passages (psgs_w100.tsv), passages (JSONL)",
    },
    { name: "exact", type: "boolean", description: "an exact (flat) index (the default)" },
    {
      name: "nlist",
      type: "int",
      metavar: "N",
      description: "an IVF-PQ index with N lists (dense dumps, or --sparse with --dense-dims; " +
        "needs --bpv)",
    },
    {
      name: "bpv",
      type: "int",
      metavar: "B",
      description:
        "IVF-PQ bytes per vector: B sub-vectors of 8 bits (B must divide d, or --dense-dims)",
    },
    {
      name: "dense-dims",
      type: "int",
      metavar: "D",
      description: "a hybrid dense+sparse CSR dump (--sparse): its first D columns are a dense " +
        "block; the IVF-PQ is trained on them and search re-scores the candidates with the full " +
        "vector (piqa-lstm+sparse: 256)",
    },
    {
      name: "train-paragraphs",
      type: "int",
      metavar: "N",
      description: `IVF-PQ: train on the N paragraphs whose sha256(id) sorts first ` +
        `(default ${DEFAULT_TRAIN_PARAGRAPHS})`,
    },
    {
      name: "metric",
      type: "string",
      choices: ["ip", "l2"],
      default: "ip",
      description: "inner product, or squared L2 distance (score -|q-p|^2)",
    },
    { name: "overwrite", type: "boolean", description: "replace an existing index folder" },
  ],
  examples: [
    "out/dumps/context_emb out/index --sparse --context out/context.json",
    "out/dumps/context_emb out/index --sparse --context psgs_w100.tsv",
    "out/dumps/context_emb out/ivf --context out/context.json --nlist 100 --bpv 128",
    "out/dumps/context_emb out/hybrid --sparse --context out/context.json --nlist 100 " +
    "--bpv 128 --dense-dims 256",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  await runMain(INDEX_SPEC, Deno.args, (a) => {
    const { nlist, bpv } = a.flags;
    const train = a.flags["train-paragraphs"];
    const denseDims = a.flags["dense-dims"];
    const ivf = nlist !== undefined || bpv !== undefined || train !== undefined;
    const usage = (m: string) => Effect.fail(new UsageError(m));
    if (ivf && a.flags.exact) {
      return usage("--exact cannot go with --nlist, --bpv or --train-paragraphs");
    }
    if (ivf && (nlist === undefined || bpv === undefined)) {
      return usage("an IVF-PQ index needs both --nlist and --bpv");
    }
    for (
      const [name, v] of [
        ["nlist", nlist],
        ["bpv", bpv],
        ["train-paragraphs", train],
        ["dense-dims", denseDims],
      ] as const
    ) {
      if (v !== undefined && v < 1) return usage(`--${name} must be at least 1, got ${v}`);
    }
    if (denseDims !== undefined && !a.flags.sparse) {
      return usage(
        "--dense-dims is for a hybrid CSR dump read with --sparse; a dense dump's IVF-PQ " +
          "uses all its d columns (drop --dense-dims)",
      );
    }
    if (denseDims !== undefined && !ivf) {
      return usage("--dense-dims needs --nlist and --bpv (it shapes an IVF-PQ index)");
    }
    if (ivf && a.flags.sparse && denseDims === undefined) {
      return usage(
        "IVF-PQ indexes dense dumps, or a hybrid sparse dump's dense block (--dense-dims D); " +
          "drop --nlist/--bpv for a plain sparse dump",
      );
    }
    if (a.flags.format !== undefined && a.flags.context === undefined) {
      return usage("--format names --context's format: give --context");
    }
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
          ...(a.flags.format !== undefined ? { contextFormat: a.flags.format } : {}),
          metric: a.flags.metric as "ip" | "l2",
          overwrite: a.flags.overwrite,
          nlist,
          bpv,
          trainParagraphs: train,
          denseDims,
          onProgress: (p, n) => bar.update(p, `paragraphs, ${n} phrases`),
          onIvfProgress: (rows, total) => bar.update(rows, `of ${total} phrases PQ-encoded`),
        }),
        ({ header: h }) => {
          bar.done();
          const p = h.parameters;
          const ivfText = h.kind === "ivf-pq"
            ? `, ivf-pq nlist ${p.nlist} bpv ${p.bpv}${
              p.dense_dims !== undefined ? ` over dense dims [0, ${p.dense_dims})` : ""
            } trained on ${p.train_phrases} phrases`
            : "";
          console.error(
            `index: ${h.paragraphs} paragraphs, ${h.phrases} phrases, d=${h.d}, ${h.vectors} ${h.dtype}, metric ${h.metric}${ivfText}`,
          );
        },
      ),
    );
  });
}
