/**
 * Search under a memory budget (`search/index/disk.ts`, `search
 * --memory-budget`), in process on small dumps written here:
 *
 * - `parseMemoryBudget` reads bytes and kB/MB/GB, KiB/MiB/GiB; the command
 *   refuses a bad budget with one line and exit 2;
 * - the byte-bounded LRU cache keeps at most its capacity; the heap ceiling
 *   collects the garbage over it (what was unreachable is gone from the
 *   heap), rises to 1.5 × what is left live, and checks only every step;
 * - with budgets from 1 byte (every list and paragraph read again each
 *   time) to more than the index, `pred.json` and the top-k records are
 *   byte for byte those of the in-memory search: exact (open and closed,
 *   f32 and f16, ip and l2, with offsets), IVF-PQ (nprobe 1 and 3, with and
 *   without re-scoring, `--exact`), over one index and over 3 shards;
 * - the search record's `memory_budget`: the bytes, or `null` without one;
 * - a tiny budget reads lists and paragraphs from disk again and again (it
 *   does evict); a list larger than the cache is scanned in slices of the
 *   staging area's size (the same bytes); corrupt files are refused at open with the in-memory
 *   reader's messages.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { writeContextDump, writeQuestionDump } from "../../io/dump/writer.ts";
import type { Matrix } from "../../io/matrix.ts";
import v8 from "node:v8";
import {
  ByteLru,
  HeapCeiling,
  heapCeilingFor,
  parseMemoryBudget,
} from "../../search/index/budget.ts";
import { buildIndex, trainQuantizer } from "../../search/index/build.ts";
import { indexBinding } from "../../search/index/format.ts";
import { splitmix32 } from "../../search/index/ivfpq/kmeans.ts";
import { openIndexSync, paragraphText } from "../../search/index/read.ts";
import { shardFolderName } from "../../search/index/shards.ts";
import { openSearch, searchVectors } from "../../search/open/open.ts";
import { runArgv } from "../_util.ts";

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e);
const fmt = { sparse: false, compressed: false } as const;

/**
 * Budgets: 1 byte; a few paragraph lines and rows; some IVF-PQ lists cached
 * beside the 64 KiB staging page (so lists are evicted and their buffers
 * reused); more than all of it.
 */
const BUDGETS = [1, 3000, 40_000, 136_000, 64 * 2 ** 20];

/**
 * A dense dump of `paragraphs` paragraphs (`T_0`, `T_1`, ...; texts, so
 * phrase offsets) of `rows` phrases drawn from `distinct` vectors (ties
 * within and across paragraphs), `questions` question vectors and a SQuAD
 * file holding the questions (each of one paragraph, for closed search).
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
    f16?: boolean;
  },
): Promise<void> {
  Deno.mkdirSync(`${dir}/c`, { recursive: true });
  Deno.mkdirSync(`${dir}/q`, { recursive: true });
  const rng = splitmix32(o.seed);
  const g = () => Math.round(((rng() / 2 ** 32) * 2 - 1) * 64) / 16;
  const pool = Array.from({ length: o.distinct }, () => Array.from({ length: o.d }, g));
  const paragraphs = [];
  for (let p = 0; p < o.paragraphs; p++) {
    const pick = Array.from({ length: o.rows }, () => rng() % o.distinct);
    const words = pick.map((r, i) => `w${i}v${r}`);
    const values = pick.flatMap((r) => pool[r]);
    const m: Matrix = o.f16
      ? { kind: "dense", rows: o.rows, cols: o.d, dtype: "f16", data: new Float16Array(values) }
      : { kind: "dense", rows: o.rows, cols: o.d, dtype: "f32", data: new Float32Array(values) };
    let at = 0;
    const phrases = words.map((w) => {
      const s = { text: w, start: at, end: at + w.length };
      at += w.length + 1;
      return s;
    });
    const context = words.join(" ");
    await run(writeContextDump(`${dir}/c`, { id: `T_${p}`, phrases, matrix: m }, fmt, context));
    paragraphs.push({ context, qas: [] as unknown[] });
  }
  for (let j = 0; j < o.questions; j++) {
    const v = j < o.distinct ? pool[j] : Array.from({ length: o.d }, g);
    paragraphs[j % o.paragraphs].qas.push({
      id: `q${j}`,
      question: "?",
      answers: [{ text: "x", answer_start: 0 }],
    });
    await run(writeQuestionDump(`${dir}/q`, {
      id: `q${j}`,
      vector: { kind: "dense", rows: 1, cols: o.d, dtype: "f32", data: new Float32Array(v) },
    }, fmt));
  }
  Deno.writeTextFileSync(
    `${dir}/data.json`,
    JSON.stringify({ version: "1.1", data: [{ title: "T", paragraphs }] }),
  );
}

interface Opts {
  nprobe?: number;
  probeTau?: number;
  candidates?: number;
  exact?: boolean;
  closed?: boolean;
  memoryBudget?: number;
}

/** Searches `index`; the bytes of pred.json and the top-k records. */
async function search(dir: string, index: string, out: string, o: Opts = {}) {
  await run(openSearch({
    data: `${dir}/data.json`,
    index,
    questionEmb: `${dir}/q`,
    predictions: `${out}.json`,
    topkOut: `${out}.topk.ndjson`,
    topK: 7,
    ...o,
  }));
  return {
    pred: Deno.readTextFileSync(`${out}.json`),
    topk: Deno.readTextFileSync(`${out}.topk.ndjson`),
  };
}

