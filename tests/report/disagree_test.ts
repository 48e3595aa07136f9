/**
 * `report`'s metric disagreements and labels (`report/disagree.ts`,
 * `report/labels.ts`) on hand-made sets: a SQuAD v1.1 set where each kind
 * of disagreement occurs a known number of times (F1 and BEM written here
 * by hand, BEM from a system's rows), a SQuAD v2.0 set with both
 * no-answer decisions; the order of the most telling questions; the slice
 * (`--export-slice`) read back as a labels file; each metric's agreement
 * and Cohen's κ against a closed form worked out here; the label-corrected
 * accuracy and its two-phase bootstrap interval against
 * `bench/reference/label_correction.py` (the same draws to rounding, and
 * NumPy's own bootstrap to Monte Carlo error); bad labels refused with one
 * line and exit 2, nothing written.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { listDir, python, runStage } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import {
  agreement,
  checkOptions,
  type CorrectionInput,
  DISAGREEMENT_KINDS,
  type DisagreementKind,
  labelCorrection,
  parseLabels,
  report,
  type ReportJson,
  scoreSystems,
  type SliceRecord,
  sliceRecords,
} from "../../report/mod.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-disagree-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const OPTS = { resamples: 200, shuffles: 99 };
const readJson = (p: string) => JSON.parse(Deno.readTextFileSync(p)) as ReportJson;
const readNdjson = <T>(p: string) =>
  Deno.readTextFileSync(p).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as T);

/**
 * The v1.1 set: per question A's EM, its gold answers, system A's
 * prediction, A's (made-up) BEM score, A's F1 worked out by hand and the kinds it falls
 * under at t = 0.5; system B's prediction and kinds (B has no BEM). Ids
 * are not in dataset order (`a16` comes late), so "ties by id" is seen.
 */
const V1: {
  id: string;
  em: number;
  golds: string[];
  a: string;
  bem: number;
  f1: number;
  kinds: DisagreementKind[];
  b: string;
  bKinds: DisagreementKind[];
}[] = [
  {
    id: "q01",
    em: 1,
    golds: ["Denver Broncos"],
    a: "Denver Broncos",
    bem: 0.9,
    f1: 1,
    kinds: [],
    b: "Broncos",
    bKinds: ["em0_f1hi"],
  },
  {
    id: "q02",
    em: 0,
    golds: ["Denver Broncos"],
    a: "the Broncos",
    bem: 0.8,
    f1: 2 / 3,
    kinds: ["em0_f1hi", "em0_bem1"],
    b: "Denver Broncos",
    bKinds: [],
  },
  // F1 exactly at the threshold counts as right.
  {
    id: "q03",
    em: 0,
    golds: ["Santa Clara, California"],
    a: "California",
    bem: 0.3,
    f1: 0.5,
    kinds: ["em0_f1hi", "f1hi_bem0"],
    b: "Santa Clara, California",
    bKinds: [],
  },
  {
    id: "q04",
    em: 0,
    golds: ["1990"],
    a: "in 1990 he said",
    bem: 0.7,
    f1: 0.4,
    kinds: ["em0_bem1", "f1lo_bem1"],
    b: "1990",
    bKinds: [],
  },
  {
    id: "z05",
    em: 1,
    golds: ["Paris"],
    a: "Paris",
    bem: 0.2,
    f1: 1,
    kinds: ["em1_bem0"],
    b: "Paris",
    bKinds: [],
  },
  // F1 1 without an exact match; not partial, so no F1-against-BEM kind.
  {
    id: "q06",
    em: 0,
    golds: ["light scattering"],
    a: "scattering light",
    bem: 0.95,
    f1: 1,
    kinds: ["em0_f1hi", "em0_bem1"],
    b: "light scattering",
    bKinds: [],
  },
  {
    id: "q07",
    em: 0,
    golds: ["blue"],
    a: "red",
    bem: 0.1,
    f1: 0,
    kinds: [],
    b: "blue",
    bKinds: [],
  },
  // BEM exactly 0.5 is not above 0.5.
  {
    id: "q08",
    em: 0,
    golds: ["blue"],
    a: "red",
    bem: 0.5,
    f1: 0,
    kinds: [],
    b: "blue",
    bKinds: [],
  },
  // Both normalize to nothing: EM 1, and SQuAD v1.1's F1 0.
  {
    id: "q09",
    em: 1,
    golds: ["the"],
    a: "a",
    bem: 0.9,
    f1: 0,
    kinds: ["em1_f1lo"],
    b: "the",
    bKinds: ["em1_f1lo"],
  },
  {
    id: "q10",
    em: 1,
    golds: ["Paris"],
    a: "Paris",
    bem: 0.5,
    f1: 1,
    kinds: ["em1_bem0"],
    b: "Paris",
    bKinds: [],
  },
  {
    id: "q11",
    em: 0,
    golds: ["the old river"],
    a: "old river bank",
    bem: 0.6,
    f1: 0.8,
    kinds: ["em0_f1hi", "em0_bem1"],
    b: "old river",
    bKinds: [],
  },
  {
    id: "q12",
    em: 0,
    golds: ["George Washington Carver"],
    a: "Carver",
    bem: 0.45,
    f1: 0.5,
    kinds: ["em0_f1hi", "f1hi_bem0"],
    b: "George Washington Carver",
    bKinds: [],
  },
  {
    id: "q13",
    em: 0,
    golds: ["seven"],
    a: "7",
    bem: 0.9,
    f1: 0,
    kinds: ["em0_bem1"],
    b: "seven",
    bKinds: [],
  },
  // The best of the gold answers.
  {
    id: "q14",
    em: 1,
    golds: ["Denver Broncos", "Broncos"],
    a: "the Broncos",
    bem: 0.9,
    f1: 1,
    kinds: [],
    b: "Broncos",
    bKinds: [],
  },
  {
    id: "q15",
    em: 1,
    golds: ["1066"],
    a: "1066",
    bem: 0.99,
    f1: 1,
    kinds: [],
    b: "1067",
    bKinds: [],
  },
  {
    id: "a16",
    em: 1,
    golds: ["Paris"],
    a: "Paris",
    bem: 0.2,
    f1: 1,
    kinds: ["em1_bem0"],
    b: "Paris",
    bKinds: [],
  },
];

