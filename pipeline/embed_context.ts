/**
 * `embed_context context.json context_emb/ [--encoder NAME] [--sparse]
 * [--compressed] [--metadata]`: runs a context encoder over every paragraph
 * and writes `<pid>.npz` + `<pid>.json` per paragraph, each file atomically
 * as soon as its paragraph is encoded. A rerun skips complete paragraphs
 * unless `--overwrite`. The input may be a SQuAD file, the split's context
 * file, or NDJSON paragraph records (`-` for stdin).
 *
 * @module
 */
import { Effect } from "effect";
import { embedContexts, type EmbedOptions } from "../encoders/embed.ts";
import { contextEncoderLayer } from "../encoders/registry.ts";
import { progress, runMain } from "./_cli.ts";
import { EMBED_FLAGS, embedOptions, encoderOptions } from "./_embed_cli.ts";
import type { OnnxDevice } from "../encoders/onnx/encoder.ts";

/** Options of {@linkcode embedContext}: the runner's plus the encoder to use. */
export interface EmbedContextOptions extends EmbedOptions {
  /** Encoder name (see `encoders/registry.ts`). */
  readonly encoder?: string;
  /** Model artifact path (default: the encoder's bundled one). */
  readonly model?: string;
  /** ONNX encoders: execution provider (default `cpu`). */
  readonly device?: OnnxDevice;
  /** ONNX encoders: intra-op threads. */
  readonly threads?: number;
}

/**
 * Encodes the paragraphs of a file with a registered encoder.
 *
 * @example
 * ```ts
 * import { Effect } from "effect";
 * import { embedContext } from "./embed_context.ts";
 * await Effect.runPromise(embedContext({ input: "context.json", out: "context_emb", sparse: true }));
 * ```
 */
export const embedContext = (opts: EmbedContextOptions) =>
  Effect.gen(function* () {
    const layer = yield* contextEncoderLayer(opts.encoder ?? "sparse-pi", {
      model: opts.model,
      device: opts.device,
      threads: opts.threads,
    });
    return yield* embedContexts(opts).pipe(Effect.provide(layer));
  });

if (import.meta.main) {
  await runMain(
    {
      name: "embed_context",
      summary:
        "Encode every paragraph into phrases and phrase vectors: <pid>.npz (N×d) + <pid>.json (N phrases) per paragraph, written atomically; complete files are skipped on a rerun.",
      args: [
        {
          name: "context.json",
          description: "SQuAD/context file or NDJSON paragraph records (- for stdin)",
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
      ],
    },
    Deno.args,
    (a) =>
      Effect.gen(function* () {
        const bar = progress("embed_context");
        const r = yield* embedContext({
          ...embedOptions(a, a.positional["context.json"], a.positional["context_emb"]),
          encoder: a.flags.encoder,
          ...encoderOptions(a),
          onProgress: (n) => bar.update(n, "paragraphs"),
        });
        bar.done();
        console.error(
          `embed_context: ${r.written} paragraphs written, ${r.skipped} already complete (${r.encoder}, d=${r.dim})`,
        );
      }),
  );
}
