/**
 * Flags shared by `embed_context` and `embed_question` (the flags
 * themselves are `_embed_flags.ts`, which their command lines load alone).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { aliasProblem } from "../io/paths.ts";
import type { EmbedOptions } from "../encoders/embed.ts";
import { InputError } from "../io/errors.ts";
import { outputFolderProblem } from "../runs/sandbox/output_folder.ts";
import { type FlagValues, UsageError } from "./_cli.ts";
import type { EncoderOptions } from "../encoders/registry.ts";
import { EMBED_FLAGS } from "./_embed_flags.ts";

export { EMBED_FLAGS };

/** The parsed values of {@linkcode EMBED_FLAGS} (plus `embed_context`'s `--metadata`). */
export interface EmbedArgs {
  /** Flag values. */
  readonly flags: FlagValues<typeof EMBED_FLAGS> & { readonly metadata?: boolean };
}

/** Parses `A:B` into `[A, B]`; throws {@linkcode UsageError}. */
export function parseRange(v: string | undefined): [number, number] | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d+):(\d+)$/.exec(v);
  if (!m || Number(m[1]) > Number(m[2])) {
    throw new UsageError(`--range expects A:B with 0 <= A <= B, got "${v}"`);
  }
  return [Number(m[1]), Number(m[2])];
}

/** Embedding options from parsed flags. */
export function embedOptions(a: EmbedArgs, input: string, out: string): EmbedOptions {
  return {
    input,
    out,
    sparse: a.flags.sparse,
    compressed: a.flags.compressed,
    dtype: a.flags.dtype,
    overwrite: a.flags.overwrite,
    metadata: a.flags.metadata === true,
    batchSize: a.flags.batch,
    range: parseRange(a.flags.range),
    uniqueIds: a.flags["unique-ids"] === true,
    ...(a.flags.format !== undefined ? { format: a.flags.format } : {}),
  };
}

/** Encoder options (model, device, threads) from parsed flags; throws {@linkcode UsageError}. */
export function encoderOptions(a: EmbedArgs): EncoderOptions {
  const threads = a.flags.threads;
  if (threads !== undefined && threads < 1) {
    throw new UsageError(`--threads expects a positive integer, got ${threads}`);
  }
  return {
    model: a.flags.model,
    device: a.flags.device,
    threads,
  };
}

/**
 * Refuses an output folder that holds anything an encoder did not write (a
 * symbolic link, a folder, a pipe, a hard link, another name): Deno does
 * not resolve links for path-scoped reads, so such an entry could open a
 * file this process was not granted (`outputFolderProblem` in
 * `runs/sandbox/sandbox.ts`). Checked before the input is read, after the check
 * that the input does not lie inside the output folder (`io/paths.ts`).
 */
export const checkOutputFolder = (
  half: "context" | "question",
  input: string,
  out: string,
): Effect.Effect<void, InputError> =>
  Effect.suspend(() => {
    const why = aliasProblem(
      [{ name: `${half} input`, path: input }],
      [{ name: "output folder", path: out, folder: true }],
    ) ?? outputFolderProblem(out);
    return why === undefined
      ? Effect.void
      : Effect.fail(new InputError({ file: "", where: "", message: why }));
  });