/** A SQuAD file of one article, a paragraph per question holding its answers and prediction. */
async function writeSquad(
  path: string,
  version: string,
  qs: readonly { id: string; golds: string[]; text?: string }[],
): Promise<void> {
  const paragraphs = qs.map((q) => {
    const context = `Some text: ${q.golds.join("; ")}; ${q.text ?? ""}.`;
    return {
      context,
      qas: [{
        id: q.id,
        question: `Question ${q.id}?`,
        answers: q.golds.map((text) => ({ text, answer_start: context.indexOf(text) })),
        ...(version === "v2.0" ? { is_impossible: q.golds.length === 0 } : {}),
      }],
    };
  });
  await Deno.writeTextFile(
    path,
    JSON.stringify({ version, data: [{ title: "Hand", paragraphs }] }),
  );
}

const DATA = `${TMP}/hand.json`;
await writeSquad(DATA, "1.1", V1.map((q) => ({ ...q, text: `${q.a} ${q.b}` })));
// System A: a `full` folder whose rows carry BEM; system B: a prediction file.
const FULL_A = `${TMP}/fullA`;
await Deno.mkdir(FULL_A);
await Deno.writeTextFile(
  `${FULL_A}/summary.json`,
  JSON.stringify({ data: DATA, out: FULL_A, encoder: { name: "A", dim: 1, sparse: true } }),
);
await Deno.writeTextFile(
  `${FULL_A}/pred.json`,
  JSON.stringify(Object.fromEntries(V1.map((q) => [q.id, q.a]))),
);
await Effect.runPromise(
  evaluate({ data: DATA, predictions: `${FULL_A}/pred.json`, perQuestion: `${TMP}/rowsA.tmp` }),
);
await Deno.writeTextFile(
  `${FULL_A}/rows.ndjson`,
  readNdjson<Record<string, unknown>>(`${TMP}/rowsA.tmp`).map((r, i) =>
    JSON.stringify({ ...r, bem: V1[i].bem }) + "\n"
  ).join(""),
);
const PRED_B = `${TMP}/b.json`;
await Deno.writeTextFile(PRED_B, JSON.stringify(Object.fromEntries(V1.map((q) => [q.id, q.b]))));
const INPUTS = [FULL_A, `B=${PRED_B}`];

const count = (kinds: readonly DisagreementKind[][], k: DisagreementKind) =>
  kinds.filter((x) => x.includes(k)).length;

