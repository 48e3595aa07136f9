/**
 * The record a search leaves beside its predictions: `<stem>.search.json`
 * next to `<stem>.json` (`writeSearchRecord` of `stage.ts` writes it,
 * atomically; `search` calls it last, once the predictions, top-k records
 * and rows are in place; none when the predictions go to stdout). It says how the search ran, so that its
 * outputs can be read later without the command line that made them
 * (`report --search-error`, `report/search_error.ts`):
 *
 * - `mode`: `exact` (an exact index, or `--exact` on an ivf-pq one),
 *   `approximate` (an ivf-pq index searched by its IVF-PQ: `nprobe` and
 *   `candidates` as the search used them, defaults applied) or `closed`;
 * - `files`: the predictions, top-k records and rows as they were named
 *   on the command line (a reader looks for each beside the record by its
 *   name first);
 * - `index`: the index's kind, vectors, metric, d, phrases, paragraphs,
 *   nlist and bpv (ivf-pq; `pq_bits` 4 for a 4-bit one), `dense_dims`
 *   (hybrid), its bytes on disk (all its data files; `ivf_bytes`: those
 *   of `ivf/`), and `content`, the
 *   sha256 of its exact files (vectors and paragraph table) as its header
 *   lists them: two searches of the same phrase vectors have the same
 *   `content`, whatever index kind holds them;
 * - `questions`, `answered`, `missing`, `top_k`, `threads`;
 * - `memory_budget`: the bytes of `--memory-budget` (the index read from
 *   disk on demand, `search/index/disk.ts`), or `null` (read whole into memory; a
 *   record written before the field existed reads as `null`);
 * - `seconds`: `load` (opening the index), `search` (answering every
 *   question, writing the predictions and top-k records), `total` (the
 *   command's work, scoring the rows included), all wall seconds, and
 *   `search_cpu`, the CPU seconds of the search (user and system, all
 *   threads: on a machine shared with other work, the cost the wall time
 *   hides); `questions_per_second` = answered / `search` seconds;
 * - `peak_rss_bytes`: the process's peak resident set when the record is
 *   written (`getrusage`'s `ru_maxrss`: the index, the search's worker
 *   threads and the scoring of the rows), `cpu_seconds` its CPU time
 *   (user and system), each `null` where the runtime does not give it.
 *
 * @module
 */
import process from "node:process";
import { InputError } from "../../io/errors.ts";
import { exactFiles, type IndexHeader } from "../index/format.ts";
import { DEFAULT_HYBRID_CANDIDATES, defaultNprobe } from "../index/defaults.ts";

/** The `format` tag of a search record. */
export const SEARCH_RECORD_FORMAT = "phraseval-search/1";

/** How a search scored the phrases. */
export type SearchMode = "exact" | "approximate" | "closed";

/** The index a search read, as its record gives it. */
export interface SearchRecordIndex {
  /** `exact` or `ivf-pq`. */
  readonly kind: string;
  /** `dense` or `csr`. */
  readonly vectors: "dense" | "csr";
  /** Value type of the stored vectors. */
  readonly dtype: "f32" | "f16";
  /** `ip` or `l2`. */
  readonly metric: string;
  /** Vector dimension. */
  readonly d: number;
  /** Phrases (rows). */
  readonly phrases: number;
  /** Paragraphs. */
  readonly paragraphs: number;
  /** IVF lists (`null`: not an ivf-pq index). */
  readonly nlist: number | null;
  /** PQ bytes per vector (`null`: not an ivf-pq index). */
  readonly bpv: number | null;
  /** Bits per PQ code of a 4-bit index (`index --pq-bits 4`); absent for 8 (older records too). */
  readonly pq_bits?: 4;
  /** A hybrid index's dense block (`null`: none). */
  readonly dense_dims: number | null;
  /** Bytes of all its data files on disk. */
  readonly bytes: number;
  /** Bytes of its `ivf/` files (`null`: not an ivf-pq index). */
  readonly ivf_bytes: number | null;
  /** sha256 of each exact file (vectors, paragraph table), from its header. */
  readonly content: Readonly<Record<string, string>>;
}

