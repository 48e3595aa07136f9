/**
 * The 4-bit IVF-PQ (`index --pq-bits 4`, `search/index/ivfpq/fastscan.ts`;
 * its kernel is tested in `tests/search/kernels/wasm_fastscan_test.ts`):
 * the tables' quantization; the build is reproducible (two builds, tiny
 * windows, encode workers and a build killed and rerun give the same
 * bytes), its codes decode to
 * each row's nearest 16-entry codebook entries, `--pq-bits 8` is the 8-bit
 * index byte for byte; searches give the same answers with and without
 * the kernel and on two threads, nprobe = nlist with every phrase
 * re-scored equals exact search; probing screened (`wasm_screen.ts`, 256
 * lists) answers as probing every list, 8- and 4-bit; forged or
 * inconsistent files are refused with one line, exit 2.
 */
import * as Effect from "effect/Effect";
import { writeContextDump } from "../../../../io/dump/writer.ts";
import {
  blockStarts,
  quantizeTables,
  SCREEN_MIN_LISTS,
  screenedLists,
} from "../../../../search/index/ivfpq/fastscan.ts";
import {
  ivfCandidates,
  ivfCandidatesBatch,
  loadIvf,
} from "../../../../search/index/ivfpq/ivfpq.ts";
import {
  callPieces,
  closeIvfWorkers,
  pieceCount,
  pieceSizes,
  scoreIvf,
  scoreIvfSync,
  TAIL_PIECE,
  turnPieces,
} from "../../../../search/index/ivfpq/ivf_search.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { fsQmax } from "../../../../search/kernels/wasm_fastscan.ts";
import { openIndexSync } from "../../../../search/index/read.ts";
import { indexBinding } from "../../../../search/index/format.ts";
import { scoreQuestions } from "../../../../search/open/open.ts";
import { InputError } from "../../../../io/errors.ts";
import { assert, assertEquals, assertMatch } from "../../../_assert.ts";
import { ROOT, runOpenIvfConfig, runStage, sha256File, spawnChild } from "../../../_util.ts";
import { buildIndex, indexTempFolder } from "../../../../search/index/build.ts";
import { numpyDumps, smallIvfIndex } from "../../_stages.ts";

Deno.test("fast-scan tables: one scale, a bias per table, entries within 16-bit sums", () => {
  const u = splitmix32(4);
  for (const M of [1, 8, 256, 300]) {
    const t = Float64Array.from({ length: 16 * M }, () => (u() / 2 ** 32 - 0.5) * 3);
    const lut = new Uint8Array(16 * M);
    const { scale, bias } = quantizeTables(t, M, lut, 0);
    const qmax = fsQmax(M);
    let bmin = 0;
    for (let m = 0; m < M; m++) {
      const row = t.subarray(16 * m, 16 * m + 16);
      const lo = Math.min(...row);
      bmin += lo;
      for (let c = 0; c < 16; c++) {
        assert(lut[16 * m + c] <= qmax);
        // Each entry within half a step of its exact value.
        assert(Math.abs(lut[16 * m + c] / scale - (row[c] - lo)) <= 0.5 / scale + 1e-12);
      }
    }
    assert(Math.abs(bias - bmin) < 1e-9);
    assert(Math.max(...lut) === qmax, `M ${M}`);
  }
});

/** A standard normal generator on splitmix32 (Box–Muller). */
function gauss(seed: number): () => number {
  const u = splitmix32(seed);
  return () => {
    const a = (u() + 1) / 4294967297, b = u() / 4294967296;
    return Math.sqrt(-2 * Math.log(a)) * Math.cos(2 * Math.PI * b);
  };
}