Deno.test("metric disagreements: each kind's count on a hand-made v1.1 set (F1, BEM, thresholds)", async () => {
  const out = `${TMP}/v1`;
  await Effect.runPromise(report({ inputs: INPUTS, data: DATA, out, ...OPTS }));
  const ds = readJson(`${out}/report.json`).datasets[0];
  // F1 per question as worked out by hand.
  const rows = readNdjson<{ f1: number }>(`${FULL_A}/rows.ndjson`);
  rows.forEach((r, i) => assert(Math.abs(r.f1 - V1[i].f1) < 1e-15, `${V1[i].id} F1 ${r.f1}`));
  const m = ds.metric_disagreements;
  assertEquals([m.f1_threshold, m.bem_threshold], [0.5, 0.5]);
  assertEquals(m.kinds, ["em0_f1hi", "em1_f1lo", "em0_bem1", "em1_bem0", "f1hi_bem0", "f1lo_bem1"]);
  const [a, b] = m.systems;
  const want = (kinds: DisagreementKind[][], bem: boolean) =>
    Object.fromEntries(DISAGREEMENT_KINDS.map((k) => [
      k,
      k.startsWith("abstained") || k.startsWith("answered") ||
        (!bem && k.includes("bem"))
        ? null
        : count(kinds, k),
    ]));
  assertEquals(a.counts, want(V1.map((q) => q.kinds), true));
  assertEquals(b.counts, want(V1.map((q) => q.bKinds), false));
  // The hand-stated counts, spelled out.
  assertEquals(
    [a.counts.em0_f1hi, a.counts.em1_f1lo, a.counts.em0_bem1, a.counts.em1_bem0],
    [5, 1, 5, 3],
  );
  assertEquals([a.counts.f1hi_bem0, a.counts.f1lo_bem1, a.disagreeing], [2, 1, 11]);
  assertEquals([b.counts.em0_f1hi, b.counts.em1_f1lo, b.disagreeing, b.questions], [1, 1, 2, 16]);
  // The tables and the chart, with a table under it.
  const md = await Deno.readTextFile(`${out}/report.md`);
  assertStringIncludes(md, "| em0_f1hi | EM 0 but F1 ≥ 0.5 | 5 | 1 |");
  assertStringIncludes(md, "| em0_bem1 | EM 0 but BEM > 0.5 | 5 | - |");
  assertStringIncludes(md, "| any | questions under one kind at least | 11 | 2 |");
  const html = await Deno.readTextFile(`${out}/report.html`);
  const fig = html.indexOf('<figure id="hand-disagree">');
  assert(fig > 0 && html.indexOf("<table>", fig) > fig, "the counts chart, then its table");
  for (const svg of html.match(/<svg[\s\S]*?<\/svg>/g)!) assert(!/https?:/.test(svg));
  // Another threshold: F1 0.5 is no longer right; q03 and q12 (BEM ≤ 0.5 too) agree.
  const out2 = `${TMP}/v1t`;
  await Effect.runPromise(
    report({ inputs: INPUTS, data: DATA, out: out2, ...OPTS, f1Threshold: 0.6 }),
  );
  const a2 = readJson(`${out2}/report.json`).datasets[0].metric_disagreements.systems[0];
  assertEquals([a2.counts.em0_f1hi, a2.counts.f1hi_bem0, a2.counts.f1lo_bem1, a2.disagreeing], [
    3,
    0,
    1,
    9,
  ]);
  // Out of range.
  assertEquals(
    checkOptions({ f1Threshold: 1.5 })?.message,
    "--f1-threshold must be a number above 0 and at most 1, got 1.5",
  );
});

Deno.test("metric disagreements: the most telling first (gap, then |F1 − EM|, then BEM margin, then id)", async () => {
  const out = `${TMP}/order`;
  await Effect.runPromise(report({ inputs: INPUTS, data: DATA, out, ...OPTS, top: 4 }));
  const a = readJson(`${out}/report.json`).datasets[0].metric_disagreements.systems[0];
  const ids = (k: DisagreementKind) => a.examples[k]!.map((x) => x.id);
  // F1 − EM: 1, 0.8, 2/3, then q03 and q12 at 0.5, q03 first by BEM's margin (0.2 > 0.05).
  assertEquals(ids("em0_f1hi"), ["q06", "q11", "q02", "q03"]);
  // EM − BEM: z05 and a16 at 0.8 (tied throughout: by id), q10 at 0.5.
  assertEquals(ids("em1_bem0"), ["a16", "z05", "q10"]);
  // BEM − EM: 0.95, 0.9, 0.8, 0.7 (q11 at 0.6 is fifth: cut by --top 4).
  assertEquals(ids("em0_bem1"), ["q06", "q13", "q02", "q04"]);
  assertEquals(ids("f1hi_bem0"), ["q03", "q12"]); // F1 − BEM: 0.2, then 0.05
  assertEquals(a.examples.em0_f1hi![0], {
    id: "q06",
    title: "Hand",
    question: "Question q06?",
    golds: ["light scattering"],
    prediction: "scattering light",
    em: 0,
    f1: 1,
    bem: 0.95,
    gap: 1,
  });
  const md = await Deno.readTextFile(`${out}/report.md`);
  assertStringIncludes(md, "### A: EM 0 but F1 ≥ 0.5 (em0_f1hi): 5 questions, the 4 most telling");
});