/** A search's record (`<stem>.search.json`; see the module notes). */
export interface SearchRecord {
  /** Always {@linkcode SEARCH_RECORD_FORMAT}. */
  readonly format: string;
  /** How the phrases were scored. */
  readonly mode: SearchMode;
  /** The question set, as named on the command line. */
  readonly data: string;
  /** The index folder, as named. */
  readonly index_dir: string;
  /** The question dump, as named. */
  readonly question_emb: string;
  /** The outputs, as named (`null`: not written). */
  readonly files: {
    readonly predictions: string;
    readonly topk: string | null;
    readonly rows: string | null;
  };
  /** The index. */
  readonly index: SearchRecordIndex;
  /** IVF lists probed (`null` unless `approximate`). */
  readonly nprobe: number | null;
  /** Candidates re-scored exactly (`null` unless `approximate`; 0: the PQ scores). */
  readonly candidates: number | null;
  /**
   * Adaptive probing's `tau` (`--probe-tau`: of the `nprobe` best lists,
   * those within `tau · ‖q‖ · mean‖c‖` of the best), or `null` (all
   * `nprobe` lists; a record of before it, without the field, reads as `null`).
   */
  readonly probe_tau?: number | null;
  /** Ranks kept per question. */
  readonly top_k: number;
  /** Worker threads. */
  readonly threads: number;
  /** `--memory-budget` in bytes, or `null` (the index held in memory). */
  readonly memory_budget: number | null;
  /** Questions in the question set. */
  readonly questions: number;
  /** Questions answered. */
  readonly answered: number;
  /** Questions without a question vector. */
  readonly missing: number;
  /** Wall seconds, and the CPU seconds of the search (`null`: not known). */
  readonly seconds: {
    readonly load: number;
    readonly search: number;
    readonly total: number;
    readonly search_cpu: number | null;
  };
  /** Answered questions per second of `seconds.search`. */
  readonly questions_per_second: number;
  /** Peak resident set of the process, or `null` where it cannot be read. */
  readonly peak_rss_bytes: number | null;
  /** CPU seconds of the process (user and system), or `null`. */
  readonly cpu_seconds: number | null;
}

/**
 * Where a search's record goes: the prediction file's name with `.json`
 * replaced by `.search.json` (`.search.json` added to any other name);
 * none when the predictions go to stdout.
 *
 * @example
 * ```ts
 * import { searchRecordPath } from "./record.ts";
 * if (searchRecordPath("out/np10.json") !== "out/np10.search.json") throw new Error();
 * if (searchRecordPath("-") !== undefined) throw new Error();
 * ```
 */
export function searchRecordPath(pred: string): string | undefined {
  if (pred === "-") return undefined;
  return pred.endsWith(".json") ? `${pred.slice(0, -5)}.search.json` : `${pred}.search.json`;
}

/**
 * Where `search` writes its per-question rows (scored by `metrics/`, named
 * in the record's `files.rows`): `--rows` (`flag`), else the prediction
 * file's name with `.json` replaced by `.rows.ndjson` (the rule of
 * `runs/plan/layout.ts`); none when the predictions go to stdout.
 *
 * @example
 * ```ts
 * import { rowsPath } from "./record.ts";
 * if (rowsPath("out/open.json") !== "out/open.rows.ndjson") throw new Error();
 * if (rowsPath("-") !== undefined || rowsPath("-", "r.ndjson") !== "r.ndjson") throw new Error();
 * ```
 */
export function rowsPath(pred: string, flag?: string): string | undefined {
  if (flag !== undefined) return flag;
  if (pred === "-") return undefined;
  return pred.endsWith(".json") ? `${pred.slice(0, -5)}.rows.ndjson` : `${pred}.rows.ndjson`;
}

/**
 * The mode of a search of an index of kind `kind`: `closed` with
 * `closed`, `approximate` on an ivf-pq index without `exact`, else
 * `exact`.
 *
 * @example
 * ```ts
 * import { searchMode } from "./record.ts";
 * if (searchMode("ivf-pq", false, false) !== "approximate") throw new Error();
 * if (searchMode("ivf-pq", true, false) !== "exact" || searchMode("exact", false, true) !== "closed") {
 *   throw new Error();
 * }
 * ```
 */
export function searchMode(kind: string, exact: boolean, closed: boolean): SearchMode {
  if (closed) return "closed";
  return kind === "ivf-pq" && !exact ? "approximate" : "exact";
}

