/**
 * `report --diff RUN_A RUN_B` on two hand-made `full` folders (no encoder
 * runs): 12 questions in 2 articles and 5 paragraphs, B's answers changed
 * from A's on a known set of questions. The diff gives exactly those: the
 * answers changed, EM gained and lost, F1 up and down, the changed
 * questions in the documented order, the provenance keys that differ
 * (and `--out` apart); every interval and p equals the function of
 * `metrics/stats` called directly on EM/F1 vectors worked out by hand and
 * paragraph ids written by hand. The command prints it and writes
 * `report.{json,md,html}` with `--out`; it refuses, with one line, exit 2
 * and nothing written: a RUN without provenance.json (naming it), two runs
 * on different question sets, a prediction file, one INPUT, `--latex`.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../_assert.ts";
import { runStage } from "../_util.ts";
import {
  mcnemarPaired,
  pairedBootstrap,
  pairedClusterBootstrap,
  pairedClusterRandomization,
  pairedRandomization,
} from "../../metrics/stats/mod.ts";
import { reportDiff } from "../../report/mod.ts";
import { pairSystems } from "../../report/diff.ts";
import { runProvenance } from "../../runs/summary/provenance.ts";

const TMP = await Deno.makeTempDir({ prefix: "pv-report-diff-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});
const OPTS = { resamples: 300, shuffles: 499, seed: 5 };
const REPORT_PERMS = ["--allow-read", "--allow-write", "--allow-env"];

/** Article, then paragraph sizes (as in cluster_test.ts). */
const LAYOUT = [[3, 2], [2, 3, 2]];
const PARAGRAPH = ["p0", "p0", "p0", "p1", "p1", "p2", "p2", "p3", "p3", "p3", "p4", "p4"];
/**
 * Each run's answer to q1..q12: `e` the gold answer, `E` the gold in
 * capitals (another string, the same EM 1 and F1 1), `p` its last two of
 * three words (EM 0, F1 0.8), `w` a word not in it (EM 0, F1 0).
 */
const A = "eeepeeeepeew";
const B = "eEwwpepewwpe";
/** By hand: the questions whose answer changed, and which way EM and F1 went. */
const CHANGED = ["q2", "q3", "q4", "q5", "q7", "q9", "q10", "q11", "q12"];
const EM_GAINED = ["q12"], EM_LOST = ["q3", "q5", "q7", "q10", "q11"];
const F1_UP = ["q12"], F1_DOWN = ["q3", "q4", "q5", "q7", "q9", "q10", "q11"];
/** Largest |ΔF1| first (1: q3 q10 q12; 0.8: q4 q9; 0.2: q5 q7 q11; 0: q2), then dataset order. */
const ORDER = ["q3", "q10", "q12", "q4", "q9", "q5", "q7", "q11", "q2"];

const P = (2 * (2 / 3)) / (1 + 2 / 3);
const em = (s: string) => Float64Array.from(s, (c) => c === "e" || c === "E" ? 1 : 0);
const f1 = (s: string) =>
  Float64Array.from(s, (c) => c === "e" || c === "E" ? 1 : c === "p" ? P : 0);

const gold = (i: number) => `alpha${i} beta gamma`;
const answer = (c: string, i: number) =>
  c === "e" ? gold(i) : c === "E" ? gold(i).toUpperCase() : c === "p" ? `beta gamma` : `zeta${i}`;

function squad(ids: (q: number) => string) {
  let q = 0;
  return {
    version: "1.1",
    data: LAYOUT.map((paras, a) => ({
      title: `Article ${a}`,
      paragraphs: paras.map((size) => ({
        context: "Some words about the topic.",
        qas: Array.from({ length: size }, () => {
          q++;
          return {
            id: ids(q),
            question: `What is thing ${q}?`,
            answers: [{ text: gold(q), answer_start: 0 }],
          };
        }),
      })),
    })),
  };
}

const DATA = `${TMP}/d.json`;
await Deno.writeTextFile(DATA, JSON.stringify(squad((q) => `q${q}`)));
const OTHER = `${TMP}/other.json`;
await Deno.writeTextFile(OTHER, JSON.stringify(squad((q) => q === 7 ? "x7" : `q${q}`)));

