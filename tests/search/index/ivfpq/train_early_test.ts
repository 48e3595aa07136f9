/**
 * The quantizer trained while the exact files are written
 * (`search/index/train_early.ts`): a build that does it uses that
 * quantizer and writes the bytes of one that trains after (8- and 4-bit);
 * the early quantizer is the built index's centroids and codebooks, and it
 * is taken only for the sample it was trained on; a walk that fails once
 * it has started fails the build with the walk's one line, nothing left
 * behind; a 4-bit build's coarse quantizer is its training rows' k-means
 * in `PQ4_COARSE_ITERATIONS` iterations (an 8-bit one's in
 * `KMEANS_ITERATIONS`), as its header says.
 */
import * as Effect from "effect/Effect";
import { writeContextDump } from "../../../../io/dump/writer.ts";
import { openDumpSync } from "../../../../io/dump/reader_sync.ts";
import { InputError } from "../../../../io/errors.ts";
import { buildIndex } from "../../../../search/index/build.ts";
import { EncodeWorkers } from "../../../../search/index/ivfpq/ivf_encode.ts";
import { kmeans, splitmix32 } from "../../../../search/index/ivfpq/kmeans.ts";
import {
  IVF_SEED,
  KMEANS_ITERATIONS,
  PQ4_COARSE_ITERATIONS,
  trainSample,
} from "../../../../search/index/ivfpq/train.ts";
import { widenHalf } from "../../../../search/dense_f64.ts";
import { startEarlyTraining } from "../../../../search/index/train_early.ts";
import { assert, assertEquals } from "../../../_assert.ts";
import { folderSum } from "../../../_util.ts";

const D = 16, PARAGRAPHS = 60;
/** Paragraph p's rows: 30 to 42. */
const rowsOf = (p: number) => 30 + (p % 13);
const ids = Array.from({ length: PARAGRAPHS }, (_, p) => `P_${String(p).padStart(3, "0")}`);
/** The build's first row of each paragraph (sorted names: the ids' order), and the total. */
const starts = ids.reduce((s, _, p) => [...s, s[p] + rowsOf(p)], [0]);

/** A dense float32 dump of clustered rows (seeded). */
async function dump(dir: string): Promise<void> {
  Deno.mkdirSync(dir, { recursive: true });
  const u = splitmix32(3), r = () => u() / 2 ** 32 - 0.5;
  const centres = Float32Array.from({ length: 12 * D }, () => 4 * r());
  for (let p = 0; p < PARAGRAPHS; p++) {
    const n = rowsOf(p), data = new Float32Array(n * D);
    for (let i = 0; i < n; i++) {
      const c = u() % 12;
      for (let t = 0; t < D; t++) data[i * D + t] = centres[c * D + t] + r();
    }
    await Effect.runPromise(writeContextDump(dir, {
      id: ids[p],
      phrases: Array.from({ length: n }, (_, i) => ({ text: `w${i}`, start: 0, end: 2 })),
      matrix: { kind: "dense", rows: n, cols: D, dtype: "f32", data },
    }, { sparse: false, compressed: false }));
  }
}

/** Small encode blocks: the sample's rows (2,000 or so) are more than one, so the early training runs. */
const TUNING = { encodeBlock: 256, encodeThreads: 2 };

