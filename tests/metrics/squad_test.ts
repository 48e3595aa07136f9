/**
 * metrics/squad.ts (with squad_text.ts and squad_scores.ts) against CPython: every comparison here asks the installed
 * python3 (through bench/reference/*.py and tests/fixtures/squad_oracle.py)
 * for the expected answer, plus hard-coded values for the documented cases.
 *
 * Run: npx -y deno@2.9.6 test -A tests/metrics/squad_test.ts
 */

import * as Effect from "effect/Effect";
import { RawNumber } from "../../io/pyjson.ts";
import {
  answerTokens,
  computeExact,
  computeF1,
  EmptyDatasetError,
  evaluateV1,
  evaluateV2,
  exactMatchScore,
  f1Score,
  formatV1,
  formatV2,
  goldAnswersV2,
  isPythonSpace,
  isPythonWordChar,
  metricMaxOverGroundTruths,
  MissingNaProbError,
  missingPredictionMessage,
  NoGoldAnswersError,
  normalizeAnswer,
  predictionLookup,
  pythonLower,
  type ScoredQuestion,
  SquadV1Accumulator,
  SquadV2Accumulator,
  unansweredMessage,
  versionMismatchMessage,
} from "../../metrics/mod.ts";
import {
  makePerturbations,
  mulberry32,
  predictionsJson,
  writePerturbations,
} from "../../bench/perturb.ts";
import { expand, pythonTables } from "../fixtures/gen_squad_unicode.ts";
import { devJson, runArgv } from "../_util.ts";

const DEV = await devJson();
const ROOT = new URL("../..", import.meta.url).pathname;
const V1 = `${ROOT}bench/reference/evaluate_v1.py`;
const V2 = `${ROOT}bench/reference/evaluate_v2.py`;
const ORACLE = `${ROOT}tests/fixtures/squad_oracle.py`;

function assertEquals(actual: unknown, expected: unknown, msg = ""): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) {
    throw new Error(`${msg}\n  actual:   ${a.slice(0, 2000)}\n  expected: ${e.slice(0, 2000)}`);
  }
}

function assert(cond: boolean, msg: string): void {
  if (!cond) throw new Error(msg);
}

interface Proc {
  code: number;
  stdout: string;
  stderr: string;
}

function python(args: string[], stdin?: string): Promise<Proc> {
  return runArgv(["python3", "-B", ...args], { stdin });
}

interface OracleCases {
  lower: string[];
  normalize: string[];
  normalize_v2: string[];
  em: boolean[];
  f1: number[];
  v2_exact: number[];
  v2_f1: number[];
}

async function oracle(strings: string[], pairs: [string, string][]): Promise<OracleCases> {
  const r = await python([ORACLE, "cases"], JSON.stringify({ strings, pairs }));
  assert(r.code === 0, r.stderr);
  return JSON.parse(r.stdout);
}

interface SquadJson {
  version?: string;
  data: {
    title?: string;
    paragraphs: {
      context?: string;
      qas: {
        id: string;
        question?: string;
        is_impossible?: boolean;
        answers: { text: string; answer_start?: number }[];
        plausible_answers?: { text: string; answer_start: number }[];
      }[];
    }[];
  }[];
}

function questionsOf(ds: SquadJson): ScoredQuestion[] {
  const out: ScoredQuestion[] = [];
  for (const a of ds.data) {
    for (const p of a.paragraphs) {
      for (const q of p.qas) out.push({ id: q.id, answers: q.answers.map((x) => x.text) });
    }
  }
  return out;
}

let devCache: SquadJson | undefined;
function dev(): SquadJson {
  devCache ??= JSON.parse(Deno.readTextFileSync(DEV));
  return devCache!;
}

/** What `evaluate_v1.py` would print, computed in TypeScript. */
function tsV1(questions: ScoredQuestion[], predsText: string): { stdout: string; stderr: string } {
  const get = predictionLookup(JSON.parse(predsText));
  const acc = new SquadV1Accumulator();
  let stderr = "";
  for (const q of questions) {
    const row = acc.add(q, get(q.id));
    if (!row.answered) stderr += unansweredMessage(q.id) + "\n";
  }
  return { stdout: formatV1(acc.result()) + "\n", stderr };
}

// ---------------------------------------------------------------------------
// Unit cases
// ---------------------------------------------------------------------------