/** A clustered dump (as the 8-bit engine's tests) and `nq` questions drawn the same way. */
async function clusteredDump(
  dir: string,
  o: { paragraphs: number; per: number; d: number; clusters: number; nq: number },
): Promise<Float32Array[]> {
  Deno.mkdirSync(dir, { recursive: true });
  const g = gauss(7), pick = splitmix32(11);
  const centres = Float32Array.from({ length: o.clusters * o.d }, () => g());
  const draw = () => {
    const c = pick() % o.clusters, v = new Float32Array(o.d);
    for (let t = 0; t < o.d; t++) v[t] = centres[c * o.d + t] + 0.5 * g();
    return v;
  };
  for (let p = 0; p < o.paragraphs; p++) {
    // Paragraphs of different sizes, so that lists are not multiples of 32 rows.
    const per = o.per + (p % 7);
    const data = new Float32Array(per * o.d);
    for (let i = 0; i < per; i++) data.set(draw(), i * o.d);
    await Effect.runPromise(writeContextDump(dir, {
      id: `P_${String(p).padStart(4, "0")}`,
      phrases: Array.from({ length: per }, (_, i) => ({ text: `w${i}`, start: 0, end: 2 })),
      matrix: { kind: "dense", rows: per, cols: o.d, dtype: "f32", data },
    }, { sparse: false, compressed: false }));
  }
  return Array.from({ length: o.nq }, draw);
}

async function hashes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string) => {
    for (const e of Deno.readDirSync(`${dir}/${rel}`)) {
      const name = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory) await walk(name);
      else out[name] = await sha256File(`${dir}/${name}`);
    }
  };
  await walk("");
  return Object.fromEntries(Object.keys(out).sort().map((k) => [k, out[k]]));
}

const SHAPE = { paragraphs: 150, per: 17, d: 32, clusters: 24, nq: 30 };
const IVF4 = ["--nlist", "12", "--bpv", "8", "--pq-bits", "4"];

/**
 * An independent ADC over a 4-bit index's files (M = 16 sub-quantizers): `(q, row)` to
 * `[q·c + Σ_m T_m[code_m]` (ip) or `−Σ_m ‖(q − c)_m − book_m[code_m]‖²` (l2), in float64,
 * the step of the tables' quantization (the largest table range / `fsQmax(M)`)`]`.
 */
function adcOf(dir: string, l2: boolean): (q: Float32Array, row: number) => [number, number] {
  const h = JSON.parse(Deno.readTextFileSync(`${dir}/index.json`));
  const d = h.d, M = 2 * h.parameters.bpv, dsub = d / M, nlist = h.parameters.nlist;
  const f32 = (name: string) => new Float32Array(Deno.readFileSync(`${dir}/${name}`).buffer);
  const cent = f32("ivf/centroids.f32"), books = f32("ivf/codebooks.f32");
  const offsets = Array.from(
    new BigInt64Array(Deno.readFileSync(`${dir}/ivf/list_offsets.i64`).buffer),
    Number,
  );
  const rows = new Uint32Array(Deno.readFileSync(`${dir}/ivf/list_rows.u32`).buffer);
  const codes = Deno.readFileSync(`${dir}/ivf/codes.u8`);
  const where = new Map<number, [number, number]>();
  let blocks = 0;
  for (let l = 0; l < nlist; l++) {
    for (let p = offsets[l]; p < offsets[l + 1]; p++) {
      where.set(rows[p], [l, blocks * 32 + (p - offsets[l])]);
    }
    blocks += Math.ceil((offsets[l + 1] - offsets[l]) / 32);
  }
  return (q, row) => {
    const [l, at] = where.get(row)!;
    const b = Math.floor(at / 32), p = at % 32;
    let sum = 0, range = 0;
    for (let m = 0; m < M; m++) {
      const t: number[] = [];
      for (let c = 0; c < 16; c++) {
        let s = 0;
        for (let k = 0; k < dsub; k++) {
          const col = m * dsub + k, e = books[(m * 16 + c) * dsub + k];
          if (l2) s -= (q[col] - cent[l * d + col] - e) ** 2;
          else s += q[col] * e;
        }
        t.push(s);
      }
      range = Math.max(range, Math.max(...t) - Math.min(...t));
      const byte = codes[b * 16 * M + 16 * m + (p % 16)];
      sum += t[p >= 16 ? byte >> 4 : byte & 15];
    }
    let base = 0;
    if (!l2) { for (let k = 0; k < d; k++) base += q[k] * cent[l * d + k]; }
    return [base + sum, range / fsQmax(M)];
  };
}

async function build(dump: string, out: string, extra: string[]): Promise<void> {
  const r = await runStage("pipeline/index.ts", [dump, out, ...extra]);
  assertEquals(r.code, 0, r.stderr);
}

