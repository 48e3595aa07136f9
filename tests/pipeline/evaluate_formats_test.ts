/**
 * `evaluate DATA PRED` on every question-set format (issue 23): the format
 * is detected from the file (or named with `--format`), and the first stdout
 * line is what that format's official script prints, compared here with our
 * Python references of those scripts (`bench/reference/`) on the bundled
 * fixtures of `tests/testdata/datasets/`, with predictions that are right,
 * partly right, wrong, empty and missing. Bad input exits 2 with one line.
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { python, ROOT, runStage } from "../_util.ts";
import { readQuestions } from "../../io/datasets/read.ts";

const FIX = `${ROOT}/tests/testdata/datasets`;
const tmp = Deno.makeTempDirSync({ prefix: "pv-eval-formats-" });
globalThis.addEventListener("unload", () => Deno.removeSync(tmp, { recursive: true }));

/** Predictions for the questions of `data`: right, partly right, wrong, empty, missing in turn (the last always missing). */
async function predictionsFor(
  data: string,
  opts: { format?: string; lang?: string } = {},
): Promise<{ file: string; ids: string[]; pred: Record<string, string> }> {
  const qs = await Effect.runPromise(Stream.runCollect(readQuestions(data, opts)));
  const pred: Record<string, string> = {};
  const ids: string[] = [];
  [...qs].forEach((q, i) => {
    ids.push(q.id);
    const gold = q.answers[0] ?? "";
    const kind = i % 5;
    if (kind === 0) pred[q.id] = q.regex ? gold.replace(/\\s[*+]|\(.*\)\?|\\/g, "") : gold;
    else if (kind === 1) pred[q.id] = `the ${gold} of Zürich`;
    else if (kind === 2) pred[q.id] = "nothing like it";
    else if (kind === 3) pred[q.id] = "";
  });
  delete pred[ids[ids.length - 1]]; // one missing in every set, however small
  const file = `${tmp}/${data.split("/").pop()}.pred.json`;
  Deno.writeTextFileSync(file, JSON.stringify(pred));
  return { file, ids, pred };
}

const firstLine = (s: string) => s.split("\n")[0];

Deno.test("evaluate: an MRQA file is detected and scored as mrqa_official_eval.py scores it", async () => {
  const data = `${FIX}/mrqa.jsonl`;
  const { file, ids, pred } = await predictionsFor(data);
  const r = await runStage("pipeline/evaluate.ts", [data, file]);
  assertEquals(r.code, 0, r.stderr);
  const ref = await python(["bench/reference/mrqa_eval.py", data, file]);
  assertEquals(ref.code, 0, ref.stderr);
  // The script prints its unanswered lines, then the scores: ours go to stderr.
  const refLines = ref.stdout.trim().split("\n");
  assertEquals(firstLine(r.stdout), refLines[refLines.length - 1]);
  const missing = ids.filter((id) => !(id in pred));
  assert(missing.length > 0);
  assertEquals(
    r.stderr.trim().split("\n"),
    missing.map((id) => `Unanswered question ${id} will receive score 0.`),
  );
  assertEquals(refLines.slice(0, -1), r.stderr.trim().split("\n"));
});

Deno.test("evaluate: XQuAD (de) and MLQA (zh) files are scored as mlqa_evaluation_v1.py scores them", async () => {
  for (
    const [name, lang] of [["xquad.de.json", "de"], ["dev-context-zh-question-en.json", "zh"]]
  ) {
    const data = `${FIX}/${name}`;
    const { file } = await predictionsFor(data);
    const r = await runStage("pipeline/evaluate.ts", [data, file]);
    assertEquals(r.code, 0, r.stderr);
    const ref = await python(["bench/reference/mlqa_eval.py", data, file, lang]);
    assertEquals(ref.code, 0, ref.stderr);
    assertEquals(firstLine(r.stdout), ref.stdout.trim(), name);
    // --format/--lang name the same thing.
    const named = await runStage("pipeline/evaluate.ts", [
      data,
      file,
      "--format",
      "mlqa",
      "--lang",
      lang,
    ]);
    assertEquals(firstLine(named.stdout), ref.stdout.trim());
  }
  // A language the MLQA script has no rules for is refused by name.
  const data = `${FIX}/xquad.de.json`;
  const { file } = await predictionsFor(data);
  const el = await runStage("pipeline/evaluate.ts", [data, file, "--lang", "el"]);
  assertEquals(el.code, 2, el.stderr);
  assertMatch(
    el.stderr.trim(),
    /^evaluate: .*xquad\.de\.json: MLQA has no normalisation for language 'el' .*--format squad for SQuAD v1\.1 rules$/,
  );
});