/** Every budget gives the in-memory search's bytes for each of `settings` on `index`. */
async function sameUnderBudgets(
  dir: string,
  index: string,
  settings: readonly Opts[],
): Promise<void> {
  for (const [x, s] of settings.entries()) {
    const want = await search(dir, index, `${dir}/mem${x}`, s);
    assert(want.topk.includes('"start"'), "the records have offsets");
    for (const b of BUDGETS) {
      const got = await search(dir, index, `${dir}/b${x}`, { ...s, memoryBudget: b });
      assertEquals(got.pred, want.pred, `${JSON.stringify(s)}, budget ${b}: pred.json`);
      assertEquals(got.topk, want.topk, `${JSON.stringify(s)}, budget ${b}: top-k`);
    }
  }
}

Deno.test("memory budget: parsed as bytes, SI or binary units; a bad one is refused", () => {
  assertEquals(parseMemoryBudget("268435456"), 268435456);
  assertEquals(parseMemoryBudget("256MB"), 256e6);
  assertEquals(parseMemoryBudget("256mib"), 256 * 2 ** 20);
  assertEquals(parseMemoryBudget("1GiB"), 2 ** 30);
  assertEquals(parseMemoryBudget("1.5G"), 1.5 * 2 ** 30);
  assertEquals(parseMemoryBudget("64 kB"), 64000);
  for (const bad of ["", "0", "-5", "12XB", "MB", "1e9", "0.1"]) {
    assertEquals(typeof parseMemoryBudget(bad), "string", bad);
  }
});

Deno.test("memory budget: the LRU cache holds at most its capacity, least recently used out first", () => {
  const c = new ByteLru<number, number>(100);
  for (let i = 0; i < 50; i++) {
    c.put(i, i, 30);
    assert(c.bytes <= 100);
  }
  assertEquals([47, 48, 49].map((k) => c.get(k)), [47, 48, 49]);
  assertEquals(c.get(46), undefined);
  c.put(99, 99, 101);
  assertEquals(c.get(99), undefined);
  assertEquals(new ByteLru<number, number>(0).capacity, 0);
});

