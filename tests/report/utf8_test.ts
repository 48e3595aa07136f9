/**
 * `report` decodes every file it reads as strict UTF-8 (`io/text.ts`): a
 * byte that is not UTF-8 in a run's rows, a `summary.json`, a labels file, a
 * search record or its top-k records, or a `--diff` run's `provenance.json` is
 * refused with one line naming the file, the line and the byte offset, worded
 * as the dataset readers word it (`line N: invalid UTF-8 at byte B`), exit 2,
 * nothing written. Before, a rows file with a Latin-1 or stray byte was read
 * as U+FFFD and refused as "a stale rows file". The same rows, valid, with
 * non-ASCII predictions and golds, are accepted.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { listDir, runStage } from "../_util.ts";
import { evaluate } from "../../metrics/evaluate.ts";
import { PROVENANCE_FORMAT } from "../../io/provenance.ts";
import { decodeUtf8Strict } from "../../io/text.ts";
import { fixture } from "./_searches.ts";

const TMP = await Deno.makeTempDir({ prefix: "phraseval-report-utf8-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

const enc = new TextEncoder();
const bytesOf = (s: string) => enc.encode(s).length;

/** `text` as UTF-8 with the byte `b` put in at byte offset `at`. */
function withByte(text: string, at: number, b = 0xff): Uint8Array {
  const t = enc.encode(text);
  const out = new Uint8Array(t.length + 1);
  out.set(t.subarray(0, at));
  out[at] = b;
  out.set(t.subarray(at), at + 1);
  return out;
}

/** Byte offset of the end of `needle` on line `line` (from 1) of `text`. */
function offsetAfter(text: string, line: number, needle: string): number {
  const lines = text.split("\n");
  const before = lines.slice(0, line - 1).reduce((n, l) => n + bytesOf(l) + 1, 0);
  const i = lines[line - 1].indexOf(needle);
  assert(i >= 0, `${needle} is not on line ${line}`);
  return before + bytesOf(lines[line - 1].slice(0, i + needle.length));
}

// A dataset whose answers are not ASCII, and a `full` folder with its rows.
const DATA = `${TMP}/zurich.json`;
const CONTEXT = "Die Altstadt von Zürich liegt an der Limmat.";
const QAS: [string, string, string][] = [
  ["q1", "Which city?", "Zürich"],
  ["q2", "Which quarter?", "Altstadt"],
  ["q3", "Which river?", "Limmat"],
];
await Deno.writeTextFile(
  DATA,
  JSON.stringify({
    version: "1.1",
    data: [{
      title: "Zürich",
      paragraphs: [{
        context: CONTEXT,
        qas: QAS.map(([id, question, a]) => ({
          id,
          question,
          answers: [{ text: a, answer_start: CONTEXT.indexOf(a) }],
        })),
      }],
    }],
  }),
);
const FULL = `${TMP}/full`;
await Deno.mkdir(FULL);
await Deno.writeTextFile(
  `${FULL}/summary.json`,
  JSON.stringify({ data: DATA, encoder: { name: "enc" } }),
);
await Deno.writeTextFile(
  `${FULL}/pred.json`,
  JSON.stringify({ q1: "Zürich", q2: "Altstadt", q3: "Rhein" }),
);
await Effect.runPromise(
  evaluate({ data: DATA, predictions: `${FULL}/pred.json`, perQuestion: `${FULL}/rows.ndjson` }),
);
const ROWS = await Deno.readTextFile(`${FULL}/rows.ndjson`);

/** A copy of the `full` folder with `file` (relative) replaced by `bytes`. */
async function fullWith(name: string, file: string, bytes: Uint8Array): Promise<string> {
  const dir = `${TMP}/${name}`;
  await Deno.mkdir(dir);
  for (const f of ["summary.json", "pred.json", "rows.ndjson"]) {
    await Deno.copyFile(`${FULL}/${f}`, `${dir}/${f}`);
  }
  await Deno.writeFile(`${dir}/${file}`, bytes);
  return dir;
}