Deno.test("evaluate: open-domain sets (NQ-open JSONL, DPR CSV, TriviaQA, CuratedTREC regex) score top-1 EM/F1 as DrQA/DensePhrases", async () => {
  const cases: [string, boolean][] = [
    ["nq-open.jsonl", false],
    ["nq-test.qa.csv", false],
    ["triviaqa-open.jsonl", false],
    ["curatedtrec-test.qa.csv", true],
  ];
  for (const [name, regex] of cases) {
    const data = `${FIX}/${name}`;
    const { file, pred } = await predictionsFor(data);
    const qs = [...await Effect.runPromise(Stream.runCollect(readQuestions(data)))];
    const r = await runStage("pipeline/evaluate.ts", [data, file]);
    assertEquals(r.code, 0, r.stderr);
    const rows = qs.map((q) => [q.id in pred ? [pred[q.id]] : [], q.answers]);
    const ref = await python(
      ["bench/reference/dpr_eval.py", "--batch"],
      JSON.stringify({ open_folds: [[rows, regex, 1]] }),
    );
    assertEquals(ref.code, 0, ref.stderr);
    const want = JSON.parse(ref.stdout).open_folds[0];
    const got = JSON.parse(firstLine(r.stdout));
    assertEquals(got.exact_match, want.exact_match_top1, name);
    assertEquals(got.f1, want.f1_score_top1, name);
    assertEquals(Object.keys(got), ["exact_match", "f1"]);
    if (regex) assert(got.exact_match > 0, `${name}: a regex answer matched`);
  }
});

