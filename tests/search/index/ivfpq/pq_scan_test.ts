/**
 * The WebAssembly ADC scan (`search/index/ivfpq/pq_scan.ts`): its sums equal the
 * TypeScript scan's bit for bit (list sizes around the 8-row groups, any
 * bpv and pass length, −0, subnormal and large table values), one question
 * at a time or four in f32x4 lanes; a batch of questions scanned list by
 * list gets each question's own candidates; an index
 * answers the same with the kernel, without it and on two worker threads
 * (both metrics); `search --threads 2` writes the same files as one thread,
 * and `--threads 0` is refused.
 */
import {
  codesMemory,
  pqScanModuleBytes,
  PqScanner,
} from "../../../../search/index/ivfpq/pq_scan.ts";
import {
  IVF_BATCH,
  ivfCandidates,
  ivfCandidatesBatch,
  scanLists,
} from "../../../../search/index/ivfpq/ivfpq.ts";
import {
  closeIvfWorkers,
  scoreIvf,
  scoreIvfSync,
} from "../../../../search/index/ivfpq/ivf_search.ts";
import { splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import { openIndexSync } from "../../../../search/index/read.ts";
import { assert, assertEquals, assertMatch } from "../../../_assert.ts";
import { runStage } from "../../../_util.ts";
import { numpyDumps, smallIvfIndex } from "../../_stages.ts";

Deno.test("pq scan kernel: the same float32 sums as the TypeScript scan, bit for bit", () => {
  assert(WebAssembly.validate(pqScanModuleBytes()), "the module does not validate");
  const u = splitmix32(5);
  const size = 1 << 20;
  const mem = codesMemory(size);
  assert(mem !== undefined, "no scan kernel on this runtime");
  const codes = new Uint8Array(mem.buffer, 0, size);
  for (let i = 0; i < size; i++) codes[i] = u() & 255;
  const scanner = PqScanner.create(mem)!;
  let cases = 0;
  for (const bpv of [1, 2, 3, 8, 16, 17, 33, 128]) {
    const t = new Float32Array(bpv * 256);
    for (let i = 0; i < t.length; i++) {
      const r = u() % 64;
      // Mostly ordinary values, some −0, subnormals and large ones (rounding differs by order).
      t[i] = r === 0 ? -0 : r === 1 ? 1e-41 : r === 2 ? 3e7 : (u() / 2 ** 32 - 0.5) * 0.7;
    }
    for (const n of [0, 1, 3, 7, 8, 9, 15, 16, 17, 100, 1001]) {
      for (const co of [0, 5, 4096]) {
        const want = new Float32Array(n);
        scanLists(codes, co, n, bpv, t, want);
        for (const pass of [1, 5, 16, 128]) {
          scanner.tables(bpv).set(t);
          const got = scanner.scan(co, n, bpv, pass);
          assertEquals(got.length, n);
          for (let i = 0; i < n; i++) {
            if (!Object.is(got[i], want[i])) {
              throw new Error(
                `bpv ${bpv} n ${n} co ${co} pass ${pass} row ${i}: ${got[i]} ≠ ${want[i]}`,
              );
            }
          }
          cases++;
        }
      }
    }
  }
  assertEquals(cases, 8 * 11 * 3 * 4);
});

Deno.test("pq scan kernel: four questions' lanes give each question's sums, bit for bit", () => {
  const u = splitmix32(11);
  const size = 1 << 20;
  const mem = codesMemory(size);
  assert(mem !== undefined, "no scan kernel on this runtime");
  const codes = new Uint8Array(mem.buffer, 0, size);
  for (let i = 0; i < size; i++) codes[i] = u() & 255;
  const scanner = PqScanner.create(mem)!;
  assert(scanner.lanes, "no lane-parallel scan on this runtime");
  let cases = 0;
  for (const bpv of [1, 3, 8, 17, 128]) {
    const count = 6, per = bpv * 256;
    const t = new Float32Array(count * per);
    for (let i = 0; i < t.length; i++) {
      const r = u() % 64;
      t[i] = r === 0 ? -0 : r === 1 ? 1e-41 : r === 2 ? 3e7 : (u() / 2 ** 32 - 0.5) * 0.7;
    }
    for (const n of [0, 1, 7, 8, 9, 17, 1001]) {
      for (const co of [0, 5]) {
        const want = Array.from({ length: count }, (_, j) => {
          const w = new Float32Array(n);
          scanLists(codes, co, n, bpv, t.subarray(j * per, (j + 1) * per), w);
          return w;
        });
        for (const js of [[2], [0, 5], [4, 1, 3], [0, 1, 2, 3], [5, 5, 2, 0]]) {
          for (const pass of [1, 5, 8, 128]) {
            scanner.batch(count, bpv, Math.max(n, 1)).set(t);
            const got = scanner.scanLanes(js, co, n, pass);
            assertEquals(got.length, 4 * n);
            js.forEach((j, g) => {
              for (let i = 0; i < n; i++) {
                if (!Object.is(got[4 * i + g], want[j][i])) {
                  throw new Error(
                    `bpv ${bpv} n ${n} co ${co} lanes ${js} pass ${pass} lane ${g} row ${i}: ${
                      got[4 * i + g]
                    } ≠ ${want[j][i]}`,
                  );
                }
              }
            });
            cases++;
          }
          const one = scanner.scanOne(js[0], co, n);
          for (let i = 0; i < n; i++) {
            if (!Object.is(one[i], want[js[0]][i])) throw new Error(`scanOne bpv ${bpv} n ${n}`);
          }
        }
      }
    }
  }
  assertEquals(cases, 5 * 7 * 2 * 5 * 4);
});

Deno.test("pq scan kernel: an index answers the same with and without it, on 1 or 2 threads; search --threads", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-pqscan-" });
  try {
    await numpyDumps(tmp, 12, ["--dtype", "f32"]);
    for (const metric of ["ip", "l2"]) {
      const ix = `${tmp}/${metric}`;
      await smallIvfIndex(tmp, ix, ["--metric", metric]);
      const index = openIndexSync(ix);
      assert(index.header.phrases > 200, `${index.header.phrases} phrases`);
      const u = splitmix32(9);
      const qs = Array.from(
        { length: 9 },
        () => Float32Array.from({ length: 32 }, () => u() / 2 ** 32 - 0.5),
      );
      for (const opts of [{ nprobe: 2 }, { nprobe: 5, refine: 30 }]) {
        const ts = scoreIvfSync(index, qs, { topK: 10, ...opts, scanKernel: false });
        const wasm = scoreIvfSync(index, qs, { topK: 10, ...opts });
        const two = await scoreIvf(index, qs, { topK: 10, ...opts, threads: 2 });
        const want = ts.map((t) => [t.rows, t.scores]);
        assert(ts.every((t) => t.rows.length === 10));
        assertEquals(wasm.map((t) => [t.rows, t.scores]), want, `${metric} kernel`);
        assertEquals(two.map((t) => [t.rows, t.scores]), want, `${metric} 2 threads`);
      }
      closeIvfWorkers(index);

      // A batch over more than IVF_BATCH questions, scanned list by list in lanes: each
      // question's candidates (rows and approximate scores) as when it is scanned alone.
      const many = Array.from(
        { length: IVF_BATCH + 45 },
        () => Float32Array.from({ length: 32 }, () => u() / 2 ** 32 - 0.5),
      );
      for (const [nprobe, cap] of [[1, 10], [2, 10], [5, 40]]) {
        const alone = many.map((q) => ivfCandidates(index, q, nprobe, cap));
        const batch = ivfCandidatesBatch(index, many, nprobe, cap);
        assertEquals(batch, alone, `${metric} nprobe ${nprobe}`);
        assert(alone.every((c) => c.length === cap));
      }

      // The search stage: --threads 2 writes the same files as one thread.
      const search = (name: string, extra: string[]) =>
        runStage("pipeline/search.ts", [
          `${tmp}/data.json`,
          ix,
          `${tmp}/question_emb`,
          `${tmp}/${metric}_${name}.json`,
          "--top-k",
          "5",
          "--nprobe",
          "3",
          "--refine",
          "20",
          "--topk-out",
          `${tmp}/${metric}_${name}.ndjson`,
          ...extra,
        ]);
      assertEquals((await search("one", [])).code, 0);
      const r2 = await search("two", ["--threads", "2"]);
      assertEquals(r2.code, 0, r2.stderr);
      for (const ext of ["json", "ndjson", "rows.ndjson"]) {
        const one = Deno.readTextFileSync(`${tmp}/${metric}_one.${ext}`);
        assert(one.length > 100, ext);
        assertEquals(Deno.readTextFileSync(`${tmp}/${metric}_two.${ext}`), one, ext);
      }
      const bad = await search("zero", ["--threads", "0"]);
      assertEquals(bad.code, 2);
      const lines = bad.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, bad.stderr);
      assertMatch(lines[0], /^search: .*--threads must be at least 1, got 0/);
      for (const ext of ["json", "ndjson"]) {
        let there = true;
        try {
          Deno.statSync(`${tmp}/${metric}_zero.${ext}`);
        } catch {
          there = false;
        }
        assert(!there, `${ext} written on a refused --threads`);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