/**
 * The nprobe and candidates a search used, defaults applied (`null` for
 * both unless it is `approximate`): nprobe {@linkcode defaultNprobe} (10, at
 * most the index's `nlist` when given); candidates 0 on a
 * dense ivf-pq index, {@linkcode DEFAULT_HYBRID_CANDIDATES} on a hybrid one.
 *
 * @example
 * ```ts
 * import { searchSettings } from "./record.ts";
 * const s = searchSettings("approximate", false, undefined, undefined);
 * if (s.nprobe !== 10 || s.candidates !== 0) throw new Error(JSON.stringify(s));
 * if (searchSettings("approximate", false, undefined, undefined, 4).nprobe !== 4) throw new Error();
 * ```
 */
export function searchSettings(
  mode: SearchMode,
  hybrid: boolean,
  nprobe: number | undefined,
  candidates: number | undefined,
  nlist?: unknown,
): { nprobe: number | null; candidates: number | null } {
  if (mode !== "approximate") return { nprobe: null, candidates: null };
  return {
    nprobe: nprobe ?? defaultNprobe(nlist),
    candidates: candidates ?? (hybrid ? DEFAULT_HYBRID_CANDIDATES : 0),
  };
}

const num = (x: unknown): number | null => typeof x === "number" ? x : null;

/**
 * The record's view of an index header: its shape, IVF-PQ parameters,
 * bytes on disk (from the sizes its header lists) and the sha256 of its
 * exact files.
 */
export function recordIndex(h: IndexHeader): SearchRecordIndex {
  let bytes = 0, ivf = 0;
  for (const [name, f] of Object.entries(h.files)) {
    bytes += f.bytes;
    if (name.startsWith("ivf/")) ivf += f.bytes;
  }
  const content: Record<string, string> = {};
  for (const name of exactFiles(h.vectors, h.dtype)) {
    if (h.files[name] !== undefined) content[name] = h.files[name].sha256;
  }
  const ivfpq = h.kind === "ivf-pq";
  return {
    kind: h.kind,
    vectors: h.vectors,
    dtype: h.dtype,
    metric: h.metric,
    d: h.d,
    phrases: h.phrases,
    paragraphs: h.paragraphs,
    nlist: ivfpq ? num(h.parameters.nlist) : null,
    bpv: ivfpq ? num(h.parameters.bpv) : null,
    ...(ivfpq && h.parameters.bits === 4 ? { pq_bits: 4 as const } : {}),
    dense_dims: num(h.parameters.dense_dims),
    bytes,
    ivf_bytes: ivfpq ? ivf : null,
    content,
  };
}

/**
 * The process's peak resident set in bytes, worker threads included
 * (`getrusage`'s `ru_maxrss` through `node:process`; no permission
 * needed), or `null` where the runtime does not give it.
 *
 * @example
 * ```ts
 * import { peakRssBytes } from "./record.ts";
 * const rss = peakRssBytes();
 * if (rss !== null && !(rss > 0)) throw new Error(String(rss));
 * ```
 */
