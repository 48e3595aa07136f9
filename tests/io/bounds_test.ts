/**
 * Bounded resources: `.npz` entries that would inflate far past what they
 * should (zip bombs within the size and ratio limits) are refused by
 * `inspect` (past its `--max-bytes`), `validate` and `merge` (past what
 * the paragraph's phrases need) for the price of their header, and the
 * peak memory of the stage stays small; an entry that inflates past its
 * declared size is refused by all readers alike.
 */
import * as zlib from "node:zlib";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, runArgv } from "../_util.ts";
import { encodeNpz } from "../../io/npz.ts";
import { ndarray, npyPreamble } from "../../io/npy.ts";

const crc32 = (zlib as unknown as { crc32(d: Uint8Array, v?: number): number }).crc32;
const GiB = 1024 ** 3;

/** A `.npy` preamble of 128 bytes declaring `shape` of little-endian float32. */
function header(shape: readonly number[]): Uint8Array {
  const h = npyPreamble(
    `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(", ")}), }`,
  );
  assertEquals(h.length, 128);
  return h;
}

/** Raw DEFLATE of `head` then `zeros` zero bytes, streamed (never held whole). */
async function deflateZeros(head: Uint8Array, zeros: number): Promise<Uint8Array> {
  const chunk = new Uint8Array(1 << 20);
  let left = zeros, first = true;
  const src = new ReadableStream<Uint8Array>({
    pull(c) {
      if (first) {
        first = false;
        c.enqueue(head);
      } else if (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        c.enqueue(chunk.subarray(0, n));
      } else c.close();
    },
  });
  const parts: Uint8Array[] = [];
  for await (
    const p of src.pipeThrough(
      new CompressionStream("deflate-raw") as unknown as TransformStream<Uint8Array, Uint8Array>,
    )
  ) parts.push(p);
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), o += p.length);
  return out;
}

/** CRC-32 of `head` then `zeros` zero bytes. */
function crcZeros(head: Uint8Array, zeros: number): number {
  const chunk = new Uint8Array(1 << 20);
  let c = crc32(head);
  for (let left = zeros; left > 0; left -= chunk.length) {
    c = crc32(chunk.subarray(0, Math.min(left, chunk.length)), c);
  }
  return c >>> 0;
}

/** A one-entry zip (`arr_0.npy`, deflated) with the sizes and CRC given, not checked. */
function zipOne(raw: Uint8Array, usize: number, crc: number): Uint8Array {
  const name = new TextEncoder().encode("arr_0.npy");
  const out = new Uint8Array(30 + name.length + raw.length + 46 + name.length + 22);
  const v = new DataView(out.buffer);
  v.setUint32(0, 0x04034b50, true);
  v.setUint16(4, 20, true);
  v.setUint16(8, 8, true);
  v.setUint32(14, crc, true);
  v.setUint32(18, raw.length, true);
  v.setUint32(22, usize, true);
  v.setUint16(26, name.length, true);
  out.set(name, 30);
  out.set(raw, 30 + name.length);
  const cd = 30 + name.length + raw.length;
  v.setUint32(cd, 0x02014b50, true);
  v.setUint16(cd + 4, 20, true);
  v.setUint16(cd + 6, 20, true);
  v.setUint16(cd + 10, 8, true);
  v.setUint32(cd + 16, crc, true);
  v.setUint32(cd + 20, raw.length, true);
  v.setUint32(cd + 24, usize, true);
  v.setUint16(cd + 28, name.length, true);
  out.set(name, cd + 46);
  const end = cd + 46 + name.length;
  v.setUint32(end, 0x06054b50, true);
  v.setUint16(end + 8, 1, true);
  v.setUint16(end + 10, 1, true);
  v.setUint32(end + 12, 46 + name.length, true);
  v.setUint32(end + 16, cd, true);
  return out;
}

