/**
 * Sharded indexes as commands, on NumPy/SciPy-written dumps
 * (`bench/make_dumps.py`; the in-process checks are `shards_test.ts`):
 *
 * - `index --shards N --shard I` for N = 1, 3, 8 and `search` over the
 *   folder of shards write `pred.json`, the top-k records and the
 *   per-question rows byte for byte as the unsharded index and search
 *   (dense f32 and CSR dumps, `--context` order, a missing question
 *   vector); the run's commands (`_run_task.ts search-shard` per shard, then
 *   `search-merge`) give the same bytes;
 * - IVF-PQ: `--train-only` then `--quantizer` shards, and a shard that
 *   trains its own quantizer, hold the unsharded index's IVF-PQ files'
 *   centroids and codebooks and the same codes; the search without
 *   re-scoring is byte-identical;
 * - `--closed` over the shards, and a corpus search (DPR passages, NQ-open
 *   questions, its passage accuracy read from the shards' passage texts),
 *   are the unsharded outputs too;
 * - a corpus that grows keeps every paragraph in its shard;
 * - a shard build SIGKILLed mid-way (exact, and IVF-PQ mid-encoding) leaves
 *   a half-written shard that `search` refuses, and rerun gives the same
 *   bytes; a shard's search task SIGKILLed mid-way, rerun, writes the same
 *   hits file;
 * - every refusal is one line, exit 2, and leaves nothing behind.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { DEV_GZ, listDir, python, ROOT, sha256File, spawnChild } from "../_util.ts";
import { ok, refused } from "./_stages.ts";

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

/** Every file under `dir` (relative path) with its sha256. */
async function treeSums(dir: string, at = ""): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of [...Deno.readDirSync(`${dir}${at}`)].sort((a, b) => a.name < b.name ? -1 : 1)) {
    const rel = `${at}/${e.name}`;
    if (e.isDirectory) Object.assign(out, await treeSums(dir, rel));
    else out[rel] = await sha256File(`${dir}${rel}`);
  }
  return out;
}