Deno.test("memory budget: the heap ceiling collects the garbage over it and rises above what is live", () => {
  const used = () => v8.getHeapStatistics().used_heap_size;
  const h = new HeapCeiling(1, 4 * 2 ** 20);
  // 16 MiB live, then about 40 MB made unreachable: no allocation between the two readings.
  const live = new Array(2 ** 21).fill(0).map((_, i) => i + 0.5); // 2 Mi doubles
  let junk: { i: number; s: string }[] | null = Array.from(
    { length: 400_000 },
    (_, i) => ({ i, s: `garbage ${i}` }),
  );
  assertEquals(junk.length, 400_000);
  junk = null;
  const before = used();
  h.note(2 ** 20); // under the step: no check
  assertEquals(h.collections, 0);
  h.note(3 * 2 ** 20); // the step reached: the heap is over 1 byte, so it collects
  const after = used();
  assertEquals(h.collections, 1);
  assert(before - after > 20e6, `freed ${before - after} bytes (${before} → ${after})`);
  assert(after > 16 * 2 ** 20, `the live array stays: ${after}`);
  assertEquals(live.length, 2 ** 21);
  // The ceiling is now 1.5 × the live heap: a check right after does not collect again.
  const c = h.ceiling;
  assert(c >= 1.5 * after - 1e6 && c <= 1.5 * after + 4e6, `ceiling ${c} for ${after} live`);
  h.check();
  assertEquals(h.collections, 1);
  // A search's ceiling: a quarter of the budget and 64 MiB, checked every 1/64 of it (≥ 1 MiB).
  assertEquals([heapCeilingFor(256e6).base, heapCeilingFor(256e6).step], [
    64e6 + 64 * 2 ** 20,
    4e6,
  ]);
  assertEquals([heapCeilingFor(1).base, heapCeilingFor(1).step], [64 * 2 ** 20, 2 ** 20]);
});

