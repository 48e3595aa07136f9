/**
 * `metrics/pyregex.ts` against CPython's `re` (`tests/py/pyregex_ref.py`, one
 * Python process per test), with `re.IGNORECASE + re.UNICODE + re.MULTILINE`
 * as DPR and DrQA compile answer patterns:
 *
 * - `\d \D \w \W \s \S .` and classes of them, on all 1,114,112 code points;
 * - case-insensitive literals, classes and ranges of 250 cased characters
 *   (`ß ẞ İ ı K ſ µ ς ϴ ǅ` and a seeded sample), each on the 3,000-odd code
 *   points that could match case-insensitively;
 * - `\b \B ^ $ \A \Z` on every string of up to two characters over a
 *   53-character alphabet (2,863 strings);
 * - 3,000 seeded random patterns, each searched and matched in 10 seeded
 *   texts (30,000 of each), and whether CPython compiles each pattern: a
 *   pattern refused as one CPython cannot compile must fail in CPython, an
 *   accepted one must compile there;
 * - the refusals, by name.
 */
import { assert, assertEquals } from "../_assert.ts";
import { python } from "../_util.ts";
import {
  compilePyRegex,
  dprHasAnswer,
  openAnswerEvaluate,
  PY_REGEX_STEP_BUDGET,
  PyRegexBudgetError,
  PyRegexError,
  Xoshiro128StarStar,
} from "../../metrics/mod.ts";
import { pyIsCased, pyLowerKeys } from "../../metrics/_py311_unicode.ts";
import { SAME_CPYTHON } from "./_cpython.ts";

async function ref(job: unknown): Promise<Record<string, unknown[]>> {
  const r = await python(["tests/py/pyregex_ref.py"], JSON.stringify(job));
  return JSON.parse(r.stdout);
}

function fullmatcher(pattern: string): RegExp {
  return new RegExp(`^(?:${compilePyRegex(pattern).source})$`, "v");
}

Deno.test({
  name: "categories and classes: all code points as CPython's re",
  ignore: !SAME_CPYTHON,
}, async () => {
  const patterns = [
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    ".",
    "[\\w]",
    "[^\\w]",
    "[\\d_]",
    "[^\\s\\d]",
    "[\\W\\d]",
    "[a-z\\d]",
    "[^a-z\\s]",
  ];
  const want = (await ref({ all: patterns })).all as number[][];
  patterns.forEach((p, i) => {
    const re = fullmatcher(p);
    const got: number[] = [];
    for (let cp = 0; cp < 0x110000; cp++) {
      if (re.test(String.fromCodePoint(cp))) {
        if (got.length > 0 && got[got.length - 1] === cp - 1) got[got.length - 1] = cp;
        else got.push(cp, cp);
      }
    }
    assertEquals(got, want[i], p);
  });
});