Deno.test("metric disagreements: SQuAD v2.0 no-answer decisions", async () => {
  const data = `${TMP}/v2.json`;
  const qs = [
    { id: "v1", golds: ["Paris"], p: "", kinds: ["abstained_hasans"] },
    { id: "v2", golds: [], p: "London", kinds: ["answered_noans"] },
    { id: "v3", golds: [], p: "", kinds: [] },
    { id: "v4", golds: ["Denver Broncos"], p: "Broncos", kinds: ["em0_f1hi"] },
    // "the" normalizes to nothing: an abstention.
    { id: "v5", golds: ["Paris"], p: "the", kinds: ["abstained_hasans"] },
    { id: "v6", golds: [], p: "the", kinds: [] },
    { id: "v7", golds: ["blue"], p: "red", kinds: [] },
  ];
  await writeSquad(data, "v2.0", qs);
  const pred = `${TMP}/v2pred.json`;
  await Deno.writeTextFile(pred, JSON.stringify(Object.fromEntries(qs.map((q) => [q.id, q.p]))));
  const out = `${TMP}/v2`;
  await Effect.runPromise(
    report({ inputs: [`S=${pred}`], data, out, ...OPTS, exportSlice: `${out}/slice.ndjson` }),
  );
  const ds = readJson(`${out}/report.json`).datasets[0];
  const m = ds.metric_disagreements;
  assertEquals(m.kinds, ["em0_f1hi", "em1_f1lo", "abstained_hasans", "answered_noans"]);
  const s = m.systems[0];
  assertEquals(
    [s.counts.em0_f1hi, s.counts.em1_f1lo, s.counts.abstained_hasans, s.counts.answered_noans],
    [1, 0, 2, 1],
  );
  assertEquals([s.counts.em0_bem1, s.disagreeing], [null, 4]);
  // The slice went into the report folder, with the report.
  const slice = readNdjson<SliceRecord>(`${out}/slice.ndjson`);
  assertEquals(
    slice.map((r) => `${r.id}:${r.kind.join("+")}`).sort(),
    qs.filter((q) => q.kinds.length > 0).map((q) => `${q.id}:${q.kinds.join("+")}`),
  );
});

/** A label for each slice record: "correct" where F1 ≥ 0.5 or BEM > 0.5, except two. */
const labelOf = (r: SliceRecord) =>
  r.id === "q09" || r.id === "q12"
    ? "incorrect"
    : (r.f1 ?? 0) >= 0.5 || (r.bem ?? 0) > 0.5
    ? "correct"
    : "incorrect";

Deno.test("slice: one record per disagreeing question, seeded order, read back as labels", async () => {
  const out = `${TMP}/slice`;
  const file = `${TMP}/slice.ndjson`;
  const r = await Effect.runPromise(
    report({ inputs: INPUTS, data: DATA, out, ...OPTS, seed: 7, exportSlice: file }),
  );
  const slice = readNdjson<SliceRecord>(file);
  assertEquals(r.slice, { file, records: 13 });
  const json = readJson(`${out}/report.json`);
  const [a, b] = json.datasets[0].metric_disagreements.systems;
  assertEquals(slice.length, a.disagreeing + b.disagreeing);
  // Each record: its question, the system's answer and scores, the kinds by hand, no label yet.
  for (const rec of slice) {
    const q = V1.find((x) => x.id === rec.id)!;
    const isA = rec.system === "A";
    assertEquals(rec.dataset, "hand");
    assertEquals(rec.kind, isA ? q.kinds : q.bKinds);
    assertEquals(rec.prediction, isA ? q.a : q.b);
    assertEquals([rec.golds, rec.label, rec.paragraph, rec.title], [
      q.golds,
      "",
      "Hand_" + V1.indexOf(q),
      "Hand",
    ]);
    assertEquals(rec.bem, isA ? q.bem : undefined);
    assertStringIncludes(rec.context!, rec.prediction!);
  }
  // The order is the seed's shuffle: the same again, another with another seed.
  const datasets = await Effect.runPromise(
    scoreSystems([
      {
        name: "A",
        dataset: "hand",
        data: DATA,
        predictions: `${FULL_A}/pred.json`,
        rows: `${FULL_A}/rows.ndjson`,
        input: FULL_A,
        kind: "full",
      },
      {
        name: "B",
        dataset: "hand",
        data: DATA,
        predictions: PRED_B,
        rows: null,
        input: "B",
        kind: "pred",
      },
    ]),
  );
  assertEquals(sliceRecords(datasets, 0.5, 7), slice);
  assertEquals(
    sliceRecords(datasets, 0.5, 7).map((x) => x.id).sort(),
    sliceRecords(datasets, 0.5, 8).map((x) => x.id).sort(),
  );
  assert(
    JSON.stringify(sliceRecords(datasets, 0.5, 8)) !== JSON.stringify(slice),
    "another seed, another order",
  );
  // Filled in and given back: every record is a label.
  const labels = `${TMP}/labels.ndjson`;
  await Deno.writeTextFile(
    labels,
    slice.map((x) => JSON.stringify({ ...x, label: labelOf(x) }) + "\n").join(""),
  );
  const out2 = `${TMP}/labelled`;
  await Effect.runPromise(report({ inputs: INPUTS, data: DATA, out: out2, ...OPTS, labels }));
  const l = readJson(`${out2}/report.json`).datasets[0].labels!;
  assertEquals(l.systems.map((s) => s.labelled), [a.disagreeing, b.disagreeing]);
  assertEquals(readJson(`${out2}/report.json`).options.labels, labels);
  // A new slice is never written over people's labels.
  for (const args of [{ labels, exportSlice: labels }, { exportSlice: labels }]) {
    const exit = await Effect.runPromiseExit(
      report({ inputs: INPUTS, data: DATA, out: `${TMP}/never`, ...OPTS, ...args }),
    );
    assert(exit._tag === "Failure");
    assertStringIncludes(
      String(exit.cause),
      `--export-slice ${labels} would replace people's labels (${
        args.labels ? "it is the --labels file" : "line 1 has a label"
      }): give another file`,
    );
  }
  assertEquals(readNdjson<SliceRecord>(labels).every((x) => x.label !== ""), true);
  assertEquals((await listDir(TMP)).includes("never"), false);
});