/** A `full` folder with `answers`, its block made by `runProvenance` with `dtype` and `sha`. */
async function fullFolder(
  dir: string,
  answers: string,
  o: { data?: string; dtype: string; sha: string; provenance?: boolean; ids?: string[] },
) {
  await Deno.mkdir(dir, { recursive: true });
  const data = o.data ?? DATA;
  await Deno.writeTextFile(
    `${dir}/summary.json`,
    JSON.stringify({ data, encoder: { name: "enc", dim: 4, sparse: false } }),
  );
  const preds: Record<string, string> = {};
  [...answers].forEach((c, i) => preds[o.ids?.[i] ?? `q${i + 1}`] = answer(c, i + 1));
  await Deno.writeTextFile(`${dir}/pred.json`, JSON.stringify(preds));
  if (o.provenance === false) return;
  const block = runProvenance({
    command: "full",
    flags: { encoder: "enc", dtype: o.dtype, out: dir.slice(TMP.length + 1) },
    seeds: {},
    config: { file: `${dir}/full.ts`, models: [{ abbr: "enc", dtype: o.dtype }] },
    systems: [{
      model: "enc",
      dataset: "data",
      data: { path: data, sha256: "d".repeat(64), bytes: 1 },
      encoder: {
        name: "enc",
        model: null,
        dtype: o.dtype as "f16" | "f32",
        sparse: false,
        device: "cpu",
        files: { context: { "c.onnx": "c".repeat(64) }, question: { "q.onnx": "e".repeat(64) } },
      },
      dumps: {
        context: { path: "dumps/context_emb", sha256: o.sha.repeat(64), files: 2, bytes: 10 },
        question: { path: "dumps/question_emb", sha256: "f".repeat(64), files: 12, bytes: 20 },
      },
      predictions: { path: "pred.json", sha256: o.sha.repeat(64), bytes: 3 },
      rows: null,
    }],
  });
  await Deno.writeTextFile(`${dir}/provenance.json`, JSON.stringify(block, null, 2));
}

const RA = `${TMP}/a`, RB = `${TMP}/b`;
await fullFolder(RA, A, { dtype: "f16", sha: "1" });
await fullFolder(RB, B, { dtype: "f32", sha: "2" });

