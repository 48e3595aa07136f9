/**
 * Checking a dump against its dataset ({@linkcode validate}) the way a
 * PI-SQuAD submission is checked: every
 * paragraph and question has its files, the rows of each `.npz` equal the
 * length of its phrase list, one d everywhere, question matrices are 1×d,
 * dtypes are float32/float16, values are finite, and (with
 * `--max-bytes-per-word`) each paragraph's `.npz` stays within a size per
 * context word. Dumps may be folders or `.zip` files. Prints a report;
 * the `validate` command exits 1 on any violation. A dataset whose ids
 * repeat (or cannot name dump files) is bad input, as in every stage
 * (`io/squad_ids.ts`).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { DUMP_MANIFEST } from "../manifest.ts";
import { dumpStem } from "./names.ts";
import { type DumpError, type DumpSource, openDump } from "./reader.ts";
import { decodeDumpMatrix } from "./decode.ts";
import { indexPhrases, type PhraseList } from "./phrases.ts";
import { contextWords, isQuestionShape, rowsMatchPhrases } from "./checks.ts";
import { InputError } from "../errors.ts";
import { squadParagraphs, type SquadReadError } from "../squad.ts";
import type { Matrix } from "../matrix.ts";

/** Options of {@linkcode validate}. */
export interface ValidateOptions {
  /** The SQuAD dataset (or its split context/question files' source). */
  readonly data: string;
  /** Context dump folder or zip. */
  readonly contextEmb: string;
  /** Question dump folder or zip. */
  readonly questionEmb: string;
  /** Matrices are scipy sparse. */
  readonly sparse?: boolean;
  /** Largest allowed `.npz` bytes per context word (whitespace-separated). */
  readonly maxBytesPerWord?: number;
  /**
   * Rename repeated article titles as the other stages do with
   * `--unique-ids` (`io/squad_ids.ts`); without it they are bad input.
   */
  readonly uniqueIds?: boolean;
  /** Files read at once (default 8). */
  readonly concurrency?: number;
}

/** The validation report. */
export interface ValidateReport {
  /** Paragraphs in the dataset. */
  readonly paragraphs: number;
  /** Distinct questions in the dataset. */
  readonly questions: number;
  /** Context files found for those paragraphs (`.npz` + `.json`). */
  readonly contextFiles: number;
  /** Question files found. */
  readonly questionFiles: number;
  /** The vector dimension (of the first file read; -1 if none). */
  readonly dim: number;
  /** Storage seen: `dense f32`, `dense f16`, `csr`. */
  readonly formats: readonly string[];
  /** Phrases over all paragraphs. */
  readonly phrases: number;
  /** Mean and largest `.npz` bytes per context word. */
  readonly bytesPerWord: {
    readonly mean: number;
    readonly max: number;
    readonly maxParagraph: string;
  };
  /** Files in the dumps that belong to no paragraph/question of the dataset. */
  readonly unexpectedFiles: number;
  /** Every violation, one line each (file: what). */
  readonly violations: readonly string[];
}

interface Acc {
  dim: number;
  formats: Set<string>;
  phrases: number;
  contextFiles: number;
  questionFiles: number;
  bytes: number;
  words: number;
  maxBpw: number;
  maxBpwId: string;
  violations: string[];
}

const formatOf = (m: Matrix) => m.kind === "csr" ? "csr" : `dense ${m.dtype}`;

function checkDim(acc: Acc, label: string, m: Matrix) {
  if (acc.dim < 0) acc.dim = m.cols;
  else if (m.cols !== acc.dim) acc.violations.push(`${label}: d = ${m.cols}, expected ${acc.dim}`);
  acc.formats.add(formatOf(m));
}

/** Records a d seen on a header only (a matrix refused for its rows before it was read). */
function checkCols(acc: Acc, label: string, cols: number) {
  if (acc.dim < 0) acc.dim = cols;
  else if (cols !== acc.dim) acc.violations.push(`${label}: d = ${cols}, expected ${acc.dim}`);
}

const decode = (
  acc: Acc,
  label: string,
  bytes: Uint8Array,
  sparse: boolean,
  expectRows?: number,
  rowsMismatch?: (rows: number, cols: number) => InputError,
): Matrix | undefined => {
  try {
    return decodeDumpMatrix(bytes, label, { sparse, expectRows, rowsMismatch }).matrix;
  } catch (e) {
    if (e instanceof InputError) {
      acc.violations.push(e.toString());
      return undefined;
    }
    throw e;
  }
};

