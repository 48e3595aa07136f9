/**
 * Search error against model error (`report --search-error EXACT APPROX...`):
 * the same question vectors searched exactly and approximately (IVF-PQ),
 * each question put in one of four cells by the EM of the two top-1
 * answers:
 *
 * - **right in both** (exact right, approximate right);
 * - **lost** to the search (exact right, approximate wrong): search error;
 * - **wrong in both**: model error the search did not change;
 * - **saved** by chance (exact wrong, approximate right).
 *
 * The four counts add up to n, the questions of the set. Per approximate
 * search: EM and F1 of both, the share of EM lost to search,
 * `(lost − saved) / n` (= exact EM − approximate EM, in points) and
 * `lost / n`, the share of the exact search's EM that is lost
 * (`(lost − saved) / right in exact`), McNemar's exact p on lost against
 * saved, and **recall@k**: the share of the questions the exact search
 * answers whose exact top-1 phrase (paragraph, phrase index) is among the
 * approximate search's first k ranks, for k = 1, 5, 10 and its top-k;
 * with its nprobe (and adaptive probing's tau, `search --probe-tau`, when it
 * had one) and candidates, the index's bytes on disk (all of it,
 * and its `ivf/` part), the search's questions per second and the
 * process's peak RSS, from the search's record (`search/open/record.ts`).
 *
 * **Inputs.** EXACT and each APPROX is a search's prediction file (its
 * record `<stem>.search.json` beside it), the record itself, or a folder
 * of searches: EXACT's folder must hold exactly one exact search (the
 * others are left alone), an APPROX folder gives every approximate search
 * in it. Each search's top-k file (`search --topk-out`) and predictions
 * are found beside its record by their names, else where its record says.
 * Its question set is the one its record names, else `--data`.
 *
 * EM and F1 are recomputed from each prediction file against the question
 * set with the official rules of its kind (`systems.ts`' `scoreSystems`,
 * as for every system of a report). Refused as bad input (one line, exit
 * 2, nothing written): an EXACT that is not an exact search (an ivf-pq
 * index searched without `--exact`, or a `--closed` search), an APPROX
 * that is not approximate, searches without a record or a top-k file,
 * searches of other phrase vectors than EXACT's (the sha256 of the exact
 * files their records give differ), searches that do not answer the same
 * question ids, a top-k file whose rank 1 is not the prediction (stale).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../io/errors.ts";
import { readPredictions } from "../io/predictions.ts";
import { mcnemarExact } from "../metrics/stats/mod.ts";
import {
  parseSearchRecord,
  type SearchRecord,
  type SearchRecordIndex,
  searchRecordPath,
} from "../search/open/record.ts";
import { datasetName, type SystemSpec } from "./inputs.ts";
import { type ReportRules, type ScoredDataset, scoreSystems } from "./systems.ts";
import { baseOf, dirOf, isDir, isFile, listNames, trimSlash } from "../io/fs.ts";
import { readLinesStrict, readTextStrict } from "../io/text.ts";

/** The four cells of the split, in questions. */
export interface SearchErrorCells {
  /** Exact right, approximate right. */
  readonly right_both: number;
  /** Exact right, approximate wrong: lost to the search. */
  readonly lost: number;
  /** Exact wrong, approximate wrong. */
  readonly wrong_both: number;
  /** Exact wrong, approximate right: saved by chance. */
  readonly saved: number;
}

/**
 * The four cells of two searches' per-question EM (0 or 1, the same
 * questions in the same order). A `RangeError` when the lengths differ or
 * a value is neither 0 nor 1.
 *
 * @example
 * ```ts
 * import { searchErrorCells } from "./search_error.ts";
 * const c = searchErrorCells([1, 1, 0, 0, 1], [1, 0, 0, 1, 1]);
 * if (c.right_both !== 2 || c.lost !== 1 || c.wrong_both !== 1 || c.saved !== 1) {
 *   throw new Error(JSON.stringify(c));
 * }
 * ```
 */
export function searchErrorCells(
  exact: ArrayLike<number>,
  approx: ArrayLike<number>,
): SearchErrorCells {
  if (exact.length !== approx.length) {
    throw new RangeError(`${exact.length} exact scores but ${approx.length} approximate ones`);
  }
  const c = [0, 0, 0, 0]; // index: 2·(1 − exact) + (1 − approx)
  for (let i = 0; i < exact.length; i++) {
    const e = exact[i], a = approx[i];
    if ((e !== 0 && e !== 1) || (a !== 0 && a !== 1)) {
      throw new RangeError(`question ${i}: EM ${e} and ${a}, not 0 or 1`);
    }
    c[2 * (1 - e) + (1 - a)]++;
  }
  return { right_both: c[0], lost: c[1], wrong_both: c[3], saved: c[2] };
}