/** Runs a pipeline stage under a wrapper that reports the child's peak RSS (bytes). */
async function stageWithPeak(
  script: string,
  args: string[],
): Promise<{ code: number; stderr: string; peak: number }> {
  const wrapper = "import resource, subprocess, sys\n" +
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n" +
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=open(sys.argv[0] + '.rss', 'w'))\n" +
    "sys.exit(r.returncode)\n";
  const dir = await Deno.makeTempDir({ prefix: "phraseval-peak-" });
  const py = `${dir}/peak.py`;
  await Deno.writeTextFile(py, wrapper);
  const argv = ["python3", py, Deno.execPath(), "run", "-A", `${ROOT}/${script}`, ...args];
  const out = await runArgv(argv, { cwd: ROOT });
  const peak = Number((await Deno.readTextFile(`${py}.rss`)).trim()) * 1024;
  await Deno.remove(dir, { recursive: true });
  return { code: out.code, stderr: out.stderr, peak };
}

const PEAK_LIMIT = 500 * 1024 ** 2;

interface Bombs {
  dir: string;
  /** Header (2, 4) but the entry declares and holds 1 GiB more. */
  size: string;
  /** Header (268435456, 1): a real 1 GiB matrix, but the paragraph has 2 phrases. */
  shape: string;
  /** Declares header + 32 bytes (CRC of those), but its stream inflates to 1 GiB. */
  overrun: string;
}

async function bombs(): Promise<Bombs> {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-bomb-" });
  const small = header([2, 4]);
  const rawSmall = await deflateZeros(small, GiB);
  const size = `${dir}/size.npz`;
  await Deno.writeFile(size, zipOne(rawSmall, 128 + GiB, crcZeros(small, GiB)));
  const overrun = `${dir}/overrun.npz`;
  await Deno.writeFile(overrun, zipOne(rawSmall, 128 + 32, crcZeros(small, 32)));
  const big = header([GiB / 4, 1]);
  const shape = `${dir}/shape.npz`;
  await Deno.writeFile(shape, zipOne(await deflateZeros(big, GiB), 128 + GiB, crcZeros(big, GiB)));
  // A dataset of one paragraph (2 phrases) and one question, with a valid question dump.
  const data = {
    version: "1.1",
    data: [{
      title: "T",
      paragraphs: [{
        context: "Paris France",
        qas: [{ id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] }],
      }],
    }],
  };
  await Deno.writeTextFile(`${dir}/data.json`, JSON.stringify(data));
  await Deno.mkdir(`${dir}/q`);
  await Deno.writeFile(
    `${dir}/q/q1.npz`,
    encodeNpz({ arr_0: ndarray(new Float32Array(4), [1, 4]) }),
  );
  return { dir, size, shape, overrun };
}

/** A context dump folder holding `bomb` as the paragraph's matrix. */
async function contextWith(b: Bombs, bomb: string, name: string): Promise<string> {
  const c = `${b.dir}/c_${name}`;
  await Deno.mkdir(c);
  await Deno.copyFile(bomb, `${c}/T_0.npz`);
  await Deno.writeTextFile(`${c}/T_0.json`, '["Paris", "France"]');
  return c;
}

const oneLine = (s: string) => s.trim().split("\n").length === 1;