const ODD_STRINGS = [
  "The Denver Broncos!",
  "a an the",
  "A AN THE",
  "anthe",
  "thean",
  "the_",
  "_the",
  "3the",
  "the3",
  "éthe",
  "theé",
  "aß",
  "Ωan",
  "the\u0301",
  "\u0301the",
  "a\u0308",
  "the\u200bend",
  "\ufeffthe\ufeff",
  "the\u180eend",
  "x\u00a0the\u2009y\u3000z",
  "a\u0085b\u001cc\u001dd\u001ee\u001ff",
  "tab\tnew\nline\r\nvt\u000bff\u000c",
  "İ",
  "İthe",
  "İstanbul",
  "ẞ",
  "STRAẞE",
  "ΟΔΟΣ",
  "ΟΔΟΣ ΟΔΟΣ.",
  "AΣ",
  "Σ",
  "ΣΑΣ",
  "A\u0301Σ",
  "AΣ\u0301",
  "AΣ\u0301B",
  "A\u{1171E}Σ",
  "AΣ\u{1171E}",
  "A\u{10D50}Σ",
  "AΣ\u{10D50}x",
  "\u{1C89}the",
  "the\u{10D50}",
  "\u{1C89}\u{A7CB}",
  "DİYARBAKIR ıi",
  "ﬁnal ﬃ",
  "ǅ Ǆ ǈ",
  "\u212A\u212B",
  "theʼ aª an² the٣",
  "the·a",
  "\u00adthe",
  "ｔｈｅ ａ",
  "“the”",
  "«a»",
  "the's",
  "",
  " ",
  "...",
  "\ud800the",
  "the\udc00",
  "\u{10400}the",
  "Levi's Stadium in the San Francisco Bay Area",
  "24–10",
];

Deno.test("normalizeAnswer: documented values", () => {
  assertEquals(normalizeAnswer("The Denver Broncos!"), "denver broncos");
  assertEquals(normalizeAnswer("a an the"), "");
  assertEquals(normalizeAnswer("éthe theé aß Ωan 3the _the"), "éthe theé aß ωan 3the");
  // U+0301 is a mark: no word character, so "the" before it is an article.
  assertEquals(normalizeAnswer("the\u0301"), "\u0301");
  // U+0085 and U+001C are Python spaces; U+FEFF and U+200B are not.
  assertEquals(answerTokens("x\u0085y\u001cz"), ["x", "y", "z"]);
  assertEquals(answerTokens("x\ufeffy\u200bz"), ["x\ufeffy\u200bz"]);
  assertEquals(normalizeAnswer("ΟΔΟΣ"), "οδος");
  assertEquals(normalizeAnswer("İthe"), "i\u0307");
  // U+1C89 is a letter to this JavaScript engine, unassigned to CPython 3.11.
  assertEquals(normalizeAnswer("\u{1C89}the"), "\u{1C89}");
  assertEquals(pythonLower("\u{1C89}"), "\u{1C89}");
  assertEquals(pythonLower("A\u{1171E}Σ"), "a\u{1171E}ς");
  assertEquals(exactMatchScore("the Broncos.", "Broncos"), true);
  assertEquals(f1Score("Denver Broncos win", "Broncos"), 0.5);
  assertEquals(f1Score("the", "a"), 0);
  assertEquals(exactMatchScore("the", "a"), true);
  assertEquals(
    metricMaxOverGroundTruths(f1Score, "Broncos", ["Panthers", "Denver Broncos"]),
    0.6666666666666666,
  );
  assertEquals(metricMaxOverGroundTruths(f1Score, "Broncos", []), undefined);
  assertEquals(computeExact("", "an"), 1);
  assertEquals(computeF1("", "the"), 1);
  assertEquals(computeF1("Broncos", ""), 0);
  assertEquals(goldAnswersV2(["The", "Broncos"]), ["Broncos"]);
  assertEquals(goldAnswersV2([]), [""]);
  assertEquals(isPythonWordChar(0x5f) && !isPythonWordChar(0x301), true);
  assertEquals(isPythonSpace(0x1f) && !isPythonSpace(0x180e), true);
});