/** One rank of a top-k file: where its phrase lies. */
interface RankedPhrase {
  readonly paragraph: string;
  readonly phraseIndex: number;
  readonly phrase: string;
}

/** A top-k recall: `value` percent of the questions have the exact top-1 within rank `k`. */
export interface RecallAtK {
  /** The rank. */
  readonly k: number;
  /** Percent of the questions the exact search answers. */
  readonly value: number;
}

/**
 * The ks of the recall table: 1, 5, 10 and `topK`, those up to `topK`.
 *
 * @example
 * ```ts
 * import { recallKs } from "./search_error.ts";
 * if (recallKs(10).join() !== "1,5,10" || recallKs(3).join() !== "1,3") throw new Error();
 * ```
 */
export function recallKs(topK: number): number[] {
  return [...new Set([1, 5, 10, topK])].filter((k) => k <= topK).sort((a, b) => a - b);
}

/**
 * Recall@k of the exact top-1 in the approximate ranks: for each k of
 * `ks`, the percent of the questions of `exactTop1` (id → its top-1
 * (paragraph, phrase index)) whose phrase is among the first k entries of
 * `approx` (id → ranked phrases; a question it lacks counts as a miss).
 *
 * @example
 * ```ts
 * import { recallAtK } from "./search_error.ts";
 * const p = (paragraph: string, phraseIndex: number) => ({ paragraph, phraseIndex, phrase: "" });
 * const exact = new Map([["q1", p("A", 1)], ["q2", p("B", 2)]]);
 * const approx = new Map([["q1", [p("A", 1)]], ["q2", [p("A", 1), p("B", 2)]]]);
 * const r = recallAtK(exact, approx, [1, 2]);
 * if (r[0].value !== 50 || r[1].value !== 100) throw new Error(JSON.stringify(r));
 * ```
 */
export function recallAtK(
  exactTop1: ReadonlyMap<string, { paragraph: string; phraseIndex: number }>,
  approx: ReadonlyMap<string, readonly { paragraph: string; phraseIndex: number }[]>,
  ks: readonly number[],
): RecallAtK[] {
  const hits = new Array<number>(ks.length).fill(0);
  for (const [id, top] of exactTop1) {
    const ranks = approx.get(id) ?? [];
    const at = ranks.findIndex((r) =>
      r.paragraph === top.paragraph && r.phraseIndex === top.phraseIndex
    );
    if (at < 0) continue;
    ks.forEach((k, j) => {
      if (at < k) hits[j]++;
    });
  }
  const n = exactTop1.size;
  return ks.map((k, j) => ({ k, value: n === 0 ? 0 : (100 * hits[j]) / n }));
}

/** What a report shows of one search (exact or approximate). */
export interface SearchSide {
  /** Its label: `exact`, or `nprobe N, candidates C` (`nprobe N, tau T, candidates C` with a tau). */
  readonly name: string;
  /** Its prediction file. */
  readonly predictions: string;
  /** Its record. */
  readonly record: string;
  /** Its top-k file. */
  readonly topk: string;
  /** The index it searched (from its record). */
  readonly index: SearchRecordIndex;
  /** IVF lists probed (`null`: exact); with `probe_tau`, the most. */
  readonly nprobe: number | null;
  /**
   * Adaptive probing's tau (`search --probe-tau`: of the `nprobe` best
   * lists, those within tau of the best), present only when the search had
   * one (absent: every `nprobe` list).
   */
  readonly probe_tau?: number;
  /** Candidates re-scored exactly (`null`: exact). */
  readonly candidates: number | null;
  /** Ranks it kept. */
  readonly top_k: number;
  /** Its worker threads. */
  readonly threads: number;
  /** Seconds: opening the index, the search, the whole command. */
  readonly seconds: SearchRecord["seconds"];
  /** Questions answered per second of search. */
  readonly questions_per_second: number;
  /** Peak RSS of its process (bytes), or `null`. */
  readonly peak_rss_bytes: number | null;
  /** CPU seconds of its process, or `null`. */
  readonly cpu_seconds: number | null;
  /** Top-1 EM, percent. */
  readonly em: number;
  /** Top-1 F1, percent (`null`: regex answers). */
  readonly f1: number | null;
}