const checkParagraph = (
  dump: DumpSource,
  acc: Acc,
  id: string,
  context: string | undefined,
  opts: ValidateOptions,
): Effect.Effect<void, DumpError> =>
  Effect.gen(function* () {
    const stem = dumpStem(id);
    const npz = yield* dump.readFile(`${stem}.npz`);
    const json = yield* dump.readFile(`${stem}.json`);
    if (npz === undefined) acc.violations.push(`${dump.label(`${stem}.npz`)}: missing`);
    if (json === undefined) acc.violations.push(`${dump.label(`${stem}.json`)}: missing`);
    if (npz === undefined || json === undefined) return;
    acc.contextFiles += 2;
    const label = dump.label(`${stem}.npz`);
    let phrases: PhraseList | undefined;
    try {
      phrases = indexPhrases(json, dump.label(`${stem}.json`));
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      acc.violations.push(e.toString());
    }
    // With the phrases known, a matrix of other rows is refused on its header
    // (before its data is inflated).
    let headerCols: number | undefined;
    const n = phrases?.length;
    const m = decode(acc, label, npz, opts.sparse ?? false, n, (rows, cols) => {
      headerCols = cols;
      return new InputError({
        file: label,
        where: "",
        message: `${rows} rows but ${n} phrases in ${stem}.json`,
      });
    });
    if (phrases === undefined) return;
    if (m === undefined) {
      if (headerCols === undefined) return;
      checkCols(acc, label, headerCols);
      acc.phrases += phrases.length;
    } else {
      checkDim(acc, label, m);
      acc.phrases += phrases.length;
      if (!rowsMatchPhrases(m, phrases.length)) {
        acc.violations.push(
          `${label}: ${m.rows} rows but ${phrases.length} phrases in ${stem}.json`,
        );
      }
    }
    if (context !== undefined) {
      const words = contextWords(context);
      const bpw = npz.byteLength / words;
      acc.bytes += npz.byteLength;
      acc.words += words;
      if (bpw > acc.maxBpw) {
        acc.maxBpw = bpw;
        acc.maxBpwId = id;
      }
      if (opts.maxBytesPerWord !== undefined && bpw > opts.maxBytesPerWord) {
        acc.violations.push(
          `${dump.label(`${stem}.npz`)}: ${
            bpw.toFixed(1)
          } bytes per context word > ${opts.maxBytesPerWord}`,
        );
      }
    }
  });

const checkQuestion = (
  dump: DumpSource,
  acc: Acc,
  id: string,
  opts: ValidateOptions,
): Effect.Effect<void, DumpError> =>
  Effect.gen(function* () {
    const stem = dumpStem(id);
    const npz = yield* dump.readFile(`${stem}.npz`);
    if (npz === undefined) {
      acc.violations.push(`${dump.label(`${stem}.npz`)}: missing`);
      return;
    }
    acc.questionFiles++;
    const label = dump.label(`${stem}.npz`);
    let headerCols: number | undefined;
    const m = decode(acc, label, npz, opts.sparse ?? false, 1, (rows, cols) => {
      headerCols = cols;
      return new InputError({ file: label, where: "", message: `${rows}×${cols}, expected 1×d` });
    });
    if (m === undefined) {
      if (headerCols !== undefined) checkCols(acc, label, headerCols);
      return;
    }
    checkDim(acc, dump.label(`${stem}.npz`), m);
    if (!isQuestionShape(m)) {
      acc.violations.push(`${dump.label(`${stem}.npz`)}: ${m.rows}×${m.cols}, expected 1×d`);
    }
  });

