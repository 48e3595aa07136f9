/**
 * Sharded indexes (`search/index/shards.ts`, `search/open/sharded.ts`), in
 * process on small dumps written here (the NumPy-written dumps, the
 * command lines and killed builds are `shards_slow_test.ts`):
 *
 * - the assignment is Python's `int.from_bytes(sha256(id)[:8], "big") % N`
 *   for every dev paragraph id (its SHA-256, in TypeScript, is
 *   `node:crypto`'s for every length and UTF-8 width), and balanced (χ² of the 8 shard sizes
 *   below the 0.1 % critical value);
 * - exact search over 1, 3, 8 and 16 shards (some empty) of rows tied
 *   across paragraphs writes `pred.json` and the top-k records byte for
 *   byte as the unsharded search, both metrics; per-shard hits files,
 *   merged, give the same bytes;
 * - IVF-PQ shards encoded with the corpus's quantizer hold the unsharded
 *   index's centroids and codebooks; at nprobe 1, 2 and 5 the union of the
 *   shards' candidates is the unsharded candidates, row for row and score
 *   for score, so without re-scoring the outputs are byte-identical; with
 *   C candidates re-scored the merged top k is, rank by rank, at least the
 *   unsharded one, and a question whose exact best phrase the unsharded
 *   search finds keeps it;
 * - a set of shards is refused, with one line, when a shard is missing,
 *   two counts are mixed, a shard is half-written, renamed, of another
 *   corpus or of other codebooks; a build refuses a foreign quantizer.
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { DEV_GZ, python } from "../_util.ts";
import { writeContextDump, writeQuestionDump } from "../../io/dump/writer.ts";
import type { Matrix } from "../../io/matrix.ts";
import { buildIndex, trainQuantizer } from "../../search/index/build.ts";
import { readQuantizer } from "../../search/index/ivfpq/quantizer.ts";
import { ivfCandidates } from "../../search/index/ivfpq/ivfpq.ts";
import { splitmix32 } from "../../search/index/ivfpq/kmeans.ts";
import { openIndexSync, readIndexHeader, readIndexPassages } from "../../search/index/read.ts";
import {
  openShardSet,
  sha256Head,
  shardFolderName,
  shardHitsFile,
  shardOf,
} from "../../search/index/shards.ts";
import { openSearch } from "../../search/open/open.ts";
import { mergeShardHits, searchShard } from "../../search/open/sharded.ts";

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e);
const fmt = { sparse: false, compressed: false } as const;

/**
 * A dense dump of `paragraphs` paragraphs (`P00`, `P01`, ...) of `rows`
 * phrases, its rows drawn from `distinct` vectors (so rows tie within and
 * across paragraphs), `questions` question vectors, and a SQuAD file
 * holding the questions.
 */
async function dump(
  dir: string,
  o: {
    paragraphs: number;
    rows: number;
    d: number;
    distinct: number;
    questions: number;
    seed: number;
  },
): Promise<void> {
  Deno.mkdirSync(`${dir}/c`, { recursive: true });
  Deno.mkdirSync(`${dir}/q`, { recursive: true });
  const rng = splitmix32(o.seed);
  const g = () => Math.round(((rng() / 2 ** 32) * 2 - 1) * 64) / 16;
  const pool = Array.from({ length: o.distinct }, () => Array.from({ length: o.d }, g));
  for (let p = 0; p < o.paragraphs; p++) {
    const pick = Array.from({ length: o.rows }, () => rng() % o.distinct);
    const m: Matrix = {
      kind: "dense",
      rows: o.rows,
      cols: o.d,
      dtype: "f32",
      data: new Float32Array(pick.flatMap((r) => pool[r])),
    };
    await run(writeContextDump(`${dir}/c`, {
      id: `P${String(p).padStart(2, "0")}`,
      phrases: pick.map((r, i) => ({ text: `p${p}.${i}=v${r}`, start: 0, end: 1 })),
      matrix: m,
    }, fmt));
  }
  const qas = [];
  for (let j = 0; j < o.questions; j++) {
    const v = j < o.distinct ? pool[j] : Array.from({ length: o.d }, g);
    qas.push({ id: `q${j}`, question: "?", answers: [{ text: "x", answer_start: 0 }] });
    await run(writeQuestionDump(`${dir}/q`, {
      id: `q${j}`,
      vector: { kind: "dense", rows: 1, cols: o.d, dtype: "f32", data: new Float32Array(v) },
    }, fmt));
  }
  Deno.writeTextFileSync(
    `${dir}/data.json`,
    JSON.stringify({ version: "1.1", data: [{ title: "T", paragraphs: [{ context: "x", qas }] }] }),
  );
}