Deno.test({
  name: "IGNORECASE: 250 cased characters as literals, classes and ranges",
  ignore: !SAME_CPYTHON,
}, async () => {
  const cased: number[] = [];
  for (let cp = 0; cp < 0x110000; cp++) if (pyIsCased(cp)) cased.push(cp);
  const candidates = [...new Set([...cased, ...pyLowerKeys(), 0x345, 0x3b9, 0x1fbe, 0x2c, 0x31])]
    .sort((a, b) => a - b);
  const g = new Xoshiro128StarStar(2303);
  const special = [
    0xdf,
    0x1e9e,
    0x130,
    0x131,
    0x49,
    0x69,
    0x212a,
    0x6b,
    0x17f,
    0x73,
    0xb5,
    0x3bc,
    0x3c2,
    0x3c3,
    0x3a3,
    0x3f4,
    0x3b8,
    0x3d1,
    0x1c5,
    0x1c4,
    0x1c6,
    0x345,
    0x1fbe,
    0x390,
    0x1fd3,
    0x10400,
    0x10428,
    0x1e900,
    0x13a0,
    0xab70,
    0x1c80,
    0xfb05,
    0xfb06,
    0x1e9b,
    0x2126,
  ];
  const chars = [...special];
  while (chars.length < 250) chars.push(cased[g.below(cased.length)]);
  const esc = (cp: number) => `\\U${cp.toString(16).padStart(8, "0")}`;
  const patterns: string[] = [];
  for (const c of chars) {
    patterns.push(
      String.fromCodePoint(c),
      `[${esc(c)}]`,
      `[^${esc(c)}]`,
      `[${esc(c)}7]`,
      `[^${esc(c)},]`,
    );
  }
  patterns.push(
    "[a-z]",
    "[A-Z]",
    "[^a-z]",
    "[\\xc0-\\xff]",
    "[\\u0391-\\u03a9]",
    "[\\u0100-\\u017f]",
    "[\\u1f00-\\u1fff]",
    "[\\u2c00-\\u2c5f]",
    "[k-s]",
    "[I-K]",
    "[\\u0130-\\u0131]",
    "[\\uff21-\\uff3a]",
  );
  const want = (await ref({ among: { patterns, candidates } })).among as number[][];
  const strs = candidates.map((c) => String.fromCodePoint(c));
  let compared = 0;
  patterns.forEach((p, i) => {
    const re = fullmatcher(p);
    const got = candidates.filter((_, k) => re.test(strs[k]));
    assertEquals(got, want[i], `pattern ${JSON.stringify(p)}`);
    compared += candidates.length;
  });
  assert(compared > 3_000_000);
});

Deno.test({
  name: "\\b \\B ^ $ \\A \\Z: every string of up to two characters",
  ignore: !SAME_CPYTHON,
}, async () => {
  const alphabet = [
    ..."aZ_09 \n\t\r.-é\u0301\u0300\u0345ßİı\u212a北ا١\u00a0\u2028\u0085\u200b\u1c89\u0897x",
    "\u{1e4d0}",
    "\u{10400}",
    ..."ǅΣς\x1c\u2000\u3000!?'\"$^|~\u00b2\u2167\u0661\u06f1\u0e51\u1040\u17e0\u0f20",
  ];
  assertEquals(alphabet.length, 53);
  const texts = [""];
  for (const a of alphabet) texts.push(a);
  for (const a of alphabet) for (const b of alphabet) texts.push(a + b);
  const patterns = [
    "\\b",
    "\\B",
    "^",
    "$",
    "\\A",
    "\\Z",
    "\\b.",
    ".\\b",
    "\\B.",
    ".\\B",
    "^.$",
    "\\b\\w\\b",
    "\\B\\W",
    "$\\n^",
    "\\A\\Z",
    "(?<=\\w)\\b",
    "\\s$",
    "^\\S",
  ];
  const job = patterns.map((p) => [p, texts]);
  const want = await ref({ search: job, match: job });
  patterns.forEach((p, i) => {
    const r = compilePyRegex(p);
    assertEquals(texts.map((t) => r.search(t)), want.search[i], `search ${p}`);
    assertEquals(texts.map((t) => r.match(t)), want.match[i], `match ${p}`);
  });
});

// ---------------------------------------------------------------------------
// Random patterns
// ---------------------------------------------------------------------------

