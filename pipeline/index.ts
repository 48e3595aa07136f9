/**
 * `index CONTEXT_EMB INDEX_DIR [--sparse] [--context FILE [--format NAME]] [--exact |
 * --nlist N --bpv B [--train-paragraphs N] [--dense-dims D]] [--metric ip|l2] [--overwrite]
 * [--shards N [--shard I] [--quantizer DIR] | --train-only]`:
 * builds a phrase index from a context dump (the stage is `buildIndex` in
 * `search/index/build.ts`, which see; the folder format is
 * `search/index/format.ts`; the IVF-PQ kind is `search/index/ivfpq/ivfpq.ts`; a
 * hybrid dump's IVF-PQ over its dense block, `--sparse --dense-dims D`, is
 * `search/index/ivfpq/hybrid.ts`). `--context` is a SQuAD/context file or any
 * corpus (DPR's passage TSV, a JSONL corpus, MRQA): the paragraph order,
 * ids, titles and texts of the index.
 *
 * Sharded (`search/index/shards.ts`): `--shards N --shard I` writes shard I
 * of N, `INDEX_DIR/shard-I-of-N/` (the paragraphs whose sha256(id) falls to
 * it); `--shards N` alone writes every shard, one after the other.
 * `--train-only` (with `--nlist`/`--bpv`) trains the IVF-PQ quantizer of
 * the corpus once into `INDEX_DIR/quantizer/`, and `--quantizer DIR` encodes
 * a shard with it (an IVF-PQ shard build without it trains the same
 * quantizer itself).
 *
 * This file is the command line (`--help` loads nothing else); the work,
 * `pipeline/_index.ts`, loads with `import()` only to run.
 *
 * @module
 */
import { type CommandSpec, exitOnHelpOrUsageError } from "./_args.ts";
import { DEFAULT_TRAIN_PARAGRAPHS } from "../search/index/defaults.ts";

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
      name: "pq-bits",
      type: "int",
      metavar: "BITS",
      description: "IVF-PQ code bits: 8 (default; B sub-vectors of 256 centroids) or 4 (2B " +
        "sub-vectors of 16 centroids, scanned by the 4-bit fast-scan kernel; best with " +
        "--candidates re-scoring)",
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
    {
      name: "shards",
      type: "int",
      metavar: "N",
      description: "a sharded index: INDEX_DIR/shard-I-of-N/ for each shard I (paragraphs by " +
        "sha256 of their id, mod N); with --shard I only that one",
    },
    {
      name: "shard",
      type: "int",
      metavar: "I",
      description: "with --shards N: build shard I only (0 <= I < N), INDEX_DIR/shard-I-of-N/",
    },
    {
      name: "train-only",
      type: "boolean",
      description: "IVF-PQ (--nlist, --bpv): train the corpus's quantizer, the one every shard " +
        "shares, into INDEX_DIR/quantizer/ and stop",
    },
    {
      name: "quantizer",
      type: "string",
      metavar: "DIR",
      description: "with --shards: encode the IVF-PQ shard with this quantizer (--train-only's " +
        "INDEX_DIR/quantizer); it fixes nlist, bpv and the training sample",
    },
  ],
  examples: [
    "out/dumps/context_emb out/index --sparse --context out/context.json",
    "out/dumps/context_emb out/index --sparse --context psgs_w100.tsv",
    "out/dumps/context_emb out/ivf --context out/context.json --nlist 100 --bpv 128",
    "out/dumps/context_emb out/hybrid --sparse --context out/context.json --nlist 100 " +
    "--bpv 128 --dense-dims 256",
    "out/dumps/context_emb out/sharded --sparse --context out/context.json --shards 8 --shard 3",
    "out/dumps/context_emb out/ivf8 --context out/context.json --nlist 100 --bpv 128 --train-only",
    "out/dumps/context_emb out/ivf8 --context out/context.json --shards 8 --shard 3 " +
    "--quantizer out/ivf8/quantizer",
  ],
} as const satisfies CommandSpec;

if (import.meta.main) {
  // `--help` and bad usage load nothing else; the index builder loads only to run.
  exitOnHelpOrUsageError(INDEX_SPEC, Deno.args);
  const [{ runMain }, { indexCommand }] = await Promise.all([
    import("./_cli.ts"),
    import("./_index.ts"),
  ]);
  await runMain(INDEX_SPEC, Deno.args, indexCommand);
}