/** Builds every shard of `count` into `out`. */
async function buildShards(
  o: { contextEmb: string; metric?: "ip" | "l2" },
  out: string,
  count: number,
  quantizer?: string,
): Promise<void> {
  for (let i = 0; i < count; i++) {
    await run(buildIndex({
      ...o,
      out: `${out}/${shardFolderName(i, count)}`,
      shard: { index: i, count },
      ...(quantizer !== undefined ? { quantizer } : {}),
    }));
  }
}

/** Searches `index`; the bytes of pred.json and the top-k records. */
async function search(
  dir: string,
  index: string,
  out: string,
  o: {
    topK?: number;
    nprobe?: number;
    probeTau?: number;
    candidates?: number;
    exact?: boolean;
  } = {},
): Promise<{ pred: string; topk: string }> {
  await run(openSearch({
    data: `${dir}/data.json`,
    index,
    questionEmb: `${dir}/q`,
    predictions: `${out}.json`,
    topkOut: `${out}.topk.ndjson`,
    topK: o.topK ?? 10,
    ...(o.nprobe !== undefined ? { nprobe: o.nprobe } : {}),
    ...(o.probeTau !== undefined ? { probeTau: o.probeTau } : {}),
    ...(o.candidates !== undefined ? { candidates: o.candidates } : {}),
    ...(o.exact ? { exact: true } : {}),
  }));
  return {
    pred: Deno.readTextFileSync(`${out}.json`),
    topk: Deno.readTextFileSync(`${out}.topk.ndjson`),
  };
}

Deno.test("shards: the assignment is Python's sha256 rule on every dev paragraph id, and balanced", async () => {
  const bytes = await new Response(
    Deno.openSync(DEV_GZ).readable.pipeThrough(new DecompressionStream("gzip")),
  ).arrayBuffer();
  const dev = JSON.parse(new TextDecoder().decode(bytes));
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
    "    print(' '.join(str(int.from_bytes(hashlib.sha256(i.encode()).digest()[:8], 'big') % n)" +
    " for i in ids))",
  ], ids.join("\n"));
  const want = py.stdout.trim().split("\n").map((l) => l.split(" ").map(Number));
  for (const [x, n] of [1, 3, 8].entries()) {
    assertEquals(ids.map((id) => shardOf(id, n)), want[x], `N = ${n}`);
  }
  const counts = new Array(8).fill(0);
  for (const s of want[2]) counts[s]++;
  const e = ids.length / 8;
  const chi2 = counts.reduce((t, c) => t + (c - e) ** 2 / e, 0);
  assert(chi2 < 24.32, `shard sizes ${counts} (chi2 ${chi2})`);
});

Deno.test("shards: sha256Head is node:crypto's sha256 (every length 0 to 300 bytes, 1 to 4 byte UTF-8)", () => {
  const pieces = ["a", "é", "漢", "😀", "_", " ", "0"];
  const rng = splitmix32(7);
  for (let n = 0; n < 300; n++) {
    let id = "";
    while (new TextEncoder().encode(id).length < n) id += pieces[rng() % pieces.length];
    const d = createHash("sha256").update(id, "utf8").digest();
    assertEquals(sha256Head(id), [d.readUInt32BE(0), d.readUInt32BE(4)], JSON.stringify(id));
  }
});

