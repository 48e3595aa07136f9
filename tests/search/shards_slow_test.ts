/**
 * Sharded indexes (`search/index/shards.ts`, `search/sharded.ts`):
 *
 * - the assignment is Python's `int.from_bytes(sha256(id)[:8], "big") % N`
 *   for every dev paragraph id, balanced (χ² below the 0.1 % critical
 *   value), and a grown corpus keeps every old paragraph in its shard;
 * - exact search over N = 1, 3, 8 shards (one process, and as per-shard
 *   hits files merged) writes `pred.json` and the top-k records byte for
 *   byte as the unsharded search: NumPy-written dense f32 and scipy CSR
 *   dumps, a hand-made dump of rows tied across paragraphs (both metrics),
 *   a corpus smaller than the shard count (empty shards), a missing
 *   question vector;
 * - IVF-PQ shards share the corpus's quantizer (the unsharded index's
 *   centroids and codebooks, byte for byte, with `--quantizer` or trained
 *   by the shard); at any nprobe the union of the shards' candidates is the
 *   unsharded candidates, row for row and score for score, so without
 *   re-scoring the outputs are byte-identical; with C candidates re-scored
 *   the merged top k is, rank by rank, at least the unsharded one, and every
 *   question whose exact best phrase the unsharded search finds keeps it;
 * - the refusals (exit 2, one line): a missing shard, two shard counts, a
 *   half-written shard, a renamed shard, a foreign corpus, foreign
 *   codebooks or quantizer, bad flags, a missing hits file.
 */
import { Effect } from "effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { DEV_GZ, python, runStage, sha256File } from "../_util.ts";
import { refused } from "./_stages.ts";
import { writeContextDump, writeQuestionDump } from "../../io/dump/writer.ts";
import type { Matrix } from "../../io/matrix.ts";
import { buildIndex, trainQuantizer } from "../../search/index/build.ts";
import { ivfCandidates } from "../../search/index/ivfpq.ts";
import { openIndexSync, readIndexPassages } from "../../search/index/read.ts";
import { shardFolderName, shardHitsFile, shardOf } from "../../search/index/shards.ts";
import { openSearch } from "../../search/open.ts";
import { mergeShardHits, searchShard } from "../../search/sharded.ts";

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e);
const quiet = () => {};

const dumpsCache = new Map<string, Promise<string>>();

/** Dumps made by bench/make_dumps.py (cached per options within this run). */
function dumps(args: string[]): Promise<string> {
  const key = args.join(" ");
  let p = dumpsCache.get(key);
  if (p === undefined) {
    const dir = Deno.makeTempDirSync({ prefix: "phraseval-shards-" });
    p = python(["bench/make_dumps.py", DEV_GZ, dir, ...args]).then(() => dir);
    dumpsCache.set(key, p);
  }
  return p;
}

globalThis.addEventListener("unload", () => {
  for (const p of dumpsCache.values()) {
    p.then((d) => Deno.removeSync(d, { recursive: true })).catch(() => {});
  }
});

const DENSE = ["--articles", "2", "--paragraphs", "6", "--dim", "32"];
const SPARSE = ["--articles", "2", "--paragraphs", "6", "--sparse", "--sparse-dim", "4096"];

/** Builds every shard of `count` into `out` (in process). */
async function buildShards(
  o: { contextEmb: string; context?: string; sparse?: boolean; metric?: "ip" | "l2" },
  out: string,
  count: number,
  ivf?: { quantizer: string },
): Promise<void> {
  for (let i = 0; i < count; i++) {
    await run(buildIndex({
      ...o,
      out: `${out}/${shardFolderName(i, count)}`,
      shard: { index: i, count },
      ...(ivf !== undefined ? { quantizer: ivf.quantizer } : {}),
    }));
  }
}

