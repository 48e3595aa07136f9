/**
 * The work of `index` (`pipeline/index.ts`, which loads this module only
 * to run: `--help` and bad usage need none of it): the flags' checks, then
 * `buildIndex` (`search/index/build.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { buildIndex } from "../search/index/build.ts";
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
};