Deno.test("shards: exact search over 1, 3, 8, 16 shards of tied rows is byte-identical to unsharded; hits files merged too", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shtie-" });
  try {
    await dump(tmp, { paragraphs: 12, rows: 9, d: 8, distinct: 7, questions: 12, seed: 5 });
    for (const metric of ["ip", "l2"] as const) {
      const o = { contextEmb: `${tmp}/c`, metric };
      await run(buildIndex({ ...o, out: `${tmp}/one-${metric}` }));
      const want = await search(tmp, `${tmp}/one-${metric}`, `${tmp}/w`, { topK: 15 });
      // q0's best rows are copies of one vector: they tie (across paragraphs).
      const ranks = want.topk.split("\n").slice(0, 15).map((l) => JSON.parse(l));
      assert(ranks[1].score === ranks[0].score && ranks[0].paragraph !== ranks[14].paragraph);
      for (const n of [1, 3, 8, 16]) {
        const dir = `${tmp}/s${n}-${metric}`;
        await buildShards(o, dir, n);
        const got = await search(tmp, dir, `${tmp}/g`, { topK: 15 });
        assert(got.topk === want.topk, `top-k records, ${metric}, ${n} shards`);
        assert(got.pred === want.pred, `pred.json, ${metric}, ${n} shards`);
        if (n !== 8) continue;
        // As a run: each shard's hits file, then the merge.
        const parts = Array.from({ length: n }, (_, i) => shardHitsFile(`${tmp}/hits`, i, n));
        Deno.mkdirSync(`${tmp}/hits`, { recursive: true });
        for (const [i, out] of parts.entries()) {
          await run(searchShard({
            data: `${tmp}/data.json`,
            index: dir,
            shard: i,
            questionEmb: `${tmp}/q`,
            out,
            topK: 15,
          }));
        }
        await run(mergeShardHits({
          parts: [...parts].reverse(),
          predictions: `${tmp}/m.json`,
          topkOut: `${tmp}/m.topk.ndjson`,
        }));
        assert(Deno.readTextFileSync(`${tmp}/m.topk.ndjson`) === want.topk, `merged, ${metric}`);
        assert(Deno.readTextFileSync(`${tmp}/m.json`) === want.pred, `merged, ${metric}`);
        const err = await Effect.runPromise(Effect.flip(mergeShardHits({
          parts: parts.slice(1),
          predictions: `${tmp}/x.json`,
        })));
        assertMatch(err.message, /the hits of shard 0 of 8 are missing/);
        assertEquals([...Deno.readDirSync(tmp)].some((e) => e.name === "x.json"), false);
        // The hits files are read side by side a line at a time: a file cut short, its last line
        // missing, a byte that is not UTF-8, each one line naming the file; nothing written.
        const good = Deno.readFileSync(parts[3]);
        const text = new TextDecoder().decode(good);
        const nl = text.indexOf("\n") + 1, second = text.indexOf("\n", nl) + 1;
        const last = text.lastIndexOf("\n", text.length - 2) + 1;
        const bad: [Uint8Array, string][] = [
          [
            good.subarray(0, good.length - 1),
            `${parts[3]}: does not end with a newline (truncated)`,
          ],
          [
            new TextEncoder().encode(text.slice(0, last)),
            `${parts[3]}: ${text.split("\n").length - 3} questions but ${parts[0]} has ${
              text.split("\n").length - 2
            }`,
          ],
          [
            new Uint8Array([...good.subarray(0, second + 3), 0xff, ...good.subarray(second + 3)]),
            `${parts[3]}: line 3: invalid UTF-8 at byte ${second + 3}`,
          ],
        ];
        for (const [bytes, line] of bad) {
          Deno.writeFileSync(parts[3], bytes);
          const e = await Effect.runPromise(Effect.flip(mergeShardHits({
            parts,
            predictions: `${tmp}/x.json`,
            topkOut: `${tmp}/x.topk.ndjson`,
          })));
          assertEquals(String(e), line);
          assertEquals(
            [...Deno.readDirSync(tmp)].filter((e) => e.name.startsWith("x.")).map((e) => e.name),
            [],
          );
        }
        // A hits file that is not there (its shard's task did not finish): named, nothing written.
        Deno.removeSync(parts[3]);
        const gone = await Effect.runPromise(Effect.flip(mergeShardHits({
          parts,
          predictions: `${tmp}/x.json`,
        })));
        assertEquals(String(gone), `${parts[3]}: missing (its shard's search did not finish)`);
        assertEquals([...Deno.readDirSync(tmp)].some((e) => e.name === "x.json"), false);
        Deno.writeFileSync(parts[3], good);
      }
      // The shards' passages are the index's, in corpus order.
      assertEquals(
        readIndexPassages(`${tmp}/s3-${metric}`).ids,
        readIndexPassages(`${tmp}/one-${metric}`).ids,
      );
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

/** IVF-PQ shards of `bits`-bit codes against the unsharded index (the test below, 8 and 4 bits). */
async function ivfShards(bits: 4 | 8): Promise<void> {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shivf-" });
  try {
    await dump(tmp, { paragraphs: 14, rows: 40, d: 16, distinct: 400, questions: 30, seed: 9 });
    const o = { contextEmb: `${tmp}/c` };
    const ivf = {
      nlist: 6,
      bpv: 4,
      trainParagraphs: 5,
      ...(bits === 4 ? { pqBits: 4 as const } : {}),
    };
    await run(buildIndex({ ...o, ...ivf, out: `${tmp}/one` }));
    await run(trainQuantizer({ ...o, ...ivf, out: `${tmp}/s/quantizer` }));
    await buildShards(o, `${tmp}/s`, 3, `${tmp}/s/quantizer`);
    const one = openIndexSync(`${tmp}/one`);
    const shards = [0, 1, 2].map((i) => openIndexSync(`${tmp}/s/${shardFolderName(i, 3)}`));
    for (const f of ["ivf/centroids.f32", "ivf/codebooks.f32"]) {
      for (const s of shards) assertEquals(s.header.files[f].sha256, one.header.files[f].sha256, f);
    }
    assertEquals(
      shards.map((s) => s.header.parameters),
      [0, 1, 2].map(() => one.header.parameters),
    );
    const globalRow = (s: number, row: number) => {
      const ix = shards[s];
      let p = 0;
      while (ix.starts[p + 1] <= row) p++;
      return one.starts[ix.positions![p]] + row - ix.starts[p];
    };
    const { openDumpSync } = await import("../../io/dump/reader_sync.ts");
    const qd = openDumpSync(`${tmp}/q`, { sparse: false });
    try {
      for (let j = 0; j < 30; j++) {
        const v = qd.readQuestion(`q${j}`) as Matrix & { kind: "dense" };
        const q = new Float32Array(v.data as Float32Array);
        for (const nprobe of [1, 2, 5]) {
          const all = one.header.phrases;
          const want = ivfCandidates(one, q, nprobe, all).map((c) => `${c.row}:${c.score}`).sort();
          const got = shards.flatMap((ix, s) =>
            ivfCandidates(ix, q, nprobe, all).map((c) => `${globalRow(s, c.row)}:${c.score}`)
          ).sort();
          assertEquals(got, want, `q${j} nprobe ${nprobe}`);
        }
      }
    } finally {
      qd.close();
    }
    const w0 = await search(tmp, `${tmp}/one`, `${tmp}/w0`, { nprobe: 2 });
    const g0 = await search(tmp, `${tmp}/s`, `${tmp}/g0`, { nprobe: 2 });
    assert(g0.pred === w0.pred && g0.topk === w0.topk, "candidates 0: byte-identical");
    // Adaptive probing: every shard cuts a question's lists as the whole index does.
    const plain = await search(tmp, `${tmp}/one`, `${tmp}/p5`, { nprobe: 5 });
    let cut = 0;
    for (const probeTau of [0.02, 0.1, 0.3]) {
      const wt = await search(tmp, `${tmp}/one`, `${tmp}/wt`, { nprobe: 5, probeTau });
      const gt = await search(tmp, `${tmp}/s`, `${tmp}/gt`, { nprobe: 5, probeTau });
      assert(gt.pred === wt.pred && gt.topk === wt.topk, `probeTau ${probeTau}: byte-identical`);
      if (wt.topk !== plain.topk) cut++;
    }
    assert(cut > 0, "some tau probes fewer lists than nprobe 5");
    const exact = await search(tmp, `${tmp}/one`, `${tmp}/ex`, { exact: true });
    const w = await search(tmp, `${tmp}/one`, `${tmp}/w`, { nprobe: 2, candidates: 12 });
    const g = await search(tmp, `${tmp}/s`, `${tmp}/g`, { nprobe: 2, candidates: 12 });
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
    assertEquals(one.header.parameters.bits, bits);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
}

Deno.test("shards: IVF-PQ shards share the unsharded quantizer; their candidates partition the unsharded ones", () =>
  ivfShards(8));

Deno.test("shards: 4-bit IVF-PQ shards (a 4-bit quantizer) share it too; their candidates partition the unsharded ones", () =>
  ivfShards(4));

Deno.test("shards: a missing, mixed, half-written, renamed or foreign shard is refused with one line", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shref-" });
  try {
    await dump(`${tmp}/a`, { paragraphs: 9, rows: 30, d: 8, distinct: 200, questions: 2, seed: 1 });
    await dump(`${tmp}/b`, { paragraphs: 7, rows: 30, d: 8, distinct: 200, questions: 2, seed: 2 });
    const o = { contextEmb: `${tmp}/a/c` };
    await buildShards(o, `${tmp}/s3`, 3);
    await buildShards(o, `${tmp}/s4`, 4);
    const copy = (from: string, to: string) => {
      Deno.mkdirSync(to, { recursive: true });
      for (const e of Deno.readDirSync(from)) {
        if (e.isDirectory) copy(`${from}/${e.name}`, `${to}/${e.name}`);
        else Deno.copyFileSync(`${from}/${e.name}`, `${to}/${e.name}`);
      }
    };
    const refusal = (dir: string, re: RegExp) => {
      try {
        openShardSet(dir, readIndexHeader);
      } catch (e) {
        const line = `${(e as { file: string }).file}: ${(e as Error).message}`;
        assertEquals(line.split("\n").length, 1, line);
        assertMatch(line, re);
        return;
      }
      throw new Error(`${dir} was not refused`);
    };
    const set = (name: string, edit: (dir: string) => void) => {
      copy(`${tmp}/s3`, `${tmp}/${name}`);
      edit(`${tmp}/${name}`);
      return `${tmp}/${name}`;
    };
    assertEquals(openShardSet(`${tmp}/s3`, readIndexHeader).paragraphs, 9);
    refusal(
      set("missing", (d) => Deno.removeSync(`${d}/shard-1-of-3`, { recursive: true })),
      /shard-1-of-3: missing: 2 of the 3 shards are present$/,
    );
    refusal(
      set("mixed", (d) => copy(`${tmp}/s4/shard-0-of-4`, `${d}/shard-0-of-4`)),
      /holds shards of 2 different counts \(shard-0-of-3, shard-0-of-4\): one index has one/,
    );
    refusal(
      set("half", (d) => Deno.mkdirSync(`${d}/shard-2-of-3.0badc0de.tmp`)),
      /shard-2-of-3\.0badc0de\.tmp: the build of shard-2-of-3 was interrupted or is running/,
    );
    refusal(
      set("renamed", (d) => {
        Deno.renameSync(`${d}/shard-1-of-3`, `${d}/x`);
        Deno.renameSync(`${d}/shard-2-of-3`, `${d}/shard-1-of-3`);
        Deno.renameSync(`${d}/x`, `${d}/shard-2-of-3`);
      }),
      /shard-1-of-3\/index\.json: says shard 2 of 3; the folder is shard 1 of 3$/,
    );
    const foreign = set(
      "foreign",
      (d) => Deno.removeSync(`${d}/shard-2-of-3`, { recursive: true }),
    );
    await run(buildIndex({
      contextEmb: `${tmp}/b/c`,
      out: `${foreign}/shard-2-of-3`,
      shard: { index: 2, count: 3 },
    }));
    refusal(
      foreign,
      /shard-2-of-3\/index\.json: foreign shard: corpus sha256 [0-9a-f]{12}… differs/,
    );
    // IVF-PQ: shards of two quantizers; a quantizer of another corpus.
    const ivf = { nlist: 4, bpv: 4 };
    await run(trainQuantizer({ ...o, ...ivf, trainParagraphs: 3, out: `${tmp}/q3` }));
    await run(trainQuantizer({ ...o, ...ivf, trainParagraphs: 2, out: `${tmp}/q2` }));
    await buildShards(o, `${tmp}/iv`, 3, `${tmp}/q3`);
    Deno.removeSync(`${tmp}/iv/shard-0-of-3`, { recursive: true });
    await run(buildIndex({
      ...o,
      out: `${tmp}/iv/shard-0-of-3`,
      shard: { index: 0, count: 3 },
      quantizer: `${tmp}/q2`,
    }));
    refusal(`${tmp}/iv`, /foreign shard: (its IVF-PQ centroids or codebooks differ|other index)/);
    await run(trainQuantizer({ contextEmb: `${tmp}/b/c`, ...ivf, out: `${tmp}/qb` }));
    const err = await Effect.runPromise(Effect.flip(buildIndex({
      ...o,
      out: `${tmp}/new/shard-0-of-3`,
      shard: { index: 0, count: 3 },
      quantizer: `${tmp}/qb`,
    })));
    assertMatch(err.message, /^foreign quantizer: trained on a corpus of sha256 [0-9a-f]{12}…/);
    // Nothing is left of the refused build, not even the folder it made to hold it.
    assertEquals([...Deno.readDirSync(tmp)].some((e) => e.name === "new"), false);
    // 4-bit: a shard of a 4-bit quantizer among 8-bit ones; a 4-bit quantizer folder beside
    // 8-bit shards; a 4-bit manifest whose codebooks are the 8-bit size.
    await run(trainQuantizer({ ...o, ...ivf, pqBits: 4, trainParagraphs: 3, out: `${tmp}/q4` }));
    assertEquals(readQuantizer(`${tmp}/q4`).manifest.parameters.bits, 4);
    await buildShards(o, `${tmp}/m8`, 3, `${tmp}/q3`);
    await run(buildIndex({
      ...o,
      out: `${tmp}/m4/shard-1-of-3`,
      shard: { index: 1, count: 3 },
      quantizer: `${tmp}/q4`,
    }));
    const mixed = set("mixed48", () => {});
    Deno.removeSync(mixed, { recursive: true });
    copy(`${tmp}/m8`, mixed);
    Deno.removeSync(`${mixed}/shard-1-of-3`, { recursive: true });
    copy(`${tmp}/m4/shard-1-of-3`, `${mixed}/shard-1-of-3`);
    refusal(mixed, /shard-1-of-3\/index\.json: foreign shard: 4-bit PQ codes, not 8-bit/);
    copy(`${tmp}/q4`, `${tmp}/m8/quantizer`);
    refusal(
      `${tmp}/m8`,
      /shard-0-of-3\/index\.json: foreign shard: 8-bit PQ codes, but .*\/m8\/quantizer is 4-bit/,
    );
    const m = JSON.parse(Deno.readTextFileSync(`${tmp}/q4/quantizer.json`));
    m.parameters.bits = 8;
    Deno.writeTextFileSync(`${tmp}/q4/quantizer.json`, JSON.stringify(m));
    const err4 = await Effect.runPromise(Effect.flip(buildIndex({
      ...o,
      out: `${tmp}/new/shard-0-of-3`,
      shard: { index: 0, count: 3 },
      quantizer: `${tmp}/q4`,
    })));
    assertMatch(err4.message, /^the file list lacks codebooks\.f32 of \d+ bytes$/);
    assertEquals([...Deno.readDirSync(tmp)].some((e) => e.name === "new"), false);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
