/**
 * The work of `validate` (`pipeline/validate.ts`, which loads this module
 * only to run: `--help` and bad usage need none of it).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { formatValidateReport, validate } from "../io/dump/validate.ts";
import { WorkError } from "./_cli.ts";
import type { ParsedArgs } from "./_args.ts";
import type { VALIDATE_SPEC } from "./validate.ts";

/** `validate`'s program: the checks, the report on stdout, exit 1 on a violation. */
export const validateCommand = (a: ParsedArgs<typeof VALIDATE_SPEC>) =>
  Effect.gen(function* () {
    const r = yield* validate({
      data: a.positional["data.json"],
      contextEmb: a.positional["context_emb"],
      questionEmb: a.positional["question_emb"],
      sparse: a.flags["sparse"] === true,
      maxBytesPerWord: a.flags["max-bytes-per-word"],
      uniqueIds: a.flags["unique-ids"] === true,
    });
    console.log(a.flags["json"] ? JSON.stringify(r, null, 2) : formatValidateReport(r));
    if (r.violations.length > 0) {
      return yield* Effect.fail(new WorkError(`${r.violations.length} violations`));
    }
  });