/** Runs `report ARGS --out <fresh>/report`, checks the refusal and that nothing is left; the line. */
async function refused(args: readonly string[]): Promise<string> {
  const parent = await Deno.makeTempDir({ dir: TMP, prefix: "out-" });
  const r = await runStage("pipeline/report.ts", [...args, "--out", `${parent}/report`]);
  assertEquals(r.code, 2, r.stderr);
  assertEquals(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
  assertEquals(r.stdout, "");
  assertEquals(await listDir(parent), [], "nothing left behind");
  return r.stderr.trimEnd();
}

Deno.test("decodeUtf8Strict: line and byte of the first bad byte; a byte-order mark dropped", () => {
  assertEquals(decodeUtf8Strict(enc.encode("\uFEFFa\r\nZürich\n"), "f"), "a\r\nZürich\n");
  const cases: [number[], string][] = [
    [[0x61, 0x0a, 0x62, 0xff, 0x0a], "f: line 2: invalid UTF-8 at byte 3"],
    // Latin-1 "ü" (0xfc), on line 3 after CRLF ends.
    [[0x61, 0x0d, 0x0a, 0x0d, 0x0a, 0x5a, 0xfc, 0x72], "f: line 3: invalid UTF-8 at byte 6"],
    // An overlong "/" (c0 af) and a UTF-16 surrogate (ed a0 80): not UTF-8.
    [[0x7b, 0xc0, 0xaf, 0x7d], "f: line 1: invalid UTF-8 at byte 1"],
    [[0x0a, 0x0a, 0xed, 0xa0, 0x80], "f: line 3: invalid UTF-8 at byte 2"],
    // "é" cut by the end of the file: the offset of the end, as the dataset readers give it.
    [[0x61, 0x0a, 0x62, 0xc3], "f: line 2: invalid UTF-8 at byte 4"],
    // A byte-order mark counts in the offset.
    [[0xef, 0xbb, 0xbf, 0x61, 0x80], "f: line 1: invalid UTF-8 at byte 4"],
  ];
  for (const [bytes, want] of cases) {
    let got = "accepted";
    try {
      decodeUtf8Strict(new Uint8Array(bytes), "f");
    } catch (e) {
      got = String(e);
    }
    assertEquals(got, want, bytes.join());
  }
});

Deno.test("report: valid rows with non-ASCII predictions and golds are accepted", async () => {
  assert(ROWS.includes('"prediction":"Zürich"'), ROWS);
  const out = `${TMP}/ok/report`;
  const r = await runStage("pipeline/report.ts", [FULL, "--out", out, "--resamples", "50"]);
  assertEquals(r.code, 0, r.stderr);
  const s = JSON.parse(await Deno.readTextFile(`${out}/report.json`)).datasets[0].systems[0];
  assertEquals([s.em.value, s.rows], [(100 * 2) / 3, `${FULL}/rows.ndjson`]);
});

Deno.test("report: a rows file with a byte that is not UTF-8 is refused by line and byte, not as stale rows", async () => {
  // The audit's case: a 0xff inside "Altstadt" (q2's row, line 2).
  const at = offsetAfter(ROWS, 2, '"prediction":"Alt');
  const dir = await fullWith("ff", "rows.ndjson", withByte(ROWS, at));
  assertEquals(
    await refused([`B=${dir}`]),
    `report: ${dir}/rows.ndjson: line 2: invalid UTF-8 at byte ${at}`,
  );
  // Rows saved as Latin-1: "ü" is the one byte 0xfc (q1's row, line 1).
  const latin1 = Uint8Array.from(ROWS, (c) => c.charCodeAt(0));
  const u = offsetAfter(ROWS.replaceAll("ü", "u"), 1, '"prediction":"Z');
  assertEquals(latin1[u], 0xfc);
  const dir2 = await fullWith("latin1", "rows.ndjson", latin1);
  assertEquals(
    await refused([FULL, `B=${dir2}`]),
    `report: ${dir2}/rows.ndjson: line 1: invalid UTF-8 at byte ${u}`,
  );
});

Deno.test("report: a summary.json, a labels file and a --diff provenance.json not UTF-8 are refused by line and byte", async () => {
  const summary = JSON.stringify({ data: DATA, encoder: { name: "enc" } }, null, 2);
  const at = offsetAfter(summary, 4, '"name": "e');
  const dir = await fullWith("summary", "summary.json", withByte(summary, at, 0xfe));
  assertEquals(
    await refused([dir]),
    `report: ${dir}/summary.json: line 4: invalid UTF-8 at byte ${at}`,
  );

  const labelsText = '{"id": "q1", "label": "correct"}\n{"id": "q2", "label": "correct"}\n';
  const labels = `${TMP}/labels.ndjson`;
  const l = offsetAfter(labelsText, 2, '"label": "corr');
  await Deno.writeFile(labels, withByte(labelsText, l, 0xc3));
  assertEquals(
    await refused([FULL, "--labels", labels]),
    `report: ${labels}: line 2: invalid UTF-8 at byte ${l}`,
  );

  const block = JSON.stringify({ format: PROVENANCE_FORMAT, note: "Altstadt" }, null, 2);
  const p = offsetAfter(block, 3, '"note": "Alt');
  const good = await fullWith("prov-a", "provenance.json", enc.encode(block));
  const bad = await fullWith("prov-b", "provenance.json", withByte(block, p));
  assertEquals(
    await refused(["--diff", good, bad]),
    `report: ${bad}/provenance.json: line 3: invalid UTF-8 at byte ${p}`,
  );
});

Deno.test("report --search-error: a search record or top-k file not UTF-8 is refused by line and byte", async () => {
  const dir = fixture();
  try {
    const record = Deno.readTextFileSync(`${dir}/np1.search.json`);
    const r = offsetAfter(record, 1, '"mode":"appro');
    Deno.writeFileSync(`${dir}/np1.search.json`, withByte(record, r));
    assertEquals(
      await refused(["--search-error", `${dir}/exact.json`, `${dir}/np1.json`]),
      `report: ${dir}/np1.search.json: line 1: invalid UTF-8 at byte ${r}`,
    );
    Deno.writeTextFileSync(`${dir}/np1.search.json`, record);
    const topk = Deno.readTextFileSync(`${dir}/np1.topk.ndjson`);
    const t = offsetAfter(topk, 2, '"phrase":"');
    Deno.writeFileSync(`${dir}/np1.topk.ndjson`, withByte(topk, t, 0x80));
    assertEquals(
      await refused(["--search-error", `${dir}/exact.json`, `${dir}/np1.json`]),
      `report: ${dir}/np1.topk.ndjson: line 2: invalid UTF-8 at byte ${t}`,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