Deno.test("normalize / EM / F1 / v2 agree with python on the odd cases", async () => {
  const pairs: [string, string][] = [];
  for (const p of ODD_STRINGS) {
    for (const g of ["the Denver Broncos", "ΟΔΟΣ", "", "a", "éthe", "İthe", "x y x"]) {
      pairs.push([p, g]);
    }
  }
  pairs.push(["x x y", "x y y"], ["a b c d", "b d e"], ["1 2 3", "1 2 3 4 5 6 7"]);
  const py = await oracle(ODD_STRINGS, pairs);
  assertEquals(ODD_STRINGS.map(pythonLower), py.lower, "lower");
  assertEquals(ODD_STRINGS.map(normalizeAnswer), py.normalize, "normalize v1");
  assertEquals(ODD_STRINGS.map(normalizeAnswer), py.normalize_v2, "normalize v2");
  assertEquals(pairs.map(([p, g]) => exactMatchScore(p, g)), py.em, "em");
  assertEquals(pairs.map(([p, g]) => f1Score(p, g)), py.f1, "f1");
  assertEquals(pairs.map(([p, g]) => computeExact(g, p)), py.v2_exact, "v2 exact");
  assertEquals(pairs.map(([p, g]) => computeF1(g, p)), py.v2_f1, "v2 f1");
});

Deno.test("normalize / F1 agree with python on 6000 random odd strings", async () => {
  const alphabet = Array.from(
    "aentAENT hx_3é.,'-\u0301\u00a0\u0085\u001c\ufeff\u200bİıΣσςΟΔẞßﬁ\u{1C89}\u{1171E}\u{10D50}\u2009\u3000\t\nǅ\u212A",
  );
  const rng = mulberry32(7);
  const strings: string[] = [];
  for (let i = 0; i < 6000; i++) {
    const n = Math.floor(rng() * 14);
    let s = "";
    for (let j = 0; j < n; j++) {
      s += rng() < 0.25
        ? ["the", "a", "an", "The", " the ", "AN"][Math.floor(rng() * 6)]
        : alphabet[Math.floor(rng() * alphabet.length)];
    }
    strings.push(s);
  }
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < strings.length; i += 2) pairs.push([strings[i], strings[i + 1]]);
  const py = await oracle(strings, pairs);
  assertEquals(strings.map(pythonLower), py.lower, "lower");
  assertEquals(strings.map(normalizeAnswer), py.normalize, "normalize");
  assertEquals(pairs.map(([p, g]) => f1Score(p, g)), py.f1, "f1");
  assertEquals(pairs.map(([p, g]) => computeF1(g, p)), py.v2_f1, "v2 f1");
});

// ---------------------------------------------------------------------------
// Exhaustive character classes
// ---------------------------------------------------------------------------

const tables = pythonTables();

Deno.test("\\w: isPythonWordChar matches python re over all code points", async () => {
  const word = expand((await tables).word);
  const bad: string[] = [];
  let count = 0;
  for (let cp = 0; cp < 0x110000; cp++) {
    if (word[cp]) count++;
    if (isPythonWordChar(cp) !== (word[cp] === 1)) bad.push(cp.toString(16));
  }
  assertEquals(bad.slice(0, 50), [], `${bad.length} code points differ`);
  assert(count > 130000, `python word class too small: ${count}`);
});

Deno.test("isspace: isPythonSpace matches str.isspace over all code points", async () => {
  const space = new Set((await tables).space);
  const bad: string[] = [];
  for (let cp = 0; cp < 0x110000; cp++) {
    if (isPythonSpace(cp) !== space.has(cp)) bad.push(cp.toString(16));
  }
  assertEquals(bad, []);
  assertEquals(space.size, 29);
  // Sanity: JavaScript's \s is a different set.
  assert(!/\s/.test("\u001c") && /\s/.test("\ufeff"), "JS \\s changed");
});

Deno.test("lower + Final_Sigma: pythonLower matches str.lower over all code points", async () => {
  const t = await tables;
  const ign = expand(t.ignorable);
  const cased = expand(t.cased);
  const bad: string[] = [];
  for (let cp = 0; cp < 0x110000; cp++) {
    const c = String.fromCodePoint(cp);
    const want = t.lower[cp] ?? c;
    if (pythonLower(c) !== want) bad.push(`lower ${cp.toString(16)}`);
    const afterA = pythonLower("A" + c + "\u03a3").endsWith("\u03c2");
    const alone = pythonLower(c + "\u03a3").endsWith("\u03c2");
    if (afterA !== (ign[cp] === 1 || cased[cp] === 1)) bad.push(`ctx ${cp.toString(16)}`);
    if (alone !== (cased[cp] === 1)) bad.push(`cased ${cp.toString(16)}`);
    if (bad.length > 50) break;
  }
  assertEquals(bad, []);
});