/** Cohen's κ from a 2×2 table in its other closed form: 2(ad − bc) / ((a+b)(b+d) + (a+c)(c+d)). */
const kappa = (tp: number, fp: number, fn: number, tn: number) =>
  (2 * (tp * tn - fn * fp)) / ((tp + fp) * (fp + tn) + (tp + fn) * (fn + tn));

Deno.test("labels: each metric's agreement and κ against the closed form", async () => {
  // Label A's disagreeing questions (and two of its unanimous ones), minimal form.
  const recs = V1.filter((q) => q.kinds.length > 0 || q.id === "q01" || q.id === "q07").map((
    q,
  ) => ({
    system: "A",
    id: q.id,
    label: q.id === "q09" || q.id === "q12"
      ? "incorrect"
      : q.f1 >= 0.5 || q.bem > 0.5
      ? "correct"
      : "incorrect",
  }));
  const file = `${TMP}/agree.ndjson`;
  await Deno.writeTextFile(file, recs.map((r) => JSON.stringify(r) + "\n").join(""));
  const out = `${TMP}/agree`;
  await Effect.runPromise(report({ inputs: INPUTS, data: DATA, out, ...OPTS, labels: file }));
  const l = readJson(`${out}/report.json`).datasets[0].labels!;
  const a = l.systems[0];
  assertEquals([a.labelled, a.correct], [13, recs.filter((r) => r.label === "correct").length]);
  assertEquals(l.systems[1].labelled, 0);
  const y = recs.map((r) => (r.label === "correct" ? 1 : 0));
  const q = recs.map((r) => V1.find((x) => x.id === r.id)!);
  const em = q.map((x) => x.em);
  const f1 = q.map((x) => (x.f1 >= 0.5 ? 1 : 0));
  const bem = q.map((x) => (x.bem > 0.5 ? 1 : 0));
  for (const [name, v] of [["em", em], ["f1", f1], ["bem", bem]] as const) {
    let tp = 0, fp = 0, fn = 0, tn = 0;
    v.forEach((m, i) => {
      if (m && y[i]) tp++;
      else if (m) fp++;
      else if (y[i]) fn++;
      else tn++;
    });
    const g = a.agreement[name]!;
    assertEquals([g.tp, g.fp, g.fn, g.tn, g.labelled], [tp, fp, fn, tn, 13], name);
    assert(Math.abs(g.accuracy! - (100 * (tp + tn)) / 13) < 1e-12, name);
    assert(Math.abs(g.kappa! - kappa(tp, fp, fn, tn)) < 1e-12, `${name}: κ ${g.kappa}`);
    assert(Math.abs(g.precision! - (100 * tp) / (tp + fp)) < 1e-12, name);
    assert(Math.abs(g.recall! - (100 * tp) / (tp + fn)) < 1e-12, name);
  }
  // Spelled out for EM: TP 4 (z05, q10, a16, q01), FP 1 (q09), FN 6, TN 2.
  assertEquals([a.agreement.em.tp, a.agreement.em.fp, a.agreement.em.fn, a.agreement.em.tn], [
    4,
    1,
    6,
    2,
  ]);
  // A table with zero cells and no agreement beyond chance.
  assertEquals(agreement([1, 1, 0, 0], [1, 0, 1, 0]).kappa, 0);
  assertEquals(agreement([1, 1], [1, 1]).kappa, null); // p_e = 1
});

/** A case for the label correction: N questions over strata of the given sizes and labels. */
function makeCase(
  sizes: number[],
  labels: number[][],
  fallback: (number | null)[],
  metrics: number[][],
  seed: number,
): CorrectionInput & { seed: number } {
  // Questions interleaved over the strata, labelled questions in question order.
  const strata: number[] = [];
  const left = [...sizes];
  while (left.some((x) => x > 0)) {
    for (let h = 0; h < sizes.length; h++) {
      if (left[h] > 0) {
        strata.push(h);
        left[h]--;
      }
    }
  }
  return { strata, labels, fallback, metrics, seed };
}

