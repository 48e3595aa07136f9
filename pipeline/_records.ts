/**
 * The work of `records` (`pipeline/records.ts`, which loads this module
 * only to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { refuseAliases } from "../io/paths.ts";
import { records } from "../io/records.ts";
import type { ParsedArgs } from "./_args.ts";
import type { RECORDS_SPEC } from "./records.ts";

/** `records`'s program: the records of the input, to `--out`. */
export const recordsCommand = (a: ParsedArgs<typeof RECORDS_SPEC>) =>
  Effect.andThen(
    refuseAliases([{ name: "data.json", path: a.positional["data.json"] }], [
      { name: "--out", path: a.flags.out },
    ]),
    records({
      input: a.positional["data.json"],
      kind: a.flags.kind,
      out: a.flags.out,
      format: a.flags.format,
      lang: a.flags.lang,
    }),
  );
