/**
 * The work of `index` (`pipeline/index.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the flags' checks, then
 * `buildIndex` (`search/index/build.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { buildIndex, type BuildIndexOptions, trainQuantizer } from "../search/index/build.ts";
import type { IndexHeader } from "../search/index/format.ts";
import { MAX_SHARDS, QUANTIZER_FOLDER, shardFolderName } from "../search/index/shards.ts";
import { progress, UsageError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { INDEX_SPEC } from "./index.ts";

/** `index`'s program: the index folder of the dump, one summary line on stderr. */
export const indexCommand = (a: ParsedArgs<typeof INDEX_SPEC>) => {
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
  const pqBits = a.flags["pq-bits"];
  if (pqBits !== undefined) {
    if (pqBits !== 4 && pqBits !== 8) return usage(`--pq-bits must be 4 or 8, got ${pqBits}`);
    if (a.flags.quantizer !== undefined) {
      return usage(
        "--quantizer fixes the IVF-PQ parameters (its bits too): drop --pq-bits",
      );
    }
    if (!ivf) return usage("--pq-bits shapes an IVF-PQ index: give --nlist and --bpv");
  }
  if (a.flags.format !== undefined && a.flags.context === undefined) {
    return usage("--format names --context's format: give --context");
  }
  const { shards, shard, quantizer } = a.flags;
  const trainOnly = a.flags["train-only"];
  if (shards !== undefined && (shards < 1 || shards > MAX_SHARDS)) {
    return usage(`--shards must be 1 to ${MAX_SHARDS}, got ${shards}`);
  }
  if (shard !== undefined && shards === undefined) return usage("--shard I needs --shards N");
  if (shard !== undefined && (shard < 0 || shard >= shards!)) {
    return usage(`--shard must be 0 to ${shards! - 1} (--shards ${shards}), got ${shard}`);
  }
  if (quantizer !== undefined && shards === undefined) {
    return usage("--quantizer is for the shards of an index: give --shards N (and --shard I)");
  }
  if (quantizer !== undefined && (ivf || denseDims !== undefined || a.flags.exact)) {
    return usage(
      "--quantizer fixes the IVF-PQ parameters: drop --nlist, --bpv, --train-paragraphs, " +
        "--dense-dims and --exact",
    );
  }
  if (trainOnly) {
    if (shards !== undefined) {
      return usage(
        "--train-only trains the one quantizer every shard shares: give it without " +
          "--shards/--shard (then build each shard with --quantizer INDEX_DIR/quantizer)",
      );
    }
    if (!ivf) return usage("--train-only trains an IVF-PQ quantizer: give --nlist and --bpv");
  }
  const out = a.positional["index_dir"].replace(/\/+$/, "") || "/";
  const bar = progress("index");
  const base: BuildIndexOptions = {
    contextEmb: a.positional["context_emb"],
    out,
    sparse: a.flags.sparse,
    context: a.flags.context,
    ...(a.flags.format !== undefined ? { contextFormat: a.flags.format } : {}),
    metric: a.flags.metric as "ip" | "l2",
    overwrite: a.flags.overwrite,
    nlist,
    bpv,
    ...(pqBits === 4 ? { pqBits: 4 as const } : {}),
    trainParagraphs: train,
    denseDims,
    onProgress: (p, n) => bar.update(p, `paragraphs, ${n} phrases`),
    onIvfProgress: (rows, total) => bar.update(rows, `of ${total} phrases PQ-encoded`),
  };
  const aliases = refuseAliases(
    [
      { name: "context_emb", path: a.positional["context_emb"], folder: true },
      { name: "--context", path: a.flags.context },
      ...(quantizer !== undefined ? [{ name: "--quantizer", path: quantizer, folder: true }] : []),
    ],
    // What is written: the index folder, the quantizer folder, or the shards' folders.
    trainOnly
      ? [{ name: "index_dir", path: `${out}/${QUANTIZER_FOLDER}`, folder: true }]
      : shards === undefined
      ? [{ name: "index_dir", path: out, folder: true }]
      : [
        ...(shard !== undefined ? [shard] : Array.from({ length: shards }, (_, i) => i)).map((
          i,
        ) => ({ name: "index_dir", path: `${out}/${shardFolderName(i, shards)}`, folder: true })),
        ...(shard === undefined && quantizer === undefined && nlist !== undefined
          ? [{ name: "index_dir", path: `${out}/${QUANTIZER_FOLDER}`, folder: true }]
          : []),
      ],
  );
  if (trainOnly) {
    return Effect.andThen(
      aliases,
      Effect.map(
        trainQuantizer({ ...base, out: `${out}/${QUANTIZER_FOLDER}`, nlist: nlist!, bpv: bpv! }),
        ({ manifest: m, out: q }) => {
          bar.done();
          const p = m.parameters;
          console.error(
            `index: quantizer ${q}: nlist ${p.nlist} bpv ${p.bpv}${p.bits === 4 ? " 4-bit" : ""}${
              m.dense_dims !== undefined ? ` over dense dims [0, ${m.dense_dims})` : ""
            }, trained on ${p.train_phrases} phrases of ${p.train_paragraphs} paragraphs ` +
              `(corpus of ${m.corpus_paragraphs} paragraphs)`,
          );
        },
      ),
    );
  }
  if (shards === undefined) {
    return Effect.andThen(
      aliases,
      Effect.map(buildIndex(base), ({ header: h }) => {
        bar.done();
        console.error(`index: ${summary(h)}`);
      }),
    );
  }
  // Every shard in turn (--shards N alone), an IVF-PQ quantizer trained once first.
  return Effect.gen(function* () {
    yield* aliases;
    let q = quantizer;
    if (q === undefined && shard === undefined && nlist !== undefined) {
      const t = yield* trainQuantizer({
        ...base,
        out: `${out}/${QUANTIZER_FOLDER}`,
        nlist: nlist!,
        bpv: bpv!,
      });
      q = t.out;
      console.error(
        `index: quantizer ${q}: trained on ${t.manifest.parameters.train_phrases} phrases`,
      );
    }
    const which = shard !== undefined ? [shard] : Array.from({ length: shards }, (_, i) => i);
    for (const i of which) {
      const r = yield* buildIndex({
        ...base,
        out: `${out}/${shardFolderName(i, shards)}`,
        shard: { index: i, count: shards },
        ...(q !== undefined
          ? {
            quantizer: q,
            nlist: undefined,
            bpv: undefined,
            pqBits: undefined,
            trainParagraphs: undefined,
          }
          : {}),
        ...(q !== undefined ? { denseDims: undefined } : {}),
      });
      bar.done();
      console.error(`index: shard ${i} of ${shards}: ${summary(r.header)}`);
    }
  });
};

/** The summary line of a built index (after `index: `). */
function summary(h: IndexHeader): string {
  const p = h.parameters;
  const ivfText = h.kind === "ivf-pq"
    ? `, ivf-pq nlist ${p.nlist} bpv ${p.bpv}${p.bits === 4 ? " 4-bit" : ""}${
      p.dense_dims !== undefined ? ` over dense dims [0, ${p.dense_dims})` : ""
    } trained on ${p.train_phrases} phrases`
    : "";
  return `${h.paragraphs} paragraphs, ${h.phrases} phrases, d=${h.d}, ${h.vectors} ${h.dtype}, ` +
    `metric ${h.metric}${ivfText}`;
}