Deno.test("bounds: zip bombs within the limits are refused for the price of their header (inspect, validate, merge)", async () => {
  const b = await bombs();
  try {
    for (const kind of ["size", "shape"] as const) {
      const bomb = b[kind];
      // The bomb's file is small; what it declares is not.
      assert((await Deno.stat(bomb)).size < 8 * 1024 ** 2);

      const ins = await stageWithPeak("pipeline/inspect.ts", [bomb]);
      if (kind === "size") {
        assertEquals(ins.code, 2, ins.stderr);
        assert(oneLine(ins.stderr), ins.stderr);
        assertMatch(
          ins.stderr,
          /^inspect: .*size\.npz: arr_0\.npy: data size does not match the shape: shape \(2, 4\) of <f4 needs 32 bytes, the entry declares 1073741824 \(refused before inflating\)\n$/,
        );
        assert(ins.peak < PEAK_LIMIT, `inspect peak RSS ${ins.peak}`);
      } else {
        // A header that fits its entry, but 1 GiB of zeros: past inspect's bound
        // (--max-bytes, 256 MiB by default), refused before it is inflated.
        assertEquals([ins.code, ins.stderr], [
          2,
          `inspect: ${bomb}: arr_0.npy: the arrays need ${128 + GiB} bytes so far, more than ` +
          `the 268435456 inspect inflates (refused before inflating; --max-bytes)\n`,
        ]);
        assert(ins.peak < PEAK_LIMIT, `inspect peak RSS ${ins.peak}`);
      }

      const c = await contextWith(b, bomb, kind);
      const val = await stageWithPeak("pipeline/validate.ts", [
        `${b.dir}/data.json`,
        c,
        `${b.dir}/q`,
      ]);
      // validate reports a violation (its exit 1), naming the file, without inflating it.
      assertEquals(val.code, 1, val.stderr);
      assert(val.peak < PEAK_LIMIT, `validate (${kind}) peak RSS ${val.peak}`);

      const pred = `${b.dir}/pred_${kind}.json`;
      const mer = await stageWithPeak("pipeline/merge.ts", [
        `${b.dir}/data.json`,
        c,
        `${b.dir}/q`,
        pred,
      ]);
      assertEquals(mer.code, 2, mer.stderr);
      assert(oneLine(mer.stderr), mer.stderr);
      assertMatch(
        mer.stderr,
        kind === "size"
          ? /^merge: .*c_size\/T_0\.npz: arr_0\.npy: unreadable npz: data size does not match the shape: shape \(2, 4\) of <f4 needs 32 bytes, the entry declares 1073741824 \(refused before inflating\)\n$/
          : /^merge: .*c_shape\/T_0\.json: 2 phrases but .*c_shape\/T_0\.npz has 268435456 rows\n$/,
      );
      assert(mer.peak < PEAK_LIMIT, `merge (${kind}) peak RSS ${mer.peak}`);
      assert(!(await exists(pred)), "merge left a predictions file");
    }
  } finally {
    await Deno.remove(b.dir, { recursive: true });
  }
});

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.stat(p);
    return true;
  } catch {
    return false;
  }
}

Deno.test("bounds: an entry that inflates past its declared size is refused by inspect as by merge", async () => {
  const b = await bombs();
  try {
    const ins = await stageWithPeak("pipeline/inspect.ts", [b.overrun]);
    assertEquals(ins.code, 2, ins.stderr);
    assert(oneLine(ins.stderr), ins.stderr);
    assertMatch(
      ins.stderr,
      /^inspect: .*overrun\.npz: arr_0\.npy: inflates past the declared 160 bytes \(stopped there\)\n$/,
    );
    assert(ins.peak < PEAK_LIMIT, `inspect peak RSS ${ins.peak}`);
    const c = await contextWith(b, b.overrun, "overrun");
    const mer = await stageWithPeak("pipeline/merge.ts", [
      `${b.dir}/data.json`,
      c,
      `${b.dir}/q`,
      `${b.dir}/p.json`,
    ]);
    assertEquals(mer.code, 2, mer.stderr);
    assertMatch(
      mer.stderr,
      /^merge: .*c_overrun\/T_0\.npz: arr_0\.npy: unreadable npz: corrupt deflate data or more than the declared 160 bytes/,
    );
  } finally {
    await Deno.remove(b.dir, { recursive: true });
  }
});

/** A valid one-question dataset with a 100,000-deep extra top-level field. */
async function deepDataset(dir: string): Promise<{ path: string; offset: number }> {
  const head = JSON.stringify({
    version: "1.1",
    data: [{
      title: "T",
      paragraphs: [{
        context: "Paris is nice",
        qas: [{ id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] }],
      }],
    }],
  }).slice(0, -1) + ', "x": ';
  const depth = 100_000;
  const path = `${dir}/in.json`;
  await Deno.writeTextFile(path, head + "[".repeat(depth) + "]".repeat(depth) + "}");
  // The root object is level 1, so the bracket opening level 1001 is the 1000th "[".
  return { path, offset: new TextEncoder().encode(head).length + 999 };
}