/** Searches `index` (a folder or a folder of shards); the bytes of pred.json and topk. */
async function search(
  data: string,
  index: string,
  questionEmb: string,
  out: string,
  o: { topK?: number; nprobe?: number; candidates?: number; exact?: boolean } = {},
): Promise<{ pred: string; topk: string; missing: string[] }> {
  const missing: string[] = [];
  await run(openSearch({
    data,
    index,
    questionEmb,
    predictions: `${out}.json`,
    topkOut: `${out}.topk.ndjson`,
    topK: o.topK ?? 10,
    ...(o.nprobe !== undefined ? { nprobe: o.nprobe } : {}),
    ...(o.candidates !== undefined ? { candidates: o.candidates } : {}),
    ...(o.exact ? { exact: true } : {}),
    onMissing: (l) => missing.push(l),
  }));
  return {
    pred: Deno.readTextFileSync(`${out}.json`),
    topk: Deno.readTextFileSync(`${out}.topk.ndjson`),
    missing,
  };
}

Deno.test("shards: the assignment is Python's sha256 rule on every dev paragraph id, and balanced", async () => {
  const dev = JSON.parse(new TextDecoder().decode(
    await new Response(
      Deno.openSync(DEV_GZ).readable.pipeThrough(new DecompressionStream("gzip")),
    ).arrayBuffer().then((b) => new Uint8Array(b)),
  ));
  const ids: string[] = [];
  for (const a of dev.data) {
    a.paragraphs.forEach((_: unknown, i: number) => ids.push(`${a.title}_${i}`));
  }
  assertEquals(ids.length, 2067);
  const py = await python([
    "-c",
    "import sys, hashlib\n" +
    "ids = sys.stdin.read().split('\\n')\n" +
    "for n in (1, 3, 8):\n" +
    "    print(' '.join(str(int.from_bytes(hashlib.sha256(i.encode()).digest()[:8], 'big') % n) for i in ids))",
  ], ids.join("\n"));
  const want = py.stdout.trim().split("\n").map((l) => l.split(" ").map(Number));
  for (const [x, n] of [1, 3, 8].entries()) {
    assertEquals(ids.map((id) => shardOf(id, n)), want[x], `N = ${n}`);
  }
  // Balanced: χ² of the 8 shard sizes below the 0.1 % critical value for 7 degrees of freedom.
  const counts = new Array(8).fill(0);
  for (const s of want[2]) counts[s]++;
  const e = ids.length / 8;
  const chi2 = counts.reduce((t, c) => t + (c - e) ** 2 / e, 0);
  assert(chi2 < 24.32, `shard sizes ${counts} (chi2 ${chi2})`);
});

Deno.test("shards: exact search over 1, 3 and 8 shards is byte-identical to the unsharded search (dense f32, CSR)", async () => {
  for (const [args, sparse] of [[DENSE, false], [SPARSE, true]] as const) {
    const dir = await dumps([...args]);
    const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shx-" });
    try {
      // One question without its vector: the same "Missing" line, the same outputs.
      const qs = [...Deno.readDirSync(`${dir}/question_emb`)].map((e) => e.name).sort();
      const gone = `${tmp}/q`;
      Deno.mkdirSync(gone);
      for (const q of qs.slice(1)) Deno.copyFileSync(`${dir}/question_emb/${q}`, `${gone}/${q}`);
      const o = { contextEmb: `${dir}/context_emb`, context: `${dir}/data.json`, sparse };
      await run(buildIndex({ ...o, out: `${tmp}/one` }));
      const want = await search(`${dir}/data.json`, `${tmp}/one`, gone, `${tmp}/one-out`);
      assertEquals(want.missing.length, 1);
      for (const n of [1, 3, 8]) {
        await buildShards(o, `${tmp}/s${n}`, n);
        const got = await search(`${dir}/data.json`, `${tmp}/s${n}`, gone, `${tmp}/s${n}-out`);
        assert(got.pred === want.pred, `pred.json, ${n} shards, sparse ${sparse}`);
        assert(got.topk === want.topk, `top-k records, ${n} shards, sparse ${sparse}`);
        assertEquals(got.missing, want.missing);
      }
      // The passages of the shards are the index's, in corpus order.
      const a = readIndexPassages(`${tmp}/one`), b = readIndexPassages(`${tmp}/s3`);
      assertEquals(b.ids, a.ids);
      assertEquals([...b.text], [...a.text]);
      assertEquals([...b.titles], [...a.titles]);
    } finally {
      Deno.removeSync(tmp, { recursive: true });
    }
  }
});

