/**
 * `evaluate`'s whole-file path (`metrics/evaluate_whole.ts`): the same
 * stdout and messages as the full path (`metrics/evaluate.ts`) on dev and
 * its perturbations, and a refusal to answer (so the full path runs and
 * names the problem) on every input the full path treats otherwise; the
 * one-pass ASCII tokens and the small-list F1 against independent
 * implementations of the official rules.
 */
import * as Effect from "effect/Effect";
import { assertEquals } from "../_assert.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { evaluateWholeV1 } from "../../metrics/evaluate_whole.ts";
import { answerTokens } from "../../metrics/squad_text.ts";
import { tokenF1 } from "../../metrics/squad_scores.ts";
import { writePerturbations } from "../../bench/perturb.ts";
import { devJson, runStage } from "../_util.ts";

const DEV = await devJson();
const enc = new TextEncoder();

/** The whole path on files, fed in chunks of `chunk` bytes (the first at least 64 KiB). */
function whole(data: Uint8Array, name: string, pred: Uint8Array, chunk = 1 << 20) {
  const chunks: Uint8Array[] = [];
  const first = Math.max(chunk, 64 * 1024);
  chunks.push(data.subarray(0, first));
  for (let o = first; o < data.length; o += chunk) chunks.push(data.subarray(o, o + chunk));
  return evaluateWholeV1(chunks, name, pred);
}