Deno.test("report --diff: the changed questions, gained/lost, up/down and provenance keys are exactly the hand-made ones", async () => {
  const r = await Effect.runPromise(reportDiff({ a: RA, b: RB, ...OPTS, top: 4 }));
  const d = r.report;
  assertEquals(d.format, "phraseval-diff/1");
  assertEquals(d.provenance_diff, {
    changed: [
      { key: "flags.dtype", a: "f16", b: "f32" },
      { key: "config.models[0].dtype", a: "f16", b: "f32" },
    ],
    location: [{ key: "flags.out", a: "a", b: "b" }],
  });
  assertEquals(d.pairs.length, 1);
  const p = d.pairs[0];
  assertEquals([p.system_a, p.system_b, p.questions], ["enc", "enc", 12]);
  assertEquals(p.provenance, {
    changed: [
      { key: "system.encoder.dtype", a: "f16", b: "f32" },
      { key: "system.dumps.context.sha256", a: "1".repeat(64), b: "2".repeat(64) },
      { key: "system.predictions.sha256", a: "1".repeat(64), b: "2".repeat(64) },
    ],
    location: [],
  });
  assertEquals(p.answers_changed, CHANGED.length);
  assertEquals(p.changed.map((q) => q.id), ORDER);
  const byId = new Map(p.changed.map((q) => [q.id, q]));
  assertEquals(
    p.changed.filter((q) => q.em_b > q.em_a).map((q) => q.id).sort(),
    [...EM_GAINED].sort(),
  );
  assertEquals(p.changed.filter((q) => q.em_b < q.em_a).map((q) => q.id).sort(), EM_LOST.sort());
  assertEquals([p.em.up, p.em.down], [EM_GAINED.length, EM_LOST.length]);
  assertEquals([p.f1!.up, p.f1!.down], [F1_UP.length, F1_DOWN.length]);
  const q2 = byId.get("q2")!;
  assertEquals([q2.a, q2.b, q2.em_a, q2.em_b, q2.f1_a, q2.f1_b], [
    gold(2),
    gold(2).toUpperCase(),
    1,
    1,
    1,
    1,
  ]);
  assertEquals([byId.get("q4")!.f1_a, byId.get("q4")!.f1_b], [P, 0]);
  // Scores: the official totals, 100 · sum / n.
  assertEquals([p.em.a, p.em.b], [100 * 9 / 12, 100 * 5 / 12]);
  // The stats = metrics/stats on the hand-made vectors (B − A).
  for (
    const [name, t, a, b] of [["em", p.em, em(A), em(B)], ["f1", p.f1!, f1(A), f1(B)]] as const
  ) {
    const boot = pairedBootstrap([b, a], { resamples: OPTS.resamples, seed: OPTS.seed })
      .differences[0];
    const rand = pairedRandomization(b, a, { shuffles: OPTS.shuffles, seed: OPTS.seed });
    const cb = pairedClusterBootstrap([b, a], PARAGRAPH, {
      resamples: OPTS.resamples,
      seed: OPTS.seed,
    }).differences[0];
    const cr = pairedClusterRandomization(b, a, PARAGRAPH, {
      shuffles: OPTS.shuffles,
      seed: OPTS.seed,
    });
    assertEquals(
      [t.difference, t.low, t.high, t.randomization_p],
      [
        100 * b.reduce((x, y) => x + y, 0) / 12 - 100 * a.reduce((x, y) => x + y, 0) / 12,
        100 * boot.low,
        100 * boot.high,
        rand.pValue,
      ],
      name,
    );
    assertEquals(t.cluster, {
      by: "paragraph",
      clusters: 5,
      low: 100 * cb.low,
      high: 100 * cb.high,
      randomization_p: cr.pValue,
    }, name);
    assert(Math.abs(t.difference - 100 * boot.mean) < 1e-12, name);
  }
  assertEquals(p.em.mcnemar_p, mcnemarPaired(em(B), em(A)).pValue);
  // b = 1, c = 5: 2·(1 + 6)/2⁶
  assert(Math.abs(p.em.mcnemar_p! - 14 / 64) < 1e-15, String(p.em.mcnemar_p));
  assertEquals(p.f1!.mcnemar_p, undefined);
  // The text shows the first `top` questions and every count.
  assertStringIncludes(r.text, "answers changed: 9 of 12 (75.00%)");
  assertStringIncludes(r.text, "1 gained, 5 lost");
  assertStringIncludes(r.text, "1 up, 7 down");
  assertStringIncludes(r.text, "changed questions (4 of 9, largest |ΔF1| first):");
  assertStringIncludes(r.text, '  flags.dtype             "f16" → "f32"');
  assertStringIncludes(r.text, '  flags.out (where written)  "a" → "b"');
  assertEquals(r.out, null);
});

