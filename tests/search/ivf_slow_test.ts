/**
 * The `ivf-pq` index kind (phraseval's IVF-PQ) as commands: with nprobe = nlist and
 * refine covering every phrase it gives the exact index's answers (NumPy-
 * written dense f32 and f16 dumps, both metrics); recall@10 against exact
 * search on real piqa-lstm vectors; bad input exits 2 with one line and
 * leaves nothing behind; forged files whose sha256 was recomputed are
 * refused; `inspect` prints its kind and parameters.
 */
import { createHash } from "node:crypto";
import { assert, assertEquals } from "../_assert.ts";
import { indexBinding } from "../../search/index/format.ts";
import { python, runStage } from "../_util.ts";
import { ok, records, refused, subset } from "./_stages.ts";

/** Dumps written by NumPy (bench/make_dumps.py) for a few dev paragraphs. */
async function numpyDumps(dir: string, dtype: "f32" | "f16"): Promise<void> {
  Deno.mkdirSync(dir, { recursive: true });
  await subset(`${dir}/in.json`, 3);
  await python([
    "bench/make_dumps.py",
    `${dir}/in.json`,
    dir,
    "--dim",
    "16",
    "--dtype",
    dtype,
    "--max-len",
    "3",
  ]);
}

const phrasesOf = (ix: string) =>
  (JSON.parse(Deno.readTextFileSync(`${ix}/index.json`)) as { phrases: number }).phrases;