const LITS = [
  ..."abcxyzABCXYZsSkKiI019 -_,",
  "ß",
  "ẞ",
  "İ",
  "ı",
  "\u212a",
  "ſ",
  "µ",
  "μ",
  "Σ",
  "σ",
  "ς",
  "e",
  "é",
  "\u0301",
  "ǅ",
  "ǆ",
  "ϴ",
  "θ",
  "ϑ",
  "北",
  "京",
  "ا",
  "ل",
  "١",
  "\u00a0",
  "\u0345",
  "ι",
  "\\.",
  "\\(",
  "\\)",
  "\\[",
  "\\]",
  "\\$",
  "\\^",
  "\\*",
  "\\+",
  "\\?",
  "\\{",
  "\\}",
  "\\|",
  "\\\\",
  "\\-",
  "\\n",
  "\\t",
  "\\x41",
  "\\u00e9",
  "\\U00010400",
  "\\0",
  "\\012",
  "\\101",
  "\\,",
  "}",
  "]",
];
const ESCS = ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "\\A", "\\Z", ".", "^", "$"];
const CLASS_ITEMS = [
  "a-z",
  "A-Z",
  "0-9",
  "\\xc0-\\xff",
  "α-ω",
  "Α-Ω",
  "\\u0100-\\u017f",
  "\\d",
  "\\w",
  "\\s",
  "\\W",
  "_",
  "-",
  "\\b",
  ".",
  "ß",
  "İ",
  "k",
  "\\]",
  "\\-",
  "x-",
  "ı",
  "\u212a",
  "$",
  "^x",
  "[",
  "\\U0001e900",
  "é",
];
const QUANTS = [
  "",
  "",
  "",
  "*",
  "+",
  "?",
  "{2}",
  "{1,3}",
  "{,2}",
  "{2,}",
  "*?",
  "+?",
  "??",
  "{1,2}?",
  "{",
  "{a}",
  "{}",
  "{,}",
];
const BAD = [
  "(",
  ")",
  "*",
  "\\q",
  "[b-a]",
  "a{3,2}",
  "(?<=a+)",
  "\\1",
  "(?i)",
  "a*+",
  "(?>a)",
  "[",
  "(?P=g)",
  "\\N{DASH}",
  "a**",
  "(?P<1>x)",
  "(?#c",
  "\\",
  "[\\d-z]",
  "(?<x>a)",
  "\\x4",
  "^*",
  "\\b+",
  "(?=a)*",
  "(?(1)a)",
  "[\\Z]",
  "\\777",
  "[\\9]",
];

class PatternGen {
  group = 0;
  constructor(readonly g: Xoshiro128StarStar) {}
  pick<T>(xs: readonly T[]): T {
    return xs[this.g.below(xs.length)];
  }
  cls(): string {
    const n = 1 + this.g.below(3);
    let s = this.g.below(4) === 0 ? "[^" : "[";
    if (this.g.below(15) === 0) s += "]";
    for (let i = 0; i < n; i++) s += this.pick(CLASS_ITEMS);
    return s + "]";
  }
  fixed(): string {
    const n = 1 + this.g.below(2);
    let s = "";
    for (let i = 0; i < n; i++) {
      s += this.g.below(2) === 0 ? this.pick(LITS.slice(0, 40)) : this.cls();
    }
    return s;
  }
  atom(depth: number): string {
    const r = this.g.below(20);
    if (r < 9) return this.pick(LITS);
    if (r < 12) return this.pick(ESCS);
    if (r < 15) return this.cls();
    if (depth >= 2) return this.pick(LITS);
    if (r === 15) return `(${this.alt(depth + 1)})`;
    if (r === 16) return `(?:${this.alt(depth + 1)})`;
    if (r === 17) return `(?P<g${this.group++}>${this.alt(depth + 1)})`;
    if (r === 18) return `(?${this.pick(["=", "!"])}${this.alt(depth + 1)})`;
    return `(?<${this.pick(["=", "!"])}${this.fixed()})`;
  }
  seq(depth: number): string {
    const n = 1 + this.g.below(4);
    let s = "";
    for (let i = 0; i < n; i++) {
      const a = this.atom(depth);
      s += a +
        (a.startsWith("(?=") || a.startsWith("(?!") || a.startsWith("(?<")
          ? (this.g.below(20) === 0 ? "*" : "")
          : this.pick(QUANTS));
      if (this.g.below(150) === 0) s += this.pick(BAD);
    }
    return s;
  }
  alt(depth: number): string {
    let s = this.seq(depth);
    while (this.g.below(4) === 0) s += "|" + this.seq(depth);
    return s;
  }
}

