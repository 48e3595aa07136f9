/**
 * A corpus apart from the question set, through every stage: `records`
 * (paragraph records of any corpus, question records of any question set,
 * SQuAD's bytes unchanged), `embed_context` / `embed_question` on a DPR
 * passage TSV and a DPR question CSV (passage ids `1`, `wiki:12`, `über-3`
 * as dump names), `index --context` a corpus (`paragraphs.ndjson` keeps id,
 * title, text), `search` on a DPR and a CuratedTREC set (question ids from
 * 0, open top-1 EM/F1, DPR top-k passage accuracy) and `evaluate
 * --topk-file --index`. Top-k passage accuracy is compared with the Python
 * reference `bench/reference/dpr_eval.py` on a generated corpus (unicode
 * texts, several passages, regex answers). Fixtures:
 * `tests/testdata/corpus/`.
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { python, ROOT, runStage } from "../_util.ts";
import { SAME_CPYTHON } from "../metrics/_cpython.ts";
import { Xoshiro128StarStar } from "../../metrics/mod.ts";

const DATA = `${ROOT}/tests/testdata/corpus`;
const SQUAD = `${ROOT}/tests/testdata/datasets/squad_v1.json`;

async function ok(script: string, args: readonly string[]): Promise<string> {
  const r = await runStage(script, args);
  assertEquals(r.code, 0, `${script} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const lines = (text: string) => text.trimEnd().split("\n").map((l) => JSON.parse(l));

Deno.test("records: paragraph records of any corpus, question records of any question set", async () => {
  assertEquals(
    lines(await ok("pipeline/records.ts", [`${DATA}/psgs.tsv`, "--kind", "paragraph"])),
    [
      {
        kind: "paragraph",
        id: "1",
        context: "Ada Lovelace built the long bridge in 1850 near the river.",
        title: "Ada Lovelace",
      },
      {
        kind: "paragraph",
        id: "wiki:12",
        context: "Zürich is a city in Switzerland on Lake Zürich.",
        title: "Zürich",
      },
      {
        kind: "paragraph",
        id: "über-3",
        context: 'The Straße museum opened in 1984, the year of "the book".',
        title: "Straße",
      },
      {
        kind: "paragraph",
        id: "4",
        context: "The river Aare flows through Bern, the federal city.",
        title: "Aare",
      },
    ],
  );
  const jsonl = await ok("pipeline/records.ts", [
    `${DATA}/corpus.jsonl`,
    "--kind",
    "paragraph",
    "--format",
    "passages",
  ]);
  assertEquals(
    jsonl,
    '{"kind":"paragraph","id":"a/1","context":"Ada Lovelace built the long bridge in 1850.","title":"Ada"}\n' +
      '{"kind":"paragraph","id":"7","context":"Zürich is a city in Switzerland.","title":"Zürich"}\n' +
      '{"kind":"paragraph","id":"wiki:9","context":"A passage without a title, about 北京.","title":""}\n',
  );
  assertEquals(
    await ok("pipeline/records.ts", [`${DATA}/nq.qa.csv`]),
    '{"kind":"question","id":"0","question":"who built the long bridge"}\n' +
      '{"kind":"question","id":"1","question":"where is zürich"}\n' +
      '{"kind":"question","id":"2","question":"when did the museum open"}\n' +
      '{"kind":"question","id":"3","question":"which river flows through bern"}\n',
  );
  // A gzip'd NQ-open set, questions without ids numbered from 0; MRQA keeps its qids.
  const nq = await ok("pipeline/records.ts", [
    `${ROOT}/tests/testdata/datasets/nq-open.jsonl`,
    "--kind",
    "question",
    "--format",
    "nq-open",
  ]);
  assertEquals(lines(nq).map((r) => r.id), lines(nq).map((_, i) => String(i)));
  const mrqa = lines(
    await ok("pipeline/records.ts", [`${ROOT}/tests/testdata/datasets/mrqa.jsonl`]),
  );
  assert(mrqa.length > 0 && mrqa.every((r) => typeof r.paragraphId === "string"));
  // An MRQA file's contexts as a corpus.
  const mrqaParas = lines(
    await ok("pipeline/records.ts", [
      `${ROOT}/tests/testdata/datasets/mrqa.jsonl`,
      "--kind",
      "paragraph",
    ]),
  );
  assertEquals(
    mrqaParas.map((p) => p.id),
    mrqa.map((q) => q.paragraphId).filter(
      (id, i, all) => all.indexOf(id) === i,
    ),
  );
});

Deno.test("records: a SQuAD file gives the same bytes with --format squad, and from stdin", async () => {
  const squad = JSON.parse(await Deno.readTextFile(SQUAD));
  const paras: string[] = [], questions: string[] = [];
  for (const a of squad.data) {
    a.paragraphs.forEach(
      (p: { context: string; qas: { id: string; question: string }[] }, i: number) => {
        const id = `${a.title}_${i}`;
        paras.push(
          JSON.stringify({ kind: "paragraph", id, context: p.context, title: a.title, index: i }),
        );
        for (const q of p.qas) {
          questions.push(
            JSON.stringify({ kind: "question", id: q.id, question: q.question, paragraphId: id }),
          );
        }
      },
    );
  }
  for (const extra of [[], ["--format", "squad"]]) {
    assertEquals(
      await ok("pipeline/records.ts", [SQUAD, "--kind", "paragraph", ...extra]),
      paras.join("\n") + "\n",
    );
    assertEquals(await ok("pipeline/records.ts", [SQUAD, ...extra]), questions.join("\n") + "\n");
  }
  const r = await runStage("pipeline/records.ts", ["-", "--kind", "paragraph"], {
    stdin: await Deno.readFile(SQUAD),
  });
  assertEquals([r.code, r.stdout], [0, paras.join("\n") + "\n"]);
  // --out into a folder that is not there: one line, the system's words without an error class.
  const dir = await Deno.makeTempDir();
  try {
    const missing = await runStage("pipeline/records.ts", [SQUAD, "--out", `${dir}/no/r.ndjson`]);
    assertEquals(
      [missing.code, missing.stderr],
      [2, `records: ${dir}/no/r.ndjson: ${dir}/no: no such folder (for ${dir}/no/r.ndjson)\n`],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("corpus through every stage: dumps named by passage id, index, search, scores", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corpus_stages_" });
  try {
    // From stdin too: the format is told from the first bytes.
    const r = await runStage(
      "pipeline/embed_context.ts",
      ["-", `${dir}/c_emb`, "--sparse"],
      { stdin: await Deno.readFile(`${DATA}/psgs.tsv`) },
    );
    assertEquals(r.code, 0, r.stderr);
    const names = [...Deno.readDirSync(`${dir}/c_emb`)].map((e) => e.name).sort();
    assertEquals(names, [
      ".phraseval-dump.json",
      "1.json",
      "1.npz",
      "4.json",
      "4.npz",
      "wiki:12.json",
      "wiki:12.npz",
      "über-3.json",
      "über-3.npz",
    ]);
    await ok("pipeline/embed_question.ts", [`${DATA}/nq.qa.csv`, `${dir}/q_emb`, "--sparse"]);
    assertEquals(
      [...Deno.readDirSync(`${dir}/q_emb`)].map((e) => e.name).sort(),
      [".phraseval-dump.json", "0.npz", "1.npz", "2.npz", "3.npz"],
    );
    await ok("pipeline/embed_question.ts", [
      `${DATA}/curatedtrec.qa.csv`,
      `${dir}/t_emb`,
      "--sparse",
      "--format",
      "trec",
    ]);
    await ok("pipeline/index.ts", [
      `${dir}/c_emb`,
      `${dir}/ix`,
      "--sparse",
      "--context",
      `${DATA}/psgs.tsv`,
      "--format",
      "dpr-passages",
    ]);
    const table = lines(await Deno.readTextFile(`${dir}/ix/paragraphs.ndjson`));
    assertEquals(table.map((p) => [p.id, p.title, p.context]), [
      ["1", "Ada Lovelace", "Ada Lovelace built the long bridge in 1850 near the river."],
      ["wiki:12", "Zürich", "Zürich is a city in Switzerland on Lake Zürich."],
      ["über-3", "Straße", 'The Straße museum opened in 1984, the year of "the book".'],
      ["4", "Aare", "The river Aare flows through Bern, the federal city."],
    ]);
    assert(table.every((p) => Array.isArray(p.offsets)), "offsets found in the passage texts");

    const s = await runStage("pipeline/search.ts", [
      `${DATA}/nq.qa.csv`,
      `${dir}/ix`,
      `${dir}/q_emb`,
      `${dir}/pred.json`,
      "--top-k",
      "5",
      "--topk-out",
      `${dir}/topk.ndjson`,
    ]);
    assertEquals(s.code, 0, s.stderr);
    const pred = JSON.parse(await Deno.readTextFile(`${dir}/pred.json`));
    assertEquals(Object.keys(pred), ["0", "1", "2", "3"]);
    const open = JSON.parse(/search: open: (.*)/.exec(s.stderr)![1]);
    // The scores are those of the top-1 predictions and the top-k file, recomputed here.
    const golds = [["Ada Lovelace", "Lovelace"], ["Switzerland"], ["1984"], ["Aare"]];
    const norm = (t: string) =>
      t.toLowerCase().replace(/[!-/:-@[-`{-~]/g, "").replace(/\b(a|an|the)\b/g, " ").split(/\s+/)
        .filter(Boolean).join(" ");
    const em = golds.map((g, i) => g.some((a) => norm(a) === norm(pred[String(i)])) ? 1 : 0);
    assertEquals(open.exact_match, (100 * em.reduce((a: number, b: number) => a + b, 0)) / 4);
    assertEquals([open.rules, open.format, open.questions, open.k], ["open-domain", "dpr", 4, 5]);
    assertEquals(Object.keys(open.top_k_accuracy), ["1", "5"]);
    const topk = lines(await Deno.readTextFile(`${dir}/topk.ndjson`));
    const text = new Map(table.map((p) => [p.id, p.context as string]));
    const firstHit = golds.map((g, i) => {
      const ps = [...new Set(topk.filter((t) => t.id === String(i)).map((t) => t.paragraph))];
      return ps.findIndex((p) => g.some((a) => text.get(p)!.includes(a)));
    });
    for (const k of [1, 5]) {
      assertEquals(
        open.top_k_accuracy[String(k)],
        (100 * firstHit.filter((f) => f >= 0 && f < k).length) / 4,
      );
    }
    const rows = lines(await Deno.readTextFile(`${dir}/pred.rows.ndjson`));
    assertEquals(
      rows.map((r) => [r.id, r.prediction, r.em]),
      em.map((e, i) => [
        String(i),
        pred[String(i)],
        e,
      ]),
    );
    // evaluate --topk-file --index writes the same numbers as JSON.
    const e = await runStage("pipeline/evaluate.ts", [
      `${DATA}/nq.qa.csv`,
      `${dir}/pred.json`,
      "--topk-file",
      `${dir}/topk.ndjson`,
      "--index",
      `${dir}/ix`,
      "--open-out",
      `${dir}/open.json`,
    ]);
    assertEquals(e.code, 0, e.stderr);
    assertEquals(JSON.parse(await Deno.readTextFile(`${dir}/open.json`)), open);
    assertMatch(e.stdout, /^\{"exact_match": [0-9.]+, "f1": [0-9.]+\}\n$/);

    // CuratedTREC: regex answers, EM only.
    const t = await runStage("pipeline/search.ts", [
      `${DATA}/curatedtrec.qa.csv`,
      `${dir}/ix`,
      `${dir}/t_emb`,
      `${dir}/trec.json`,
      "--top-k",
      "20",
      "--topk-out",
      `${dir}/trec.ndjson`,
    ]);
    assertEquals(t.code, 0, t.stderr);
    const trec = JSON.parse(/search: open: (.*)/.exec(t.stderr)![1]);
    assertEquals([trec.format, trec.f1, trec.top_k_f1], ["trec", null, null]);
    // At most 4 passages: every question is short of 5 and 20, and @20 is @5.
    assertEquals(trec.short, { "1": 0, "5": 3, "20": 3 });
    const patterns = [/19[0-9]{2}/iu, /Stra(ss|ß)e/iu, /Ada\s+Lovelace/iu];
    const trecTopk = lines(await Deno.readTextFile(`${dir}/trec.ndjson`));
    const trecFirst = patterns.map((re, i) => {
      const ps = [...new Set(trecTopk.filter((r) => r.id === String(i)).map((r) => r.paragraph))];
      return ps.findIndex((p) => re.test(text.get(p)!));
    });
    for (const k of [1, 5, 20]) {
      assertEquals(
        trec.top_k_accuracy[String(k)],
        (100 * trecFirst.filter((f) => f >= 0 && f < k).length) / 3,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Seeded words (ASCII, Latin with diacritics, CJK, combining marks) for a generated corpus. */