interface RefAnswer {
  value: number;
  se: number;
  boot_sd: number;
  scores: number[];
  replicate: { low: number; high: number; sd: number; bias: { low: number; high: number }[] };
  numpy?: { low: number; high: number; sd: number; bias: { low: number; high: number }[] };
}

/** The normal density at z₀.₉₇₅. */
const PHI = Math.exp(-0.5 * 1.959963984540054 ** 2) / Math.sqrt(2 * Math.PI);

const rnd = (n: number, k: number) =>
  Array.from({ length: n }, (_, i) => (i * 7919 % n < k ? 1 : 0));

/** Synthetic cases of the label correction. */
const CASES = [
  // Strata: unanimous right (no labels), unanimous wrong (some labels), two disagreeing.
  makeCase([180, 70, 30, 20], [[], rnd(10, 1), rnd(18, 11), rnd(20, 5)], [1, 0, null, null], [
    [1, 0, 0, 0],
    [1, 0, 1, 0],
    [1, 0, 1, 1],
  ], 3),
  // Every question labelled: the plain bootstrap of the labelled accuracy.
  makeCase([25, 15], [rnd(25, 20), rnd(15, 4)], [null, null], [[1, 0]], 11),
];
const B = 400, NB = 200_000;

/** A's label in the report test of the corrected accuracy: the rule of labelOf. */
const lab = (q: typeof V1[number]) =>
  q.id === "q09" || q.id === "q12" ? 0 : q.f1 >= 0.5 || q.bem > 0.5 ? 1 : 0;

/** A's strata by hand: EM, F1 ≥ 0.5, BEM > 0.5 verdicts, in order of first question. */
const key = (q: typeof V1[number]) =>
  `em${q.em} f1${q.f1 >= 0.5 ? "hi" : "lo"} bem${q.bem > 0.5 ? 1 : 0}`;
const ORDER: string[] = [];
for (const q of V1) if (!ORDER.includes(key(q))) ORDER.push(key(q));
const verdict = (k: string, m: number) =>
  Number(k.split(" ")[m].slice(-1) === "1" || k.split(" ")[m].endsWith("hi"));
/** A's labelled disagreeing questions as a correction case (B = 300, seed 5). */
const HAND_CASE = {
  strata: V1.map((q) => ORDER.indexOf(key(q))),
  labels: ORDER.map((k) => V1.filter((q) => key(q) === k && q.kinds.length > 0).map(lab)),
  fallback: ORDER.map((k) => (k === "em1 f1hi bem1" ? 1 : k === "em0 f1lo bem0" ? 0 : null)),
  metrics: [0, 1, 2].map((m) => ORDER.map((k) => verdict(k, m))),
  resamples: 300,
  seed: 5,
};

let refPromise: Promise<RefAnswer[]> | undefined;
/** The Python answers for CASES and HAND_CASE, computed once. */
function ref(): Promise<RefAnswer[]> {
  refPromise ??= python(
    ["bench/reference/label_correction.py"],
    JSON.stringify({
      cases: [
        ...CASES.map((c, i) => ({
          strata: c.strata,
          labels: c.labels,
          fallback: c.fallback,
          metrics: c.metrics,
          resamples: B,
          seed: c.seed,
          numpy_resamples: NB,
          numpy_seed: 100 + i,
        })),
        HAND_CASE,
      ],
    }),
  ).then((r) => JSON.parse(r.stdout).cases as RefAnswer[]);
  return refPromise;
}

// Started now, so that it runs beside the tests before the two that read it.
ref().catch(() => {});