const TEXT_CHARS = [
  ..."abcxyzABCXYZsSkKiI019 -_,.()[]$^*+?{}|\\\n\t",
  "ß",
  "ẞ",
  "İ",
  "ı",
  "\u212a",
  "ſ",
  "µ",
  "μ",
  "Σ",
  "σ",
  "ς",
  "é",
  "e\u0301",
  "\u0301",
  "ǅ",
  "ǆ",
  "Ǆ",
  "ϴ",
  "θ",
  "ϑ",
  "北",
  "京",
  "ا",
  "ل",
  "١",
  "\u00a0",
  "\u0345",
  "ι",
  "\u1fbe",
  "\u2028",
  "\u0085",
  "\x1c",
  "ss",
  "SS",
  "\u{10400}",
  "\u{10428}",
  "\u{1e900}",
  "\u{1e922}",
  "\u{1e4d0}",
  "\u0897",
  "Å",
  "\u212b",
  "\u00e5",
  "ÿ",
  "Ÿ",
];

Deno.test({
  name: "3,000 random patterns: search and match in 10 texts each, and which compile",
  ignore: !SAME_CPYTHON,
}, async () => {
  const g = new Xoshiro128StarStar(2304);
  const gen = new PatternGen(g);
  const patterns: string[] = [];
  for (let i = 0; i < 3000; i++) {
    gen.group = 0;
    patterns.push(i % 25 === 0 ? gen.pick(BAD) + gen.alt(1) : gen.alt(0));
  }
  const texts = patterns.map(() =>
    Array.from({ length: 10 }, () => {
      let s = "";
      const n = g.below(13);
      for (let k = 0; k < n; k++) s += gen.pick(TEXT_CHARS);
      return s;
    })
  );
  const accepted: number[] = [];
  const invalid: number[] = [];
  const refused = new Map<string, number>();
  patterns.forEach((p, i) => {
    try {
      compilePyRegex(p);
      accepted.push(i);
    } catch (e) {
      if (!(e instanceof PyRegexError)) throw e;
      if (e.construct.startsWith("CPython cannot compile")) invalid.push(i);
      else {
        const k = e.construct.replace(/ \(.*$/, "").replace(/"[^"]*"/, "NAME");
        refused.set(k, (refused.get(k) ?? 0) + 1);
      }
    }
  });
  const want = await ref({
    compiles: patterns,
    search: accepted.map((i) => [patterns[i], texts[i]]),
    match: accepted.map((i) => [patterns[i], texts[i]]),
  });
  const compiles = want.compiles as boolean[];
  for (const i of invalid) {
    assertEquals(compiles[i], false, `CPython compiles ${JSON.stringify(patterns[i])}`);
  }
  for (const i of accepted) {
    assertEquals(compiles[i], true, `CPython rejects ${JSON.stringify(patterns[i])}`);
  }
  accepted.forEach((i, k) => {
    const r = compilePyRegex(patterns[i]);
    assertEquals(
      texts[i].map((t) => r.search(t)),
      want.search[k],
      `search ${JSON.stringify(patterns[i])}`,
    );
    assertEquals(
      texts[i].map((t) => r.match(t)),
      want.match[k],
      `match ${JSON.stringify(patterns[i])}`,
    );
  });
  console.log(
    `accepted ${accepted.length}, invalid in CPython ${invalid.length}, refused`,
    Object.fromEntries(refused),
  );
  assert(accepted.length > 1800, `${accepted.length} accepted`);
  assert(invalid.length > 50, `${invalid.length} invalid in CPython`);
  const hits = (want.search as boolean[][]).flat().filter((x) => x).length;
  assert(hits > 3000 && hits < 27000, `${hits} of ${accepted.length * 10} searches match`);
});

Deno.test({ name: "refusals name the construct", ignore: !SAME_CPYTHON }, async () => {
  const cases: [string, RegExp, boolean][] = [
    ["(a)\\1", /back-reference/, true],
    ["(?P<n>a)(?P=n)", /back-reference \(\?P=name\)/, true],
    ["(?i)a", /inline flags/, true],
    ["(?x) a", /inline flags/, true],
    ["(?s:a.)", /inline flags/, true],
    ["(?>ab)", /atomic group/, true],
    ["a++", /possessive quantifier/, true],
    ["(a)?(?(1)b|c)", /conditional group/, true],
    ["\\N{EM DASH}", /named character escape/, true],
    ["(?=a)*", /quantified look-around/, true],
    ["[\\u0100-\\U00010428]", /above U\+FFFF/, true],
    ["(?P<é>a)", /group name "é"/, true],
    ["(?<=a+)b", /CPython cannot compile.*look-behind requires fixed-width/, false],
    ["a**", /CPython cannot compile.*multiple repeat/, false],
    ["*a", /CPython cannot compile.*nothing to repeat/, false],
    ["\\bx\\b*", /CPython cannot compile.*nothing to repeat/, false],
    ["(a", /CPython cannot compile.*missing \)/, false],
    ["a)", /CPython cannot compile.*unbalanced parenthesis/, false],
    ["[z-a]", /CPython cannot compile.*bad character range/, false],
    ["\\q", /CPython cannot compile.*bad escape \\q/, false],
    ["a{3,1}", /CPython cannot compile.*min repeat greater than max repeat/, false],
    ["(?<n>a)", /CPython cannot compile.*unknown extension \?</, false],
  ];
  for (const [p, re] of cases) {
    let e: PyRegexError | undefined;
    try {
      compilePyRegex(p);
    } catch (u) {
      if (u instanceof PyRegexError) e = u;
      else throw u;
    }
    assert(e !== undefined, `${p} is refused`);
    assert(re.test(e.message), `${p}: ${e.message}`);
    assert(e.message.includes(JSON.stringify(p)), "the message names the pattern");
  }
  const compiles = (await ref({ compiles: cases.map(([p]) => p) })).compiles as boolean[];
  cases.forEach(([p, , ok], i) =>
    assertEquals(compiles[i], ok, `CPython compiles ${p}: ${compiles[i]}`)
  );
});