/**
 * Validates a dump against its dataset.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { validate } from "./validate.ts";
 * const dir = Deno.makeTempDirSync();
 * const qas = [{ id: "q1", question: "Where?" }];
 * const data = { data: [{ title: "T", paragraphs: [{ context: "Paris is nice", qas }] }] };
 * Deno.writeTextFileSync(`${dir}/data.json`, JSON.stringify(data));
 * Deno.mkdirSync(`${dir}/c`);
 * Deno.mkdirSync(`${dir}/q`);
 * const r = await Effect.runPromise(validate({
 *   data: `${dir}/data.json`, contextEmb: `${dir}/c`, questionEmb: `${dir}/q`,
 * }));
 * // T_0.npz, T_0.json and q1.npz are missing.
 * if (r.violations.length !== 3) throw new Error(r.violations.join("\n"));
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export const validate = (
  opts: ValidateOptions,
): Effect.Effect<ValidateReport, SquadReadError | DumpError> =>
  Effect.acquireUseRelease(
    Effect.all([openDump(opts.contextEmb, opts), openDump(opts.questionEmb, opts)]),
    ([cd, qd]) =>
      Effect.gen(function* () {
        const acc: Acc = {
          dim: -1,
          formats: new Set(),
          phrases: 0,
          contextFiles: 0,
          questionFiles: 0,
          bytes: 0,
          words: 0,
          maxBpw: 0,
          maxBpwId: "",
          violations: [],
        };
        const expected = { context: new Set<string>(), question: new Set<string>() };
        let paragraphs = 0;
        const conc = opts.concurrency ?? 8;
        yield* squadParagraphs(opts.data, {
          context: "optional",
          qas: "optional",
          ids: opts.uniqueIds ? "unique" : "distinct",
        }).pipe(
          Stream.mapEffect((p) =>
            Effect.gen(function* () {
              paragraphs++;
              const stem = dumpStem(p.id);
              expected.context.add(`${stem}.npz`).add(`${stem}.json`).add(`${stem}.meta.json`);
              yield* checkParagraph(cd, acc, p.id, p.context, opts);
              const fresh = p.questions.filter((q) =>
                !expected.question.has(`${dumpStem(q.id)}.npz`)
              );
              for (const q of fresh) expected.question.add(`${dumpStem(q.id)}.npz`);
              yield* Effect.forEach(fresh, (q) => checkQuestion(qd, acc, q.id, opts), {
                concurrency: conc,
                discard: true,
              });
            }), { concurrency: conc }),
          Stream.runDrain,
        );
        let unexpected = 0;
        for (const [dump, names] of [[cd, expected.context], [qd, expected.question]] as const) {
          for (const f of yield* dump.list()) {
            // Each dump folder may hold its manifest (`io/manifest.ts`).
            if (!names.has(f) && f !== DUMP_MANIFEST) {
              unexpected++;
              if (unexpected <= 20) {
                acc.violations.push(`${dump.label(f)}: not a file of the dataset`);
              }
            }
          }
        }
        if (unexpected > 20) acc.violations.push(`… and ${unexpected - 20} more unexpected files`);
        return {
          paragraphs,
          questions: expected.question.size,
          contextFiles: acc.contextFiles,
          questionFiles: acc.questionFiles,
          dim: acc.dim,
          formats: [...acc.formats].sort(),
          phrases: acc.phrases,
          bytesPerWord: {
            mean: acc.words ? acc.bytes / acc.words : 0,
            max: acc.maxBpw,
            maxParagraph: acc.maxBpwId,
          },
          unexpectedFiles: unexpected,
          violations: acc.violations,
        };
      }),
    ([cd, qd]) => Effect.all([cd.close(), qd.close()]),
  );

/** The report as text. */
export function formatValidateReport(r: ValidateReport): string {
  const lines = [
    `paragraphs     ${r.paragraphs} (${r.contextFiles} context files of ${2 * r.paragraphs})`,
    `questions      ${r.questions} (${r.questionFiles} question files)`,
    `d              ${r.dim}`,
    `storage        ${r.formats.join(", ") || "-"}`,
    `phrases        ${r.phrases} (${
      (r.phrases / Math.max(1, r.paragraphs)).toFixed(1)
    } per paragraph)`,
    `bytes/word     mean ${r.bytesPerWord.mean.toFixed(1)}, max ${
      r.bytesPerWord.max.toFixed(1)
    } (${r.bytesPerWord.maxParagraph})`,
    `violations     ${r.violations.length}`,
  ];
  for (const v of r.violations.slice(0, 50)) lines.push(`  ${v}`);
  if (r.violations.length > 50) lines.push(`  … ${r.violations.length - 50} more`);
  return lines.join("\n");
}