/** A dense dump whose rows tie across paragraphs (3 distinct rows), and its questions. */
async function tiedDump(dir: string, paragraphs: number): Promise<void> {
  Deno.mkdirSync(`${dir}/c`);
  Deno.mkdirSync(`${dir}/q`);
  const rows = [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 2, 0]];
  for (let p = 0; p < paragraphs; p++) {
    const pick = [p % 4, (p + 1) % 4, (p * 7) % 4];
    const m: Matrix = {
      kind: "dense",
      rows: 3,
      cols: 4,
      dtype: "f32",
      data: new Float32Array(pick.flatMap((r) => rows[r])),
    };
    await run(writeContextDump(`${dir}/c`, {
      id: `P${String(p).padStart(2, "0")}`,
      phrases: pick.map((r, i) => ({ text: `p${p}r${r}i${i}`, start: 0, end: 1 })),
      matrix: m,
    }, { sparse: false, compressed: false }));
  }
  const data = {
    version: "1.1",
    data: [{
      title: "T",
      paragraphs: [{
        context: "x",
        qas: [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0.5, 0.5, 0.5, 0]].map((
          v,
          i,
        ) => ({ id: `q${i}`, question: "?", answers: [{ text: "x", answer_start: 0 }], v })),
      }],
    }],
  };
  for (const q of data.data[0].paragraphs[0].qas) {
    await run(writeQuestionDump(`${dir}/q`, {
      id: q.id,
      vector: { kind: "dense", rows: 1, cols: 4, dtype: "f32", data: new Float32Array(q.v) },
    }, { sparse: false, compressed: false }));
  }
  Deno.writeTextFileSync(`${dir}/data.json`, JSON.stringify(data));
}

