/**
 * `metrics/mrqa.ts` and `metrics/mlqa.ts` against the Python references
 * `bench/reference/mrqa_eval.py` and `bench/reference/mlqa_eval.py` (one
 * Python process each), number for number (the floats compared as float64,
 * which is digit for digit for Python's shortest repr), on seeded generated
 * records (`./_qa_text.ts`: Unicode, CJK, Arabic, combining marks, the
 * scripts' punctuation and whitespace, empty predictions, empty answers, many
 * answers, every MLQA language, the XQuAD languages the script refuses).
 */
import { assert, assertEquals } from "../_assert.ts";
import { python } from "../_util.ts";
import {
  formatMlqa,
  formatMrqa,
  MLQA_LANGUAGES,
  mlqaEvaluate,
  mlqaNormalize,
  mlqaScores,
  mrqaEvaluate,
  mrqaScores,
} from "../../metrics/mod.ts";
import { TextGen } from "./_qa_text.ts";
import { SAME_CPYTHON } from "./_cpython.ts";

type Pair = [string, string[]];

function answersOf(t: TextGen): string[] {
  const n = t.below(10) === 0 ? 0 : t.below(6) === 0 ? 8 + t.below(25) : 1 + t.below(3);
  return Array.from({ length: n }, () => t.text(4));
}

function pairs(t: TextGen, n: number): Pair[] {
  const out: Pair[] = [];
  for (let i = 0; i < n; i++) {
    const answers = answersOf(t);
    const p = t.below(12) === 0 ? "" : answers.length > 0 ? t.near(t.pick(answers)) : t.text(4);
    out.push([p, answers]);
  }
  return out;
}

/** What both sides report for a fold: the result, or the error kind. */
function foldOutcome(f: () => { exact_match: number; f1: number }): unknown {
  try {
    const r = f();
    return { exact_match: r.exact_match, f1: r.f1 };
  } catch (e) {
    return { error: (e as { _tag?: string })._tag ?? String(e) };
  }
}

const PY_ERROR: Record<string, string> = {
  ValueError: "NoAnswersError",
  ZeroDivisionError: "NothingScoredError",
  Exception: "UnknownLanguageError",
};

Deno.test({
  name: "MRQA: 6,000 generated pairs and 60 folds equal mrqa_eval.py",
  ignore: !SAME_CPYTHON,
}, async () => {
  const t = new TextGen(2301);
  const ps = pairs(t, 6000);
  const folds = [];
  for (let f = 0; f < 60; f++) {
    const n = f === 0 ? 0 : 1 + t.below(40);
    const questions: [string, string[]][] = [];
    const predictions: Record<string, string> = {};
    for (let i = 0; i < n; i++) {
      const qid = `q${t.below(f % 3 === 0 ? 8 : 1000)}`; // repeated qids in some folds
      const answers = f % 5 === 1 ? [t.text(3)] : answersOf(t).concat(f % 7 === 2 ? [] : ["x"]);
      questions.push([qid, answers]);
      if (t.below(6) !== 0) predictions[qid] = t.near(t.pick(answers.length ? answers : ["y"]));
    }
    folds.push({ questions, predictions, skip: f % 2 === 1 });
  }
  const r = await python(
    ["bench/reference/mrqa_eval.py", "--batch"],
    JSON.stringify({ pairs: ps, folds }),
  );
  const ref = JSON.parse(r.stdout);
  const mine = ps.map(([p, a]) => {
    const s = mrqaScores(p, a);
    return s === undefined ? null : [s.em, s.f1];
  });
  assertEquals(mine, ref.pairs);
  assert(mine.filter((x) => x === null).length > 100, "pairs without answers are covered");
  assert(mine.filter((x) => x !== null && x[1] > 0 && x[1] < 1).length > 500, "partial F1 covered");
  const myFolds = folds.map((f) =>
    foldOutcome(() =>
      mrqaEvaluate(f.questions.map(([qid, answers]) => ({ qid, answers })), f.predictions, {
        skipNoAnswer: f.skip,
      })
    )
  );
  const refFolds = ref.folds.map((x: unknown) =>
    typeof x === "string" ? { error: PY_ERROR[x] ?? x } : x
  );
  assertEquals(myFolds, refFolds);
  assert(refFolds.some((x: { error?: string }) => x.error === undefined));
  const ok = folds.findIndex((_, i) => refFolds[i].error === undefined);
  const one = folds[ok];
  const line = formatMrqa(
    mrqaEvaluate(one.questions.map(([qid, answers]) => ({ qid, answers })), one.predictions, {
      skipNoAnswer: one.skip,
    }),
  );
  assertEquals(JSON.parse(line), refFolds[ok]);
});