Deno.test("memory budget: exact search gives the in-memory bytes with any budget (f32 ip, f16 l2, closed)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-mbx-" });
  try {
    await dump(tmp, { paragraphs: 9, rows: 37, d: 16, distinct: 60, questions: 40, seed: 3 });
    await run(buildIndex({ contextEmb: `${tmp}/c`, out: `${tmp}/ix` }));
    await sameUnderBudgets(tmp, `${tmp}/ix`, [{}, { closed: true }]);
    const h = `${tmp}/h`;
    await dump(h, {
      paragraphs: 7,
      rows: 29,
      d: 8,
      distinct: 50,
      questions: 30,
      seed: 4,
      f16: true,
    });
    await run(buildIndex({ contextEmb: `${h}/c`, out: `${h}/ix`, metric: "l2" }));
    assertEquals(openIndexSync(`${h}/ix`).header.dtype, "f16");
    await sameUnderBudgets(h, `${h}/ix`, [{}, { closed: true }]);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("memory budget: IVF-PQ gives the in-memory bytes with any budget; a tiny one evicts", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-mbi-" });
  try {
    await dump(tmp, { paragraphs: 12, rows: 40, d: 16, distinct: 300, questions: 50, seed: 5 });
    const ivf = { nlist: 6, bpv: 4, trainParagraphs: 6 };
    await run(buildIndex({ contextEmb: `${tmp}/c`, ...ivf, out: `${tmp}/ix` }));
    await sameUnderBudgets(tmp, `${tmp}/ix`, [
      { nprobe: 1 },
      { nprobe: 3 },
      { nprobe: 3, candidates: 12 },
      { nprobe: 6, probeTau: 0.1, candidates: 12 },
      { exact: true },
    ]);
    // One question vector at a time and in a batch: each list read again when evicted.
    const { openDumpSync } = await import("../../io/dump/reader_sync.ts");
    const qd = openDumpSync(`${tmp}/q`, { sparse: false });
    const vs = Array.from({ length: 20 }, (_, j) => qd.readQuestion(`q${j}`) as Matrix);
    qd.close();
    const mem = openIndexSync(`${tmp}/ix`);
    const tiny = openIndexSync(`${tmp}/ix`, { memoryBudget: 1 });
    const mid = openIndexSync(`${tmp}/ix`, { memoryBudget: 136_000 });
    const big = openIndexSync(`${tmp}/ix`, { memoryBudget: 2 ** 26 });
    // Slices of 46 rows (3000 / 8 / (bpv + 4)), no list cached: each list scanned in slices.
    const sliced = openIndexSync(`${tmp}/ix`, { memoryBudget: 3000 });
    try {
      for (const o of [{ nprobe: 4 }, { nprobe: 6, candidates: 9 }, { nprobe: 6, probeTau: 0.1 }]) {
        const want = await searchVectors(mem, vs, { topK: 5, ...o });
        assertEquals(await searchVectors(tiny, vs, { topK: 5, ...o }), want);
        assertEquals(await searchVectors(mid, vs, { topK: 5, ...o }), want);
        assertEquals(await searchVectors(big, vs, { topK: 5, ...o }), want);
        assertEquals(await searchVectors(sliced, vs, { topK: 5, ...o }), want);
        for (const [j, v] of vs.slice(0, 3).entries()) {
          assertEquals(await searchVectors(sliced, [v], { topK: 5, ...o }), [want[j]]);
          assertEquals(await searchVectors(tiny, [v], { topK: 5, ...o }), [want[j]]);
          assertEquals(await searchVectors(mid, [v], { topK: 5, ...o }), [want[j]]);
        }
      }
      // The tau above cuts some question's lists (else its rows would say nothing of the cut).
      assert(
        JSON.stringify(await searchVectors(mem, vs, { topK: 5, nprobe: 6, probeTau: 0.1 })) !==
          JSON.stringify(await searchVectors(mem, vs, { topK: 5, nprobe: 6 })),
      );
      assert(tiny.disk!.listReads > 3 * 6, `tiny budget: ${tiny.disk!.listReads} list reads`);
      assert(big.disk!.listReads <= 6, `large budget: ${big.disk!.listReads} list reads`);
      // A list larger than the cache is read a slice at a time, never whole.
      assertEquals(sliced.disk!.sliceRows, 46);
      assert(mem.header.phrases / 6 > 46, "the lists are larger than a slice");
      const sl = sliced.disk!;
      assert(sl.sliceReads > sl.listReads && sl.listReads > 0, `${sl.sliceReads} slice reads`);
      assertEquals(big.disk!.sliceReads, 0);
      const m = mid.disk!.listReads;
      assert(m > 6 && m < tiny.disk!.listReads, `some lists cached: ${m} list reads`);
      assert(tiny.disk!.textReads > big.disk!.textReads);
      // Titles and texts (what the demo shows), as in memory.
      for (let p = 0; p < mem.ids.length; p++) {
        assertEquals(paragraphText(tiny, p), paragraphText(mem, p));
        assert(paragraphText(mem, p).context !== null);
      }
    } finally {
      for (const x of [tiny, mid, big, sliced]) x.disk!.close();
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("memory budget: a 4-bit IVF-PQ gives the in-memory bytes with any budget (ip, l2); lists in slices of whole blocks", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-mb4-" });
  try {
    await dump(tmp, { paragraphs: 12, rows: 40, d: 16, distinct: 300, questions: 50, seed: 5 });
    const ivf = { nlist: 6, bpv: 4, pqBits: 4 as const, trainParagraphs: 6 };
    for (const metric of ["ip", "l2"] as const) {
      const ix = `${tmp}/ix-${metric}`;
      await run(buildIndex({ contextEmb: `${tmp}/c`, ...ivf, metric, out: ix }));
      assertEquals(JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)).parameters.bits, 4);
      await sameUnderBudgets(tmp, ix, [{ nprobe: 1 }, { nprobe: 3 }, {
        nprobe: 3,
        candidates: 12,
      }, { nprobe: 6, probeTau: 0.1, candidates: 12 }]);
      const { openDumpSync } = await import("../../io/dump/reader_sync.ts");
      const qd = openDumpSync(`${tmp}/q`, { sparse: false });
      const vs = Array.from({ length: 20 }, (_, j) => qd.readQuestion(`q${j}`) as Matrix);
      qd.close();
      const mem = openIndexSync(ix);
      const tiny = openIndexSync(ix, { memoryBudget: 1 });
      const big = openIndexSync(ix, { memoryBudget: 2 ** 26 });
      // Slices of 32 rows (3000 / 8 / (bpv + 4) = 46, down to whole blocks), no list cached.
      const sliced = openIndexSync(ix, { memoryBudget: 3000 });
      try {
        for (
          const o of [
            { nprobe: 4 },
            { nprobe: 6, candidates: 9 },
            { nprobe: 2, topK: 40 },
            { nprobe: 6, probeTau: 0.1, candidates: 9 },
          ]
        ) {
          const want = await searchVectors(mem, vs, { topK: 5, ...o });
          assert(want[0].length > 0);
          for (const x of [tiny, big, sliced]) {
            assertEquals(await searchVectors(x, vs, { topK: 5, ...o }), want);
          }
          // One question at a time (the single-question scan), in and out of the kernel.
          for (const [j, v] of vs.slice(0, 3).entries()) {
            assertEquals(await searchVectors(sliced, [v], { topK: 5, ...o }), [want[j]]);
            assertEquals(await searchVectors(tiny, [v], { topK: 5, ...o }), [want[j]]);
          }
          assertEquals(await searchVectors(sliced, vs, { topK: 5, ...o, simd: false }), want);
        }
        assertEquals(sliced.disk!.sliceRows, 32);
        assert(mem.header.phrases / 6 > 32, "the lists are larger than a slice");
        const sl = sliced.disk!;
        assert(sl.sliceReads > sl.listReads && sl.listReads > 0, `${sl.sliceReads} slice reads`);
        assertEquals(big.disk!.sliceReads, 0);
        assert(big.disk!.listReads <= 6, `large budget: ${big.disk!.listReads} list reads`);
        // The tau above cuts some question's lists (else its rows would say nothing of the cut).
        assert(
          JSON.stringify(await searchVectors(mem, vs, { topK: 5, nprobe: 6, probeTau: 0.1 })) !==
            JSON.stringify(await searchVectors(mem, vs, { topK: 5, nprobe: 6 })),
        );
        assert(tiny.disk!.listReads > 3 * 6, `tiny budget: ${tiny.disk!.listReads} list reads`);
      } finally {
        for (const x of [tiny, big, sliced]) x.disk!.close();
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("memory budget: over 3 shards, exact and IVF-PQ, the in-memory bytes with any budget", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-mbs-" });
  try {
    await dump(tmp, { paragraphs: 10, rows: 31, d: 16, distinct: 200, questions: 40, seed: 6 });
    const o = { contextEmb: `${tmp}/c` };
    for (let i = 0; i < 3; i++) {
      await run(
        buildIndex({
          ...o,
          out: `${tmp}/ex/${shardFolderName(i, 3)}`,
          shard: { index: i, count: 3 },
        }),
      );
    }
    await sameUnderBudgets(tmp, `${tmp}/ex`, [{}, { closed: true }]);
    const ivf = { nlist: 5, bpv: 4, trainParagraphs: 5 };
    await run(trainQuantizer({ ...o, ...ivf, out: `${tmp}/iv/quantizer` }));
    for (let i = 0; i < 3; i++) {
      await run(buildIndex({
        ...o,
        out: `${tmp}/iv/${shardFolderName(i, 3)}`,
        shard: { index: i, count: 3 },
        quantizer: `${tmp}/iv/quantizer`,
      }));
    }
    await sameUnderBudgets(tmp, `${tmp}/iv`, [{ nprobe: 2 }, { nprobe: 4, candidates: 10 }]);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("memory budget: corrupt files are refused at open as in memory", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-mbc-" });
  try {
    await dump(tmp, { paragraphs: 4, rows: 9, d: 8, distinct: 20, questions: 3, seed: 8 });
    const ivf = { nlist: 2, bpv: 2, trainParagraphs: 4 };
    await run(buildIndex({ contextEmb: `${tmp}/c`, ...ivf, out: `${tmp}/ix` }));
    const message = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return String((e as { message?: string }).message ?? e);
      }
      return "opened";
    };
    const both = (why: RegExp) => {
      const mem = message(() => openIndexSync(`${tmp}/bad`));
      const disk = message(() => openIndexSync(`${tmp}/bad`, { memoryBudget: 1000 }));
      assertMatch(mem, why);
      assertEquals(disk, mem);
      // Without sha256 checks the contents are still checked, the same way.
      const mem2 = message(() => openIndexSync(`${tmp}/bad`, { verify: false }));
      const disk2 = message(() =>
        openIndexSync(`${tmp}/bad`, { verify: false, memoryBudget: 1000 })
      );
      assertEquals(disk2, mem2);
    };
    const copy = () => {
      try {
        Deno.removeSync(`${tmp}/bad`, { recursive: true });
      } catch { /* the first time */ }
      Deno.mkdirSync(`${tmp}/bad/ivf`, { recursive: true });
      for (const e of Deno.readDirSync(`${tmp}/ix`)) {
        if (e.isFile) Deno.copyFileSync(`${tmp}/ix/${e.name}`, `${tmp}/bad/${e.name}`);
      }
      for (const e of Deno.readDirSync(`${tmp}/ix/ivf`)) {
        Deno.copyFileSync(`${tmp}/ix/ivf/${e.name}`, `${tmp}/bad/ivf/${e.name}`);
      }
    };
    const poke = (name: string, at: number, bytes: number[]) => {
      const b = Deno.readFileSync(`${tmp}/bad/${name}`);
      b.set(bytes, at);
      Deno.writeFileSync(`${tmp}/bad/${name}`, b);
    };
    // A NaN vector value (f32), sha256 differing.
    copy();
    poke("vectors.f32", 4 * 13, [0, 0, 0xc0, 0x7f]);
    both(/sha256 differs/);
    // Truncated vectors.
    copy();
    Deno.truncateSync(`${tmp}/bad/vectors.f32`, 12);
    both(/truncated or corrupt index/);
    // A list row out of range.
    copy();
    poke("ivf/list_rows.u32", 4, [0xff, 0xff, 0, 0]);
    both(/sha256 differs/);
    // A broken paragraph line.
    copy();
    poke("paragraphs.ndjson", 2, [0x23]);
    both(/sha256 differs/);
    // The same with the header's sha256 recomputed: the contents' checks speak.
    const { createHash } = await import("node:crypto");
    const forge = (name: string) => {
      const h = JSON.parse(Deno.readTextFileSync(`${tmp}/bad/index.json`));
      h.files[name].sha256 = createHash("sha256").update(Deno.readFileSync(`${tmp}/bad/${name}`))
        .digest("hex");
      h.binding = indexBinding(h.files); // a forger who knows the binding too
      Deno.writeTextFileSync(`${tmp}/bad/index.json`, JSON.stringify(h, null, 2) + "\n");
    };
    copy();
    poke("vectors.f32", 4 * 13, [0, 0, 0xc0, 0x7f]);
    forge("vectors.f32");
    both(/NaN at row 1, column 5 \(corrupt index\)/);
    copy();
    poke("ivf/list_rows.u32", 4, [0xff, 0xff, 0, 0]);
    forge("ivf/list_rows.u32");
    both(/row 65535 at 1 is out of range \(corrupt index\)/);
    copy();
    poke("paragraphs.ndjson", 2, [0x23]);
    forge("paragraphs.ndjson");
    both(/line 1: not a paragraph record/);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("memory budget: search --memory-budget refuses a bad value with one line, exit 2", async () => {
  const out = await runArgv([
    Deno.execPath(),
    "run",
    "-A",
    new URL("../../pipeline/search.ts", import.meta.url).pathname,
    "data.json",
    "ix",
    "q",
    "pred.json",
    "--memory-budget",
    "lots",
  ]);
  const err = out.stderr.trim();
  assertEquals(out.code, 2, err);
  assertEquals(err.split("\n").length, 1, err);
  assertMatch(err, /--memory-budget: bad memory budget "lots"/);
});

Deno.test("memory budget: the search record says the budget in bytes, or null without one", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-mbr-" });
  try {
    await dump(tmp, { paragraphs: 3, rows: 5, d: 4, distinct: 9, questions: 4, seed: 3 });
    await run(buildIndex({ contextEmb: `${tmp}/c`, out: `${tmp}/ix` }));
    for (const [name, extra, want] of [["b", ["--memory-budget", "5kB"], 5000], ["m", [], null]]) {
      const out = await runArgv([
        Deno.execPath(),
        "run",
        "-A",
        new URL("../../pipeline/search.ts", import.meta.url).pathname,
        `${tmp}/data.json`,
        `${tmp}/ix`,
        `${tmp}/q`,
        `${tmp}/${name}.json`,
        ...(extra as string[]),
      ]);
      assertEquals(out.code, 0, out.stderr);
      const rec = JSON.parse(Deno.readTextFileSync(`${tmp}/${name}.search.json`));
      assertEquals(rec.memory_budget, want);
    }
    assertEquals(Deno.readTextFileSync(`${tmp}/b.json`), Deno.readTextFileSync(`${tmp}/m.json`));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
