/**
 * `report.md`: the report's tables in Markdown (no charts), and
 * `report --diff`'s.
 *
 * @module
 */
import type { ReportJson } from "./report_json.ts";
import { diffIntro, diffSections } from "./diff_tables.ts";
import type { DiffJson } from "./diff.ts";
import { searchErrorIntro, searchErrorSections } from "./search_error_tables.ts";
import { intro, LANG_NOTE, languageTable, provenance, sections, type Table } from "./tables.ts";

const mdCell = (s: string) =>
  s.replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");

function mdTable(t: Table): string {
  const lines = [
    `| ${t.head.map(mdCell).join(" | ")} |`,
    `| ${t.numeric.map((n) => (n ? "---:" : "---")).join(" | ")} |`,
    ...t.rows.map((r) => `| ${r.map(mdCell).join(" | ")} |`),
  ];
  return lines.join("\n");
}

/** `report.md`: every table of the report in Markdown (no charts). */
export function renderMarkdown(report: ReportJson): string {
  const parts = ["# Report", "", intro(report.options), ""];
  if (report.search_error) {
    const se = report.search_error;
    parts.push("## Search error", "", searchErrorIntro(se), "");
    for (const s of searchErrorSections(se, [])) {
      parts.push(`### ${s.title}`, "", s.note!, "", mdTable(s.table!), "");
    }
  }
  if (report.languages.length > 0) {
    parts.push("## By language", "", LANG_NOTE, "", mdTable(languageTable(report)), "");
  }
  for (const r of report.datasets) {
    parts.push(`## ${r.name}`, "", provenance(r), "");
    for (const s of sections(r, report.options, [])) {
      if (!s.table && !s.note) continue;
      parts.push(`### ${s.title}`, "");
      if (s.note) parts.push(s.note, "");
      if (s.table) parts.push(mdTable(s.table), "");
    }
  }
  return parts.join("\n");
}

/** `report.md` of `report --diff`: the provenance differences, scores, tests, changed questions. */
export function renderDiffMarkdown(d: DiffJson): string {
  const parts = ["# Diff of two runs", "", diffIntro(d), ""];
  for (const s of diffSections(d, true)) {
    parts.push(`${"#".repeat(s.level)} ${s.title}`, "");
    if (s.note) parts.push(s.note, "");
    if (s.table) parts.push(mdTable(s.table), "");
  }
  return parts.join("\n");
}