Deno.test("4-bit ivf-pq: reproducible bytes, codes of the nearest entries in the blocked layout, --pq-bits 8 unchanged", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-pq4-" });
  try {
    await clusteredDump(`${tmp}/c`, SHAPE);
    await build(`${tmp}/c`, `${tmp}/a`, IVF4);
    await build(`${tmp}/c`, `${tmp}/b`, IVF4);
    const a = await hashes(`${tmp}/a`);
    assertEquals(await hashes(`${tmp}/b`), a);
    // 8-bit: the flag's default, the same bytes as without it.
    await build(`${tmp}/c`, `${tmp}/e8`, ["--nlist", "12", "--bpv", "8"]);
    await build(`${tmp}/c`, `${tmp}/f8`, ["--nlist", "12", "--bpv", "8", "--pq-bits", "8"]);
    assertEquals(await hashes(`${tmp}/f8`), await hashes(`${tmp}/e8`));
    assert(a["ivf/codes.u8"] !== (await hashes(`${tmp}/e8`))["ivf/codes.u8"]);
    const h = JSON.parse(Deno.readTextFileSync(`${tmp}/a/index.json`));
    assertEquals(h.parameters.bits, 4);
    assertEquals(h.parameters.bpv, 8);
    assertEquals(JSON.parse(Deno.readTextFileSync(`${tmp}/e8/index.json`)).parameters.bits, 8);

    // Decode the blocked codes: each row's 16 codes are the nearest entries (L2, ties to
    // the lower) of its residual's 16 sub-vectors, computed here independently.
    const ix = openIndexSync(`${tmp}/a`);
    const d = SHAPE.d, M = 16, dsub = d / M, nlist = 12;
    const f32 = (name: string) => new Float32Array(Deno.readFileSync(`${tmp}/a/${name}`).buffer);
    const cent = f32("ivf/centroids.f32"), books = f32("ivf/codebooks.f32");
    assertEquals(books.length, M * 16 * dsub);
    const offsets = Array.from(
      new BigInt64Array(Deno.readFileSync(`${tmp}/a/ivf/list_offsets.i64`).buffer),
      Number,
    );
    const rows = new Uint32Array(Deno.readFileSync(`${tmp}/a/ivf/list_rows.u32`).buffer);
    const codes = Deno.readFileSync(`${tmp}/a/ivf/codes.u8`);
    const start = blockStarts(offsets, nlist);
    assertEquals(codes.length, start[nlist] * 32 * 8);
    const x = ix.dense as Float32Array;
    let checked = 0;
    for (let l = 0; l < nlist; l++) {
      const n = offsets[l + 1] - offsets[l];
      for (let p = 0; p < Math.ceil(n / 32) * 32; p++) {
        const b = start[l] + (p >> 5);
        for (let m = 0; m < M; m++) {
          const byte = codes[b * 16 * M + 16 * m + (p & 15)];
          const code = p & 16 ? byte >> 4 : byte & 15;
          if (p >= n) {
            assertEquals(code, 0, "padding");
            continue;
          }
          const row = rows[offsets[l] + p];
          let best = -1, bd = Infinity;
          for (let c = 0; c < 16; c++) {
            let s = 0;
            for (let t = 0; t < dsub; t++) {
              const col = m * dsub + t;
              const e = x[row * d + col] - cent[l * d + col] - books[(m * 16 + c) * dsub + t];
              s += e * e;
            }
            if (s < bd) [bd, best] = [s, c];
          }
          // float64 here, the build's own float arithmetic: near-ties may differ.
          if (code !== best) {
            let s = 0;
            for (let t = 0; t < dsub; t++) {
              const col = m * dsub + t;
              const e = x[row * d + col] - cent[l * d + col] - books[(m * 16 + code) * dsub + t];
              s += e * e;
            }
            assert(s - bd < 1e-4 * (1 + bd), `row ${row} m ${m}: ${code} ≠ ${best}`);
          }
          checked++;
        }
      }
    }
    assertEquals(checked, ix.header.phrases * M);

    // Killed (SIGKILL) in the IVF stage and rerun: the same bytes, no temporary folder left.
    const out = `${tmp}/k`, work = indexTempFolder(out);
    const full = Deno.statSync(`${tmp}/a/vectors.f32`).size;
    const child = spawnChild(
      [Deno.execPath(), "run", "-A", `${ROOT}/pipeline/index.ts`, `${tmp}/c`, out, ...IVF4],
      { stdout: "null", stderr: "null" },
    );
    const size = (p: string) => {
      try {
        return Deno.statSync(p).size;
      } catch {
        return -1;
      }
    };
    let exited = false;
    child.status.then(() => exited = true);
    for (let i = 0; i < 100000 && !exited && size(`${work}/build/vectors.f32`) < full; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    assert(!exited, "the build ended before it was killed");
    assertEquals(size(`${work}/build/index.json`), -1, "the build finished before it was killed");
    child.kill("SIGKILL");
    assertEquals((await child.status).signal, "SIGKILL");
    assertEquals(size(out), -1);
    await build(`${tmp}/c`, out, IVF4);
    assertEquals(await hashes(out), a);
    assertEquals(size(work), -1);

    // Tiny write windows, small blocks and encode workers: the same bytes.
    await Effect.runPromise(buildIndex({
      contextEmb: `${tmp}/c`,
      out: `${tmp}/w`,
      nlist: 12,
      bpv: 8,
      pqBits: 4,
      ivfTuning: { writeBudget: 700, encodeBlock: 100, encodeThreads: 2 },
    }));
    assertEquals(await hashes(`${tmp}/w`), a);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("pieceSizes, pieceCount and callPieces: a call's questions cut into as-equal pieces, one for each free worker, at most 256 questions a piece (64 in a call marked tail)", () => {
  assertEquals(pieceSizes(256, 2), [128, 128]);
  assertEquals(pieceSizes(7, 3), [3, 2, 2]);
  assertEquals(pieceSizes(1057, 5), [212, 212, 211, 211, 211]);
  assertEquals(pieceSizes(5, 5), [1, 1, 1, 1, 1]);
  // A block of 256 on two idle workers: two halves; on none (all busy or spoken for): one piece.
  assertEquals(pieceCount(256, 2), 2);
  assertEquals(pieceCount(256, 0), 1);
  assertEquals(pieceCount(256, -3), 1);
  assertEquals(pieceCount(257, 0), 2);
  assertEquals(pieceCount(512, 2), 2);
  assertEquals(pieceCount(1057, 2), 5);
  assertEquals(pieceCount(1057, 8), 8);
  assertEquals(pieceCount(3, 8), 3);
  assertEquals(pieceCount(1, 1), 1);
  for (const [nq, free] of [[1000, 3], [5, 2], [2, 4], [10_000, 0], [256, 64]] as const) {
    const sizes = pieceSizes(nq, pieceCount(nq, free));
    assertEquals(sizes.reduce((a, b) => a + b, 0), nq);
    assert(sizes.every((x) => x >= 1 && x <= 256), `${sizes}`);
    assert(Math.max(...sizes) - Math.min(...sizes) <= 1, `${sizes}`);
    // A call marked as one of the last (`tail`): pieces of at most 64, never fewer than without.
    const tail = pieceSizes(nq, callPieces(nq, free, true));
    assertEquals(tail.reduce((a, b) => a + b, 0), nq);
    assert(tail.every((x) => x >= 1 && x <= TAIL_PIECE), `${tail}`);
    assert(tail.length >= sizes.length && Math.max(...tail) - Math.min(...tail) <= 1, `${tail}`);
    assertEquals(callPieces(nq, free, false), pieceCount(nq, free));
  }
  assertEquals(TAIL_PIECE, 64);
  // The last block of 256 while both workers are busy: four pieces of 64 instead of one.
  assertEquals(pieceSizes(256, callPieces(256, 0, true)), [64, 64, 64, 64]);
  assertEquals(callPieces(33, 0, true), 1);
  assertEquals(callPieces(33, 2, true), 2);
  assertEquals(callPieces(1, 2, true), 1);
  // Calls made in one turn (the `search` stage's first blocks): N blocks on N idle workers go one
  // to a worker whole; a call alone is cut for all of them; a tail call as callPieces cuts it.
  const block = { nq: 256, tail: false };
  assertEquals(turnPieces([block, block, block], 2), [1, 1, 1]);
  assertEquals(turnPieces([block, block], 2), [1, 1]);
  assertEquals(turnPieces([block], 2), [2]);
  assertEquals(turnPieces([block, block], 3), [2, 1]);
  assertEquals(turnPieces([block, { nq: 33, tail: true }], 2), [1, 1]);
  assertEquals(turnPieces([{ nq: 256, tail: true }], 0), [4]);
  assertEquals(turnPieces([{ nq: 1057, tail: false }], 2), [5]);
  assertEquals(turnPieces([block, block], 0), [1, 1]);
  assertEquals(turnPieces([], 2), []);
});

Deno.test("4-bit ivf-pq search: the same answers with and without the kernel and on 2 threads; nprobe = nlist re-scoring every phrase is exact search (ip, l2)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-pq4s-" });
  try {
    const queries = await clusteredDump(`${tmp}/c`, SHAPE);
    for (const metric of ["ip", "l2"]) {
      await build(`${tmp}/c`, `${tmp}/${metric}`, [...IVF4, "--metric", metric]);
      await build(`${tmp}/c`, `${tmp}/x${metric}`, ["--metric", metric]);
      const ix = openIndexSync(`${tmp}/${metric}`), ex = openIndexSync(`${tmp}/x${metric}`);
      const truth = scoreQuestions(
        ex,
        queries.map((q) => ({ kind: "dense", rows: 1, cols: SHAPE.d, dtype: "f32", data: q })),
        { topK: 10 },
      );
      const all = ix.header.phrases;
      const full = scoreIvfSync(ix, queries, { topK: 10, nprobe: 12, refine: all });
      assertEquals(full.map((t) => [t.rows, t.scores]), truth.map((t) => [t.rows, t.scores]));
      const rec = (tops: { rows: number[] }[]) =>
        tops.reduce((s, t, j) => s + (t.rows[0] === truth[j].rows[0] ? 1 : 0), 0) / tops.length;
      for (const opts of [{ nprobe: 3 }, { nprobe: 6, refine: 40 }, { nprobe: 12 }]) {
        const k = scoreIvfSync(ix, queries, { topK: 10, ...opts });
        const ts = scoreIvfSync(ix, queries, { topK: 10, scanKernel: false, ...opts });
        assertEquals(ts.map((t) => [t.rows, t.scores]), k.map((t) => [t.rows, t.scores]));
        // Several calls on 2 threads, one after another, then three made at once (the later
        // ones' pieces wait in the workers' queue): each call its own questions' answers.
        for (let call = 0; call < 3; call++) {
          const w = await scoreIvf(ix, queries, { topK: 10, threads: 2, ...opts });
          assertEquals(w.map((t) => [t.rows, t.scores]), k.map((t) => [t.rows, t.scores]));
        }
        // A call marked as one of the last (`tail`), of 150 questions: three pieces of 50, the
        // same answers.
        const many = Array.from({ length: 5 }, () => queries).flat();
        const tail = await scoreIvf(ix, many, { topK: 10, threads: 2, tail: true, ...opts });
        assertEquals(
          tail.map((t) => [t.rows, t.scores]),
          Array.from({ length: 5 }, () => k).flat().map((t) => [t.rows, t.scores]),
        );
        const cut = [0, 5, 6, queries.length];
        const parts = await Promise.all(
          [0, 1, 2].map((c) =>
            scoreIvf(ix, queries.slice(cut[c], cut[c + 1]), { topK: 10, threads: 2, ...opts })
          ),
        );
        assertEquals(parts.flat().map((t) => [t.rows, t.scores]), k.map((t) => [t.rows, t.scores]));
        // Re-scored by the float32 screen and exact sums (no exact-sums module): the same.
        const plain = scoreIvfSync(ix, queries, { topK: 10, simd: false, ...opts });
        assertEquals(plain.map((t) => [t.rows, t.scores]), k.map((t) => [t.rows, t.scores]));
        assert(k.every((t) => t.rows.length === 10));
      }
      closeIvfWorkers(ix);
      // A batch (list by list, two questions a pass) gives each question its candidates alone.
      for (const [nprobe, cap] of [[1, 10], [5, 40], [12, 100]]) {
        const alone = queries.map((q) => ivfCandidates(ix, q, nprobe, cap));
        assertEquals(ivfCandidatesBatch(ix, queries, nprobe, cap), alone, `${metric} ${nprobe}`);
        assertEquals(ivfCandidatesBatch(ix, queries.slice(1), nprobe, cap), alone.slice(1));
        assert(alone.every((c) => c.length === cap));
      }
      const r1 = rec(scoreIvfSync(ix, queries, { topK: 10, nprobe: 6, refine: 100 }));
      const r0 = rec(scoreIvfSync(ix, queries, { topK: 10, nprobe: 12 }));
      assert(r1 >= 0.9, `${metric}: R@1 with re-scoring ${r1}`);
      console.log(`${metric}: R@1 ${r0} (approximate), ${r1} (100 re-scored)`);
      assert(r0 >= 0.25, `${metric}: R@1 of the approximate scores ${r0}`);
      // The approximate scores are the float tables' sums (an ADC over the decoded codes,
      // computed here) up to the tables' rounding: at most half a step per sub-quantizer.
      const approx = scoreIvfSync(ix, queries.slice(0, 5), { topK: 10, nprobe: 12 });
      const adc = adcOf(`${tmp}/${metric}`, metric === "l2");
      for (let j = 0; j < 5; j++) {
        approx[j].rows.forEach((row, r) => {
          const [f, step] = adc(queries[j], row);
          const got = approx[j].scores[r];
          assert(
            Math.abs(got - f) <= 16 * step / 2 + 1e-9,
            `${metric} q${j} row ${row}: ${got} vs ${f}`,
          );
        });
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("probing screened (256 lists): the same answers as probing every list, 8- and 4-bit, ip and l2", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-screen-" });
  try {
    const shape = { paragraphs: 160, per: 17, d: 16, clusters: 40, nq: 40 };
    const queries = await clusteredDump(`${tmp}/c`, shape);
    for (const metric of ["ip", "l2"]) {
      for (const bits of ["8", "4"]) {
        const out = `${tmp}/${metric}${bits}`;
        const ivf = ["--nlist", "256", "--bpv", "4", "--pq-bits", bits];
        await build(`${tmp}/c`, out, [...ivf, "--metric", metric, "--train-paragraphs", "160"]);
        const ix = openIndexSync(out), data = loadIvf(ix), d = shape.d, l2 = metric === "l2";
        assertEquals(data.nlist, 256);
        assert(SCREEN_MIN_LISTS <= 256);
        // The screen runs for these settings (a list count and an nprobe it takes) ...
        assert(screenedLists(data, d, l2, queries[0], 32) !== undefined, `${metric} ${bits}`);
        assertEquals(screenedLists(data, d, l2, queries[0], 33), undefined);
        for (const nprobe of [1, 8, 32, 33]) {
          for (const refine of [0, 25]) {
            const what = `${metric} ${bits}-bit nprobe ${nprobe} refine ${refine}`;
            // ... and `scanKernel: false` probes every list in TypeScript.
            const opts = { topK: 10, nprobe, refine };
            const k = scoreIvfSync(ix, queries, opts);
            const ts = scoreIvfSync(ix, queries, { ...opts, scanKernel: false });
            assertEquals(k.map((t) => [t.rows, t.scores]), ts.map((t) => [t.rows, t.scores]), what);
            if (nprobe >= 8) assert(k.every((t) => t.rows.length === 10), what);
          }
          const alone = queries.map((q) => ivfCandidates(ix, q, nprobe, 30, false));
          assertEquals(ivfCandidatesBatch(ix, queries, nprobe, 30), alone, `${metric} ${bits}`);
        }
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("4-bit ivf-pq: bad flags and forged or inconsistent files are refused with one line, exit 2", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-pq4bad-" });
  try {
    await clusteredDump(`${tmp}/c`, { ...SHAPE, paragraphs: 60, nq: 2 });
    const refused = async (args: string[], re: RegExp) => {
      const r = await runStage("pipeline/index.ts", [`${tmp}/c`, `${tmp}/bad`, ...args]);
      assertEquals(r.code, 2, r.stderr);
      assertEquals(r.stderr.trim().split("\n").length, 1, r.stderr);
      assertMatch(r.stderr.trim(), re);
      assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name).sort(), ["c"]);
    };
    await refused([...IVF4.slice(0, 4), "--pq-bits", "5"], /--pq-bits must be 4 or 8, got 5$/);
    await refused(["--pq-bits", "4"], /--pq-bits shapes an IVF-PQ index/);
    await refused(
      ["--nlist", "4", "--bpv", "32", "--pq-bits", "4"],
      /2 × --bpv 32 does not divide d = 32/,
    );
    await refused(
      [...IVF4, "--shards", "2", "--shard", "0", "--quantizer", `${tmp}/c`],
      /--quantizer fixes the IVF-PQ parameters \(its bits too\): drop --pq-bits$/,
    );

    await build(`${tmp}/c`, `${tmp}/ix`, IVF4);
    const dir = `${tmp}/ix`, header = `${dir}/index.json`, codes = `${dir}/ivf/codes.u8`;
    const h = JSON.parse(Deno.readTextFileSync(header));
    const save = Deno.readTextFileSync(header), orig = Deno.readFileSync(codes);
    const opened = (o = {}) => {
      try {
        const ix = openIndexSync(dir, o);
        scoreIvfSync(ix, [new Float32Array(SHAPE.d).fill(0.1)], { topK: 1, nprobe: 2 });
        return "ok";
      } catch (e) {
        assert(e instanceof InputError, String(e));
        return `${e.file}: ${e.message}`;
      }
    };
    assertEquals(opened(), "ok");
    const sha = async (b: Uint8Array<ArrayBuffer>) =>
      Array.from(
        new Uint8Array(await crypto.subtle.digest("SHA-256", b)),
        (x) => x.toString(16).padStart(2, "0"),
      ).join("");
    // deno-lint-ignore no-explicit-any
    const forge = (mut: (h: any) => void) => {
      const g = structuredClone(h);
      mut(g);
      g.binding = indexBinding(g.files); // a forger who knows the binding too
      Deno.writeTextFileSync(header, JSON.stringify(g, null, 2) + "\n");
    };
    // The codes cut by one block (32 rows of 8 bytes), the header made to agree: a size
    // that no longer matches the lists.
    const cut = orig.slice(0, orig.length - 256);
    Deno.writeFileSync(codes, cut);
    const cutSha = await sha(cut);
    forge((g) => g.files["ivf/codes.u8"] = { bytes: cut.length, sha256: cutSha });
    assertMatch(
      opened(),
      /ivf\/codes\.u8: \d+ bytes but the lists' blocks of 32 rows take \d+ \(corrupt index\)$/,
    );
    // Read on demand under a memory budget: the same refusal.
    assertEquals(opened({ memoryBudget: 1 << 20 }), opened());
    // A size no padded layout has.
    const odd = orig.slice(0, orig.length - 8);
    Deno.writeFileSync(codes, odd);
    const oddSha = await sha(odd);
    forge((g) => g.files["ivf/codes.u8"] = { bytes: odd.length, sha256: oddSha });
    assertMatch(opened(), /ivf\/codes\.u8 is listed with \d+ bytes; a multiple of 256 from/);
    Deno.writeFileSync(codes, orig);
    // Bits neither 4 nor 8; a 4-bit codebook file listed with the 8-bit size.
    forge((g) => g.parameters.bits = 2);
    assertMatch(opened(), /bad ivf-pq parameter bits \(8 or 4 expected\)$/);
    forge((g) => g.files["ivf/codebooks.f32"].bytes *= 16);
    assertMatch(opened(), /ivf\/codebooks\.f32 is listed with \d+ bytes; \d+ expected$/);
    // The 4-bit header on 8-bit files would be refused the same way; the true header is fine.
    Deno.writeTextFileSync(header, save);
    assertEquals(opened(), "ok");
    assertEquals(opened({ memoryBudget: 1 << 20 }), "ok");
    // The command line: one line, exit 2.
    forge((g) => g.parameters.bits = 2);
    const r = await runStage("pipeline/inspect.ts", [dir]);
    assertEquals(r.code, 2, r.stderr);
    assertEquals(r.stderr.trim().split("\n").length, 1, r.stderr);
    assertMatch(r.stderr, /bad ivf-pq parameter bits/);
    // A folder cut short: inspect, which reads the header, refuses it by the files' sizes.
    Deno.writeTextFileSync(header, save);
    Deno.writeFileSync(codes, orig.slice(0, orig.length / 2));
    const short = await runStage("pipeline/inspect.ts", [dir]);
    assertEquals([short.code, short.stdout], [2, ""]);
    assertEquals(
      short.stderr.trim(),
      `inspect: ${codes}: ${orig.length / 2} bytes but index.json says ${orig.length} ` +
        "(truncated or corrupt index)",
    );
    Deno.writeFileSync(codes, orig);
    assertEquals((await runStage("pipeline/inspect.ts", [dir])).code, 0);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("run config: open.ivf.pqBits 4 builds the 4-bit index its search answers from; over 2 shards the same bytes", async () => {
  const work = Deno.makeTempDirSync({ prefix: "phraseval-pq4run-" });
  try {
    const ivf = "ivf: { nlist: 8, bpv: 16, nprobe: 3, pqBits: 4 }";
    const run = await runOpenIvfConfig(work, ivf, ["i4", "s4"]);
    const ix = `${run}/indexes/piqa-lstm/i4`;
    const h = JSON.parse(Deno.readTextFileSync(`${ix}/index.json`));
    assertEquals([h.kind, h.parameters.bits, h.parameters.bpv], ["ivf-pq", 4, 16]);
    // The sharded index: a 4-bit quantizer task, 4-bit shards encoded with it.
    const sh = `${run}/indexes/piqa-lstm/s4`;
    const q = JSON.parse(Deno.readTextFileSync(`${sh}/quantizer/quantizer.json`));
    assertEquals([q.parameters.bits, q.parameters.bpv], [4, 16]);
    for (let i = 0; i < 2; i++) {
      const hs = JSON.parse(Deno.readTextFileSync(`${sh}/shard-${i}-of-2/index.json`));
      assertEquals(hs.parameters, h.parameters);
      for (const f of ["ivf/centroids.f32", "ivf/codebooks.f32"]) {
        assertEquals(hs.files[f].sha256, h.files[f].sha256, f);
      }
    }
    const res = JSON.parse(Deno.readTextFileSync(`${run}/results/piqa-lstm/i4.json`));
    assertEquals(res.open.questions, 232);
    // The shards' search tasks and their merge: the unsharded search's bytes.
    for (const f of [".json", ".topk.ndjson"]) {
      const a = Deno.readTextFileSync(`${run}/open/piqa-lstm/i4${f}`);
      assert(a.length > 1000, f);
      assertEquals(Deno.readTextFileSync(`${run}/open/piqa-lstm/s4${f}`), a, f);
    }
  } finally {
    Deno.removeSync(work, { recursive: true });
  }
});

Deno.test("4-bit ivf-pq: search (1 and 2 threads) writes the same files, its record says pq_bits 4; inspect shows bits 4", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-pq4cli-" });
  try {
    await numpyDumps(tmp, 12, ["--dtype", "f32"]);
    const ix = `${tmp}/ix4`;
    await smallIvfIndex(tmp, ix, ["--pq-bits", "4"]);
    const search = (name: string, extra: string[], candidates = "20") =>
      runStage("pipeline/search.ts", [
        `${tmp}/data.json`,
        ix,
        `${tmp}/question_emb`,
        `${tmp}/${name}.json`,
        "--top-k",
        "5",
        "--nprobe",
        "3",
        "--candidates",
        candidates,
        "--topk-out",
        `${tmp}/${name}.ndjson`,
        ...extra,
      ]);
    const r1 = await search("one", []);
    assertEquals(r1.code, 0, r1.stderr);
    const r2 = await search("two", ["--threads", "2"]);
    assertEquals(r2.code, 0, r2.stderr);
    for (const ext of ["json", "ndjson", "rows.ndjson"]) {
      const one = Deno.readTextFileSync(`${tmp}/one.${ext}`);
      assert(one.length > 100, ext);
      assertEquals(Deno.readTextFileSync(`${tmp}/two.${ext}`), one, ext);
    }
    // More candidates than the index has phrases re-score them all: 10^9 answers as the phrase
    // count does (it sized its buffers past them and ran for minutes).
    const phrases = JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)).phrases;
    const all = await search("all", [], String(phrases));
    const huge = await search("huge", [], "1000000000");
    assertEquals([all.code, huge.code], [0, 0], huge.stderr);
    for (const ext of ["json", "ndjson", "rows.ndjson"]) {
      assertEquals(
        Deno.readTextFileSync(`${tmp}/huge.${ext}`),
        Deno.readTextFileSync(`${tmp}/all.${ext}`),
        ext,
      );
    }
    const rec = JSON.parse(Deno.readTextFileSync(`${tmp}/one.search.json`));
    assertEquals([rec.mode, rec.index.kind, rec.index.bpv, rec.index.pq_bits], [
      "approximate",
      "ivf-pq",
      8,
      4,
    ]);
    const insp = await runStage("pipeline/inspect.ts", [ix]);
    assertEquals(insp.code, 0, insp.stderr);
    assertEquals(JSON.parse(insp.stdout).parameters.bits, 4);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