const WORDS = [
  "river",
  "bridge",
  "Zürich",
  "Straße",
  "STRASSE",
  "café",
  "cafe\u0301",
  "北京",
  "1984",
  "1850",
  "museum",
  "Ada",
  "Lovelace",
  "Bern",
  "Aare",
  "İstanbul",
  "city",
  "lake",
  "ΟΔΟΣ",
  "the",
];

Deno.test({
  name: "top-k passage accuracy equals dpr_eval.py on a generated corpus (regex answers, unicode)",
  ignore: !SAME_CPYTHON,
  async fn() {
    const rng = new Xoshiro128StarStar(23);
    const below = (n: number) => rng.nextUint32() % n;
    const pick = <T>(xs: readonly T[]) => xs[below(xs.length)];
    const dir = await Deno.makeTempDir({ prefix: "corpus_accuracy_" });
    try {
      const passages: [string, string, string][] = [];
      for (let i = 0; i < 24; i++) {
        const text = Array.from({ length: 6 + below(10) }, () => pick(WORDS)).join(" ") + ".";
        passages.push([i % 3 === 0 ? `wiki:${i}` : String(i), text, `Title ${pick(WORDS)}`]);
      }
      await Deno.writeTextFile(
        `${dir}/psgs.tsv`,
        "id\ttext\ttitle\n" + passages.map((p) => p.join("\t")).join("\n") + "\n",
      );
      const py = (s: string) => `'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
      const sets: Record<string, [string, string[]][]> = {
        "nq.qa.csv": [],
        "curatedtrec.qa.csv": [],
      };
      for (let q = 0; q < 40; q++) {
        const words = Array.from({ length: 2 + below(3) }, () => pick(WORDS)).join(" ");
        sets["nq.qa.csv"].push([words, Array.from({ length: 1 + below(2) }, () => pick(WORDS))]);
        const patterns = ["19[0-9]{2}", "Stra(ss|ß)e", "\\bcafe\\b", "北京", "ΟΔΟΣ", "Ber."];
        sets["curatedtrec.qa.csv"].push([words, [pick(patterns)]]);
      }
      for (const [name, qs] of Object.entries(sets)) {
        await Deno.writeTextFile(
          `${dir}/${name}`,
          qs.map(([q, a]) => `${q}\t[${a.map(py).join(", ")}]`).join("\n") + "\n",
        );
      }
      await ok("pipeline/embed_context.ts", [`${dir}/psgs.tsv`, `${dir}/c_emb`, "--sparse"]);
      await ok("pipeline/index.ts", [
        `${dir}/c_emb`,
        `${dir}/ix`,
        "--sparse",
        "--context",
        `${dir}/psgs.tsv`,
      ]);
      const table = lines(await Deno.readTextFile(`${dir}/ix/paragraphs.ndjson`));
      const texts = Object.fromEntries(table.map((p) => [p.id, p.context]));
      const cases: unknown[] = [];
      const ours: Record<string, number>[] = [];
      for (const [name, topK] of [["nq.qa.csv", 20], ["curatedtrec.qa.csv", 100]] as const) {
        const stem = name.split(".")[0];
        await ok("pipeline/embed_question.ts", [
          `${dir}/${name}`,
          `${dir}/${stem}_emb`,
          "--sparse",
        ]);
        const s = await runStage("pipeline/search.ts", [
          `${dir}/${name}`,
          `${dir}/ix`,
          `${dir}/${stem}_emb`,
          `${dir}/${stem}.json`,
          "--top-k",
          String(topK),
          "--topk-out",
          `${dir}/${stem}.ndjson`,
        ]);
        assertEquals(s.code, 0, s.stderr);
        ours.push(JSON.parse(/search: open: (.*)/.exec(s.stderr)![1]).top_k_accuracy);
        const topk = lines(await Deno.readTextFile(`${dir}/${stem}.ndjson`));
        const qs = sets[name].map(([, answers], i) => {
          const ranked = topk.filter((t) => t.id === String(i)).sort((a, b) => a.rank - b.rank)
            .map((t) => t.paragraph);
          return [answers, name !== "nq.qa.csv", ranked];
        });
        cases.push({
          passages: texts,
          questions: qs,
          ks: [1, 5, 20, 100].filter((k) => k <= topK),
        });
      }
      const ref = await python(
        ["bench/reference/dpr_eval.py", "--batch"],
        JSON.stringify({ passage_accuracy: cases }),
      );
      const want = JSON.parse(ref.stdout).passage_accuracy;
      assertEquals(ours, want);
      // Not all hits nor all misses: the case tells something.
      assert(
        ours.some((a) => Object.values(a).some((v) => v > 0 && v < 100)),
        JSON.stringify(ours),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