Deno.test("labels: the corrected accuracy and its interval against bench/reference/label_correction.py", async () => {
  const cases = CASES;
  const ref_ = await ref();
  const close = (a: number, b: number, tol: number, msg: string) =>
    assert(Math.abs(a - b) <= tol, `${msg}: ${a} vs ${b} (tolerance ${tol})`);
  for (const [i, c] of cases.entries()) {
    const r = labelCorrection(c, { resamples: B, seed: c.seed });
    const p = ref_[i];
    close(r.value, p.value, 1e-15, `case ${i} value`);
    close(r.se, p.se, 1e-15, `case ${i} se`);
    // The same draws: equal to rounding.
    close(r.low, p.replicate.low, 1e-12, `case ${i} low`);
    close(r.high, p.replicate.high, 1e-12, `case ${i} high`);
    close(r.replicateSd, p.replicate.sd, 1e-12, `case ${i} sd`);
    r.metrics.forEach((m, k) => {
      close(m.score, p.scores[k], 1e-15, `case ${i} metric ${k} score`);
      close(m.low, p.replicate.bias[k].low, 1e-12, `case ${i} metric ${k} bias low`);
      close(m.high, p.replicate.bias[k].high, 1e-12, `case ${i} metric ${k} bias high`);
    });
    // NumPy's own bootstrap, and the closed form, to Monte Carlo error.
    const big = labelCorrection(c, { resamples: 20_000, seed: c.seed });
    const n = c.strata.length;
    const tol = 5 * Math.sqrt(0.025 * 0.975 * (1 / 20_000 + 1 / NB)) * p.boot_sd / PHI + 2 / n;
    close(big.low, p.numpy!.low, tol, `case ${i} low vs NumPy`);
    close(big.high, p.numpy!.high, tol, `case ${i} high vs NumPy`);
    close(
      big.replicateSd,
      p.boot_sd,
      5 * p.boot_sd / Math.sqrt(2 * 20_000),
      `case ${i} sd vs exact`,
    );
    close(p.numpy!.sd, p.boot_sd, 5 * p.boot_sd / Math.sqrt(2 * NB), `case ${i} NumPy sd vs exact`);
  }
  // Fully labelled: π̂ is the labelled accuracy and SE² its p(1 − p)/N.
  const all = labelCorrection(cases[1], { resamples: 10, seed: 0 });
  const acc = (20 + 4) / 40;
  close(all.value, acc, 1e-15, "fully labelled value");
  close(all.se, Math.sqrt((acc * (1 - acc)) / 40), 1e-15, "fully labelled se");
});

Deno.test("labels: the report's corrected accuracy is the reference's on its strata", async () => {
  const file = `${TMP}/strata.ndjson`;
  await Deno.writeTextFile(
    file,
    V1.filter((q) => q.kinds.length > 0).map((q) =>
      JSON.stringify({ system: "A", id: q.id, label: lab(q) ? "correct" : "incorrect" }) + "\n"
    ).join(""),
  );
  const out = `${TMP}/strata`;
  await Effect.runPromise(
    report({
      inputs: INPUTS,
      data: DATA,
      out,
      resamples: 300,
      shuffles: 99,
      seed: 5,
      labels: file,
    }),
  );
  const a = readJson(`${out}/report.json`).datasets[0].labels!.systems[0];
  assertEquals(a.strata.map((s) => s.stratum), ORDER);
  assertEquals(a.missing, []);
  const ref_ = (await ref())[2];
  const c = a.corrected!;
  const close = (x: number, y: number, msg: string) =>
    assert(Math.abs(x - y) <= 1e-10, `${msg}: ${x} vs ${y}`);
  close(c.value, 100 * ref_.value, "value");
  close(c.se, 100 * ref_.se, "se");
  close(c.low, 100 * ref_.replicate.low, "low");
  close(c.high, 100 * ref_.replicate.high, "high");
  for (const [k, m] of (["em", "f1", "bem"] as const).entries()) {
    close(c.metrics[m]!.score, 100 * ref_.scores[k], `${m} score`);
    close(c.metrics[m]!.bias.value, 100 * (ref_.scores[k] - ref_.value), `${m} bias`);
    close(c.metrics[m]!.bias.low, 100 * ref_.replicate.bias[k].low, `${m} bias low`);
    close(c.metrics[m]!.bias.high, 100 * ref_.replicate.bias[k].high, `${m} bias high`);
  }
  // By hand: of 16 questions, the 3 on which all metrics say right, and 9 of the 11
  // disagreeing ones labelled correct.
  close(c.value, (100 * (3 + 9)) / 16, "value by hand");
  const html = await Deno.readTextFile(`${out}/report.html`);
  const fig = html.indexOf('<figure id="hand-labels">');
  assert(fig > 0 && html.indexOf("<table>", fig) > fig, "the labels chart, then its table");
  // B has no labels: its disagreeing strata are missing, no corrected score.
  const b = readJson(`${out}/report.json`).datasets[0].labels!.systems[1];
  assertEquals([b.labelled, b.corrected, b.missing], [0, null, ["em0 f1hi", "em1 f1lo"]]);
});