Deno.test("shards: rows tied across paragraphs rank as unsharded (corpus order), both metrics, empty shards", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shtie-" });
  try {
    await tiedDump(tmp, 11);
    for (const metric of ["ip", "l2"] as const) {
      const o = { contextEmb: `${tmp}/c`, metric };
      await run(buildIndex({ ...o, out: `${tmp}/one-${metric}` }));
      const want = await search(
        `${tmp}/data.json`,
        `${tmp}/one-${metric}`,
        `${tmp}/q`,
        `${tmp}/w`,
        {
          topK: 12,
        },
      );
      // The best rows of q0 are P01…'s copies of row 0: ties, earliest paragraph first.
      const first = JSON.parse(want.topk.split("\n")[0]);
      assertEquals(first.paragraph, "P00");
      for (const n of [1, 3, 8, 16]) {
        await buildShards(o, `${tmp}/s${n}-${metric}`, n);
        const got = await search(
          `${tmp}/data.json`,
          `${tmp}/s${n}-${metric}`,
          `${tmp}/q`,
          `${tmp}/g`,
          {
            topK: 12,
          },
        );
        assert(got.topk === want.topk, `${metric}, ${n} shards`);
        assert(got.pred === want.pred, `${metric}, ${n} shards`);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: per-shard hits files, merged, give the one-process bytes; a missing hits file is refused", async () => {
  const dir = await dumps([...DENSE]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shhits-" });
  try {
    const o = { contextEmb: `${dir}/context_emb`, context: `${dir}/data.json` };
    await buildShards(o, `${tmp}/s`, 3);
    const want = await search(`${dir}/data.json`, `${tmp}/s`, `${dir}/question_emb`, `${tmp}/w`);
    const parts = [0, 1, 2].map((i) => shardHitsFile(`${tmp}/hits`, i, 3));
    Deno.mkdirSync(`${tmp}/hits`);
    for (const [i, out] of parts.entries()) {
      await run(searchShard({
        data: `${dir}/data.json`,
        index: `${tmp}/s`,
        shard: i,
        questionEmb: `${dir}/question_emb`,
        out,
        topK: 10,
        onMissing: quiet,
      }));
    }
    await run(mergeShardHits({
      parts: [...parts].reverse(),
      predictions: `${tmp}/m.json`,
      topkOut: `${tmp}/m.topk.ndjson`,
    }));
    assert(Deno.readTextFileSync(`${tmp}/m.json`) === want.pred, "pred.json");
    assert(Deno.readTextFileSync(`${tmp}/m.topk.ndjson`) === want.topk, "top-k records");
    // The run's merge task on the same files, and its refusal of a missing one.
    const r = await runStage("pipeline/_run_task.ts", [
      "search-merge",
      `--parts=${tmp}/hits`,
      "--shards=3",
      `--pred=${tmp}/t.json`,
      `--topk=${tmp}/t.topk.ndjson`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(
      await sha256File(`${tmp}/t.topk.ndjson`),
      await sha256File(`${tmp}/m.topk.ndjson`),
    );
    Deno.removeSync(parts[1]);
    await refused(
      "pipeline/_run_task.ts",
      ["search-merge", `--parts=${tmp}/hits`, "--shards=3", `--pred=${tmp}/x.json`],
      /shard-1-of-3\.hits\.ndjson: missing \(its shard's search did not finish\)$/,
    );
    assert(
      !Deno.statSync(tmp).isFile && ![...Deno.readDirSync(tmp)].some((e) => e.name === "x.json"),
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: a corpus that grows keeps every paragraph in its shard", async () => {
  const small = await dumps(["--articles", "1", "--paragraphs", "6", "--dim", "8"]);
  const big = await dumps(["--articles", "2", "--paragraphs", "9", "--dim", "8"]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shgrow-" });
  try {
    const where = new Map<string, number>();
    for (const [name, dir] of [["a", small], ["b", big]]) {
      await buildShards(
        { contextEmb: `${dir}/context_emb`, context: `${dir}/data.json` },
        `${tmp}/${name}`,
        4,
      );
      for (let i = 0; i < 4; i++) {
        for (const id of readIndexPassages(`${tmp}/${name}/${shardFolderName(i, 4)}`).ids) {
          if (name === "a") where.set(id, i);
          else if (where.has(id)) assertEquals(i, where.get(id), id);
        }
      }
    }
    assertEquals(where.size, 6);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: IVF-PQ shards share the unsharded quantizer; their candidates partition the unsharded ones", async () => {
  const dir = await dumps([...DENSE]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shivf-" });
  try {
    const o = { contextEmb: `${dir}/context_emb`, context: `${dir}/data.json` };
    const ivf = { nlist: 8, bpv: 8, trainParagraphs: 4 };
    await run(buildIndex({ ...o, ...ivf, out: `${tmp}/one` }));
    await run(trainQuantizer({ ...o, ...ivf, out: `${tmp}/s/quantizer` }));
    await buildShards(o, `${tmp}/s`, 3, { quantizer: `${tmp}/s/quantizer` });
    // A shard that trains its own quantizer trains the same one.
    await run(buildIndex({ ...o, ...ivf, out: `${tmp}/own`, shard: { index: 1, count: 3 } }));
    const one = openIndexSync(`${tmp}/one`);
    const shards = [0, 1, 2].map((i) => openIndexSync(`${tmp}/s/${shardFolderName(i, 3)}`));
    for (const f of ["ivf/centroids.f32", "ivf/codebooks.f32"]) {
      const sha = one.header.files[f].sha256;
      for (const s of shards) assertEquals(s.header.files[f].sha256, sha, f);
      assertEquals(
        Deno.readFileSync(`${tmp}/own/${f}`),
        Deno.readFileSync(`${tmp}/s/shard-1-of-3/${f}`),
      );
    }
    assertEquals(
      await sha256File(`${tmp}/own/ivf/codes.u8`),
      await sha256File(`${tmp}/s/shard-1-of-3/ivf/codes.u8`),
    );
    // The candidates of every question at nprobe 1 and 3: the shards' union (as global rows)
    // is the unsharded candidates, with the same approximate scores.
    const qd = [...Deno.readDirSync(`${dir}/question_emb`)].map((e) => e.name).sort().slice(0, 40);
    const { openDumpSync } = await import("../../io/dump/reader_sync.ts");
    const qsrc = openDumpSync(`${dir}/question_emb`, { sparse: false });
    const globalRow = (s: number, row: number) => {
      const ix = shards[s];
      let p = 0;
      while (ix.starts[p + 1] <= row) p++;
      return one.starts[ix.positions![p]] + row - ix.starts[p];
    };
    try {
      for (const name of qd) {
        const v = qsrc.readQuestion(name.slice(0, -4));
        assert(!("missing" in v));
        const q = new Float32Array((v as Matrix & { kind: "dense" }).data as Float32Array);
        for (const nprobe of [1, 3]) {
          const want = ivfCandidates(one, q, nprobe, one.header.phrases)
            .map((c) => `${c.row}:${c.score}`).sort();
          const got = shards.flatMap((ix, s) =>
            ivfCandidates(ix, q, nprobe, one.header.phrases).map((c) =>
              `${globalRow(s, c.row)}:${c.score}`
            )
          ).sort();
          assertEquals(got, want, `${name} nprobe ${nprobe}`);
        }
      }
    } finally {
      qsrc.close();
    }
    // Without re-scoring: the same bytes. With C re-scored: at least the unsharded scores.
    const data = `${dir}/data.json`, qe = `${dir}/question_emb`;
    const w0 = await search(data, `${tmp}/one`, qe, `${tmp}/w0`, { nprobe: 2 });
    const g0 = await search(data, `${tmp}/s`, qe, `${tmp}/g0`, { nprobe: 2 });
    assert(g0.pred === w0.pred && g0.topk === w0.topk, "candidates 0: byte-identical");
    const exact = await search(data, `${tmp}/one`, qe, `${tmp}/ex`, { exact: true });
    const w = await search(data, `${tmp}/one`, qe, `${tmp}/w`, { nprobe: 2, candidates: 20 });
    const g = await search(data, `${tmp}/s`, qe, `${tmp}/g`, { nprobe: 2, candidates: 20 });
    const byQ = (t: string) => {
      const m = new Map<string, { score: number; key: string }[]>();
      for (const l of t.split("\n").filter((x) => x !== "")) {
        const r = JSON.parse(l);
        m.set(r.id, [...(m.get(r.id) ?? []), {
          score: r.score,
          key: `${r.paragraph}#${r.phrase_index}`,
        }]);
      }
      return m;
    };
    const [E, W, G] = [exact.topk, w.topk, g.topk].map(byQ);
    let found = 0;
    for (const [id, ws] of W) {
      const gs = G.get(id)!;
      ws.forEach((x, r) => assert(gs[r].score >= x.score, `${id} rank ${r + 1}`));
      if (ws[0].key === E.get(id)![0].key) {
        found++;
        assertEquals(gs[0].key, ws[0].key, id);
      }
    }
    assert(found > 0, "some questions find their exact best phrase");
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: refusals are one line, exit 2", async () => {
  const dir = await dumps([...DENSE]);
  const other = await dumps(["--articles", "1", "--paragraphs", "5", "--dim", "32"]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shref-" });
  try {
    const o = { contextEmb: `${dir}/context_emb`, context: `${dir}/data.json` };
    await buildShards(o, `${tmp}/s`, 3);
    const s = (index: string) => [
      `${dir}/data.json`,
      index,
      `${dir}/question_emb`,
      `${tmp}/p.json`,
    ];
    const copy = (from: string, to: string) => {
      Deno.mkdirSync(to, { recursive: true });
      for (const e of Deno.readDirSync(from)) {
        if (e.isDirectory) copy(`${from}/${e.name}`, `${to}/${e.name}`);
        else Deno.copyFileSync(`${from}/${e.name}`, `${to}/${e.name}`);
      }
    };
    // A shard missing.
    copy(`${tmp}/s`, `${tmp}/missing`);
    Deno.removeSync(`${tmp}/missing/shard-1-of-3`, { recursive: true });
    await refused(
      "pipeline/search.ts",
      s(`${tmp}/missing`),
      /shard-1-of-3: missing: 2 of the 3 shards are present$/,
    );
    // Two counts.
    copy(`${tmp}/s`, `${tmp}/two`);
    await buildShards(o, `${tmp}/two-4`, 4);
    copy(`${tmp}/two-4/shard-0-of-4`, `${tmp}/two/shard-0-of-4`);
    await refused(
      "pipeline/search.ts",
      s(`${tmp}/two`),
      /holds shards of 2 different counts \(shard-0-of-3, shard-0-of-4\)/,
    );
    // A half-written shard (a killed build's temporary folder).
    copy(`${tmp}/s`, `${tmp}/half`);
    Deno.mkdirSync(`${tmp}/half/shard-2-of-3.0badc0de.tmp`);
    await refused(
      "pipeline/search.ts",
      s(`${tmp}/half`),
      /shard-2-of-3\.0badc0de\.tmp: the build of shard-2-of-3 was interrupted or is running/,
    );
    // A renamed shard.
    copy(`${tmp}/s`, `${tmp}/renamed`);
    Deno.renameSync(`${tmp}/renamed/shard-1-of-3`, `${tmp}/renamed/x`);
    Deno.renameSync(`${tmp}/renamed/shard-2-of-3`, `${tmp}/renamed/shard-1-of-3`);
    Deno.renameSync(`${tmp}/renamed/x`, `${tmp}/renamed/shard-2-of-3`);
    await refused(
      "pipeline/search.ts",
      s(`${tmp}/renamed`),
      /shard-1-of-3\/index\.json: says shard 2 of 3; the folder is shard 1 of 3$/,
    );
    // A shard of another corpus.
    copy(`${tmp}/s`, `${tmp}/foreign`);
    Deno.removeSync(`${tmp}/foreign/shard-2-of-3`, { recursive: true });
    await run(buildIndex({
      contextEmb: `${other}/context_emb`,
      context: `${other}/data.json`,
      out: `${tmp}/foreign/shard-2-of-3`,
      shard: { index: 2, count: 3 },
    }));
    await refused(
      "pipeline/search.ts",
      s(`${tmp}/foreign`),
      /shard-2-of-3\/index\.json: foreign shard: corpus sha256 [0-9a-f]{12}… differs/,
    );
    // IVF-PQ shards of two quantizers; a quantizer of another corpus.
    const ivf = { nlist: 4, bpv: 8 };
    await run(trainQuantizer({ ...o, ...ivf, trainParagraphs: 3, out: `${tmp}/q3` }));
    await run(trainQuantizer({ ...o, ...ivf, trainParagraphs: 4, out: `${tmp}/q4` }));
    await buildShards(o, `${tmp}/iv`, 3, { quantizer: `${tmp}/q3` });
    Deno.removeSync(`${tmp}/iv/shard-0-of-3`, { recursive: true });
    await run(
      buildIndex({
        ...o,
        out: `${tmp}/iv/shard-0-of-3`,
        shard: { index: 0, count: 3 },
        quantizer: `${tmp}/q4`,
      }),
    );
    await refused(
      "pipeline/search.ts",
      s(`${tmp}/iv`),
      /foreign shard: (its IVF-PQ centroids or codebooks differ|other index parameters)/,
    );
    await run(trainQuantizer({
      contextEmb: `${other}/context_emb`,
      context: `${other}/data.json`,
      ...ivf,
      out: `${tmp}/qo`,
    }));
    await refused(
      "pipeline/index.ts",
      [
        `${dir}/context_emb`,
        `${tmp}/x`,
        "--context",
        `${dir}/data.json`,
        "--shards",
        "3",
        "--shard",
        "0",
        "--quantizer",
        `${tmp}/qo`,
      ],
      /qo: foreign quantizer: trained on a corpus of sha256 [0-9a-f]{12}…/,
    );
    // Bad flags.
    const idx = [`${dir}/context_emb`, `${tmp}/y`];
    await refused("pipeline/index.ts", [...idx, "--shard", "1"], /--shard I needs --shards N/);
    await refused(
      "pipeline/index.ts",
      [...idx, "--shards", "3", "--shard", "3"],
      /--shard must be 0 to 2/,
    );
    await refused(
      "pipeline/index.ts",
      [...idx, "--quantizer", `${tmp}/q3`],
      /--quantizer is for the shards/,
    );
    await refused(
      "pipeline/index.ts",
      [...idx, "--shards", "3", "--quantizer", `${tmp}/q3`, "--nlist", "4", "--bpv", "8"],
      /--quantizer fixes the IVF-PQ parameters/,
    );
    await refused(
      "pipeline/index.ts",
      [...idx, "--train-only"],
      /--train-only trains an IVF-PQ quantizer/,
    );
    await refused(
      "pipeline/index.ts",
      [...idx, "--train-only", "--nlist", "4", "--bpv", "8", "--shards", "2"],
      /--train-only trains the one quantizer every shard shares/,
    );
    // Nothing was written by the refused builds.
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name).filter((n) => /^[xy]/.test(n)), []);
    const r = await runStage("pipeline/search.ts", s(`${tmp}/s`));
    assertEquals(r.code, 0, r.stderr);
    assertMatch(r.stderr, /search: 164 of 164 questions answered over 8386 phrases/);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