Deno.test("bounds: a 100,000-deep field is refused naming the input and the byte (split, records, embed_context)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-deep-" });
  try {
    const { path, offset } = await deepDataset(dir);
    const line = (stage: string) => `${stage}: ${path}: byte ${offset}: nesting deeper than 1000\n`;
    const split = await stageWithPeak("pipeline/split.ts", [
      path,
      `${dir}/c.json`,
      `${dir}/q.json`,
    ]);
    assertEquals([split.code, split.stderr], [2, line("split")]);
    const records = await stageWithPeak("pipeline/records.ts", [path, "--kind", "question"]);
    assertEquals([records.code, records.stderr], [2, line("records")]);
    const embed = await stageWithPeak("pipeline/embed_context.ts", [
      path,
      `${dir}/emb`,
      "--sparse",
    ]);
    assertEquals([embed.code, embed.stderr], [2, line("embed_context")]);
    // No output file of split, no dump file.
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assertEquals(left.filter((n) => n !== "emb"), ["in.json"]);
    if (await exists(`${dir}/emb`)) assertEquals([...Deno.readDirSync(`${dir}/emb`)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bounds: a valid predictions file over 512 MiB is read (streamed), not called invalid UTF-8", async () => {
  const { readPredictions } = await import("../../io/predictions.ts");
  const { Effect } = await import("effect");
  const dir = await Deno.makeTempDir({ prefix: "phraseval-bigpred-" });
  try {
    const path = `${dir}/pred.json`;
    const f = await Deno.open(path, { write: true, create: true });
    const enc = new TextEncoder();
    const answer = "a".repeat(512 * 1024); // ASCII: the file is as many characters as bytes
    const n = 1100;
    await f.write(enc.encode("{"));
    for (let i = 0; i < n; i++) {
      await f.write(enc.encode(`${i ? ", " : ""}"q${i}": "${answer}${i}"`));
    }
    await f.write(enc.encode("}"));
    f.close();
    const size = (await Deno.stat(path)).size;
    assert(size > 512 * 1024 ** 2, `${size} bytes`);
    const preds = await Effect.runPromise(readPredictions(path));
    assertEquals(preds.size, n);
    assertEquals(preds.get("q1099"), `${answer}1099`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bounds: split refuses a string longer than a paragraph can be where it begins (gzip, default and --max-paragraph-chars)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-longstr-" });
  try {
    const head = '{"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "';
    const tail = '", "qas": [{"id": "q1", "question": "Where?", ' +
      '"answers": [{"text": "a", "answer_start": 0}]}]}]}]}';
    /** A gzipped dataset whose context is `n` bytes ("a" escaped as \u0061 every 7th). */
    const write = async (name: string, n: number) => {
      const unit = "aaaaaa\\u0061"; // 12 bytes, 7 characters
      const text = unit.repeat(Math.floor(n / unit.length)) + "a".repeat(n % unit.length);
      const gz = new Blob([head + text + tail]).stream().pipeThrough(
        new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>,
      );
      await Deno.writeFile(`${dir}/${name}`, gz);
      return `${dir}/${name}`;
    };
    const offset = new TextEncoder().encode(head).length - 1;
    const out = [`${dir}/c.json`, `${dir}/q.json`];
    const cases: [number, string[], number][] = [
      [600_001, [], 100_000],
      [6_001, ["--max-paragraph-chars", "1000"], 1_000],
    ];
    for (const [bytes, flags, chars] of cases) {
      const path = await write(`over${bytes}.json.gz`, bytes);
      const r = await stageWithPeak("pipeline/split.ts", [path, ...out, ...flags]);
      assertEquals([r.code, r.stderr], [
        2,
        `split: ${path}: byte ${offset}: a string longer than ${6 * chars} bytes ` +
        `(a paragraph of at most ${chars} characters: --max-paragraph-chars)\n`,
      ]);
      assert(r.peak < PEAK_LIMIT, `split peak RSS ${r.peak}`);
    }
    // At the limit it is read, and split as before.
    const at = await write("at.json.gz", 6_000);
    const ok = await stageWithPeak("pipeline/split.ts", [
      at,
      ...out,
      "--max-paragraph-chars",
      "1000",
    ]);
    assertEquals(ok.code, 0, ok.stderr);
    const ctx = JSON.parse(await Deno.readTextFile(out[0]));
    assertEquals(ctx.data[0].paragraphs[0].context.length, 6000 / 12 * 7);
    await Deno.remove(out[0]);
    await Deno.remove(out[1]);
    // Nothing else left: no output of the refused runs.
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => !n.endsWith(".gz"));
    assertEquals(left, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