Deno.test("whole-file evaluate: dev and its perturbations give the full path's stdout and messages", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = await writePerturbations(DEV, dir);
    const data = await Deno.readFile(DEV);
    const seen = new Set<string>();
    for (const f of files) {
      const full = await Effect.runPromise(evaluate({ data: DEV, predictions: f }));
      for (const chunk of [1 << 20, 100_003]) {
        const w = whole(data, DEV, await Deno.readFile(f), chunk);
        assertEquals(w?.stdout, full.stdout, f);
        assertEquals(w?.messages, full.messages, f);
      }
      seen.add(full.stdout);
    }
    assertEquals(seen.size, files.length);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const ARTICLE = {
  title: "T",
  paragraphs: [{
    context: "Paris is in France.",
    qas: [{ id: "q1", question: "?", answers: [{ text: "France", answer_start: 12 }] }],
  }],
};
const PRED = enc.encode('{"q1": "France"}');

Deno.test("whole-file evaluate: a plain small file is answered", () => {
  const d = enc.encode(JSON.stringify({ data: [ARTICLE], version: "1.1" }));
  assertEquals(whole(d, "d.json", PRED)?.stdout, '{"exact_match": 100.0, "f1": 100.0}');
  // No version at all: v1.1 rules, no warning (as the full path).
  const nov = enc.encode(JSON.stringify({ data: [ARTICLE] }));
  assertEquals(whole(nov, "d.json", PRED)?.messages, []);
});

const declined: [string, string | Uint8Array, string?, Uint8Array?][] = [
  ["a repeated top-level key", `{"data": [], "data": ${JSON.stringify([ARTICLE])}}`],
  [
    "nesting deeper than 1000",
    `{"x": ${"[".repeat(1001)}${"]".repeat(1001)}, "data": ${JSON.stringify([ARTICLE])}}`,
  ],
  ["a BOM", "\uFEFF" + JSON.stringify({ data: [ARTICLE], version: "1.1" })],
  [
    "invalid UTF-8",
    new Uint8Array([
      ...enc.encode(`{"data": ${JSON.stringify([ARTICLE])}, "v": "`),
      0xff,
      0x22,
      0x7d,
    ]),
  ],
  ["invalid JSON", `{"data": [${JSON.stringify(ARTICLE)},]}`],
  ["a v2.0 version", JSON.stringify({ version: "v2.0", data: [ARTICLE] })],
  ["an is_impossible field", JSON.stringify({ data: [ARTICLE], is_impossible: true })],
  ["another version (the warning)", JSON.stringify({ data: [ARTICLE], version: "1.0" })],
  ["a number version", `{"data": ${JSON.stringify([ARTICLE])}, "version": 1.1}`],
  ["no data", JSON.stringify({ version: "1.1" })],
  ["data not a list", JSON.stringify({ data: {}, version: "1.1" })],
  ["no question", JSON.stringify({ data: [], version: "1.1" })],
  ["an article without a title", JSON.stringify({ data: [{ paragraphs: [] }] })],
  [
    "a question without an id",
    JSON.stringify({ data: [{ title: "T", paragraphs: [{ qas: [{}] }] }] }),
  ],
  [
    "a paragraph without qas",
    JSON.stringify({ data: [{ title: "T", paragraphs: [{ context: "" }] }] }),
  ],
  [
    "an answered question without gold answers",
    JSON.stringify({
      data: [{ title: "T", paragraphs: [{ context: "c", qas: [{ id: "q1", answers: [] }] }] }],
    }),
  ],
  ["an XQuAD name", JSON.stringify({ data: [ARTICLE], version: "1.1" }), "xquad.de.json"],
  ["an MLQA name", JSON.stringify({ data: [ARTICLE] }), "dev-context-de-question-en.json"],
  ["an MRQA header", `{"header": {"dataset": "x"}, "data": ${JSON.stringify([ARTICLE])}}`],
  [
    "a prediction not a string",
    JSON.stringify({ data: [ARTICLE] }),
    "d.json",
    enc.encode('{"q1": 5}'),
  ],
  ["predictions not JSON", JSON.stringify({ data: [ARTICLE] }), "d.json", enc.encode("{")],
  [
    "an array-index prediction id",
    JSON.stringify({ data: [ARTICLE] }),
    "d.json",
    enc.encode('{"1": "x"}'),
  ],
  ["an empty file", ""],
];

for (const [what, data, name, pred] of declined) {
  Deno.test(`whole-file evaluate declines ${what} (the full path decides)`, () => {
    const bytes = typeof data === "string" ? enc.encode(data) : data;
    assertEquals(whole(bytes, name ?? "d.json", pred ?? PRED), undefined);
  });
}

Deno.test("whole-file evaluate declines gzip (the full path gunzips it)", async () => {
  const gz = new Uint8Array(
    await new Response(
      new Blob([JSON.stringify({ data: [ARTICLE] })]).stream().pipeThrough(
        new CompressionStream("gzip"),
      ),
    ).arrayBuffer(),
  );
  assertEquals(whole(gz, "d.json", PRED), undefined);
});

Deno.test("evaluate on the command line: declined inputs still get the full path's answer", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = `${dir}/p.json`;
    await Deno.writeFile(p, PRED);
    // A repeated key: refused with one line, exit 2.
    await Deno.writeTextFile(`${dir}/rep.json`, declined[0][1] as string);
    const rep = await runStage("pipeline/evaluate.ts", [`${dir}/rep.json`, p]);
    assertEquals(rep.code, 2, rep.stderr);
    assertEquals(rep.stdout, "");
    // Another version: the official warning first, then the scores.
    await Deno.writeTextFile(
      `${dir}/v10.json`,
      JSON.stringify({ data: [ARTICLE], version: "1.0" }),
    );
    const v10 = await runStage("pipeline/evaluate.ts", [`${dir}/v10.json`, p]);
    assertEquals(v10.code, 0, v10.stderr);
    assertEquals(v10.stderr, "Evaluation expects v-1.1, but got dataset with v-1.0\n");
    assertEquals(v10.stdout, '{"exact_match": 100.0, "f1": 100.0}\n');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The official `normalize_answer(s).split()` on ASCII, written from the script. */
function officialAsciiTokens(s: string): string[] {
  const t = s.toLowerCase().replace(/[!-\/:-@\[-`{-~]/g, "").replace(/\b(a|an|the)\b/g, " ");
  // deno-lint-ignore no-control-regex -- U+001C..U+001F are Python spaces
  return t.split(/[\t-\r\x1c- ]+/).filter((x) => x !== "");
}

Deno.test("answerTokens' one-pass ASCII tokens equal the official regular expressions", async () => {
  const dev = JSON.parse(await Deno.readTextFile(DEV));
  let n = 0;
  for (const a of dev.data) {
    for (const p of a.paragraphs) {
      for (const q of p.qas) {
        for (const g of q.answers) {
          if (!/^[\0-\x7f]*$/.test(g.text)) continue;
          assertEquals(answerTokens(g.text), officialAsciiTokens(g.text), g.text);
          n++;
        }
      }
    }
  }
  assertEquals(n > 30_000, true);
  // Random strings over the characters that matter: articles, punctuation, white space,
  // control characters (which take the regular expressions' path).
  const parts = [
    "a",
    "an",
    "the",
    "The",
    "A",
    "x",
    "_",
    "-",
    ".",
    " ",
    "\t",
    "\x1c",
    "\x00",
    "\x7f",
    "1",
    "thea",
    "(",
    "'",
    "\n",
    "\x0b",
    "Z",
  ];
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i < 20_000; i++) {
    let s = "";
    const len = Math.floor(rnd() * 12);
    for (let j = 0; j < len; j++) s += parts[Math.floor(rnd() * parts.length)];
    assertEquals(answerTokens(s), officialAsciiTokens(s), JSON.stringify(s));
  }
});

Deno.test("tokenF1 equals the official Counter-based F1 on random token lists", () => {
  const counterF1 = (p: string[], g: string[]) => {
    const c = new Map<string, number>();
    for (const t of g) c.set(t, (c.get(t) ?? 0) + 1);
    const cp = new Map<string, number>();
    for (const t of p) cp.set(t, (cp.get(t) ?? 0) + 1);
    let same = 0;
    for (const [t, k] of cp) same += Math.min(k, c.get(t) ?? 0);
    if (same === 0) return 0;
    const pr = same / p.length, rc = same / g.length;
    return (2 * pr * rc) / (pr + rc);
  };
  let seed = 11;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const words = ["a", "b", "c", "d"];
  for (let i = 0; i < 20_000; i++) {
    const p = Array.from({ length: Math.floor(rnd() * 8) }, () => words[Math.floor(rnd() * 4)]);
    const g = Array.from({ length: Math.floor(rnd() * 40) }, () => words[Math.floor(rnd() * 4)]);
    assertEquals(tokenF1(p, g), counterF1(p, g));
  }
});
