/**
 * `report.html`: the report's tables and its charts (inline SVG), and
 * `report --diff`'s tables, each in the one page shell
 * ({@linkcode htmlPage}): self-contained (inline CSS, no script, no image,
 * font or style sheet from anywhere, a Content-Security-Policy that fetches
 * nothing), printing cleanly (`@media print`). Every text from the inputs
 * is escaped.
 *
 * @module
 */
import type { ReportJson } from "./report_json.ts";
import type { Chart } from "./charts.ts";
import { diffIntro, diffSections } from "./diff_tables.ts";
import type { DiffJson } from "./diff.ts";
import { searchErrorIntro, searchErrorSections } from "./search_error_tables.ts";
import {
  intro,
  LANG_NOTE,
  languageTable,
  provenance,
  type Section,
  sections,
  type Table,
} from "./tables.ts";

/**
 * HTML-escapes text (`&`, `<`, `>`, `"`, `'`).
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./html.ts";
 * if (escapeHtml('<a href="x">') !== "&lt;a href=&quot;x&quot;&gt;") throw new Error();
 * ```
 */
export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  ).replace(/'/g, "&#39;");
}

function htmlTable(t: Table): string {
  const cls = (i: number) => (t.numeric[i] ? ' class="num"' : "");
  return [
    "<table>",
    `<thead><tr>${
      t.head.map((h, i) => `<th${cls(i)}>${escapeHtml(h)}</th>`).join("")
    }</tr></thead>`,
    "<tbody>",
    ...t.rows.map((r) =>
      `<tr>${r.map((c, i) => `<td${cls(i)}>${escapeHtml(c)}</td>`).join("")}</tr>`
    ),
    "</tbody>",
    "</table>",
  ].join("\n");
}

const CSS = `
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px; padding: 0 1rem; color: #1b1b1b; background: #fff; line-height: 1.4; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.3rem; border-bottom: 2px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
p.note { color: #555; font-size: 0.9rem; margin: 0.2rem 0 0.6rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.4rem 0 1rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.2rem 0.45rem; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 0.6rem 0 1.2rem; overflow-x: auto; }
figcaption { font-size: 0.85rem; color: #555; margin-bottom: 0.2rem; }
figure svg { max-width: 100%; height: auto; }
@media print {
  body { margin: 0; max-width: none; font-size: 10pt; color: #000; }
  h2 { break-before: page; }
  h2:first-of-type { break-before: auto; }
  h3, figcaption { break-after: avoid; }
  table, figure { break-inside: avoid; }
  table { font-size: 8pt; }
  tbody tr:nth-child(even) { background: none; }
  figure { overflow: visible; }
}
`;

/**
 * The one page shell of every HTML file a report writes: `title` (escaped)
 * and the `body` lines in a self-contained page: inline CSS, and a
 * Content-Security-Policy under which nothing is fetched, whatever the
 * page holds.
 *
 * @example
 * ```ts
 * import { htmlPage } from "./html.ts";
 * const page = htmlPage("t <1>", ["<p>x</p>"]);
 * if (!page.includes("<title>t &lt;1&gt;</title>") || !page.includes("<p>x</p>\n</body>")) {
 *   throw new Error(page);
 * }
 * ```
 */
export function htmlPage(title: string, body: readonly string[]): string {
  return [
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${escapeHtml(title)}</title>`,
    `<style>${CSS}</style>`,
    "</head>",
    "<body>",
    ...body,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

/**
 * `report.html`: the tables and the charts (inline SVG, one `<svg>` per
 * chart), with inline CSS and nothing to fetch.
 */
export function renderHtml(
  report: ReportJson,
  charts: readonly (readonly Chart[])[],
  searchErrorCharts: readonly Chart[] = [],
): string {
  const body: string[] = [
    `<h1>Report</h1>`,
    `<p class="note">${escapeHtml(intro(report.options))}</p>`,
  ];
  const section = (s: Section) => {
    body.push(`<h3>${escapeHtml(s.title)}</h3>`);
    if (s.note) body.push(`<p class="note">${escapeHtml(s.note)}</p>`);
    for (const c of s.charts ?? []) {
      body.push(
        `<figure id="${c.id}"><figcaption>${escapeHtml(c.title)}</figcaption>${c.svg}</figure>`,
      );
    }
    if (s.table) body.push(htmlTable(s.table));
  };
  if (report.search_error) {
    const se = report.search_error;
    body.push(
      "<h2>Search error</h2>",
      `<p class="note">${escapeHtml(searchErrorIntro(se))}</p>`,
    );
    for (const s of searchErrorSections(se, searchErrorCharts)) section(s);
  }
  if (report.languages.length > 0) {
    body.push(
      "<h2>By language</h2>",
      `<p class="note">${escapeHtml(LANG_NOTE)}</p>`,
      htmlTable(languageTable(report)),
    );
  }
  report.datasets.forEach((r, d) => {
    body.push(
      `<h2>${escapeHtml(r.name)}</h2>`,
      `<p class="note">${escapeHtml(provenance(r))}</p>`,
    );
    for (const s of sections(r, report.options, charts[d] ?? [])) section(s);
  });
  return htmlPage("phraseval report", body);
}

/** `report.html` of `report --diff`: the tables of its `report.md` (`markdown.ts`), self-contained. */
export function renderDiffHtml(d: DiffJson): string {
  const body = [`<h1>Diff of two runs</h1>`, `<p class="note">${escapeHtml(diffIntro(d))}</p>`];
  for (const s of diffSections(d, false)) {
    body.push(`<h${s.level}>${escapeHtml(s.title)}</h${s.level}>`);
    if (s.note) body.push(`<p class="note">${escapeHtml(s.note)}</p>`);
    if (s.table) body.push(htmlTable(s.table));
  }
  return htmlPage("phraseval diff", body);
}