Deno.test("evaluate: bad question sets and options exit 2 with one line", async () => {
  const pred = `${tmp}/empty.pred.json`;
  Deno.writeTextFileSync(pred, "{}");
  const write = (name: string, text: string) => {
    Deno.writeTextFileSync(`${tmp}/${name}`, text);
    return `${tmp}/${name}`;
  };
  const cases: [string[], RegExp][] = [
    [
      [write("bad.qa.csv", "who\t['a']\nwhat\tnot a list\n"), pred],
      /^evaluate: .*bad\.qa\.csv: line 2 question "1": answers are not a Python list of strings/,
    ],
    [
      [write("trec-bad.qa.csv", "q one\t['(?P=x)a']\n"), pred, "--format", "trec"],
      /^evaluate: .*trec-bad\.qa\.csv: question "0": Python regular expression "\(\?P=x\)a" refused: /,
    ],
    [
      [write("dup.jsonl", '{"id":"a","question":"q","answer":["x"]}\n'.repeat(2)), pred],
      /^evaluate: .*dup\.jsonl: line 2 question "a": duplicate id \(first at line 1\)$/,
    ],
    [[`${FIX}/nq-open.jsonl`, pred, "--v2"], /^evaluate: --v2: for SQuAD files; .* is open$/],
    [[`${FIX}/nq-open.jsonl`, pred, "--format", "nope"], /^evaluate: .*nope/],
    [[`${FIX}/psgs_w100.tsv`, pred], /^evaluate: .*psgs_w100\.tsv: .*corpus/],
    // A question without gold answers after unanswered ones: the one line, not the notes first.
    [
      [
        write(
          "late-empty.jsonl",
          ["a", "b", "c"].map((q, i) => JSON.stringify({ question: q, answer: i < 2 ? ["x"] : [] }))
            .join("\n") + "\n",
        ),
        pred,
      ],
      /^evaluate: .*late-empty\.jsonl: question "2": question 2 \(#2 in dataset order\) has no gold answers/,
    ],
    // DPR's first row with its question empty: named, not read as SQuAD JSON.
    [
      [write("emptyq.qa.csv", "\t['Leonardo']\nwho\t['a']\n"), pred],
      /^evaluate: .*emptyq\.qa\.csv: line 1 question "0": empty question$/,
    ],
  ];
  for (const [args, want] of cases) {
    const r = await runStage("pipeline/evaluate.ts", args);
    assertEquals(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    const lines = r.stderr.trim().split("\n");
    assertEquals(lines.length, 1, r.stderr);
    assertMatch(lines[0], want);
    assertEquals(r.stdout, "");
  }
});

Deno.test("evaluate: a gzip file with bytes after its end fails the same way on every run", async () => {
  // More than the 64 KiB the format is told from, then bytes that are no gzip member: whether
  // the detector or the reader meets them first, the one line is the gzip's.
  const lines = ['{"header": {"dataset": "X", "split": "dev"}}'];
  for (let i = 0; i < 3000; i++) {
    lines.push(JSON.stringify({
      context: "Paris is big.",
      qas: [{ qid: `q${i}`, question: "Where?", answers: ["Paris"] }],
    }));
  }
  const gz = new Uint8Array(
    await new Response(
      new Blob([lines.join("\n") + "\n"]).stream().pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer(),
  );
  const path = `${tmp}/garbage.jsonl.gz`;
  Deno.writeFileSync(path, new Uint8Array([...gz, ...new TextEncoder().encode("garbage!")]));
  const pred = `${tmp}/q0.pred.json`;
  Deno.writeTextFileSync(pred, '{"q0": "Paris"}');
  for (let run = 0; run < 4; run++) {
    const r = await runStage("pipeline/evaluate.ts", [path, pred]);
    assertEquals(
      [r.code, r.stdout, r.stderr.trim()],
      [2, "", `evaluate: ${path}: corrupt gzip data (incorrect header check)`],
    );
  }
});

Deno.test("evaluate --fields: a generic JSONL or CSV set read through a field map, scored by hand", async () => {
  const pred = `${tmp}/generic.pred.json`;
  // g1 exact; g2 "in 1850" against "1850": EM 0, F1 2/3; g3 nothing in common.
  await Deno.writeTextFile(pred, JSON.stringify({ g1: "Ada", g2: "in 1850", g3: "la gare" }));
  const want = { exact_match: 100 / 3, f1: (1 + 2 / 3) / 3 * 100 };
  for (
    const [file, format, fields] of [
      ["generic.jsonl", "jsonl", "question=q,answers=gold,id=qid"],
      ["generic.csv", "csv", '{"question": "q", "answers": "gold", "id": "qid"}'],
    ]
  ) {
    const r = await runStage("pipeline/evaluate.ts", [
      `${FIX}/${file}`,
      pred,
      "--format",
      format,
      "--fields",
      fields,
    ]);
    assertEquals(r.code, 0, r.stderr);
    const got = JSON.parse(firstLine(r.stdout));
    assert(Math.abs(got.exact_match - want.exact_match) < 1e-12, r.stdout);
    assert(Math.abs(got.f1 - want.f1) < 1e-12, r.stdout);
  }
  for (
    const [fields, re] of [
      ["question=q,bogus=x", /^evaluate: --fields: unknown key "bogus"/],
      ["answers=gold", /^evaluate: --fields: no "question" field/],
      ["question", /^evaluate: --fields: "question" is not key=field/],
    ] as const
  ) {
    const r = await runStage("pipeline/evaluate.ts", [
      `${FIX}/generic.jsonl`,
      pred,
      "--format",
      "jsonl",
      "--fields",
      fields,
    ]);
    assertEquals(r.code, 2, r.stderr);
    assertEquals(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
    assertMatch(r.stderr, re);
  }
});
