/**
 * Hybrid dense ⊕ sparse `ivf-pq` indexes (`--sparse --dense-dims D`,
 * `search/index/ivfpq/hybrid.ts`): with nprobe = nlist and candidates covering
 * every phrase, search gives exactly `--exact`'s pred.json and top-k (a
 * synthetic CSR dump with tied rows, both metrics; real `piqa-lstm+sparse`
 * dumps of three dev paragraphs); with few candidates, every reported
 * score is the exact score of its row and the rows are the IVF-PQ's
 * candidates; two builds write the same bytes; bad input exits 2 with one
 * line and leaves nothing behind; serve's searcher takes the hybrid default
 * candidates when none are given.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../../../_assert.ts";
import { sha256File } from "../../../_util.ts";
import { writeContextDump, writeQuestionDump } from "../../../../io/dump/writer.ts";
import type { CsrMatrix, Matrix } from "../../../../io/matrix.ts";
import { openDumpSync } from "../../../../io/dump/reader_sync.ts";
import { denseHead } from "../../../../search/index/ivfpq/hybrid.ts";
import { ivfCandidates } from "../../../../search/index/ivfpq/ivfpq.ts";
import { openIndexSync } from "../../../../search/index/read.ts";
import { scoreQuestions, searchVectors } from "../../../../search/open/open.ts";
import { DEFAULT_HYBRID_CANDIDATES } from "../../../../search/index/defaults.ts";
import { Searcher } from "../../../../serve/search.ts";
import { ok, records, refused, subset } from "../../_stages.ts";

/** A seeded PRNG in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const D = 8, SPARSE = 64, DIM = D + SPARSE;

/** One hybrid CSR row: D dense values, then `nnz` distinct sparse columns (increasing). */
function hybridRow(r: () => number, nnz: number): { cols: number[]; vals: number[] } {
  const cols: number[] = [], vals: number[] = [];
  for (let c = 0; c < D; c++) {
    cols.push(c);
    vals.push(Math.fround((r() - 0.5) * 4));
  }
  const set = new Set<number>();
  while (set.size < nnz) set.add(D + Math.floor(r() * SPARSE));
  for (const c of [...set].sort((a, b) => a - b)) {
    cols.push(c);
    vals.push(Math.fround(r() * 2));
  }
  return { cols, vals };
}

function csr(rows: { cols: number[]; vals: number[] }[]): CsrMatrix {
  const indptr = new Int32Array(rows.length + 1);
  rows.forEach((x, i) => indptr[i + 1] = indptr[i] + x.cols.length);
  return {
    kind: "csr",
    rows: rows.length,
    cols: DIM,
    data: new Float32Array(rows.flatMap((x) => x.vals)),
    indices: new Int32Array(rows.flatMap((x) => x.cols)),
    indptr,
  };
}

/**
 * A synthetic hybrid dump of three dev paragraphs: each word a phrase, its
 * row D dense values and 3 sparse ones; some rows repeat earlier rows
 * (exact ties, to be broken by row). Writes `dir/data.json`,
 * `dir/context_emb`, `dir/question_emb`; returns the phrase count.
 */
async function syntheticDump(dir: string): Promise<number> {
  Deno.mkdirSync(`${dir}/context_emb`, { recursive: true });
  Deno.mkdirSync(`${dir}/question_emb`, { recursive: true });
  await subset(`${dir}/data.json`, 3);
  const data = JSON.parse(Deno.readTextFileSync(`${dir}/data.json`));
  const r = rng(7);
  const seen: { cols: number[]; vals: number[] }[] = [];
  let phrases = 0;
  for (const [pi, p] of data.data[0].paragraphs.entries()) {
    const words = [...(p.context as string).matchAll(/\S+/g)];
    const rows = words.map((_, i) => {
      // Every 9th row repeats an earlier one: an exact tie in every question's scores.
      const row = i % 9 === 8 && seen.length > 0
        ? seen[Math.floor(r() * seen.length)]
        : hybridRow(r, 3);
      seen.push(row);
      return row;
    });
    phrases += rows.length;
    await Effect.runPromise(writeContextDump(`${dir}/context_emb`, {
      id: `${data.data[0].title}_${pi}`,
      phrases: words.map((w) => ({ text: w[0], start: w.index!, end: w.index! + w[0].length })),
      matrix: csr(rows),
    }, { sparse: true, compressed: false }));
    for (const qa of p.qas) {
      await Effect.runPromise(writeQuestionDump(`${dir}/question_emb`, {
        id: qa.id,
        vector: csr([hybridRow(r, 6)]),
      }, { sparse: true, compressed: false }));
    }
  }
  return phrases;
}