Deno.test("labels: bad records are refused with the line, the question and what is wrong", async () => {
  const datasets = await Effect.runPromise(
    scoreSystems([
      {
        name: "A",
        dataset: "hand",
        data: DATA,
        predictions: `${FULL_A}/pred.json`,
        rows: `${FULL_A}/rows.ndjson`,
        input: FULL_A,
        kind: "full",
      },
      {
        name: "B",
        dataset: "hand",
        data: DATA,
        predictions: PRED_B,
        rows: null,
        input: "B",
        kind: "pred",
      },
    ]),
  );
  const ok = '{"system": "A", "id": "q02", "label": "correct"}';
  const refuse = (lines: string[], want: string) => {
    try {
      parseLabels(lines.join("\n") + "\n", "l.ndjson", datasets);
    } catch (e) {
      assertEquals(String(e), want);
      return;
    }
    throw new Error(`accepted: ${lines.join(" / ")}`);
  };
  refuse([ok, "{not json"], "l.ndjson: line 2: invalid JSON");
  refuse([ok, "[1]"], "l.ndjson: line 2: not a JSON object");
  refuse(['{"label": "correct"}'], 'l.ndjson: line 1: a record needs an "id" (a string)');
  refuse(
    ['{"id": "q02"}'],
    'l.ndjson: line 1: question "q02": no "label" (correct, incorrect, or "" for not labelled yet)',
  );
  refuse(
    ['{"system": "A", "id": "q02", "label": "yes"}'],
    'l.ndjson: line 1: question "q02": label must be "correct" or "incorrect" ("" or null: not labelled yet), got "yes"',
  );
  refuse(
    ['{"system": "C", "id": "q02", "label": "correct"}'],
    'l.ndjson: line 1: question "q02": no system "C" (systems: A, B)',
  );
  refuse(
    ['{"dataset": "x", "id": "q02", "label": "correct"}'],
    'l.ndjson: line 1: question "q02": no dataset "x" in this report (datasets: hand)',
  );
  refuse(
    ['{"system": "A", "id": "nope", "label": "correct"}'],
    `l.ndjson: line 1: question "nope": not a question of the datasets of system "A"`,
  );
  refuse(
    ['{"system": "A", "id": "q02", "prediction": "Broncos", "label": "correct"}'],
    `l.ndjson: line 1: question "q02": prediction "Broncos" here but "the Broncos" in ${FULL_A}/pred.json: a label of another answer (stale)`,
  );
  refuse(
    ['{"id": "q02", "label": "correct"}'],
    'l.ndjson: line 1: question "q02": answered differently by "A", "B": say which with "system" or "prediction"',
  );
  refuse(
    [ok, "", '{"system": "A", "id": "q02", "label": "incorrect"}'],
    'l.ndjson: line 3: question "q02": labelled "correct" for "A" on line 1 and "incorrect" here',
  );
  refuse(
    ['{"system": "A", "id": "q02", "label": ""}'],
    "l.ndjson: no record has a label (correct or incorrect): nothing to compare with",
  );
  // Accepted: a question both answer alike labels both; a prediction picks its system.
  const set = parseLabels(
    '{"id": "z05", "label": "correct"}\n{"id": "q02", "prediction": "Denver Broncos", "label": "correct"}\n{"system": "A", "id": "q02", "label": null}\n',
    "l.ndjson",
    datasets,
  );
  assertEquals(set.count, 3);
  assertEquals(set.labels.get("hand\u0000B")![1], 1);
  assertEquals(set.labels.get("hand\u0000A")![1], -1);
});

Deno.test("labels and slice on the command line: a bad line is one line, exit 2, nothing written", async () => {
  const bad = `${TMP}/bad.ndjson`;
  await Deno.writeTextFile(
    bad,
    '{"system": "A", "id": "q02", "label": "correct"}\n{"system": "A", "id": "q02", "label": "maybe"}\n',
  );
  const parent = await Deno.makeTempDir({ dir: TMP, prefix: "cli-" });
  const r = await runStage("pipeline/report.ts", [
    ...INPUTS,
    "--data",
    DATA,
    "--labels",
    bad,
    "--export-slice",
    `${parent}/slice.ndjson`,
    "--out",
    `${parent}/report`,
  ]);
  assertEquals(r.code, 2, r.stderr);
  assertEquals(
    r.stderr.trimEnd(),
    `report: ${bad}: line 2: question "q02": label must be "correct" or "incorrect" ("" or null: not labelled yet), got "maybe"`,
  );
  assertEquals(await listDir(parent), []);
  // A slice into a folder that does not exist: refused before any work.
  const r2 = await runStage("pipeline/report.ts", [
    ...INPUTS,
    "--data",
    DATA,
    "--export-slice",
    `${parent}/no/slice.ndjson`,
    "--out",
    `${parent}/report`,
  ]);
  assertEquals(r2.code, 2, r2.stderr);
  assertEquals(
    r2.stderr.trimEnd(),
    `report: ${parent}/no/slice.ndjson: no such folder ${parent}/no (for the slice)`,
  );
  assertEquals(await listDir(parent), []);
  // And the whole way: the slice beside the report, its line on stdout.
  const r3 = await runStage("pipeline/report.ts", [
    ...INPUTS,
    "--data",
    DATA,
    "--export-slice",
    `${parent}/slice.ndjson`,
    "--out",
    `${parent}/report`,
    "--resamples",
    "100",
    "--shuffles",
    "99",
  ]);
  assertEquals(r3.code, 0, r3.stderr);
  assertStringIncludes(r3.stdout, `slice → ${parent}/slice.ndjson (13 questions)`);
  assertEquals(readNdjson<SliceRecord>(`${parent}/slice.ndjson`).length, 13);
  assertEquals((await listDir(parent)).sort(), ["report", "slice.ndjson"]);
});
