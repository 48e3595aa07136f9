/**
 * BEM's tokenizer (`metrics/bem/tokenizer.ts`) against Hugging Face's ids on
 * every entry of the golden file, and its fixes around the library.
 */
import { assert, assertEquals } from "../../_assert.ts";
import { ROOT } from "../../_util.ts";
import { defaultBemTokenizer } from "../../../metrics/bem/mod.ts";
import { codePointText, golden, sha256 } from "./_helpers.ts";

Deno.test("bem tokenizer: ids identical to HF BertTokenizer on every golden entry", async () => {
  const rows = await golden();
  const meta = rows[0];
  assertEquals(meta.k, "meta");
  assertEquals(
    meta.vocab_sha256,
    await sha256(`${ROOT}/data/bert/bert-base-uncased-vocab.txt`),
    "golden made with the bundled vocabulary",
  );
  const tok = defaultBemTokenizer();
  assertEquals(tok.vocabSize, 30522);
  const seen: Record<string, number> = {};
  const bad: string[] = [];
  for (const r of rows) {
    if (r.k === "meta" || r.k === "triple") continue;
    const text = r.k === "cp" ? codePointText(r) : r.t!;
    const key = r.k === "cp" ? `cp-${r.f}` : r.k;
    seen[key] = (seen[key] ?? 0) + 1;
    const ids = tok.ids(text);
    if (ids.length !== r.ids!.length || ids.some((x, i) => x !== r.ids![i])) {
      bad.push(`${key} ${JSON.stringify(text).slice(0, 60)}: ${JSON.stringify(ids).slice(0, 80)}`);
    }
  }
  assertEquals(bad.slice(0, 10), [], `${bad.length} entries differ`);
  // Every dev question, every distinct gold answer, 2,000 sentences, the odd cases, and every
  // code point (1,112,064 of them, in runs of 256) alone and inside a word.
  assertEquals(seen["q"], 10570);
  assertEquals(seen["a"], meta.counts!["a"]);
  assert(seen["a"] > 14000);
  assertEquals(seen["s"], 2000);
  assertEquals(seen["o"], meta.counts!["o"]);
  assert(seen["o"] >= 90);
  assertEquals(seen["cp-iso"], Math.ceil((0x110000 - 0x800) / 256));
  assertEquals(seen["cp-word"], seen["cp-iso"]);
});

Deno.test("bem tokenizer: the fixes around the library, case by case", () => {
  const tok = defaultBemTokenizer();
  assertEquals(tok.tokens("ΟΔΟΣ"), ["ο", "##δ", "##ο", "##σ"]); // transformers 4.x: σ, not ς
  assertEquals(tok.ids("\u{20000}x"), [100, 1060]); // CJK Ext. B gets spaces
  assertEquals(tok.ids("a\u0378b"), [11113]); // unassigned: deleted ("ab")
  assertEquals(tok.ids("a\u{1FAF8}b"), [11113]); // unassigned in Unicode 14.0: deleted
  assertEquals(tok.ids("a[SEP]b [MASK]"), [1037, 102, 1038, 103]);
  assertEquals(tok.ids("[sep]"), [1031, 19802, 1033]);
  assertEquals(tok.ids("Café naïve"), [7668, 15743]);
  assertEquals(tok.ids("a".repeat(101)), [100]);
  assertEquals(tok.ids(""), []);
  assertEquals(tok.ids(" \t\n\u3000"), []);
});