export function peakRssBytes(): number | null {
  try {
    const kb = process.resourceUsage().maxRSS;
    return Number.isFinite(kb) && kb > 0 ? kb * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * CPU seconds the process has used (user and system, all threads), or
 * `null` where the runtime does not give them.
 *
 * @example
 * ```ts
 * import { cpuSeconds } from "./record.ts";
 * const s = cpuSeconds();
 * if (s !== null && !(s >= 0)) throw new Error(String(s));
 * ```
 */
export function cpuSeconds(): number | null {
  try {
    const u = process.resourceUsage();
    const s = (u.userCPUTime + u.systemCPUTime) / 1e6;
    return Number.isFinite(s) ? s : null;
  } catch {
    return null;
  }
}

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
const isSeconds = (x: unknown): x is number => typeof x === "number" && x >= 0 && isFinite(x);
const isStr = (x: unknown): x is string => typeof x === "string" && x !== "";
const orNull = <T>(x: unknown, ok: (y: unknown) => y is T) => x === null || ok(x);

/**
 * Parses and checks a search record (`file` names it in errors): every
 * field present with its type, `nprobe` and `candidates` set exactly when
 * the mode is `approximate` (`memory_budget` may be absent: a record of
 * before it, read as `null`). Anything else is an {@linkcode InputError}
 * naming the first field that is wrong.
 *
 * @example
 * ```ts
 * import { parseSearchRecord } from "./record.ts";
 * let msg = "";
 * try {
 *   parseSearchRecord('{"format": "x"}', "a.search.json");
 * } catch (e) {
 *   msg = (e as Error).message;
 * }
 * if (!msg.includes("not a search record")) throw new Error(msg);
 * ```
 */
export function parseSearchRecord(text: string, file: string): SearchRecord {
  const bad = (message: string) => new InputError({ file, where: "", message });
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(text);
  } catch (e) {
    throw bad(`invalid JSON (${e instanceof Error ? e.message : e})`);
  }
  if (typeof r !== "object" || r === null || r.format !== SEARCH_RECORD_FORMAT) {
    throw bad(`not a search record (format is not "${SEARCH_RECORD_FORMAT}")`);
  }
  const need = (ok: boolean, field: string, what: string) => {
    if (!ok) throw bad(`"${field}" must be ${what}`);
  };
  need(r.mode === "exact" || r.mode === "approximate" || r.mode === "closed", "mode", "a mode");
  for (const f of ["data", "index_dir", "question_emb"]) need(isStr(r[f]), f, "a path");
  const files = r.files as Record<string, unknown> | null;
  need(typeof files === "object" && files !== null, "files", "an object");
  need(isStr(files!.predictions), "files.predictions", "a path");
  need(orNull(files!.topk, isStr), "files.topk", "a path or null");
  need(orNull(files!.rows, isStr), "files.rows", "a path or null");
  const ix = r.index as Record<string, unknown> | null;
  need(typeof ix === "object" && ix !== null, "index", "an object");
  need(isStr(ix!.kind), "index.kind", "a string");
  need(ix!.vectors === "dense" || ix!.vectors === "csr", "index.vectors", "dense or csr");
  need(ix!.dtype === "f32" || ix!.dtype === "f16", "index.dtype", "f32 or f16");
  need(isStr(ix!.metric), "index.metric", "a string");
  for (const f of ["d", "phrases", "paragraphs", "bytes"]) {
    need(isCount(ix![f]), `index.${f}`, "a count");
  }
  for (const f of ["nlist", "bpv", "dense_dims", "ivf_bytes"]) {
    need(orNull(ix![f], isCount), `index.${f}`, "a count or null");
  }
  need(ix!.pq_bits === undefined || ix!.pq_bits === 4, "index.pq_bits", "4 or absent");
  const content = ix!.content as Record<string, unknown> | null;
  need(
    typeof content === "object" && content !== null && Object.values(content).every(isStr),
    "index.content",
    "an object of sha256 strings",
  );
  const approx = r.mode === "approximate";
  for (const f of ["nprobe", "candidates"]) {
    need(approx ? isCount(r[f]) : r[f] === null, f, approx ? "a count" : "null (not approximate)");
  }
  if (r.probe_tau === undefined) r.probe_tau = null;
  const tau = r.probe_tau;
  need(
    tau === null || (approx && typeof tau === "number" && Number.isFinite(tau) && tau > 0),
    "probe_tau",
    approx ? "a number above 0 or null" : "null (not approximate)",
  );
  for (const f of ["top_k", "threads", "questions", "answered", "missing"]) {
    need(isCount(r[f]), f, "a count");
  }
  if (r.memory_budget === undefined) r.memory_budget = null;
  need(orNull(r.memory_budget, isCount), "memory_budget", "a count of bytes or null");
  const s = r.seconds as Record<string, unknown> | null;
  need(typeof s === "object" && s !== null, "seconds", "an object");
  for (const f of ["load", "search", "total"]) need(isSeconds(s![f]), `seconds.${f}`, "seconds");
  need(orNull(s!.search_cpu, isSeconds), "seconds.search_cpu", "seconds or null");
  need(isSeconds(r.questions_per_second), "questions_per_second", "a rate");
  need(orNull(r.peak_rss_bytes, isCount), "peak_rss_bytes", "a count or null");
  need(orNull(r.cpu_seconds, isSeconds), "cpu_seconds", "seconds or null");
  return r as unknown as SearchRecord;
}