Deno.test("ivf-pq: nprobe = nlist and refine over every phrase give the exact answers", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivf-" });
  try {
    for (const dtype of ["f32", "f16"] as const) {
      const dir = `${tmp}/${dtype}`;
      await numpyDumps(dir, dtype);
      for (const metric of ["ip", "l2"]) {
        const at = `${dir}/${metric}`;
        Deno.mkdirSync(at);
        const common = ["--context", `${dir}/data.json`, "--metric", metric];
        await ok("pipeline/index.ts", [`${dir}/context_emb`, `${at}/exact`, ...common]);
        await ok("pipeline/index.ts", [
          `${dir}/context_emb`,
          `${at}/ivf`,
          ...common,
          "--nlist",
          "4",
          "--bpv",
          "4",
          "--train-paragraphs",
          "2",
        ]);
        const n = phrasesOf(`${at}/ivf`);
        const search = (ix: string, name: string, extra: string[]) =>
          ok("pipeline/search.ts", [
            `${dir}/data.json`,
            ix,
            `${dir}/question_emb`,
            `${at}/${name}.json`,
            "--top-k",
            "5",
            "--topk-out",
            `${at}/${name}.ndjson`,
            ...extra,
          ]);
        await search(`${at}/exact`, "exact", []);
        await search(`${at}/ivf`, "ivf", ["--nprobe", "4", "--refine", String(n)]);
        await search(`${at}/ivf`, "ivf_exact", ["--exact"]);
        const want = Deno.readTextFileSync(`${at}/exact.json`);
        assertEquals(Deno.readTextFileSync(`${at}/ivf.json`), want, `${dtype} ${metric}`);
        assertEquals(Deno.readTextFileSync(`${at}/ivf_exact.json`), want);
        assertEquals(records(`${at}/ivf.ndjson`), records(`${at}/exact.ndjson`));
        assert(records(`${at}/exact.ndjson`).length > 100);
      }
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("ivf-pq: recall@10 against exact search on real piqa-lstm vectors", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfreal-" });
  try {
    await subset(`${tmp}/in.json`, 12);
    await ok("pipeline/full.ts", [
      "--data",
      `${tmp}/in.json`,
      "--encoder",
      "piqa-lstm",
      "--out",
      `${tmp}/run`,
    ]);
    const run = `${tmp}/run`;
    const common = ["--context", `${run}/context.json`];
    await ok("pipeline/index.ts", [`${run}/dumps/context_emb`, `${tmp}/exact`, ...common]);
    await ok("pipeline/index.ts", [
      `${run}/dumps/context_emb`,
      `${tmp}/ivf`,
      ...common,
      "--nlist",
      "8",
      "--bpv",
      "32",
      "--train-paragraphs",
      "6",
    ]);
    const search = (ix: string, name: string, extra: string[]) =>
      ok("pipeline/search.ts", [
        `${tmp}/in.json`,
        ix,
        `${run}/dumps/question_emb`,
        `${tmp}/${name}.json`,
        "--top-k",
        "10",
        "--topk-out",
        `${tmp}/${name}.ndjson`,
        ...extra,
      ]);
    await search(`${tmp}/exact`, "exact", []);
    await search(`${tmp}/ivf`, "pq", ["--nprobe", "4"]);
    await search(`${tmp}/ivf`, "refined", ["--nprobe", "4", "--refine", "100"]);
    const byQ = (path: string) => {
      const m = new Map<string, string[]>();
      for (const r of records(path)) {
        const key = `${r.paragraph}#${r.phrase_index}`;
        const list = m.get(r.id as string);
        if (list) list.push(key);
        else m.set(r.id as string, [key]);
      }
      return m;
    };
    const truth = byQ(`${tmp}/exact.ndjson`);
    const recall = (path: string) => {
      const got = byQ(path);
      let r1 = 0, r10 = 0;
      for (const [q, want] of truth) {
        const g = got.get(q) ?? [];
        if (g[0] === want[0]) r1++;
        r10 += g.filter((x) => want.includes(x)).length / want.length;
      }
      return { r1: r1 / truth.size, r10: r10 / truth.size };
    };
    assert(truth.size > 50, `${truth.size} questions`);
    const pq = recall(`${tmp}/pq.ndjson`), refined = recall(`${tmp}/refined.ndjson`);
    console.log(`recall pq ${JSON.stringify(pq)}, refined ${JSON.stringify(refined)}`);
    assert(pq.r10 >= 0.6, `PQ recall@10 ${pq.r10}`);
    assert(refined.r10 >= 0.9, `refined recall@10 ${refined.r10}`);
    assert(refined.r1 >= 0.9, `refined recall@1 ${refined.r1}`);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("ivf-pq: bad parameters exit 2 with one line and leave nothing behind", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfbad-" });
  try {
    const dir = `${tmp}/d`;
    await numpyDumps(dir, "f32");
    const index = (name: string, extra: string[], re: RegExp) =>
      refused("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/${name}`, ...extra], re);
    await index(
      "bpv",
      ["--nlist", "4", "--bpv", "5"],
      /^index: .*context_emb: --bpv 5 does not divide d = 16 \(PQ splits d into bpv parts\)$/,
    );
    await index(
      "nlist",
      ["--nlist", "100000", "--bpv", "4", "--train-paragraphs", "1"],
      /^index: .*context_emb: --nlist 100000 is larger than the \d+ training phrases \(1 paragraphs; see --train-paragraphs\)$/,
    );
    await index("half", ["--nlist", "4"], /^index: an IVF-PQ index needs both --nlist and --bpv$/);
    await index(
      "both",
      ["--nlist", "4", "--bpv", "4", "--exact"],
      /^index: --exact cannot go with --nlist, --bpv or --train-paragraphs$/,
    );
    // Nothing behind: no index folder, no temporary folder.
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name), ["d"]);

    await ok("pipeline/index.ts", [
      `${dir}/context_emb`,
      `${tmp}/ivf`,
      "--nlist",
      "4",
      "--bpv",
      "4",
    ]);
    await ok("pipeline/index.ts", [`${dir}/context_emb`, `${tmp}/exact`]);
    const search = (ix: string, extra: string[], re: RegExp) =>
      refused("pipeline/search.ts", [
        `${dir}/data.json`,
        `${tmp}/${ix}`,
        `${dir}/question_emb`,
        `${tmp}/pred.json`,
        ...extra,
      ], re);
    await search(
      "ivf",
      ["--nprobe", "5"],
      /^search: .*ivf: --nprobe 5 is larger than the index's nlist 4 \(.*ivf\)$/,
    );
    await search(
      "exact",
      ["--nprobe", "2"],
      /^search: .*exact: is an exact index: --nprobe and --candidates \(--refine\) apply to ivf-pq only$/,
    );
    await search(
      "ivf",
      ["--exact", "--refine", "3"],
      /--exact cannot go with --nprobe or --refine$/,
    );
    // An ivf file changed, grown or cut short: refused as a corrupt index.
    const codes = `${tmp}/ivf/ivf/codes.u8`;
    const orig = Deno.readFileSync(codes);
    const flipped = orig.slice();
    flipped[0] ^= 1;
    Deno.writeFileSync(codes, flipped);
    await search(
      "ivf",
      [],
      /^search: .*ivf\/ivf\/codes\.u8: sha256 differs from index\.json \(corrupt index\)$/,
    );
    Deno.writeFileSync(codes, orig);
    Deno.writeTextFileSync(codes, "x", { append: true });
    await search(
      "ivf",
      [],
      /^search: .*ivf\/ivf\/codes\.u8: \d+ bytes but index\.json says \d+ \(truncated or corrupt index\)$/,
    );
    Deno.writeFileSync(codes, orig);
    const rows = `${tmp}/ivf/ivf/list_rows.u32`;
    Deno.truncateSync(rows, 8);
    await search(
      "ivf",
      [],
      /^search: .*ivf\/ivf\/list_rows\.u32: 8 bytes but index\.json says \d+ \(truncated or corrupt index\)$/,
    );
    // An index built by LanceDB (an earlier phraseval): refused, to be rebuilt.
    const old = JSON.parse(Deno.readTextFileSync(`${tmp}/exact/index.json`));
    Deno.mkdirSync(`${tmp}/lance`);
    for (const name of ["paragraphs.ndjson", "vectors.f32"]) {
      Deno.copyFileSync(`${tmp}/exact/${name}`, `${tmp}/lance/${name}`);
    }
    Deno.writeTextFileSync(
      `${tmp}/lance/index.json`,
      JSON.stringify({
        ...old,
        kind: "ivf-pq",
        parameters: {
          nlist: 4,
          bpv: 4,
          bits: 8,
          train_paragraphs: 3,
          train_phrases: 50,
          train_sample: "the train_paragraphs paragraphs whose sha256(id) (hex) sorts first",
          library: "@lancedb/lancedb@0.31.0",
        },
      }),
    );
    await search(
      "lance",
      [],
      /^search: .*lance\/index\.json: built by LanceDB, no longer supported: rebuild with deno task index$/,
    );
    Deno.removeSync(`${tmp}/lance`, { recursive: true });
    assertEquals(
      [...Deno.readDirSync(tmp)].map((e) => e.name).sort(),
      ["d", "exact", "ivf"],
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("inspect: an ivf-pq index prints its kind and parameters", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfinsp-" });
  try {
    await numpyDumps(tmp, "f16");
    await ok("pipeline/index.ts", [
      `${tmp}/context_emb`,
      `${tmp}/ivf`,
      "--context",
      `${tmp}/data.json`,
      "--nlist",
      "4",
      "--bpv",
      "8",
      "--train-paragraphs",
      "2",
      "--metric",
      "l2",
    ]);
    const r = await ok("pipeline/inspect.ts", [`${tmp}/ivf`]);
    const got = JSON.parse(r.stdout);
    const trainPhrases = got.parameters.train_phrases;
    assert(Number.isSafeInteger(trainPhrases) && trainPhrases > 4 && trainPhrases < got.phrases);
    assertEquals(got, {
      kind: "ivf-pq",
      version: 1,
      phrases: got.phrases,
      paragraphs: 3,
      d: 16,
      metric: "l2",
      vectors: "dense",
      dtype: "f16",
      nnz: null,
      parameters: {
        nlist: 4,
        bpv: 8,
        bits: 8,
        train_paragraphs: 2,
        train_phrases: trainPhrases,
        train_sample: "the train_paragraphs paragraphs whose sha256(id) (hex) sorts first",
        kmeans_iterations: 25,
        seed: 1234,
        engine: "phraseval",
      },
    });
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

/** A copy of the index `from` at `to` with the data file `name` edited and its sha256 recomputed. */
function forge(from: string, to: string, name: string, edit: (b: Uint8Array) => void): string {
  Deno.mkdirSync(`${to}/ivf`, { recursive: true });
  for (const n of ["index.json", "paragraphs.ndjson", "vectors.f32"]) {
    Deno.copyFileSync(`${from}/${n}`, `${to}/${n}`);
  }
  for (const e of Deno.readDirSync(`${from}/ivf`)) {
    Deno.copyFileSync(`${from}/ivf/${e.name}`, `${to}/ivf/${e.name}`);
  }
  const bytes = Deno.readFileSync(`${to}/${name}`);
  edit(bytes);
  Deno.writeFileSync(`${to}/${name}`, bytes);
  const h = JSON.parse(Deno.readTextFileSync(`${to}/index.json`));
  h.files[name].sha256 = createHash("sha256").update(bytes).digest("hex");
  h.binding = indexBinding(h.files); // a forger who knows the binding too
  Deno.writeTextFileSync(`${to}/index.json`, JSON.stringify(h, null, 2) + "\n");
  return to;
}

Deno.test("ivf-pq: forged files with their sha256 recomputed are refused when the index opens", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-ivfforge-" });
  try {
    const dir = `${tmp}/d`;
    await numpyDumps(dir, "f32");
    const ix = `${tmp}/ix`;
    await ok("pipeline/index.ts", [`${dir}/context_emb`, ix, "--nlist", "4", "--bpv", "4"]);
    const n = phrasesOf(ix);
    const f32 = (b: Uint8Array) => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    const u32 = (b: Uint8Array) => new Uint32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    const offsets = () => {
      const b = Deno.readFileSync(`${ix}/ivf/list_offsets.i64`);
      return [...new BigInt64Array(b.buffer, 0, b.byteLength / 8)].map(Number);
    };
    const cases: [string, (b: Uint8Array) => void, string, string][] = [
      // Every list row 0: in range, but phrase 0 everywhere (every answer the first phrase).
      [
        "ivf/list_rows.u32",
        (b) => b.fill(0),
        "zero",
        "row 0 at 1 is not above the row before it in list 0 (rows increase within a list; corrupt index)",
      ],
      // The first row of a later list made a row of list 0: each list still increasing, one
      // phrase in two lists, another in none.
      [
        "ivf/list_rows.u32",
        (b) => {
          const r = u32(b), o = offsets();
          const l = [...o.keys()].find((l) => l > 0 && o[l + 1] - o[l] >= 2 && r[0] < r[o[l] + 1])!;
          r[o[l]] = r[0];
        },
        "twice",
        "is in more than one list (corrupt index)",
      ],
      [
        "ivf/list_rows.u32",
        (b) => u32(b).fill(n),
        "big",
        `row ${n} at 0 is out of range (corrupt index)`,
      ],
      ["ivf/centroids.f32", (b) => f32(b).fill(NaN), "nan", "value 0 is NaN (corrupt index)"],
      [
        "ivf/codebooks.f32",
        (b) => (f32(b)[5] = Infinity),
        "inf",
        "value 5 is Infinity (corrupt index)",
      ],
      [
        "vectors.f32",
        (b) => (f32(b)[17] = -Infinity),
        "vec",
        "-Infinity at row 1, column 1 (corrupt index)",
      ],
    ];
    for (const [name, edit, label, why] of cases) {
      const bad = forge(ix, `${tmp}/${label}`, name, edit);
      const r = await runStage("pipeline/search.ts", [
        `${dir}/data.json`,
        bad,
        `${dir}/question_emb`,
        `${tmp}/pred.json`,
        "--nprobe",
        "4",
      ]);
      assertEquals(r.code, 2, `${label}: ${r.stderr}`);
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r.stderr);
      assert(lines[0].startsWith(`search: ${bad}/${name}: `), lines[0]);
      assert(lines[0].endsWith(why), `${label}: ${lines[0]}`);
    }
    assert(
      !Deno.readDirSync(tmp).some((e) => e.name.startsWith("pred")),
      "a prediction was written",
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