Deno.test("early training: a build that trains while it writes the exact files uses that quantizer and writes the bytes of one that trains after (8- and 4-bit)", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-early-" });
  try {
    await dump(`${tmp}/c`);
    for (const pqBits of [8, 4] as const) {
      const sums = [];
      for (const trainWhileWriting of [true, false]) {
        const out = `${tmp}/ix${pqBits}${trainWhileWriting}`;
        const used: boolean[] = [];
        await Effect.runPromise(buildIndex({
          contextEmb: `${tmp}/c`,
          out,
          nlist: 8,
          bpv: 4,
          pqBits,
          ivfTuning: {
            ...TUNING,
            trainWhileWriting,
            trainedWhileWriting: (u) => used.push(u),
          },
        }));
        // The quantizer trained while writing is the one used; none without it.
        assertEquals(used, trainWhileWriting ? [true] : [], `${pqBits}-bit`);
        sums.push(await folderSum(out));
      }
      assertEquals(sums[0], sums[1], `${pqBits}-bit`);
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("early training: its quantizer is the built index's centroids and codebooks, taken only for the sample it trained on", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-early-" });
  const pool = new EncodeWorkers(2);
  try {
    await dump(`${tmp}/c`);
    const opts = { contextEmb: `${tmp}/c`, out: `${tmp}/ix`, nlist: 8, bpv: 4 };
    await Effect.runPromise(buildIndex({ ...opts, ivfTuning: { trainWhileWriting: false } }));
    const src = openDumpSync(`${tmp}/c`);
    try {
      const start = () => Effect.runPromise(startEarlyTraining(opts, src, () => pool, 256));
      const early = await start();
      assert(early !== undefined, "the early training starts");
      try {
        assertEquals(early.sample.nt, starts[PARAGRAPHS]);
        assertEquals([...early.sample.positions], ids.map((_, p) => p));
        const got = await early.take(ids, starts, D);
        assert(got !== undefined, "taken for the build's own sample");
        const bytes = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
        assertEquals(
          bytes(got.quantizer.centroids),
          Deno.readFileSync(`${tmp}/ix/ivf/centroids.f32`),
        );
        assertEquals(
          bytes(got.quantizer.codebooks),
          Deno.readFileSync(`${tmp}/ix/ivf/codebooks.f32`),
        );
        const header = JSON.parse(Deno.readTextFileSync(`${tmp}/ix/index.json`));
        assertEquals(got.parameters, header.parameters);
      } finally {
        early.close();
      }
      // Another sample (a paragraph renamed, in the same place; one row more; another d): not taken.
      const renamed = ids.map((id, p) => p === 7 ? "Q_007" : id);
      const longer = starts.map((s, p) => p > 9 ? s + 1 : s);
      for (
        const [what, i, s, d] of [
          ["renamed", renamed, starts, D],
          ["longer", ids, longer, D],
          ["d", ids, starts, D + 1],
        ] as const
      ) {
        const other = await start();
        assert(other !== undefined);
        try {
          assertEquals(await other.take(i, s, d), undefined, what);
        } finally {
          other.close();
        }
      }
      // A sample of fewer rows than minRows: no early training.
      assertEquals(
        await Effect.runPromise(startEarlyTraining(opts, src, () => pool, 1e6)),
        undefined,
      );
    } finally {
      src.close();
    }
  } finally {
    pool.close();
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("early training: a walk that fails once the early training has started fails the build with the walk's one line; no index, no temporary folder", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-early-" });
  try {
    await dump(`${tmp}/c`);
    // A paragraph outside a 20-paragraph sample made unreadable: the sample reads, the walk fails.
    const sample = new Set(await trainSample(ids, 20));
    const bad = ids.findLastIndex((_, p) => !sample.has(p));
    Deno.writeFileSync(`${tmp}/c/${ids[bad]}.npz`, new TextEncoder().encode("not a zip"));
    let caught: unknown;
    try {
      await Effect.runPromise(buildIndex({
        contextEmb: `${tmp}/c`,
        out: `${tmp}/ix`,
        nlist: 8,
        bpv: 4,
        trainParagraphs: 20,
        ivfTuning: TUNING,
      }));
    } catch (e) {
      caught = e;
    }
    const e = caught instanceof Error && "cause" in caught && caught.cause !== undefined
      ? caught.cause
      : caught;
    assert(e instanceof InputError, `an InputError, not ${caught}`);
    assert(e.file.endsWith(`${ids[bad]}.npz`), e.file);
    assertEquals([...Deno.readDirSync(tmp)].map((f) => f.name).sort(), ["c"]);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("coarse quantizer: a 4-bit build's is the k-means of its training rows in PQ4_COARSE_ITERATIONS iterations, an 8-bit one's in KMEANS_ITERATIONS, as their headers say", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-coarse-" });
  try {
    await dump(`${tmp}/c`);
    // (32 lists of 12 clusters' rows: k-means still moving after 10 iterations.)
    assertEquals([PQ4_COARSE_ITERATIONS, KMEANS_ITERATIONS], [10, 25]);
    for (const [pqBits, iterations, other] of [[4, 10, 25], [8, 25, 10]] as const) {
      for (const trainWhileWriting of [true, false]) {
        const out = `${tmp}/ix${pqBits}${trainWhileWriting}`;
        await Effect.runPromise(buildIndex({
          contextEmb: `${tmp}/c`,
          out,
          nlist: 32,
          bpv: 4,
          pqBits,
          ivfTuning: { ...TUNING, trainWhileWriting },
        }));
        const header = JSON.parse(Deno.readTextFileSync(`${out}/index.json`));
        const p = header.parameters;
        assertEquals(p.kmeans_iterations, 25);
        assertEquals(p.coarse_kmeans_iterations, pqBits === 4 ? 10 : undefined);
        // The training rows, as the build reads them from its vectors file.
        const bytes = Deno.readFileSync(`${out}/vectors.${header.dtype}`).buffer;
        const all = header.dtype === "f16"
          ? widenHalf(new Uint16Array(bytes))
          : new Float32Array(bytes);
        const train = await trainSample(ids, p.train_paragraphs);
        const rows = train.flatMap((q) => [...all.subarray(starts[q] * D, starts[q + 1] * D)]);
        const nt = rows.length / D;
        assertEquals(nt, p.train_phrases);
        const got = new Float32Array(Deno.readFileSync(`${out}/ivf/centroids.f32`).buffer);
        const km = (its: number) =>
          kmeans(Float32Array.from(rows), nt, D, 32, { iterations: its, seed: IVF_SEED });
        assertEquals(got, km(iterations), `${pqBits}-bit, ${iterations} iterations`);
        assert(km(other).some((v, i) => v !== got[i]), `${other} iterations give other centroids`);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
