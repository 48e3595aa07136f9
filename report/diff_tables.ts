/**
 * The content of `report --diff`'s `report.md` and `report.html`, whatever
 * the format: the provenance differences, the paired tests of B − A and
 * the changed questions of `diff.ts`, as titled sections.
 *
 * @module
 */
import {
  type DiffJson,
  type DiffTest,
  type PairDiff,
  type ProvenanceChange,
  type ProvenanceDiff,
  shortValue,
} from "./diff.ts";
import { byName, dci, f2, formatP, signed, type Table } from "./tables.ts";

/**
 * A provenance diff as a table: key, A's value, B's value (location flags
 * last); `code` wraps the values in backticks (Markdown, where `<run>`
 * would be taken for a tag).
 */
function provenanceTable(d: ProvenanceDiff, code: boolean): Table {
  const v = (x: string) => code ? `\`${x.replace(/`/g, "'")}\`` : x;
  const row = (c: ProvenanceChange, where: boolean) => [
    where ? `${c.key} (where written)` : c.key,
    v(shortValue(c.a, "a" in c)),
    v(shortValue(c.b, "b" in c)),
  ];
  return {
    head: ["key", "A", "B"],
    rows: [...d.changed.map((c) => row(c, false)), ...d.location.map((c) => row(c, true))],
    numeric: [false, false, false],
  };
}

/** EM and F1 of A and B, B − A with its intervals and p-values, and the up/down counts. */
function diffTestTable(p: PairDiff): Table {
  const by = p.em.cluster.by;
  const row = (name: string, t: DiffTest) => [
    name,
    f2(t.a),
    f2(t.b),
    signed(t.difference),
    dci(t),
    formatP(t.randomization_p),
    dci(t.cluster),
    formatP(t.cluster.randomization_p),
    String(t.up),
    String(t.down),
    t.mcnemar_p !== undefined ? formatP(t.mcnemar_p) : "-",
  ];
  return {
    head: [
      "metric",
      "A",
      "B",
      "B − A",
      "95% CI",
      "p (rand.)",
      byName(by),
      `p by ${by}`,
      "up",
      "down",
      "p (McNemar)",
    ],
    rows: [row("EM", p.em), ...(p.f1 ? [row("F1", p.f1)] : [])],
    numeric: [false, true, true, true, true, true, true, true, true, true, true],
  };
}

/** The first `top` changed questions of a pair. */
function changedTable(p: PairDiff, top: number): Table {
  const withF1 = p.f1 !== null;
  return {
    head: ["id", "question", "gold", "A", "B", "EM A→B", ...(withF1 ? ["F1 A→B"] : [])],
    rows: p.changed.slice(0, top).map((q) => [
      q.id,
      q.question,
      q.golds[0] ?? "",
      q.a ?? "(none)",
      q.b ?? "(none)",
      `${q.em_a}→${q.em_b}`,
      ...(withF1 ? [`${f2(q.f1_a ?? 0)}→${f2(q.f1_b ?? 0)}`] : []),
    ]),
    numeric: [false, false, false, false, false, true, ...(withF1 ? [true] : [])],
  };
}

/** The sections of a diff report: a title, a note, a table (each optional but the title). */
export function diffSections(
  d: DiffJson,
  code: boolean,
): { level: 2 | 3; title: string; note?: string; table?: Table }[] {
  const out: { level: 2 | 3; title: string; note?: string; table?: Table }[] = [];
  const tag = (name: string) => code ? `\`<${name}>\`` : `<${name}>`;
  const n = d.provenance_diff.changed.length;
  out.push({
    level: 2,
    title: "Provenance",
    note: `${n} key${n === 1 ? "" : "s"} of the two run blocks differ${
      n === 1 ? "s" : ""
    } (flags, tool, normalizer, machine, seeds, config after inheritance); each run folder's own path is written ${
      tag("run")
    } and this repository's ${tag("repo")} before they are compared.`,
    ...(n + d.provenance_diff.location.length > 0
      ? { table: provenanceTable(d.provenance_diff, code) }
      : {}),
  });
  for (const p of d.pairs) {
    const who = p.system_a === p.system_b ? p.system_a : `${p.system_a} → ${p.system_b}`;
    out.push({
      level: 2,
      title: `${who} on ${p.dataset}`,
      note: `${p.questions} questions; ${p.answers_changed} answers changed (${
        (100 * p.answers_changed / p.questions).toFixed(2)
      }%). Scored against ${p.data} (sha256 ${p.data_sha256}).`,
    });
    const m = p.provenance.changed.length;
    out.push({
      level: 3,
      title: "System provenance",
      note: `${m} key${m === 1 ? "" : "s"} of the two systems' entries differ${
        m === 1 ? "s" : ""
      } (dataset, encoder and model files, dumps, prediction and rows files).`,
      ...(m > 0 ? { table: provenanceTable(p.provenance, code) } : {}),
    });
    out.push({
      level: 3,
      title: "Scores and paired tests",
      note:
        `B − A in points with the paired bootstrap 95% interval and approximate-randomization p, per question and by ${p.em.cluster.by} (${p.em.cluster.clusters} clusters); up/down: questions whose score rose/fell (EM: gained/lost).`,
      table: diffTestTable(p),
    });
    if (p.changed.length > 0) {
      const k = Math.min(d.options.top, p.changed.length);
      out.push({
        level: 3,
        title: "Changed questions",
        note:
          `${k} of the ${p.changed.length} questions whose answer or score changed, largest F1 change first (report.json lists them all).`,
        ...(k > 0 ? { table: changedTable(p, d.options.top) } : {}),
      });
    }
  }
  if (d.unpaired.a.length + d.unpaired.b.length > 0) {
    out.push({
      level: 2,
      title: "Without a partner",
      note: `A: ${d.unpaired.a.join(", ") || "-"}. B: ${d.unpaired.b.join(", ") || "-"}.`,
    });
  }
  return out;
}

/** The first paragraph of a diff report: A, B and the paired tests' settings. */
export const diffIntro = (d: DiffJson) =>
  `Generated by \`deno task report --diff\` (phraseval). A: ${d.a}. B: ${d.b}. Paired tests of B − A: bootstrap B = ${d.options.resamples}, seed ${d.options.seed}; randomization: ${d.options.shuffles} shuffles.`;