Deno.test({
  name:
    "MLQA: normalisation of 3,000 texts in 12 languages, 7,000 pairs and 40 folds equal mlqa_eval.py",
  ignore: !SAME_CPYTHON,
}, async () => {
  const t = new TextGen(2302);
  const langs = [...MLQA_LANGUAGES, "el", "ru", "th", "tr", "ro"];
  const norm: [string, string][] = [];
  for (let i = 0; i < 3000; i++) norm.push([t.text(8), langs[i % langs.length]]);
  const ps: [string, string[], string][] = pairs(t, 7000).map(([p, a], i) => [
    p,
    a,
    i % 50 === 0 ? t.pick(langs) : MLQA_LANGUAGES[i % MLQA_LANGUAGES.length],
  ]);
  const folds = [];
  for (let f = 0; f < 40; f++) {
    const n = f === 0 ? 0 : 1 + t.below(30);
    const questions: [string, string[]][] = [];
    const predictions: Record<string, string> = {};
    for (let i = 0; i < n; i++) {
      const id = `q${f}-${i}`;
      const answers = f % 9 === 4 && i === n - 1 ? [] : answersOf(t).concat(["x"]);
      questions.push([id, answers]);
      if (t.below(5) !== 0 && !(f % 11 === 3)) {
        predictions[id] = t.near(t.pick(answers.length ? answers : ["y"]));
      }
    }
    folds.push({ questions, predictions, lang: f % 13 === 5 ? "th" : MLQA_LANGUAGES[f % 7] });
  }
  const r = await python(
    ["bench/reference/mlqa_eval.py", "--batch"],
    JSON.stringify({ norm, pairs: ps, folds }),
  );
  const ref = JSON.parse(r.stdout);
  const err = (e: unknown) => ({ error: (e as { _tag?: string })._tag ?? String(e) });
  const mapRef = (x: unknown) =>
    x !== null && typeof x === "object" && "error" in x
      ? { error: PY_ERROR[(x as { error: string }).error] }
      : x;
  const myNorm = norm.map(([s, lang]) => {
    try {
      return mlqaNormalize(s, lang);
    } catch (e) {
      return err(e);
    }
  });
  assertEquals(myNorm, ref.norm.map(mapRef));
  const myPairs = ps.map(([p, a, lang]) => {
    try {
      const s = mlqaScores(p, a, lang);
      return s === undefined ? null : [s.em, s.f1];
    } catch (e) {
      return err(e);
    }
  });
  assertEquals(myPairs, ref.pairs.map(mapRef));
  const myFolds = folds.map((f) =>
    foldOutcome(() =>
      mlqaEvaluate(f.questions.map(([id, answers]) => ({ id, answers })), f.predictions, f.lang)
    )
  );
  assertEquals(myFolds, ref.folds.map(mapRef));
  for (const lang of MLQA_LANGUAGES) {
    assert(
      myPairs.some((x, i) => ps[i][2] === lang && Array.isArray(x) && x[1] > 0 && x[1] < 1),
      lang,
    );
  }
  assert(myNorm.some((x) => typeof x === "object"), "unknown languages are covered");
  const ok = ref.folds.findIndex((x: { error?: string }) => x.error === undefined && true);
  const f = folds[ok];
  const line = formatMlqa(
    mlqaEvaluate(f.questions.map(([id, answers]) => ({ id, answers })), f.predictions, f.lang),
  );
  assertEquals(JSON.parse(line), ref.folds[ok]);
});
