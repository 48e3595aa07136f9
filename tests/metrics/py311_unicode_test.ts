/**
 * `metrics/_py311_unicode.ts` against the installed CPython
 * (`tests/fixtures/py311_unicode_oracle.py`): the generated tables are what
 * the generator would write now, every category class the MRQA/MLQA/DPR
 * metrics build agrees with CPython's `unicodedata.category` on all 1,114,112
 * code points, and `pyNfd` equals `unicodedata.normalize("NFD")` on 2,000
 * generated strings (every code point assigned after Unicode 14.0 among
 * them).
 */
import { assert, assertEquals } from "../_assert.ts";
import { python } from "../_util.ts";
import { generatedBlock, oracleTables, pythonCategories } from "../fixtures/gen_py311_unicode.ts";
import {
  CATEGORY_NAMES,
  PY_CATEGORY_DIFF,
  pyCategoryClass,
  pyNfd,
} from "../../metrics/_py311_unicode.ts";
import { Xoshiro128StarStar } from "../../metrics/mod.ts";
import { SAME_CPYTHON } from "./_cpython.ts";

const tables = await oracleTables();
const pyCats = pythonCategories(tables);

Deno.test({
  name: "the generated tables are current for this Deno and this CPython",
  ignore: !SAME_CPYTHON,
}, async () => {
  const src = await Deno.readTextFile(new URL("../../metrics/_py311_unicode.ts", import.meta.url));
  const block = generatedBlock(tables);
  // deno fmt may re-wrap the doc comments but not the ignored arrays
  const arrays = (s: string) =>
    s.match(/export const PY_[A-Z_]+[^;]*;/g)!.map((x) => x.replace(/\s+/g, " "))
      .filter((x) => !x.startsWith("export const PY_VERSION ")); // the patch release may differ
  assertEquals(arrays(src), arrays(block));
});

Deno.test({
  name: "category classes: all code points agree with CPython's unicodedata.category",
  ignore: !SAME_CPYTHON,
}, () => {
  const preds: [string, (c: string) => boolean][] = [
    ["P", (c) => c[0] === "P"],
    ["LNM", (c) => "LNM".includes(c[0])],
    ["ZC", (c) => "ZC".includes(c[0])],
    ["Nd", (c) => c === "Nd"],
    ["LN", (c) => "LN".includes(c[0])],
    ["Cn", (c) => c === "Cn"],
  ];
  for (const [name, pred] of preds) {
    const re = new RegExp(`^${pyCategoryClass(pred)}$`, "v");
    let bad = 0;
    let first = -1;
    for (let cp = 0; cp < 0x110000; cp++) {
      const want = pred(CATEGORY_NAMES[pyCats[cp]]);
      if (re.test(String.fromCodePoint(cp)) !== want) {
        if (first < 0) first = cp;
        bad++;
      }
    }
    assertEquals(bad, 0, `${name}: ${bad} code points differ, first U+${first.toString(16)}`);
  }
});

Deno.test(
  { name: "pyNfd: 2,000 generated strings equal CPython's NFD", ignore: !SAME_CPYTHON },
  async () => {
    const cn = CATEGORY_NAMES.indexOf("Cn");
    const newer: number[] = [];
    for (let i = 0; i < PY_CATEGORY_DIFF.length; i += 4) {
      if (PY_CATEGORY_DIFF[i + 2] === cn) {
        for (let cp = PY_CATEGORY_DIFF[i]; cp <= PY_CATEGORY_DIFF[i + 1]; cp++) newer.push(cp);
      }
    }
    assert(newer.includes(0x105c9) && newer.includes(0x897), "Unicode 16 code points are new here");
    const pool = [
      ..."aeiouAEIOUçÇéÉñÑøÅåǅǄΐΰἀᾀ가각힣ḉẛ",
      ..."\u0300\u0301\u0302\u0303\u0308\u0323\u0327\u0345\u05b0\u0591\u093c\u0e48\u302a\u3099",
      "\u{105c9}",
      "\u{105e4}",
      "\u{16d68}",
      "\u{11383}",
      "\u0897",
      "\u{1e4d0}",
      "\u{11f00}",
      "\u{1d15e}",
      "\u{2f800}",
      "\uf900",
      "\u212b",
      "\u2126",
    ];
    const g = new Xoshiro128StarStar(23);
    const texts: string[] = [];
    for (let i = 0; i < 1000; i++) {
      let s = "";
      const n = 1 + g.below(12);
      for (let j = 0; j < n; j++) s += pool[g.below(pool.length)];
      texts.push(s);
    }
    for (let i = 0; i < 1000; i++) {
      let s = "";
      for (let j = 0; j < 6; j++) {
        s += g.below(2) === 0
          ? String.fromCodePoint(newer[g.below(newer.length)])
          : pool[g.below(pool.length)];
      }
      texts.push(s);
    }
    const r = await python(
      [
        "-c",
        "import json,sys,unicodedata;json.dump([unicodedata.normalize('NFD',t) for t in json.load(sys.stdin)],sys.stdout)",
      ],
      JSON.stringify(texts),
    );
    const want: string[] = JSON.parse(r.stdout);
    assertEquals(texts.map(pyNfd), want);
  },
);