Deno.test("catastrophic backtracking is cut off after the step budget, and told by name", () => {
  const r = compilePyRegex("(a+)+$");
  // The same pattern on texts it settles quickly: the answers CPython gives.
  assertEquals(r.match("a".repeat(40)), true);
  assertEquals(r.search("xx" + "a".repeat(5) + "!"), false);
  let e: unknown;
  try {
    r.match("a".repeat(40) + "!");
  } catch (u) {
    e = u;
  }
  assert(e instanceof PyRegexBudgetError, String(e));
  assertEquals(e.pattern, "(a+)+$");
  assertEquals(e.steps, PY_REGEX_STEP_BUDGET);
  assertEquals(e.length, 41);
  assertEquals(
    e.message,
    `Python regular expression "(a+)+$" cut off after ${PY_REGEX_STEP_BUDGET} steps ` +
      "(catastrophic backtracking) on a text of 41 characters",
  );
  // A smaller budget cuts a search off sooner; a linear pattern on a long text is not cut off.
  assert((() => {
    try {
      compilePyRegex("19[0-9]{2}").search("x ".repeat(300) + "1984", 100);
      return false;
    } catch (u) {
      return u instanceof PyRegexBudgetError && u.steps === 100;
    }
  })());
  assertEquals(compilePyRegex("19[0-9]{2}").search("x ".repeat(5000) + "1984"), true);
  assertEquals(compilePyRegex("^.*z$").search("a".repeat(1000) + "\nz"), true);
});

Deno.test("a cut-off regex match counts as not matched in the open answer scores, told with its question", () => {
  const told: string[] = [];
  const r = openAnswerEvaluate([
    { id: "slow", candidates: ["a".repeat(40) + "!"], answers: ["(a+)+$", "b"] },
    { id: "fine", candidates: ["1984"], answers: ["19[0-9]{2}"] },
  ], { regex: true, k: 1, onCutOff: (e, id) => told.push(`${id}: ${e.pattern}`) });
  assertEquals(r.exact_match_top1, 50);
  assertEquals(told, ["slow: (a+)+$"]);
  const hits: string[] = [];
  assertEquals(
    dprHasAnswer(["(a+)+$", "!"], "a".repeat(40) + "!", "regex", (e) => hits.push(e.pattern)),
    true,
  );
  assertEquals(hits, ["(a+)+$"]);
});