Deno.test("report --diff (command): prints the diff, writes report.{json,md,html} with --out; report.json lists every changed question", async () => {
  const out = `${TMP}/diff-out`;
  const r = await runStage(
    "pipeline/report.ts",
    ["--diff", RA, RB, "--out", out, "--top", "2", "--resamples", "300", "--shuffles", "499"],
    { permissions: REPORT_PERMS },
  );
  assertEquals(r.code, 0, r.stderr);
  assertEquals(r.stderr, "");
  assertStringIncludes(r.stdout, `report --diff: A = ${RA}, B = ${RB}`);
  assertStringIncludes(r.stdout, "changed questions (2 of 9, largest |ΔF1| first):");
  assertStringIncludes(r.stdout, `report --diff: ${out}/report.{json,md,html}`);
  const names = [...Deno.readDirSync(out)].map((e) => e.name).sort();
  assertEquals(names, ["report.html", "report.json", "report.md"]);
  const json = JSON.parse(Deno.readTextFileSync(`${out}/report.json`));
  assertEquals(json.pairs[0].changed.map((q: { id: string }) => q.id), ORDER);
  assertEquals(json.provenance.command, "report");
  assertEquals(json.provenance.flags.diff, true);
  assertEquals(json.provenance.seeds, { bootstrap_randomization: 0 });
  assertEquals(json.provenance.inputs.map((i: { input: string }) => i.input), [RA, RB]);
  const md = Deno.readTextFileSync(`${out}/report.md`);
  assertStringIncludes(md, '| flags.dtype | `"f16"` | `"f32"` |');
  assertStringIncludes(md, "is written `<run>` and this repository's `<repo>`");
  assertStringIncludes(md, "2 of the 9 questions whose answer or score changed");
  assertEquals(md.split("\n").filter((l) => l.startsWith("| q")).length, 2);
  assertStringIncludes(Deno.readTextFileSync(`${out}/report.html`), "<h1>Diff of two runs</h1>");
});

/** Runs `report` with `args`; checks exit 2, one stderr line matching `re`, nothing at `out`. */
async function refused(args: string[], re: RegExp) {
  const out = `${TMP}/refused-out`;
  const r = await runStage("pipeline/report.ts", [...args, "--out", out], {
    permissions: REPORT_PERMS,
  });
  assertEquals(r.code, 2, r.stderr);
  assertEquals(r.stderr.split("\n").filter((l) => l !== "").length, 1, r.stderr);
  assertMatch(r.stderr, re);
  assertEquals(r.stdout, "");
  let there = true;
  try {
    Deno.lstatSync(out);
  } catch {
    there = false;
  }
  assert(!there, "nothing written");
}

Deno.test("report --diff refuses: no provenance.json (named), another question set, a prediction file, one INPUT, --latex", async () => {
  const old = `${TMP}/old`;
  await fullFolder(old, B, { dtype: "f32", sha: "2", provenance: false });
  await refused(
    ["--diff", RA, old],
    new RegExp(
      `^report: ${old}/provenance\\.json: no provenance\\.json: a run folder from before provenance blocks`,
    ),
  );
  const other = `${TMP}/other`;
  const ids = Array.from({ length: 12 }, (_, i) => i === 6 ? "x7" : `q${i + 1}`);
  await fullFolder(other, B, { data: OTHER, dtype: "f32", sha: "2", ids });
  await refused(["--diff", RA, other], /different question sets \(question "x7" differs\)/);
  await Deno.writeTextFile(`${TMP}/p.json`, "{}");
  await refused(
    ["--diff", RA, `X=${TMP}/p.json`, "--data", DATA],
    /--diff compares two run folders/,
  );
  await refused(["--diff", RA], /--diff takes two run folders RUN_A RUN_B, got 1/);
  await refused(["--diff", RA, RB, "--latex"], /--latex does not go with --diff/);
});

Deno.test("pairSystems: one system each pairs them; else by model and dataset, the rest listed", () => {
  const spec = (name: string, dataset: string) =>
    ({ name, dataset, data: "", predictions: "", rows: null, input: "", kind: "run" }) as const;
  const side = (specs: ReturnType<typeof spec>[]) => ({ input: "", specs, block: {} });
  const one = pairSystems(side([spec("x", "d")]), side([spec("y", "e")]));
  assertEquals(one.pairs.map(([s, t]) => [s.name, t.name]), [["x", "y"]]);
  const many = pairSystems(
    side([spec("m1", "d1"), spec("m2", "d1"), spec("m1", "d2")]),
    side([spec("m1", "d2"), spec("m1", "d1"), spec("m3", "d1")]),
  );
  assertEquals(
    many.pairs.map(([s, t]) => [`${s.name}/${s.dataset}`, `${t.name}/${t.dataset}`]),
    [["m1/d1", "m1/d1"], ["m1/d2", "m1/d2"]],
  );
  assertEquals(many.unpaired, { a: ["m2/d1"], b: ["m3/d1"] });
});