/** One approximate search against the exact one. */
export interface SearchErrorSetting extends SearchSide {
  /** The four cells. */
  readonly cells: SearchErrorCells;
  /** `(lost − saved) / n`, percent: the EM lost to search (exact EM − this EM). */
  readonly em_lost_net: number;
  /** `lost / n`, percent. */
  readonly em_lost: number;
  /** `saved / n`, percent. */
  readonly em_saved: number;
  /** `(lost − saved)` / the questions the exact search gets right, percent (`null`: none). */
  readonly em_lost_of_exact: number | null;
  /** This F1 − the exact F1, points (`null`: regex answers). */
  readonly f1_difference: number | null;
  /** McNemar's exact two-sided p of lost against saved. */
  readonly mcnemar_p: number;
  /** Recall@k of the exact top-1 among its ranks. */
  readonly recall: readonly RecallAtK[];
}

/** The search-error section of `report.json` (`search_error`). */
export interface SearchErrorReport {
  /** The question set's name. */
  readonly dataset: string;
  /** Its file. */
  readonly data: string;
  /** Its sha256. */
  readonly data_sha256: string;
  /** The rules EM and F1 follow. */
  readonly rules: ReportRules;
  /** Questions (n). */
  readonly questions: number;
  /** Questions the exact search answers (the denominator of recall@k). */
  readonly answered: number;
  /** The exact search, with its model error: percent of questions it gets wrong. */
  readonly exact: SearchSide & { readonly model_error: number };
  /** What the chart's x axis is: the setting that varies (`nprobe` when both or none do). */
  readonly axis: "nprobe" | "candidates";
  /** The ks of every setting's recall (1, 5, 10, top-k, up to the smallest top-k). */
  readonly recall_ks: readonly number[];
  /** The approximate searches, by candidates, nprobe, then tau (none: every list, last). */
  readonly settings: readonly SearchErrorSetting[];
}

/** A search as found on disk. */
interface FoundSearch {
  readonly record: SearchRecord;
  readonly recordFile: string;
  readonly predictions: string;
  readonly topk: string;
  readonly data: string;
  /** The command-line argument it came from. */
  readonly arg: string;
}

const bad = (file: string, message: string, where = "") => new InputError({ file, where, message });

const RECORD_SUFFIX = ".search.json";

function readRecord(file: string): SearchRecord {
  let text: string;
  try {
    text = readTextStrict(file);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new FileError({ file, message: e instanceof Error ? e.message : String(e) });
  }
  return parseSearchRecord(text, file);
}

/** A file a record names: beside the record by its name, else as recorded. */
function beside(recordFile: string, named: string): string {
  const here = `${dirOf(recordFile)}/${baseOf(named)}`;
  return isFile(here) ? here : named;
}

/** A record as found for an argument: read, its files not looked for yet. */
interface Recorded {
  readonly record: SearchRecord;
  readonly recordFile: string;
  readonly arg: string;
}

/** The search of a record (its predictions, top-k file and question set found). */
function foundOf(r: Recorded, data: string | undefined): FoundSearch {
  const { record, recordFile } = r;
  const predictions = beside(recordFile, record.files.predictions);
  if (!isFile(predictions)) {
    throw bad(recordFile, `its predictions ${record.files.predictions} are not there`);
  }
  if (record.files.topk === null) {
    throw bad(
      recordFile,
      "a search without top-k records: recall@k needs them (search --topk-out FILE)",
    );
  }
  const topk = beside(recordFile, record.files.topk);
  if (!isFile(topk)) throw bad(recordFile, `its top-k records ${record.files.topk} are not there`);
  const set = isFile(record.data) ? record.data : data;
  if (set === undefined) {
    throw bad(recordFile, `its question set ${record.data} is not there: give it with --data`);
  }
  return { record, recordFile, predictions, topk, data: set, arg: r.arg };
}

/** The record files of a folder (`*.search.json`), sorted by name. */
const recordsIn = (dir: string) =>
  listNames(dir).filter((n) => n.endsWith(RECORD_SUFFIX)).map((n) => `${dir}/${n}`);