const phrasesOf = (ix: string) =>
  (JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)) as { phrases: number }).phrases;

/** `search` of every question of `data` against `ix` into `at/name.{json,ndjson}`. */
const search = (data: string, ix: string, q: string, at: string, name: string, extra: string[]) =>
  ok("pipeline/search.ts", [
    data,
    ix,
    q,
    `${at}/${name}.json`,
    "--top-k",
    "5",
    "--topk-out",
    `${at}/${name}.ndjson`,
    ...extra,
  ]);

Deno.test("hybrid: nprobe = nlist and candidates over every phrase give --exact's answers (synthetic, ip and l2)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-hyb-" });
  try {
    const dir = `${tmp}/d`;
    const n = await syntheticDump(dir);
    for (const metric of ["ip", "l2"]) {
      const at = `${tmp}/${metric}`;
      Deno.mkdirSync(at);
      const common = ["--sparse", "--context", `${dir}/data.json`, "--metric", metric];
      await ok("pipeline/index.ts", [`${dir}/context_emb`, `${at}/exact`, ...common]);
      const built = await ok("pipeline/index.ts", [
        `${dir}/context_emb`,
        `${at}/hyb`,
        ...common,
        ...["--nlist", "4", "--bpv", "4", "--dense-dims", String(D), "--train-paragraphs", "2"],
      ]);
      assertMatch(built.stderr, /ivf-pq nlist 4 bpv 4 over dense dims \[0, 8\)/);
      const h = JSON.parse(Deno.readTextFileSync(`${at}/hyb/index.json`));
      assertEquals([h.kind, h.vectors, h.d, h.parameters.dense_dims], ["ivf-pq", "csr", DIM, D]);
      assertEquals(h.files["ivf/centroids.f32"].bytes, 4 * D * 4);
      assertEquals(phrasesOf(`${at}/hyb`), n);
      const q = `${dir}/question_emb`, data = `${dir}/data.json`;
      await search(data, `${at}/exact`, q, at, "exact", []);
      await search(data, `${at}/hyb`, q, at, "all", ["--nprobe", "4", "--candidates", String(n)]);
      await search(data, `${at}/hyb`, q, at, "alias", ["--nprobe", "4", "--refine", String(n)]);
      await search(data, `${at}/hyb`, q, at, "hexact", ["--exact"]);
      const want = Deno.readTextFileSync(`${at}/exact.json`);
      for (const name of ["all", "alias", "hexact"]) {
        assertEquals(Deno.readTextFileSync(`${at}/${name}.json`), want, `${metric} ${name}`);
        assertEquals(records(`${at}/${name}.ndjson`), records(`${at}/exact.ndjson`), name);
      }
      const recs = records(`${at}/exact.ndjson`);
      assert(recs.length > 100, `${recs.length} records`);
      // The repeated rows make ties inside the top 5: broken by row, as --exact does.
      const ties = recs.filter((x, i) =>
        i > 0 && recs[i - 1].id === x.id && recs[i - 1].score === x.score
      );
      assert(ties.length > 0, "no tie in the top 5: the tie rule is untested");
      // The default (nprobe 10 > nlist 4) is refused; nprobe 1 with the default candidates runs.
      await search(data, `${at}/hyb`, q, at, "dflt", ["--nprobe", "1"]);
      assert(records(`${at}/dflt.ndjson`).length > 0);
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("hybrid: the candidates are the IVF-PQ's and their scores the exact scores of those rows", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-hybc-" });
  try {
    const dir = `${tmp}/d`;
    await syntheticDump(dir);
    const common = ["--sparse", "--context", `${dir}/data.json`];
    await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/hyb`,
      ...common,
      ...["--nlist", "4", "--bpv", "2", "--dense-dims", String(D), "--train-paragraphs", "2"],
    ]);
    const index = openIndexSync(`${tmp}/hyb`);
    const qs: Matrix[] = [];
    const data = JSON.parse(Deno.readTextFileSync(`${dir}/data.json`));
    const dump = openDumpSync(`${dir}/question_emb`, { sparse: true });
    for (const p of data.data[0].paragraphs) {
      for (const qa of p.qas) {
        const v = dump.readQuestion(qa.id);
        if (!("missing" in v) && qs.length < 12) qs.push(v);
      }
    }
    dump.close();
    assertEquals(qs.length, 12);
    const C = 20;
    const hits = await searchVectors(index, qs, { nprobe: 1, candidates: C, topK: C });
    const all = scoreQuestions(index, qs, { topK: index.header.phrases });
    const view = {
      dir: index.dir,
      header: { ...index.header, d: D },
    };
    for (let j = 0; j < qs.length; j++) {
      const exact = new Map(all[j].rows.map((row, i) => [row, all[j].scores[i]]));
      const cands = ivfCandidates(view, denseHead(qs[j] as CsrMatrix, D), 1, C);
      assertEquals(cands.length, C);
      // Every candidate is reported (topK = C), with its exact score, best first, ties by row.
      assertEquals(hits[j].map((h) => h.row).sort((a, b) => a - b), cands.map((c) => c.row));
      for (const h of hits[j]) assertEquals(h.score, exact.get(h.row), `row ${h.row}`);
      for (let i = 1; i < hits[j].length; i++) {
        const a = hits[j][i - 1], b = hits[j][i];
        assert(a.score > b.score || (a.score === b.score && a.row < b.row), `order at ${i}`);
      }
    }
    // Adaptive probing of the dense block's lists: a tau every list is within gives nprobe's
    // answers, one none is within nprobe 1's.
    const o = { candidates: C, topK: C };
    const four = await searchVectors(index, qs, { ...o, nprobe: 4 });
    assert(JSON.stringify(four) !== JSON.stringify(hits), "one list and four differ here");
    assertEquals(await searchVectors(index, qs, { ...o, nprobe: 4, probeTau: 1e9 }), four);
    assertEquals(await searchVectors(index, qs, { ...o, nprobe: 4, probeTau: 1e-12 }), hits);
    // Fewer candidates than top-k count as top-k; 0 is refused.
    const [few] = await searchVectors(index, [qs[0]], { nprobe: 1, candidates: 1, topK: 3 });
    assertEquals(few.length, 3);
    let why = "";
    try {
      await searchVectors(index, [qs[0]], { nprobe: 1, candidates: 0 });
    } catch (e) {
      why = String(e);
    }
    assertMatch(why, /--candidates must be at least 1 on a hybrid index/);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("hybrid: two builds of one dump write the same bytes", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-hybd-" });
  try {
    const dir = `${tmp}/d`;
    await syntheticDump(dir);
    const args = (out: string) => [
      `${dir}/context_emb`,
      out,
      ...["--sparse", "--context", `${dir}/data.json`],
      ...["--nlist", "4", "--bpv", "4", "--dense-dims", String(D), "--train-paragraphs", "2"],
    ];
    await ok("pipeline/index.ts", args(`${tmp}/a`));
    await ok("pipeline/index.ts", args(`${tmp}/b`));
    const files = (ix: string) => {
      const h = JSON.parse(Deno.readTextFileSync(`${ix}/index.json`));
      return Object.keys(h.files).sort();
    };
    assertEquals(files(`${tmp}/a`), files(`${tmp}/b`));
    assert(files(`${tmp}/a`).includes("ivf/codes.u8"));
    for (const name of ["index.json", ...files(`${tmp}/a`)]) {
      assertEquals(
        await sha256File(`${tmp}/a/${name}`),
        await sha256File(`${tmp}/b/${name}`),
        name,
      );
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("hybrid: bad --dense-dims and --candidates exit 2 with one line and leave nothing behind", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-hybbad-" });
  try {
    const dir = `${tmp}/d`;
    await syntheticDump(dir);
    // A dense dump of the same paragraphs.
    const dense = `${tmp}/dense`;
    Deno.mkdirSync(dense);
    await Effect.runPromise(writeContextDump(dense, {
      id: "T_0",
      phrases: [{ text: "a", start: 0, end: 1 }, { text: "b", start: 2, end: 3 }],
      matrix: { kind: "dense", rows: 2, cols: 8, dtype: "f32", data: new Float32Array(16) },
    }, { sparse: false, compressed: false }));
    const index = (emb: string, name: string, extra: string[], re: RegExp) =>
      refused("pipeline/index.ts", [emb, `${tmp}/${name}`, ...extra], re);
    const ivf = ["--nlist", "2", "--bpv", "4"];
    await index(
      `${dir}/context_emb`,
      "nosparse",
      [...ivf, "--dense-dims", "8"],
      /^index: --dense-dims is for a hybrid CSR dump read with --sparse; a dense dump's IVF-PQ uses all its d columns \(drop --dense-dims\)$/,
    );
    await index(
      dense,
      "densedump",
      [...ivf, "--dense-dims", "8"],
      /^index: --dense-dims is for a hybrid CSR dump read with --sparse; a dense dump's IVF-PQ uses all its d columns \(drop --dense-dims\)$/,
    );
    await index(
      dense,
      "densesparse",
      ["--sparse", ...ivf, "--dense-dims", "8"],
      /^index: .*dense\/T_0\.npz: is a dense array: --dense-dims is for a hybrid CSR dump; a dense dump's IVF-PQ uses all its d columns \(drop --sparse and --dense-dims\)$/,
    );
    await index(
      `${dir}/context_emb`,
      "zero",
      ["--sparse", ...ivf, "--dense-dims", "0"],
      /^index: --dense-dims must be at least 1, got 0$/,
    );
    await index(
      `${dir}/context_emb`,
      "big",
      ["--sparse", ...ivf, "--dense-dims", "128"],
      /^index: .*context_emb: --dense-dims 128 is larger than the dump's d = 72$/,
    );
    await index(
      `${dir}/context_emb`,
      "bpv",
      ["--sparse", "--nlist", "2", "--bpv", "3", "--dense-dims", "8"],
      /^index: .*context_emb: --bpv 3 does not divide --dense-dims 8 \(PQ splits the dense block into bpv parts\)$/,
    );
    await index(
      `${dir}/context_emb`,
      "noivf",
      ["--sparse", "--dense-dims", "8"],
      /^index: --dense-dims needs --nlist and --bpv \(it shapes an IVF-PQ index\)$/,
    );
    await index(
      `${dir}/context_emb`,
      "plain",
      ["--sparse", ...ivf],
      /^index: IVF-PQ indexes dense dumps, or a hybrid sparse dump's dense block \(--dense-dims D\); drop --nlist\/--bpv for a plain sparse dump$/,
    );
    // Nothing behind: no index folder, no temporary folder.
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name).sort(), ["d", "dense"]);

    await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/hyb`,
      "--sparse",
      ...ivf,
      "--dense-dims",
      "8",
    ]);
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/exact`, "--sparse"]);
    const search = (ix: string, extra: string[], re: RegExp) =>
      refused("pipeline/search.ts", [
        `${dir}/data.json`,
        `${tmp}/${ix}`,
        `${dir}/question_emb`,
        `${tmp}/pred.json`,
        ...extra,
      ], re);
    await search(
      "hyb",
      ["--nprobe", "1", "--candidates", "0"],
      /^search: .*hyb: --candidates must be at least 1 on a hybrid index \(its approximate scores are the dense block's only\), got 0$/,
    );
    await search(
      "hyb",
      ["--candidates", "5", "--refine", "5"],
      /^search: --refine is the older name of --candidates: give one$/,
    );
    await search(
      "hyb",
      ["--candidates", "-1"],
      /^search: --candidates must be at least 0, got -1$/,
    );
    await search(
      "hyb",
      ["--exact", "--candidates", "5"],
      /^search: --exact cannot go with --nprobe or --candidates$/,
    );
    await search(
      "exact",
      ["--candidates", "5"],
      /^search: .*exact: is an exact index: --nprobe and --candidates \(--refine\) apply to ivf-pq only$/,
    );
    await search(
      "hyb",
      ["--nprobe", "3"],
      /^search: .*hyb: --nprobe 3 is larger than the index's nlist 2 \(.*hyb\)$/,
    );
    assert(![...Deno.readDirSync(tmp)].some((e) => e.name.startsWith("pred")));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("hybrid: real piqa-lstm+sparse dumps, nprobe = nlist and candidates over every phrase = --exact", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-hybreal-" });
  try {
    await subset(`${tmp}/in.json`, 3);
    await ok("pipeline/full.ts", [
      "--data",
      `${tmp}/in.json`,
      "--encoder",
      "piqa-lstm+sparse",
      "--out",
      `${tmp}/run`,
    ]);
    const run = `${tmp}/run`;
    const common = ["--sparse", "--context", `${run}/context.json`];
    await ok("pipeline/index.ts", [`${run}/dumps/context_emb`, `${tmp}/exact`, ...common]);
    await ok("pipeline/index.ts", [
      `${run}/dumps/context_emb`,
      `${tmp}/hyb`,
      ...common,
      ...["--nlist", "4", "--bpv", "64", "--dense-dims", "256", "--train-paragraphs", "2"],
    ]);
    const n = phrasesOf(`${tmp}/hyb`);
    const q = `${run}/dumps/question_emb`, data = `${tmp}/in.json`;
    await search(data, `${tmp}/exact`, q, tmp, "exact", []);
    await search(data, `${tmp}/hyb`, q, tmp, "all", ["--nprobe", "4", "--candidates", String(n)]);
    assertEquals(
      Deno.readTextFileSync(`${tmp}/all.json`),
      Deno.readTextFileSync(`${tmp}/exact.json`),
    );
    assertEquals(records(`${tmp}/all.ndjson`), records(`${tmp}/exact.ndjson`));
    assert(records(`${tmp}/exact.ndjson`).length > 50);
    // serve's searcher on the hybrid index without --candidates takes the hybrid default (it
    // refused to start, asking for at least 1), the same answers as the default given.
    const answers = async (refine?: number) => {
      const s = await Searcher.open({
        index: `${tmp}/hyb`,
        encoder: "piqa-lstm+sparse",
        ...(refine === undefined ? {} : { refine }),
      });
      try {
        const got = await s.search("What did the Normans give their name to?", { k: 5 });
        return got.results;
      } finally {
        await s.close();
      }
    };
    const byDefault = await answers();
    assertEquals(byDefault.length, 5);
    assertEquals(byDefault, await answers(DEFAULT_HYBRID_CANDIDATES));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("hybrid 4-bit (--pq-bits 4): all lists and every phrase re-scored = --exact (ip, l2), over 3 shards too; the candidates are the 4-bit IVF-PQ's with their exact scores", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-hyb4-" });
  try {
    const dir = `${tmp}/d`;
    const n = await syntheticDump(dir);
    const q = `${dir}/question_emb`, data = `${dir}/data.json`;
    const hyb = [
      "--nlist",
      "4",
      "--bpv",
      "2",
      "--dense-dims",
      String(D),
      "--train-paragraphs",
      "2",
    ];
    for (const metric of ["ip", "l2"]) {
      const at = `${tmp}/${metric}`;
      Deno.mkdirSync(at);
      const common = ["--sparse", "--context", data, "--metric", metric];
      await ok("pipeline/index.ts", [`${dir}/context_emb`, `${at}/exact`, ...common]);
      const built = await ok("pipeline/index.ts", [
        `${dir}/context_emb`,
        `${at}/hyb`,
        ...common,
        ...hyb,
        "--pq-bits",
        "4",
      ]);
      assertMatch(built.stderr, /ivf-pq nlist 4 bpv 2 4-bit over dense dims \[0, 8\)/);
      const h = JSON.parse(Deno.readTextFileSync(`${at}/hyb/index.json`));
      assertEquals(
        [h.kind, h.vectors, h.d, h.parameters.dense_dims, h.parameters.bits],
        ["ivf-pq", "csr", DIM, D, 4],
      );
      // 2·bpv = 4 sub-quantizers of 16 entries over the dense block.
      assertEquals(h.files["ivf/codebooks.f32"].bytes, 16 * D * 4);
      await ok("pipeline/index.ts", [
        `${dir}/context_emb`,
        `${at}/s`,
        ...common,
        ...hyb,
        "--pq-bits",
        "4",
        "--shards",
        "3",
      ]);
      await search(data, `${at}/exact`, q, at, "exact", []);
      const all = ["--nprobe", "4", "--candidates", String(n)];
      await search(data, `${at}/hyb`, q, at, "all", all);
      await search(data, `${at}/s`, q, at, "shards", all);
      const want = Deno.readTextFileSync(`${at}/exact.json`);
      for (const name of ["all", "shards"]) {
        assertEquals(Deno.readTextFileSync(`${at}/${name}.json`), want, `${metric} ${name}`);
        assertEquals(records(`${at}/${name}.ndjson`), records(`${at}/exact.ndjson`), name);
      }
      assert(records(`${at}/exact.ndjson`).length > 100);
      // Few candidates: the rows the 4-bit IVF-PQ of the dense block picks, exactly scored.
      const index = openIndexSync(`${at}/hyb`);
      const qs: Matrix[] = [];
      const dump = openDumpSync(q, { sparse: true });
      for (const p of JSON.parse(Deno.readTextFileSync(data)).data[0].paragraphs) {
        for (const qa of p.qas) {
          const v = dump.readQuestion(qa.id);
          if (!("missing" in v) && qs.length < 12) qs.push(v);
        }
      }
      dump.close();
      const C = 20;
      const hits = await searchVectors(index, qs, { nprobe: 1, candidates: C, topK: C });
      const scores = scoreQuestions(index, qs, { topK: index.header.phrases });
      const view = { dir: index.dir, header: { ...index.header, d: D } };
      for (let j = 0; j < qs.length; j++) {
        const exact = new Map(scores[j].rows.map((row, i) => [row, scores[j].scores[i]]));
        const cands = ivfCandidates(view, denseHead(qs[j] as CsrMatrix, D), 1, C);
        assertEquals(cands.length, C);
        assertEquals(hits[j].map((x) => x.row).sort((a, b) => a - b), cands.map((c) => c.row));
        for (const x of hits[j]) assertEquals(x.score, exact.get(x.row), `row ${x.row}`);
      }
    }
    // 2·bpv must divide the dense block: one line, exit 2, nothing written.
    await refused(
      "pipeline/index.ts",
      [
        `${dir}/context_emb`,
        `${tmp}/bad`,
        "--sparse",
        ...["--nlist", "4", "--bpv", "8", "--dense-dims", String(D), "--pq-bits", "4"],
      ],
      /2 × --bpv 8 does not divide --dense-dims 8 \(4-bit PQ splits the dense block into 2·bpv parts\)$/,
    );
    assertEquals([...Deno.readDirSync(tmp)].some((e) => e.name.startsWith("bad")), false);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