Deno.test("shards: index --shards and search over 1, 3, 8 shards = the unsharded bytes (dense, CSR); the run's commands too", async () => {
  for (const [args, sparse] of [[DENSE, false], [SPARSE, true]] as const) {
    const dir = await dumps([...args]);
    const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shx-" });
    try {
      // One question without its vector: the same "Missing" line, the same outputs.
      const qs = [...Deno.readDirSync(`${dir}/question_emb`)].map((e) => e.name).sort();
      const q = `${tmp}/q`;
      Deno.mkdirSync(q);
      for (const name of qs.slice(1)) {
        Deno.copyFileSync(`${dir}/question_emb/${name}`, `${q}/${name}`);
      }
      const sp = sparse ? ["--sparse"] : [];
      const ctx = ["--context", `${dir}/data.json`];
      await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/one`, ...sp, ...ctx]);
      const want = await ok("pipeline/search.ts", [
        `${dir}/data.json`,
        `${tmp}/one`,
        q,
        `${tmp}/one.json`,
        "--topk-out",
        `${tmp}/one.topk.ndjson`,
      ]);
      assertMatch(want.stderr, /^Missing /m);
      const sums = async (stem: string) => [
        await sha256File(`${tmp}/${stem}.json`),
        await sha256File(`${tmp}/${stem}.topk.ndjson`),
        await sha256File(`${tmp}/${stem}.rows.ndjson`),
      ];
      const base = await sums("one");
      for (const n of [1, 3, 8]) {
        // --shards N alone builds every shard; --shard I one of them.
        if (n === 3) {
          for (let i = 0; i < n; i++) {
            await ok("pipeline/index.ts", [
              `${dir}/context_emb`,
              `${tmp}/s${n}`,
              ...sp,
              ...ctx,
              "--shards",
              String(n),
              "--shard",
              String(i),
            ]);
          }
        } else {
          await ok("pipeline/index.ts", [
            `${dir}/context_emb`,
            `${tmp}/s${n}`,
            ...sp,
            ...ctx,
            "--shards",
            String(n),
          ]);
        }
        const r = await ok("pipeline/search.ts", [
          `${dir}/data.json`,
          `${tmp}/s${n}`,
          q,
          `${tmp}/s${n}.json`,
          "--topk-out",
          `${tmp}/s${n}.topk.ndjson`,
        ]);
        assertEquals(r.stderr.split("\n").filter((l) => l.startsWith("Missing")).length, 1);
        assertEquals(await sums(`s${n}`), base, `${n} shards, sparse ${sparse}`);
      }
      // --closed (each question against its own paragraph, in whichever shard it is).
      for (const [index, out] of [[`${tmp}/one`, "c1"], [`${tmp}/s3`, "c3"]]) {
        await ok("pipeline/search.ts", [
          `${dir}/data.json`,
          index,
          q,
          `${tmp}/${out}.json`,
          "--topk-out",
          `${tmp}/${out}.topk.ndjson`,
          "--closed",
        ]);
      }
      assertEquals(await sums("c3"), await sums("c1"), `--closed, sparse ${sparse}`);
      // The run's tasks: a search-shard per shard, then search-merge.
      Deno.mkdirSync(`${tmp}/hits`);
      for (let i = 0; i < 3; i++) {
        await ok("pipeline/_run_task.ts", [
          "search-shard",
          `--data=${dir}/data.json`,
          `--index=${tmp}/s3`,
          `--shard=${i}`,
          `--question-emb=${q}`,
          `--out=${tmp}/hits/shard-${i}-of-3.hits.ndjson`,
          "--top-k=10",
        ]);
      }
      await ok("pipeline/_run_task.ts", [
        "search-merge",
        `--parts=${tmp}/hits`,
        "--shards=3",
        `--pred=${tmp}/m.json`,
        `--topk=${tmp}/m.topk.ndjson`,
      ]);
      assertEquals(await sha256File(`${tmp}/m.json`), base[0]);
      assertEquals(await sha256File(`${tmp}/m.topk.ndjson`), base[1]);
    } finally {
      Deno.removeSync(tmp, { recursive: true });
    }
  }
});

Deno.test("shards: IVF-PQ --train-only, --quantizer and self-trained shards hold the unsharded quantizer; same bytes", async () => {
  const dir = await dumps([...DENSE]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shivf-" });
  try {
    const ctx = ["--context", `${dir}/data.json`];
    const ivf = ["--nlist", "8", "--bpv", "8", "--train-paragraphs", "4"];
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/one`, ...ctx, ...ivf]);
    const t = await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/s`,
      ...ctx,
      ...ivf,
      "--train-only",
    ]);
    assertMatch(
      t.stderr,
      /index: quantizer .*\/s\/quantizer: nlist 8 bpv 8, trained on \d+ phrases of 4 paragraphs \(corpus of 12 paragraphs\)/,
    );
    for (let i = 0; i < 3; i++) {
      await ok("pipeline/index.ts", [
        `${dir}/context_emb`,
        `${tmp}/s`,
        ...ctx,
        "--shards",
        "3",
        "--shard",
        String(i),
        "--quantizer",
        `${tmp}/s/quantizer`,
      ]);
    }
    // A shard without --quantizer trains the same quantizer on the whole corpus's sample.
    await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/own`,
      ...ctx,
      ...ivf,
      "--shards",
      "3",
      "--shard",
      "2",
    ]);
    assertEquals(
      await treeSums(`${tmp}/own/shard-2-of-3`),
      await treeSums(`${tmp}/s/shard-2-of-3`),
    );
    const one = JSON.parse(Deno.readTextFileSync(`${tmp}/one/index.json`));
    for (let i = 0; i < 3; i++) {
      const h = JSON.parse(Deno.readTextFileSync(`${tmp}/s/shard-${i}-of-3/index.json`));
      for (const f of ["ivf/centroids.f32", "ivf/codebooks.f32"]) {
        assertEquals(h.files[f].sha256, one.files[f].sha256, f);
      }
      assertEquals(h.parameters, one.parameters);
    }
    const search = (index: string, out: string) =>
      ok("pipeline/search.ts", [
        `${dir}/data.json`,
        index,
        `${dir}/question_emb`,
        `${tmp}/${out}.json`,
        "--topk-out",
        `${tmp}/${out}.topk.ndjson`,
        "--nprobe",
        "3",
      ]);
    await search(`${tmp}/one`, "w");
    await search(`${tmp}/s`, "g");
    assertEquals(await sha256File(`${tmp}/g.json`), await sha256File(`${tmp}/w.json`));
    assertEquals(
      await sha256File(`${tmp}/g.topk.ndjson`),
      await sha256File(`${tmp}/w.topk.ndjson`),
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: 4-bit IVF-PQ (--pq-bits 4): --train-only, --quantizer, self-trained and --shards N shards; search, the run's tasks and --memory-budget = the unsharded bytes", async () => {
  const dir = await dumps([...DENSE]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shivf4-" });
  try {
    const ctx = ["--context", `${dir}/data.json`];
    const ivf = ["--nlist", "8", "--bpv", "8", "--train-paragraphs", "4", "--pq-bits", "4"];
    const cEmb = `${dir}/context_emb`;
    await ok("pipeline/index.ts", [cEmb, `${tmp}/one`, ...ctx, ...ivf]);
    const t = await ok("pipeline/index.ts", [cEmb, `${tmp}/s`, ...ctx, ...ivf, "--train-only"]);
    assertMatch(
      t.stderr,
      /index: quantizer .*\/s\/quantizer: nlist 8 bpv 8 4-bit, trained on \d+ phrases of 4 paragraphs/,
    );
    const q = ["--quantizer", `${tmp}/s/quantizer`];
    for (let i = 0; i < 3; i++) {
      await ok("pipeline/index.ts", [
        cEmb,
        `${tmp}/s`,
        ...ctx,
        "--shards",
        "3",
        "--shard",
        `${i}`,
        ...q,
      ]);
    }
    // A shard without --quantizer trains the same 4-bit quantizer on the whole corpus's sample;
    // --shards N alone trains it once and builds every shard.
    await ok("pipeline/index.ts", [
      cEmb,
      `${tmp}/own`,
      ...ctx,
      ...ivf,
      "--shards",
      "3",
      "--shard",
      "2",
    ]);
    assertEquals(
      await treeSums(`${tmp}/own/shard-2-of-3`),
      await treeSums(`${tmp}/s/shard-2-of-3`),
    );
    await ok("pipeline/index.ts", [cEmb, `${tmp}/all`, ...ctx, ...ivf, "--shards", "3"]);
    assertEquals(await treeSums(`${tmp}/all`), await treeSums(`${tmp}/s`));
    const one = JSON.parse(Deno.readTextFileSync(`${tmp}/one/index.json`));
    assertEquals(one.parameters.bits, 4);
    for (let i = 0; i < 3; i++) {
      const h = JSON.parse(Deno.readTextFileSync(`${tmp}/s/shard-${i}-of-3/index.json`));
      for (const f of ["ivf/centroids.f32", "ivf/codebooks.f32"]) {
        assertEquals(h.files[f].sha256, one.files[f].sha256, f);
      }
      assertEquals(h.parameters, one.parameters);
    }
    const search = (index: string, out: string, extra: string[] = []) =>
      ok("pipeline/search.ts", [
        `${dir}/data.json`,
        index,
        `${dir}/question_emb`,
        `${tmp}/${out}.json`,
        "--topk-out",
        `${tmp}/${out}.topk.ndjson`,
        "--nprobe",
        "3",
        ...extra,
      ]);
    const sums = async (stem: string) => [
      await sha256File(`${tmp}/${stem}.json`),
      await sha256File(`${tmp}/${stem}.topk.ndjson`),
    ];
    await search(`${tmp}/one`, "w");
    const want = await sums("w");
    await search(`${tmp}/s`, "g");
    assertEquals(await sums("g"), want, "search over the shards");
    await search(`${tmp}/s`, "b", ["--memory-budget", "1"]);
    assertEquals(await sums("b"), want, "over the shards, each under a budget of 1 byte");
    await search(`${tmp}/one`, "b1", ["--memory-budget", "3000"]);
    assertEquals(await sums("b1"), want, "the unsharded index under a budget");
    // The run's tasks: a search-shard per shard, then search-merge.
    Deno.mkdirSync(`${tmp}/hits`);
    for (let i = 0; i < 3; i++) {
      await ok("pipeline/_run_task.ts", [
        "search-shard",
        `--data=${dir}/data.json`,
        `--index=${tmp}/s`,
        `--shard=${i}`,
        `--question-emb=${dir}/question_emb`,
        `--out=${tmp}/hits/shard-${i}-of-3.hits.ndjson`,
        "--top-k=10",
        "--nprobe=3",
      ]);
    }
    await ok("pipeline/_run_task.ts", [
      "search-merge",
      `--parts=${tmp}/hits`,
      "--shards=3",
      `--pred=${tmp}/m.json`,
      `--topk=${tmp}/m.topk.ndjson`,
    ]);
    assertEquals(await sums("m"), want, "search-shard × 3 + search-merge");
    // A shard of 8-bit codes among the 4-bit ones: one line, exit 2.
    await ok("pipeline/index.ts", [
      cEmb,
      `${tmp}/eight`,
      ...ctx,
      ...ivf.slice(0, 6),
      "--shards",
      "3",
      "--shard",
      "1",
    ]);
    Deno.removeSync(`${tmp}/s/shard-1-of-3`, { recursive: true });
    Deno.renameSync(`${tmp}/eight/shard-1-of-3`, `${tmp}/s/shard-1-of-3`);
    await refused(
      "pipeline/search.ts",
      [`${dir}/data.json`, `${tmp}/s`, `${dir}/question_emb`, `${tmp}/x.json`],
      /shard-1-of-3\/index\.json: foreign shard: 8-bit PQ codes, not 4-bit/,
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: a corpus search (DPR passages, NQ-open questions) over 3 shards = unsharded", async () => {
  const C = `${ROOT}/tests/testdata/corpus`;
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shcorpus-" });
  try {
    await ok("pipeline/embed_context.ts", [`${C}/psgs.tsv`, `${tmp}/c`, "--sparse"]);
    await ok("pipeline/embed_question.ts", [`${C}/nq.qa.csv`, `${tmp}/q`, "--sparse"]);
    const ix = ["--sparse", "--context", `${C}/psgs.tsv`];
    await ok("pipeline/index.ts", [`${tmp}/c`, `${tmp}/one`, ...ix]);
    await ok("pipeline/index.ts", [`${tmp}/c`, `${tmp}/s3`, ...ix, "--shards", "3"]);
    const lines: string[] = [];
    for (const [index, out] of [[`${tmp}/one`, "one"], [`${tmp}/s3`, "s3"]]) {
      const r = await ok("pipeline/search.ts", [
        `${C}/nq.qa.csv`,
        index,
        `${tmp}/q`,
        `${tmp}/${out}.json`,
        "--top-k",
        "5",
        "--topk-out",
        `${tmp}/${out}.topk.ndjson`,
      ]);
      // The open metrics' line, passage accuracy from the shards' passage texts.
      lines.push(r.stderr.split("\n").find((l) => l.startsWith("search: open: "))!);
    }
    assertMatch(lines[0], /"top_k_accuracy"/);
    assertEquals(lines[1], lines[0]);
    for (const f of [".json", ".topk.ndjson", ".rows.ndjson"]) {
      assertEquals(await sha256File(`${tmp}/s3${f}`), await sha256File(`${tmp}/one${f}`), f);
    }
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
    let moved = 0;
    for (const [name, dir] of [["a", small], ["b", big]]) {
      await ok("pipeline/index.ts", [
        `${dir}/context_emb`,
        `${tmp}/${name}`,
        "--context",
        `${dir}/data.json`,
        "--shards",
        "4",
      ]);
      for (let i = 0; i < 4; i++) {
        const lines = Deno.readTextFileSync(`${tmp}/${name}/shard-${i}-of-4/paragraphs.ndjson`)
          .split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
        for (const { id } of lines) {
          if (name === "a") where.set(id, i);
          else if (where.has(id) && where.get(id) !== i) moved++;
        }
      }
    }
    assertEquals(where.size, 6);
    assertEquals(moved, 0);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

/** Spawns `deno run -A script args` and SIGKILLs it once `ready()` holds; the name it held. */
async function killWhen(
  script: string,
  args: string[],
  ready: () => string | undefined,
): Promise<string> {
  const child = spawnChild([Deno.execPath(), "run", "-A", `${ROOT}/${script}`, ...args], {
    stdout: "null",
    stderr: "null",
  });
  let seen: string | undefined;
  for (let t = 0; t < 6000 && seen === undefined; t++) {
    seen = ready();
    if (seen === undefined) await new Promise((r) => setTimeout(r, 5));
  }
  child.kill("SIGKILL");
  const st = await child.status;
  assert(seen !== undefined, `${script} finished before it could be killed`);
  assertEquals(st.signal, "SIGKILL");
  return seen;
}

/** The `shard-I-of-N.<hex>.tmp` folder in `dir` whose `build/` holds `file` of at least `bytes`. */
const tmpHolding = (dir: string, shard: string, file: string, bytes: number) => () => {
  for (const e of Deno.readDirSync(dir)) {
    if (!e.name.startsWith(`${shard}.`) || !e.name.endsWith(".tmp")) continue;
    try {
      if (Deno.statSync(`${dir}/${e.name}/build/${file}`).size >= bytes) return e.name;
    } catch { /* not yet */ }
  }
  return undefined;
};

Deno.test("shards: a shard build or search SIGKILLed mid-way is refused, then rerun gives the same bytes", async () => {
  const dir = await dumps(["--articles", "4", "--dim", "256"]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shkill-" });
  try {
    const ctx = ["--context", `${dir}/data.json`];
    const shard = (out: string, i: number, more: string[] = []) => [
      `${dir}/context_emb`,
      out,
      ...ctx,
      "--shards",
      "3",
      "--shard",
      String(i),
      ...more,
    ];
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/clean`, ...ctx, "--shards", "3"]);
    // Exact: killed while it writes the vectors.
    for (const i of [0, 2]) await ok("pipeline/index.ts", shard(`${tmp}/killed`, i));
    const held = await killWhen(
      "pipeline/index.ts",
      shard(`${tmp}/killed`, 1),
      tmpHolding(`${tmp}/killed`, "shard-1-of-3", "vectors.f32", 4 << 20),
    );
    const search = (index: string, out: string) => [
      `${dir}/data.json`,
      index,
      `${dir}/question_emb`,
      `${tmp}/${out}.json`,
      "--topk-out",
      `${tmp}/${out}.topk.ndjson`,
    ];
    await refused(
      "pipeline/search.ts",
      search(`${tmp}/killed`, "x"),
      new RegExp(`${held.replaceAll(".", "\\.")}: the build of shard-1-of-3 was interrupted`),
    );
    await ok("pipeline/index.ts", shard(`${tmp}/killed`, 1));
    assertEquals(await listDir(`${tmp}/killed`), ["shard-0-of-3", "shard-1-of-3", "shard-2-of-3"]);
    assertEquals(await treeSums(`${tmp}/killed`), await treeSums(`${tmp}/clean`));
    // IVF-PQ: killed while it encodes (its scratch files are there).
    const ivf = ["--nlist", "16", "--bpv", "32", "--train-paragraphs", "6"];
    await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/ivf`,
      ...ctx,
      ...ivf,
      "--train-only",
    ]);
    const q = ["--quantizer", `${tmp}/ivf/quantizer`];
    await ok("pipeline/index.ts", shard(`${tmp}/ivf`, 1, q));
    const clean = await treeSums(`${tmp}/ivf/shard-1-of-3`);
    Deno.removeSync(`${tmp}/ivf/shard-1-of-3`, { recursive: true });
    await killWhen(
      "pipeline/index.ts",
      shard(`${tmp}/ivf`, 1, q),
      tmpHolding(`${tmp}/ivf`, "shard-1-of-3", ".ivf_codes.scratch", 1),
    );
    await ok("pipeline/index.ts", shard(`${tmp}/ivf`, 1, q));
    assertEquals(await treeSums(`${tmp}/ivf/shard-1-of-3`), clean);
    // A shard's search task killed mid-way (its hits file not yet in place), rerun.
    const task = (out: string) => [
      "search-shard",
      `--data=${dir}/data.json`,
      `--index=${tmp}/clean`,
      "--shard=1",
      `--question-emb=${dir}/question_emb`,
      `--out=${out}`,
      "--top-k=10",
    ];
    Deno.mkdirSync(`${tmp}/hits`);
    await ok("pipeline/_run_task.ts", task(`${tmp}/hits/clean.ndjson`));
    // Killed once it writes (its temporary file is there), before it is renamed into place.
    await killWhen(
      "pipeline/_run_task.ts",
      task(`${tmp}/hits/killed.ndjson`),
      () =>
        [...Deno.readDirSync(`${tmp}/hits`)].find((e) => e.name.startsWith(".killed.ndjson."))
          ?.name,
    );
    assert(
      !(await listDir(`${tmp}/hits`)).includes("killed.ndjson"),
      "a killed search left its file",
    );
    await ok("pipeline/_run_task.ts", task(`${tmp}/hits/killed.ndjson`));
    assertEquals(
      await sha256File(`${tmp}/hits/killed.ndjson`),
      await sha256File(`${tmp}/hits/clean.ndjson`),
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("shards: the command lines' refusals are one line, exit 2, and write nothing", async () => {
  const dir = await dumps([...DENSE]);
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-shref-" });
  try {
    const ctx = ["--context", `${dir}/data.json`];
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/s`, ...ctx, "--shards", "3"]);
    Deno.removeSync(`${tmp}/s/shard-1-of-3`, { recursive: true });
    await refused(
      "pipeline/search.ts",
      [`${dir}/data.json`, `${tmp}/s`, `${dir}/question_emb`, `${tmp}/p.json`],
      /shard-1-of-3: missing: 2 of the 3 shards are present$/,
    );
    const idx = [`${dir}/context_emb`, `${tmp}/y`];
    await refused("pipeline/index.ts", [...idx, "--shard", "1"], /--shard I needs --shards N$/);
    await refused(
      "pipeline/index.ts",
      [...idx, "--shards", "3", "--shard", "3"],
      /--shard must be 0 to 2/,
    );
    await refused("pipeline/index.ts", [...idx, "--shards", "0"], /--shards must be 1 to 65536/);
    await refused(
      "pipeline/index.ts",
      [...idx, "--quantizer", `${tmp}/q`],
      /--quantizer is for the shards/,
    );
    await refused(
      "pipeline/index.ts",
      [...idx, "--shards", "3", "--quantizer", `${tmp}/q`, "--nlist", "4", "--bpv", "8"],
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
    await refused(
      "pipeline/index.ts",
      [...idx, "--shards", "3", "--shard", "0", "--quantizer", `${tmp}/nothing`],
      /nothing: not a quantizer folder \(no quantizer\.json; index --train-only\)$/,
    );
    assertEquals(await listDir(tmp), ["s"]);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