/** One argument's records: of a prediction file, a record, or every search of a folder. */
function recordsOf(arg: string): Recorded[] {
  const path = trimSlash(arg);
  const one = (recordFile: string) => ({ record: readRecord(recordFile), recordFile, arg });
  if (isDir(path)) {
    const files = recordsIn(path);
    if (files.length === 0) {
      throw bad(arg, `a folder without search records (*${RECORD_SUFFIX})`);
    }
    return files.map(one);
  }
  if (!isFile(path)) throw bad(arg, "no such file or folder");
  if (path.endsWith(RECORD_SUFFIX)) return [one(path)];
  const record = searchRecordPath(path)!;
  if (!isFile(record)) {
    throw bad(
      arg,
      `no search record ${baseOf(record)} beside it: not the predictions of search, or made ` +
        "before search wrote one (rerun search)",
    );
  }
  return [one(record)];
}

/** `, tau T` of a search with adaptive probing, else nothing. */
const tauPart = (tau: number | null | undefined) =>
  tau === null || tau === undefined ? "" : `, tau ${tau}`;

/**
 * How a search ran, in words: `exact`, `approximate (nprobe 10, candidates
 * 0)` (`approximate (nprobe 40, tau 0.13, candidates 0)` with a tau), `closed`.
 */
const how = (r: SearchRecord) =>
  r.mode === "approximate"
    ? `approximate (nprobe ${r.nprobe}${tauPart(r.probe_tau)}, candidates ${r.candidates})`
    : r.mode;

/** Options of {@linkcode searchError}. */
export interface SearchErrorOptions {
  /** The exact search: its predictions, its record, or a folder holding one exact search. */
  readonly exact: string;
  /** The approximate searches: each a prediction file, a record or a folder of searches. */
  readonly approx: readonly string[];
  /** The question set, for searches whose record names one that is not there. */
  readonly data?: string;
}

/** The EXACT search: exactly one exact search of its argument. */
function exactOf(arg: string, data: string | undefined): FoundSearch {
  const all = recordsOf(arg);
  if (all.length === 1 && all[0].record.mode !== "exact") {
    throw bad(
      all[0].recordFile,
      `EXACT is an ${how(all[0].record)} search, not an exact one (search an exact index, ` +
        "or an ivf-pq index with --exact)",
    );
  }
  const exact = all.filter((s) => s.record.mode === "exact");
  if (exact.length !== 1) {
    throw bad(
      arg,
      exact.length === 0
        ? `EXACT: none of its ${all.length} searches is exact`
        : `EXACT: ${exact.length} exact searches (${
          exact.map((s) => baseOf(s.recordFile)).join(", ")
        }): name one`,
    );
  }
  return foundOf(exact[0], data);
}

