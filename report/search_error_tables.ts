/**
 * The content of a report's "Search error" part (`--search-error`),
 * whatever its format: the split of the questions by the exact and each
 * approximate search (under the EM chart), recall@k of the exact top-1
 * (under the recall chart), and each search's speed and memory (under the
 * EM against q/s chart), and what the part was computed from.
 *
 * @module
 */
import type { Chart } from "./charts.ts";
import type { SearchErrorReport, SearchErrorSetting, SearchSide } from "./search_error.ts";
import { f2, formatP, RULES_NAME, type Section, signed, type Table } from "./tables.ts";

/** Bytes as MB (10⁶ bytes), one decimal, or `-`. */
const mbCell = (b: number | null) => b === null ? "-" : (b / 1e6).toFixed(1);

const pOrDash = (x: number | null) => x === null ? "-" : f2(x);

/** The split table: the four cells and the EM lost to search, per approximate search. */
function splitTable(r: SearchErrorReport): Table {
  const f1 = r.exact.f1 !== null;
  const head = [
    "search",
    "EM",
    ...(f1 ? ["F1"] : []),
    "right in both",
    "lost",
    "wrong in both",
    "saved",
    "EM lost to search",
    "lost / n",
    "saved / n",
    "of exact EM",
    ...(f1 ? ["ΔF1"] : []),
    "p (McNemar)",
  ];
  const rows = r.settings.map((s: SearchErrorSetting) => [
    s.name,
    f2(s.em),
    ...(f1 ? [pOrDash(s.f1)] : []),
    String(s.cells.right_both),
    String(s.cells.lost),
    String(s.cells.wrong_both),
    String(s.cells.saved),
    signed(s.em_lost_net),
    f2(s.em_lost),
    f2(s.em_saved),
    s.em_lost_of_exact === null ? "-" : `${signed(s.em_lost_of_exact)}%`,
    ...(f1 ? [s.f1_difference === null ? "-" : signed(s.f1_difference)] : []),
    formatP(s.mcnemar_p),
  ]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** Recall@k of the exact top-1 per approximate search. */
function recallTable(r: SearchErrorReport): Table {
  const head = ["search", ...r.recall_ks.map((k) => `recall@${k}`)];
  const rows = r.settings.map((s) => [s.name, ...s.recall.map((c) => f2(c.value))]);
  return { head, rows, numeric: head.map((_, i) => i > 0) };
}

/** Speed and memory of every search, the exact one first. */
function costTable(r: SearchErrorReport): Table {
  const head = [
    "search",
    "index",
    "EM",
    "q/s",
    "search s",
    "search CPU s",
    "q / CPU s",
    "load s",
    "threads",
    "ivf/ MB",
    "index MB",
    "peak RSS MB",
  ];
  const row = (s: SearchSide, cpu = s.seconds.search_cpu ?? null) => [
    s.name,
    s.index.kind === "ivf-pq"
      ? `ivf-pq nlist ${s.index.nlist} bpv ${s.index.bpv}${
        s.index.dense_dims === null ? "" : ` dense ${s.index.dense_dims}`
      }${s.nprobe === null ? " (--exact)" : ""}`
      : s.index.kind,
    f2(s.em),
    s.questions_per_second.toFixed(1),
    s.seconds.search.toFixed(1),
    cpu === null ? "-" : cpu.toFixed(1),
    cpu === null || cpu === 0 ? "-" : (s.questions_per_second * s.seconds.search / cpu).toFixed(1),
    s.seconds.load.toFixed(1),
    String(s.threads),
    mbCell(s.index.ivf_bytes),
    mbCell(s.index.bytes),
    mbCell(s.peak_rss_bytes),
  ];
  const rows = [row(r.exact), ...r.settings.map((s) => row(s))];
  return { head, rows, numeric: head.map((_, i) => i > 1) };
}

/** The search-error part: its sections (tables under their charts). */
export function searchErrorSections(r: SearchErrorReport, charts: readonly Chart[]): Section[] {
  const chart = (id: string) => charts.filter((c) => c.id === id);
  const n = r.questions;
  return [
    {
      title: "Lost to search, and model error",
      note: `${r.exact.name}: EM ${f2(r.exact.em)}${
        r.exact.f1 === null ? "" : `, F1 ${f2(r.exact.f1)}`
      }; model error (questions it gets wrong) ${
        f2(r.exact.model_error)
      }% of the n = ${n} questions. Per approximate search, the questions right in both, lost to the search (exact right, approximate wrong), wrong in both and saved by chance (exact wrong, approximate right), adding up to n; EM lost to search = (lost − saved) / n (the exact EM − this EM, points); lost / n and saved / n in percent; of exact EM = (lost − saved) / the questions the exact search gets right; ΔF1 = this F1 − the exact F1; p (McNemar): exact two-sided test of lost against saved.`,
      table: splitTable(r),
      charts: chart("search-error-em"),
    },
    {
      title: "Recall@k of the exact top-1",
      note:
        `Percent of the ${r.answered} questions the exact search answers whose exact top-1 phrase (paragraph, phrase index) is among the first k ranks of the approximate search.`,
      table: recallTable(r),
      charts: chart("search-error-recall"),
    },
    {
      title: "Speed and memory",
      note:
        "From each search's record (<stem>.search.json): q/s = questions answered / search seconds (the search and the writing of its predictions and top-k records, the index already open); search CPU s = the CPU seconds of the search (user + system, all its threads), q / CPU s = questions answered per CPU second (on a machine shared with other work, steadier than q/s); load s = opening the index; ivf/ MB = the IVF-PQ files (lists, codes, quantizers) on disk, index MB = all the index's files (its exact vectors included), peak RSS = the process's peak resident set (MB = 10⁶ bytes).",
      table: costTable(r),
      charts: chart("search-error-speed"),
    },
  ];
}

/** What the search-error part was computed from. */
export const searchErrorIntro = (r: SearchErrorReport) =>
  `The same question vectors searched exactly (${r.exact.predictions}) and approximately (${
    r.settings.map((s) => s.predictions).join(", ")
  }), on ${r.dataset}: ${r.questions} questions; EM and F1 recomputed from each search's predictions against ${r.data} (sha256 ${r.data_sha256}) with the ${
    RULES_NAME[r.rules]
  } rules.`;
