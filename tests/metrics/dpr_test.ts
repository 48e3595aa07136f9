/**
 * `metrics/dpr.ts` and `metrics/open_answers.ts` against the Python reference
 * `bench/reference/dpr_eval.py` (one Python process), on seeded generated
 * records (`./_qa_text.ts`): DPR's SimpleTokenizer, NFD and lower-cased words
 * of 3,000 texts; `has_answer` in string mode on 4,000 (answers, passage)
 * pairs and in regex mode on 2,000 (patterns with `\w \d \b \s` on non-ASCII
 * text, case folding); top-k hits of 300 hit matrices; DrQA/DensePhrases
 * top-1/top-k EM/F1 on 3,000 questions (1,000 with regex answers) and 30
 * folds. Numbers compared as float64.
 */
import { assert, assertEquals } from "../_assert.ts";
import { python } from "../_util.ts";
import {
  dprHasAnswer,
  dprTokenize,
  openAnswerEvaluate,
  openAnswerScores,
  pythonLower,
  topKAccuracy,
} from "../../metrics/mod.ts";
import { pyNfd } from "../../metrics/_py311_unicode.ts";
import { TextGen } from "./_qa_text.ts";
import { SAME_CPYTHON } from "./_cpython.ts";

const PATTERN_PIECES = [
  "\\bthe\\b",
  "\\d+",
  "\\d{4}",
  "19[0-9]{2}",
  "\\w+",
  "\\bStra(ss|ß)e\\b",
  "caf\\w",
  "\\bcafe\\b",
  "(?:el|la)\\s+\\w+",
  "[A-Z][a-z]+",
  "北京",
  "\\bİstanbul\\b",
  "\\u212aelvin",
  "k",
  "ΟΔΟΣ",
  "σ",
  "^\\w",
  "\\w$",
  "\\s\\S",
  "\\B\\w",
  "[^\\W\\d]+",
  "\\bnh\\w+",
  "\\b\\w\\b",
  "ال\\w+",
  "\\d\\.\\d",
  "(\\d)\\s*%",
  ".",
  "",
  "Denver|Broncos",
  "(?=\\w)\\W?",
];

Deno.test({
  name: "tokens, has_answer, top-k and open EM/F1 equal dpr_eval.py",
  ignore: !SAME_CPYTHON,
}, async () => {
  const t = new TextGen(2305);
  const tokens = Array.from({ length: 3000 }, () => t.text(10));
  const has: [string[], string, string][] = [];
  for (let i = 0; i < 4000; i++) {
    const passage = t.text(14);
    const words = passage.split(" ");
    const n = t.below(8) === 0 ? 0 : 1 + t.below(t.below(5) === 0 ? 30 : 3);
    const answers = Array.from(
      { length: n },
      () =>
        t.below(2) === 0
          ? words.slice(t.below(words.length), t.below(words.length + 1)).join(" ").toUpperCase()
          : t.text(3),
    );
    has.push([answers, passage, "string"]);
  }
  for (let i = 0; i < 2000; i++) {
    const n = 1 + t.below(3);
    const answers = Array.from(
      { length: n },
      () => t.pick(PATTERN_PIECES) + (t.below(3) === 0 ? t.pick(PATTERN_PIECES) : ""),
    );
    has.push([answers, t.text(10), "regex"]);
  }
  const topk = Array.from({ length: 300 }, (_, q) => {
    const n = q % 10 === 0 ? 1 + t.below(5) : 100;
    return Array.from({ length: n }, () => t.below(q % 3 === 0 ? 200 : 15) === 0);
  });
  const open: [string[], string[], boolean, number][] = [];
  for (let i = 0; i < 3000; i++) {
    const regex = i % 3 === 2;
    const n = regex ? 1 + t.below(3) : t.below(10) === 0 ? 9 + t.below(20) : 1 + t.below(3);
    const answers = Array.from({ length: n }, () => regex ? t.pick(PATTERN_PIECES) : t.text(3));
    const m = t.below(12) === 0 ? 0 : 1 + t.below(12);
    const candidates = Array.from({ length: m }, () => regex ? t.text(3) : t.near(t.pick(answers)));
    open.push([candidates, answers, regex, 1 + t.below(10)]);
  }
  const folds: [[string[], string[]][], boolean, number][] = [];
  for (let f = 0; f < 30; f++) {
    const rows = open.slice(f * 90, f * 90 + 1 + t.below(80)).filter(([, , r]) =>
      r === (f % 2 === 1)
    )
      .map(([c, a]) => [c, a] as [string[], string[]]);
    folds.push([rows, f % 2 === 1, 1 + t.below(20)]);
  }
  const r = await python(
    ["bench/reference/dpr_eval.py", "--batch"],
    JSON.stringify({
      tokens,
      has,
      topk: [...topk.map((h) => [h]), topk.filter((h) => h.length === 100)],
      open,
      open_folds: folds,
    }),
  );
  const ref = JSON.parse(r.stdout);
  assertEquals(tokens.map(dprTokenize), ref.tokens);
  assertEquals(tokens.map((s) => pyNfd(s)), ref.nfd);
  assertEquals(tokens.map((s) => dprTokenize(pyNfd(s)).map(pythonLower)), ref.words);
  const mine = has.map(([a, p, m]) => dprHasAnswer(a, p, m as "string" | "regex"));
  assertEquals(mine, ref.has);
  const found = (mode: string) => mine.filter((x, i) => x && has[i][2] === mode).length;
  assert(found("string") > 1000 && found("string") < 3500, `string hits ${found("string")}`);
  assert(found("regex") > 400 && found("regex") < 1900, `regex hits ${found("regex")}`);
  // DPR's top_k_hits list, position i = questions with a hit in the first i+1
  const refHits: number[][] = ref.topk;
  const ks = Array.from({ length: 100 }, (_, i) => i + 1);
  topk.forEach((h, i) => {
    const mineK = topKAccuracy([h], ks).map((x) => x.hits);
    assertEquals(mineK.slice(0, refHits[i].length), refHits[i]);
  });
  const full = topk.filter((h) => h.length === 100);
  const all = topKAccuracy(full);
  const dprHits = refHits[topk.length];
  assertEquals(all.map((x) => x.hits), [0, 4, 19, 99].map((i) => dprHits[i]));
  assertEquals(all.map((x) => x.accuracy), [0, 4, 19, 99].map((i) => dprHits[i] / full.length));
  const myOpen = open.map(([c, a, regex, k]) => {
    const s = openAnswerScores(c, a, { regex, k })!;
    return {
      em_top1: s.emTop1,
      em_topk: s.emTopK,
      f1_top1: s.f1Top1 ?? null,
      f1_topk: s.f1TopK ?? null,
    };
  });
  assertEquals(myOpen, ref.open);
  assert(myOpen.filter((x) => x.em_topk > x.em_top1).length > 100, "top-k beats top-1 somewhere");
  const myFolds = folds.map(([rows, regex, k]) => {
    try {
      const res = openAnswerEvaluate(
        rows.map(([candidates, answers], i) => ({ id: `q${i}`, candidates, answers })),
        { regex, k },
      );
      const { total: _, ...rest } = res;
      return rest;
    } catch (e) {
      return { error: (e as { _tag?: string })._tag };
    }
  });
  assertEquals(
    myFolds.filter((x) => !("error" in x)),
    ref.open_folds.filter((_: unknown, i: number) => !("error" in myFolds[i])),
  );
  assert(myFolds.filter((x) => !("error" in x)).length >= 25);
});