/** The APPROX searches: every approximate search of the arguments (a file given must be one). */
function approxOf(args: readonly string[], data: string | undefined): FoundSearch[] {
  const out: FoundSearch[] = [];
  for (const arg of args) {
    const all = recordsOf(arg);
    const folder = isDir(trimSlash(arg));
    for (const s of all) {
      if (s.record.mode === "approximate") out.push(foundOf(s, data));
      else if (!folder) {
        throw bad(
          s.recordFile,
          `APPROX is an ${how(s.record)} search: an approximate one (ivf-pq) is compared`,
        );
      }
    }
    if (folder && !all.some((s) => s.record.mode === "approximate")) {
      throw bad(arg, `APPROX: none of its ${all.length} searches is approximate`);
    }
  }
  const seen = new Set<string>();
  for (const s of out) {
    const key = s.recordFile.replace(/^\.\//, "");
    if (seen.has(key)) throw bad(s.recordFile, "the same search given twice as APPROX");
    seen.add(key);
  }
  return out;
}

/** Top-k records of a file: per question, its ranks 1, 2, ... in order. */
function readRanks(file: string): Map<string, RankedPhrase[]> {
  // Read a chunk at a time: `search --top-k 1000` over a large set writes more than one
  // JavaScript string holds.
  const lines = readLinesStrict(file);
  const out = new Map<string, RankedPhrase[]>();
  let line = 0;
  for (const l of lines) {
    line++;
    if (l.trim() === "") continue;
    let r: Record<string, unknown>;
    try {
      r = JSON.parse(l);
    } catch {
      throw bad(file, "invalid JSON", `line ${line}`);
    }
    if (
      typeof r !== "object" || r === null || typeof r.id !== "string" ||
      !Number.isSafeInteger(r.rank) || typeof r.paragraph !== "string" ||
      !Number.isSafeInteger(r.phrase_index) || (r.phrase_index as number) < 0 ||
      typeof r.phrase !== "string"
    ) {
      throw bad(
        file,
        'not a top-k record of search {"id", "rank", "paragraph", "phrase_index", "phrase"}',
        `line ${line}`,
      );
    }
    const list = out.get(r.id) ?? [];
    if (r.rank !== list.length + 1) {
      throw bad(
        file,
        `question ${JSON.stringify(r.id)}: rank ${r.rank} where ${list.length + 1} comes next`,
        `line ${line}`,
      );
    }
    list.push({
      paragraph: r.paragraph,
      phraseIndex: r.phrase_index as number,
      phrase: r.phrase,
    });
    out.set(r.id, list);
  }
  return out;
}

/** Checks a top-k file against its predictions: one list per answered question, rank 1 its answer. */
function checkRanks(
  s: FoundSearch,
  ranks: ReadonlyMap<string, readonly RankedPhrase[]>,
  preds: ReadonlyMap<string, string>,
): void {
  for (const [id, p] of preds) {
    const list = ranks.get(id);
    if (list === undefined) throw bad(s.topk, `question ${JSON.stringify(id)} has no records`);
    if (list[0].phrase !== p) {
      throw bad(
        s.topk,
        `question ${JSON.stringify(id)}: rank 1 is ${JSON.stringify(list[0].phrase)} but ${
          JSON.stringify(p)
        } in ${s.predictions}: a stale top-k file`,
      );
    }
    if (list.length > s.record.top_k) {
      throw bad(
        s.topk,
        `question ${
          JSON.stringify(id)
        }: ${list.length} ranks but its search kept ${s.record.top_k}`,
      );
    }
  }
  for (const id of ranks.keys()) {
    if (!preds.has(id)) {
      throw bad(s.topk, `question ${JSON.stringify(id)} is not in ${s.predictions}`);
    }
  }
}

/** Refuses two searches that answer different questions. */
function sameIds(
  e: FoundSearch,
  ep: ReadonlyMap<string, string>,
  a: FoundSearch,
  ap: ReadonlyMap<string, string>,
): void {
  const only = (x: ReadonlyMap<string, string>, y: ReadonlyMap<string, string>) =>
    [...x.keys()].find((id) => !y.has(id));
  const inE = only(ep, ap), inA = only(ap, ep);
  if (inE === undefined && inA === undefined) return;
  const [id, where] = inE !== undefined ? [inE, "EXACT"] : [inA!, "APPROX"];
  throw bad(
    a.predictions,
    `EXACT (${e.predictions}, ${ep.size} questions) and APPROX (${ap.size} questions) cover ` +
      `different questions: ${JSON.stringify(id)} is answered by ${where} only`,
  );
}

const sameContent = (a: SearchRecordIndex, b: SearchRecordIndex) => {
  const ka = Object.keys(a.content).sort(), kb = Object.keys(b.content).sort();
  return ka.length > 0 && ka.join("\u0000") === kb.join("\u0000") &&
    ka.every((k) => a.content[k] === b.content[k]);
};

/** Mean × 100 of a per-question score, summed in order. */
const pct = (x: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return x.length === 0 ? 0 : (100 * s) / x.length;
};

const label = (r: SearchRecord) =>
  r.mode === "approximate"
    ? `nprobe ${r.nprobe}${tauPart(r.probe_tau)}, candidates ${r.candidates}`
    : r.mode;

function side(s: FoundSearch, name: string, em: number, f1: number | null): SearchSide {
  const r = s.record;
  return {
    name,
    predictions: s.predictions,
    record: s.recordFile,
    topk: s.topk,
    index: r.index,
    nprobe: r.nprobe,
    ...(r.probe_tau !== null && r.probe_tau !== undefined ? { probe_tau: r.probe_tau } : {}),
    candidates: r.candidates,
    top_k: r.top_k,
    threads: r.threads,
    seconds: r.seconds,
    questions_per_second: r.questions_per_second,
    peak_rss_bytes: r.peak_rss_bytes,
    cpu_seconds: r.cpu_seconds ?? null,
    em,
    f1,
  };
}

/**
 * The search-error report of an exact search and approximate ones (see the
 * module notes for the inputs, the numbers and what is refused).
 */
export const searchError = (
  opts: SearchErrorOptions,
): Effect.Effect<SearchErrorReport, InputError | FileError> =>
  Effect.gen(function* () {
    if (opts.approx.length === 0) {
      return yield* bad(
        opts.exact,
        "no APPROX: --search-error takes EXACT and at least one APPROX",
      );
    }
    const { exact, approx } = yield* Effect.try({
      try: () => ({
        exact: exactOf(opts.exact, opts.data),
        approx: approxOf(opts.approx, opts.data),
      }),
      catch: (e) =>
        e instanceof InputError || e instanceof FileError ? e : bad(opts.exact, String(e)),
    });
    for (const a of approx) {
      if (!sameContent(exact.record.index, a.record.index)) {
        return yield* bad(
          a.recordFile,
          `searched other phrase vectors than EXACT (${exact.recordFile}): the sha256 of the ` +
            "index's exact files differ",
        );
      }
    }
    const ep = yield* readPredictions(exact.predictions);
    const preds: Map<string, string>[] = [];
    for (const a of approx) {
      const ap = yield* readPredictions(a.predictions);
      yield* Effect.try({
        try: () => sameIds(exact, ep, a, ap),
        catch: (e) => e as InputError,
      });
      preds.push(ap);
    }
    // Names: the setting, and the file's stem where two settings are the same.
    const labels = approx.map((a) => label(a.record));
    const names = approx.map((a, i) =>
      labels.indexOf(labels[i]) !== labels.lastIndexOf(labels[i])
        ? `${labels[i]} (${baseOf(a.recordFile).slice(0, -RECORD_SUFFIX.length)})`
        : labels[i]
    );
    const dataset = datasetName(exact.data);
    const spec = (s: FoundSearch, name: string): SystemSpec => ({
      name,
      dataset,
      data: s.data,
      predictions: s.predictions,
      rows: null,
      input: s.arg,
      kind: "pred",
    });
    const [ds]: ScoredDataset[] = yield* scoreSystems([
      spec(exact, "exact"),
      ...approx.map((a, i) => spec(a, names[i])),
    ]);
    const n = ds.questions.length;
    const ranks = yield* Effect.try({
      try: () => {
        const er = readRanks(exact.topk);
        checkRanks(exact, er, ep);
        const ar = approx.map((a, i) => {
          const r = readRanks(a.topk);
          checkRanks(a, r, preds[i]);
          return r;
        });
        return { er, ar };
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError ? e : bad(exact.topk, String(e)),
    });
    const top1 = new Map<string, RankedPhrase>();
    for (const [id, list] of ranks.er) top1.set(id, list[0]);
    const ks = recallKs(Math.min(...approx.map((a) => a.record.top_k)));
    const [es, ...as] = ds.systems;
    const f1Of = (x: Float64Array | null) => x === null ? null : pct(x);
    const exactEm = pct(es.em);
    const exactF1 = f1Of(es.f1);
    let exactRight = 0;
    for (let i = 0; i < n; i++) exactRight += es.em[i];
    const settings = as.map((s, i): SearchErrorSetting => {
      const cells = searchErrorCells(es.em, s.em);
      const f1 = f1Of(s.f1);
      return {
        ...side(approx[i], names[i], pct(s.em), f1),
        cells,
        em_lost_net: n === 0 ? 0 : (100 * (cells.lost - cells.saved)) / n,
        em_lost: n === 0 ? 0 : (100 * cells.lost) / n,
        em_saved: n === 0 ? 0 : (100 * cells.saved) / n,
        em_lost_of_exact: exactRight === 0 ? null : (100 * (cells.lost - cells.saved)) / exactRight,
        f1_difference: f1 === null || exactF1 === null ? null : f1 - exactF1,
        mcnemar_p: mcnemarExact(cells.lost, cells.saved).pValue,
        recall: recallAtK(top1, ranks.ar[i], ks),
      };
    }).sort((a, b) =>
      // No tau (every list) after any tau; two without one (∞ − ∞ = NaN, falsy) by name.
      a.candidates! - b.candidates! || a.nprobe! - b.nprobe! ||
      (a.probe_tau ?? Infinity) - (b.probe_tau ?? Infinity) || a.name.localeCompare(b.name)
    );
    const distinct = (f: (s: SearchErrorSetting) => number | null) => new Set(settings.map(f)).size;
    const axis = distinct((s) => s.nprobe) === 1 && distinct((s) => s.candidates) > 1
      ? "candidates"
      : "nprobe";
    return {
      dataset,
      data: ds.data,
      data_sha256: ds.sha256,
      rules: ds.rules,
      questions: n,
      answered: ep.size,
      exact: { ...side(exact, "exact", exactEm, exactF1), model_error: 100 - exactEm },
      axis,
      recall_ks: ks,
      settings,
    };
  });