// ---------------------------------------------------------------------------
// SQuAD v1.1 on dev
// ---------------------------------------------------------------------------

Deno.test("dev: the first gold answer scores exactly 100/100", async () => {
  const ds = dev();
  const qs = questionsOf(ds);
  assertEquals(qs.length, 10570);
  const preds = new Map(qs.map((q) => [q.id, q.answers[0]]));
  const acc = new SquadV1Accumulator();
  for (const q of qs) acc.add(q, preds.get(q.id));
  assertEquals(formatV1(acc.result()), '{"exact_match": 100.0, "f1": 100.0}');
  const r = await Effect.runPromise(evaluateV1(qs, preds));
  assertEquals(r, { exact_match: 100, f1: 100, total: 10570, answered: 10570 });
});

Deno.test("dev: every perturbation file scores like evaluate_v1.py (stdout and stderr)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "squad_perturb_" });
  try {
    const paths = await writePerturbations(DEV, dir);
    assert(paths.length >= 6, "at least 6 files");
    const qs = questionsOf(dev());
    const results = await Promise.all(paths.map((p) => python([V1, DEV, p])));
    const seen = new Set<string>();
    for (let i = 0; i < paths.length; i++) {
      const py = results[i];
      assertEquals(py.code, 0, `${paths[i]}: ${py.stderr.slice(-500)}`);
      const ts = tsV1(qs, await Deno.readTextFile(paths[i]));
      assertEquals(ts.stdout, py.stdout, `stdout of ${paths[i]}`);
      assertEquals(ts.stderr, py.stderr, `stderr of ${paths[i]}`);
      seen.add(py.stdout);
    }
    assertEquals(results[0].stdout, '{"exact_match": 100.0, "f1": 100.0}\n');
    assertEquals(seen.size, paths.length, "every file scores differently");
    assert(results.some((r) => r.stderr.split("\n").length > 100), "unanswered lines present");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("perturbations are deterministic and cover the odd cases", () => {
  const a = makePerturbations(dev());
  const b = makePerturbations(dev());
  assert(a.length >= 6, "at least 6 files");
  for (let i = 0; i < a.length; i++) {
    assertEquals(predictionsJson(a[i].predictions), predictionsJson(b[i].predictions), a[i].name);
  }
  const all = a.flatMap((f) => [...f.predictions.values()]).join("\u0000");
  for (
    const needle of [
      "éthe",
      "\u3000",
      "\u0085",
      "\ufeff",
      "ΟΔΟΣ",
      "İ",
      "ẞ",
      "ﬁ",
      "the\u0301",
      "\u001f",
    ]
  ) {
    assert(all.includes(needle), `no prediction contains ${JSON.stringify(needle)}`);
  }
  assert([...a[6].predictions.values()].includes(""), "empty predictions");
});

Deno.test("v1: zero gold answers, empty dataset and version mismatch", async () => {
  const acc = new SquadV1Accumulator();
  acc.add({ id: "ok", answers: ["x"] }, "x");
  let caught: unknown;
  try {
    acc.add({ id: "q-empty", answers: [] }, "x");
  } catch (e) {
    caught = e;
  }
  assert(caught instanceof NoGoldAnswersError, "typed error");
  const err = caught as NoGoldAnswersError;
  assertEquals([err._tag, err.id, err.index], ["NoGoldAnswersError", "q-empty", 1]);
  assert(err.message.includes("q-empty"), err.message);
  // unanswered questions without gold answers are fine, as in the official script
  acc.add({ id: "q-empty", answers: [] }, undefined);
  assertEquals(acc.total, 2);

  const failed = await Effect.runPromise(
    Effect.flip(
      evaluateV1([{ id: "a", answers: ["x"] }, { id: "b", answers: [] }], { a: "x", b: "y" }),
    ),
  );
  assertEquals([failed._tag, (failed as NoGoldAnswersError).id], ["NoGoldAnswersError", "b"]);
  const empty = await Effect.runPromise(Effect.flip(evaluateV1([], {})));
  assert(empty instanceof EmptyDatasetError, "empty dataset");

  const dir = await Deno.makeTempDir();
  try {
    const ds: SquadJson = {
      version: "2.0",
      data: [{
        paragraphs: [{ qas: [{ id: "a", answers: [{ text: "x" }] }, { id: "b", answers: [] }] }],
      }],
    };
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify(ds));
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ a: "x", b: "y" }));
    const py = await python([V1, `${dir}/d.json`, `${dir}/p.json`]);
    assert(py.code !== 0 && py.stderr.includes("max()"), "python crashes on zero gold answers");
    assertEquals(py.stderr.split("\n")[0], versionMismatchMessage("2.0"));
    // predictions for "constructor" etc. are not found on plain objects
    await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ a: "x" }));
    ds.data[0].paragraphs[0].qas[1] = { id: "constructor", answers: [{ text: "y" }] };
    ds.version = "1.1";
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify(ds));
    const py2 = await python([V1, `${dir}/d.json`, `${dir}/p.json`]);
    const ts2 = tsV1(questionsOf(ds), JSON.stringify({ a: "x" }));
    assertEquals([ts2.stdout, ts2.stderr], [py2.stdout, py2.stderr]);
    assertEquals(ts2.stdout, '{"exact_match": 50.0, "f1": 50.0}\n');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("v1: TS evaluation of dev beats the python process", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = makePerturbations(dev());
    const predPath = `${dir}/p.json`;
    await Deno.writeTextFile(predPath, predictionsJson(files[7].predictions));
    const t0 = performance.now();
    const py = await python([V1, DEV, predPath]);
    const pyMs = performance.now() - t0;
    const t1 = performance.now();
    const ds: SquadJson = JSON.parse(await Deno.readTextFile(DEV));
    const ts = tsV1(questionsOf(ds), await Deno.readTextFile(predPath));
    const tsMs = performance.now() - t1;
    assertEquals(ts.stdout, py.stdout);
    console.log(`python process ${pyMs.toFixed(0)} ms, TS read+parse+score ${tsMs.toFixed(0)} ms`);
    assert(tsMs < pyMs, `TS ${tsMs} ms vs python ${pyMs} ms`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// SQuAD v2.0
// ---------------------------------------------------------------------------

const V2_DATA: SquadJson = {
  version: "v2.0",
  data: [{
    title: "Broncos",
    paragraphs: [{
      context: "The Denver Broncos beat the Carolina Panthers 24–10 in 1999 at Levi's Stadium.",
      qas: [
        {
          id: "h1",
          is_impossible: false,
          answers: [{ text: "Denver Broncos", answer_start: 4 }, {
            text: "the Denver Broncos",
            answer_start: 0,
          }],
        },
        {
          id: "n1",
          is_impossible: true,
          answers: [],
          plausible_answers: [{ text: "Carolina Panthers", answer_start: 28 }],
        },
        { id: "h2", is_impossible: false, answers: [{ text: "The", answer_start: 0 }] },
        {
          id: "h3",
          is_impossible: false,
          answers: [{ text: "1999", answer_start: 55 }, { text: "in 1999", answer_start: 52 }],
        },
        {
          id: "n2",
          is_impossible: true,
          answers: [],
          plausible_answers: [{ text: "24–10", answer_start: 46 }],
        },
      ],
    }, {
      context: "ΟΔΟΣ and more.",
      qas: [
        { id: "h4", is_impossible: false, answers: [{ text: "ΟΔΟΣ", answer_start: 0 }] },
        {
          id: "n3",
          is_impossible: true,
          answers: [],
          plausible_answers: [{ text: "more", answer_start: 9 }],
        },
        {
          id: "h5",
          is_impossible: false,
          answers: [{ text: "Levi's Stadium", answer_start: 0 }, {
            text: "Stadium",
            answer_start: 0,
          }],
        },
        // a repeated id: later values win, first position stays
        { id: "h1", is_impossible: false, answers: [{ text: "Broncos", answer_start: 11 }] },
      ],
    }],
  }],
};

interface V2Case {
  name: string;
  preds: Record<string, string>;
  naProbs?: [string, string][];
  thresh?: number;
  outFile?: boolean;
}

const V2_PRED_ALL = {
  h1: "the Broncos",
  n1: "Carolina Panthers",
  h2: "a",
  h3: "1998 or 1999",
  n2: "24–10",
  h4: "οδος!",
  n3: "more",
  h5: "Stadium Levi",
};

const V2_CASES: V2Case[] = [
  { name: "all predictions", preds: V2_PRED_ALL },
  { name: "empty for unanswerable", preds: { ...V2_PRED_ALL, n1: "", n2: "", n3: "the" } },
  {
    name: "na probs, threshold 0.5",
    preds: { ...V2_PRED_ALL, n2: "" },
    naProbs: [
      ["h5", "0.2"],
      ["n1", "0.9"],
      ["h1", "0.2"],
      ["h2", "1"],
      ["n2", "0.7"],
      ["h3", "0.3"],
      ["x", "0.1"],
      ["h4", "0.6"],
      ["n3", "0.25"],
    ],
    thresh: 0.5,
  },
  {
    name: "na probs, default threshold, --out-file",
    preds: V2_PRED_ALL,
    naProbs: [
      ["h1", "0"],
      ["n1", "1"],
      ["h2", "0.5"],
      ["h3", "0.5"],
      ["n2", "2e-1"],
      ["h4", "0.1"],
      ["n3", "0.99"],
      ["h5", "0.0"],
    ],
    outFile: true,
  },
  { name: "missing predictions", preds: { h1: "Broncos", n1: "", h3: "1999", h4: "ΟΔΟΣ" } },
  { name: "only unanswerable scored", preds: { n1: "", n2: "x", n3: "" } },
];

Deno.test("v2: SquadV2Accumulator output === evaluate_v2.py, char for char", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const dataPath = `${dir}/data.json`;
    await Deno.writeTextFile(dataPath, JSON.stringify(V2_DATA));
    const qs = questionsOf(V2_DATA);
    for (const c of V2_CASES) {
      const predPath = `${dir}/pred.json`;
      await Deno.writeTextFile(predPath, JSON.stringify(c.preds));
      const args = [V2, dataPath, predPath];
      let naProbs: Map<string, RawNumber> | undefined;
      if (c.naProbs) {
        naProbs = new Map(c.naProbs.map(([k, v]) => [k, new RawNumber(v)]));
        await Deno.writeTextFile(
          `${dir}/na.json`,
          `{${c.naProbs.map(([k, v]) => `"${k}": ${v}`).join(", ")}}`,
        );
        args.push("--na-prob-file", `${dir}/na.json`);
      }
      if (c.thresh !== undefined) args.push("--na-prob-thresh", String(c.thresh));
      if (c.outFile) args.push("--out-file", `${dir}/eval.json`);
      const py = await python(args);
      assertEquals(py.code, 0, `${c.name}: ${py.stderr}`);

      const acc = new SquadV2Accumulator({ naProbs, naProbThreshold: c.thresh });
      const get = predictionLookup(c.preds);
      let stderr = "";
      for (const q of qs) {
        const row = acc.add(q, get(q.id));
        if (!row.answered) stderr += missingPredictionMessage(q.id) + "\n";
      }
      const result = acc.result();
      if (c.outFile) {
        assertEquals(py.stdout, "", c.name);
        assertEquals(
          formatV2(result, { indent: null }),
          await Deno.readTextFile(`${dir}/eval.json`),
          c.name,
        );
      } else {
        assertEquals(formatV2(result) + "\n", py.stdout, c.name);
      }
      assertEquals(stderr, py.stderr, `${c.name} stderr`);
      const viaEffect = await Effect.runPromise(
        evaluateV2(qs, c.preds, { naProbs, naProbThreshold: c.thresh }),
      );
      assertEquals(viaEffect, result, `${c.name} evaluateV2`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("v2: documented values and typed errors", async () => {
  const qs = questionsOf(V2_DATA);
  const r = await Effect.runPromise(evaluateV2(qs, V2_PRED_ALL));
  assertEquals(r.total, 8);
  assertEquals([r.HasAns_total, r.NoAns_total, r.NoAns_exact], [5, 3, 0]);
  const rows: string[] = [];
  await Effect.runPromise(
    evaluateV2(qs, V2_PRED_ALL, {
      onRow: (row) => rows.push(`${row.id}:${row.exact}:${row.reference}`),
    }),
  );
  assertEquals(rows.slice(0, 3), ["h1:0:Denver Broncos", "n1:0:", "h2:1:"]);
  const missing = await Effect.runPromise(
    Effect.flip(evaluateV2(qs, V2_PRED_ALL, { naProbs: new Map([["h1", 0.5]]) })),
  );
  assert(missing instanceof MissingNaProbError && missing.id === "n1", "missing na prob");
  const empty = await Effect.runPromise(Effect.flip(evaluateV2(qs, {})));
  assertEquals(empty._tag, "EmptyDatasetError");
});
