/**
 * Encoder independence on every path that starts an encoder, checked from
 * what actually ran: `full` (closed, `--open`, `--open --corpus` with the
 * dataset itself and a hard link of it as the corpus), `run` (closed, open
 * and corpus SQuAD sets; a corpus that is the dataset or a gzip copy of it
 * under another name; open sets of every kind: DPR CSV, CuratedTREC,
 * NQ-open JSONL, a generic JSONL with a field map (its encoders only); corpora in every
 * format: DPR passage TSV, JSONL, MRQA, SQuAD; a sharded index) and
 * `serve` (an index, and a folder of shards); and the encoders trained for
 * open search (`piqa-lstm-open`, `piqa-lstm-open+sparse`) in a run config
 * (closed, a corpus, shards) and `serve`.
 *
 * The granted files come from the real command lines: the `== argv` line
 * the local runner writes into each task's log (`runs/runners/local.ts`)
 * and, for `serve`, `/proc/<pid>/cmdline` of the server processes while
 * they run. Each `--allow-read` path of an encoder process is read (a
 * folder: every file in it, a gzip file: its content) after the run, and:
 *
 * - no file granted to a context encoder holds a question of the datasets;
 * - no file granted to a question encoder (`embed_question`, the server
 *   process that encodes live questions) holds a gold answer.
 *
 * The fixtures make that a content check: every question holds a marker
 * `qmark<n>` and every gold answer `amark<n>`, and no context or passage
 * holds either (SQuAD does not tie an answer's text to its context), so a
 * marker in a granted file is a question or an answer of a dataset,
 * whatever the file is named.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, runRun, runStage, spawnChild } from "../_util.ts";
import { denoRunArgv } from "../../runs/sandbox/sandbox.ts";

const QUESTION = /qmark\d+/;
const ANSWER = /amark\d+/;

/** An encoder process as it ran: which half, the script, the paths it could read. */
interface EncoderRun {
  readonly half: "context" | "question";
  /** Where its command line was read (a log file, or `serve pid N`). */
  readonly where: string;
  readonly read: readonly string[];
}

/** The encoder role of a command line, from the script it runs (`undefined`: not an encoder). */
function roleOf(argv: readonly string[]): "context" | "question" | undefined {
  const script = argv.find((a) => a.endsWith(".ts"));
  if (script === undefined) return undefined;
  if (script.endsWith("/pipeline/embed_context.ts")) return "context";
  if (script.endsWith("/pipeline/embed_question.ts")) return "question";
  // The demo server's process encodes the live questions.
  if (script.endsWith("/pipeline/_serve_child.ts")) return "question";
  return undefined;
}

/** The paths a command line may read; throws on a grant of everything. */
function readGrants(argv: readonly string[], where: string): string[] {
  const script = argv.findIndex((a) => a.endsWith(".ts"));
  const flags = argv.slice(0, script);
  const all = flags.find((a) => a === "-A" || a === "--allow-all" || a === "--allow-read");
  if (all !== undefined) throw new Error(`${where}: ${all} grants every file`);
  return flags.filter((a) => a.startsWith("--allow-read=")).flatMap((a) =>
    a.slice("--allow-read=".length).split(",")
  );
}

/** Every `== argv` command line in the logs under `dir`, as encoder runs. */
function encoderRunsOfLogs(dir: string): { encoders: EncoderRun[]; commands: number } {
  const encoders: EncoderRun[] = [];
  let commands = 0;
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory) walk(p);
      else if (e.name.endsWith(".log")) {
        for (const line of Deno.readTextFileSync(p).split("\n")) {
          if (!line.startsWith("== argv ")) continue;
          commands++;
          const argv: string[] = JSON.parse(line.slice("== argv ".length));
          const half = roleOf(argv);
          if (half !== undefined) encoders.push({ half, where: p, read: readGrants(argv, p) });
        }
      }
    }
  };
  walk(dir);
  return { encoders, commands };
}

/** The text of a file (a gzip file's content), or of every file under a folder. */
async function* textsOf(path: string): AsyncGenerator<[string, string]> {
  const st = await Deno.stat(path);
  if (st.isDirectory) {
    for await (const e of Deno.readDir(path)) yield* textsOf(`${path}/${e.name}`);
    return;
  }
  let bytes = await Deno.readFile(path);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    bytes = new Uint8Array(
      await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")))
        .arrayBuffer(),
    );
  }
  yield [path, new TextDecoder().decode(bytes)];
}

/**
 * The leaks of `runs`: a granted file of a context encoder holding a
 * question, or of a question encoder holding an answer, one line each.
 */
async function leaks(runs: readonly EncoderRun[]): Promise<string[]> {
  const out: string[] = [];
  for (const r of runs) {
    const marker = r.half === "context" ? QUESTION : ANSWER;
    for (const granted of r.read) {
      for await (const [file, text] of textsOf(granted)) {
        const m = marker.exec(text);
        if (m !== null) {
          out.push(
            `the ${r.half} encoder (${r.where}) may read ${file}, which holds ${
              r.half === "context" ? "a question" : "an answer"
            } ("${m[0]}")`,
          );
        }
      }
    }
  }
  return out;
}

/**
 * What is wrong with the encoder runs of one path (`name: ...` lines): a
 * half without a command line, or a leak.
 */
async function problems(
  name: string,
  runs: readonly EncoderRun[],
  halves: readonly ("context" | "question")[] = ["context", "question"],
): Promise<string[]> {
  const out: string[] = [];
  for (const h of halves) {
    if (!runs.some((r) => r.half === h)) out.push(`${name}: no ${h} encoder command line found`);
  }
  for (const l of await leaks(runs)) out.push(`${name}: ${l}`);
  return out;
}

/** Fails with every problem, one a line. */
function assertNone(found: readonly string[]): void {
  assertEquals(found, [], `${found.length} problems:\n${found.join("\n")}`);
}

/** The fixture: a SQuAD file, open question sets of every kind and corpora of every format. */
async function fixture(dir: string): Promise<void> {
  const articles = [];
  let n = 0;
  for (let a = 0; a < 2; a++) {
    const paragraphs = [];
    for (let p = 0; p < 2; p++) {
      const qas = [];
      for (let q = 0; q < 2; q++, n++) {
        qas.push({
          id: `q${n}`,
          question: `qmark${n} which bridge of town ${a}${p} is old`,
          answers: [{ text: `amark${n}`, answer_start: 0 }],
        });
      }
      paragraphs.push({
        context: `The old bridge of town ${a}${p} was built in 18${a}${p} by the river.`,
        qas,
      });
    }
    articles.push({ title: `Town_${a}`, paragraphs });
  }
  const squad = JSON.stringify({ version: "1.1", data: articles });
  await Deno.writeTextFile(`${dir}/x.json`, squad);
  await Deno.link(`${dir}/x.json`, `${dir}/xlink.json`);
  // A gzip copy named as a passage TSV: only its content says what it is.
  await Deno.writeFile(
    `${dir}/wiki.tsv`,
    new Uint8Array(
      await new Response(new Blob([squad]).stream().pipeThrough(new CompressionStream("gzip")))
        .arrayBuffer(),
    ),
  );
  const qs = [0, 1, 2, 3];
  await Deno.writeTextFile(
    `${dir}/nq.qa.csv`,
    qs.map((i) => `qmark${i} who built the bridge of town ${i}\t['amark${i}']\n`).join(""),
  );
  await Deno.writeTextFile(
    `${dir}/trec.qa.csv`,
    qs.map((i) => `qmark${i} when was bridge ${i} built\t['amark${i}|18[0-9]{2}']\n`).join(""),
  );
  await Deno.writeTextFile(
    `${dir}/nq-open.jsonl`,
    qs.map((i) => JSON.stringify({ question: `qmark${i} which river`, answer: [`amark${i}`] }))
      .join("\n") + "\n",
  );
  await Deno.writeTextFile(
    `${dir}/gen.jsonl`,
    qs.map((i) =>
      JSON.stringify({
        qid: `g${i}`,
        q: `qmark${i} which bridge`,
        gold: [`amark${i}`],
        passage: `The bridge of town ${i}.`,
      })
    ).join("\n") + "\n",
  );
  await Deno.writeTextFile(
    `${dir}/psgs.tsv`,
    "id\ttext\ttitle\n" +
      qs.map((i) => `p${i}\tThe old bridge of town ${i} was built by the river.\tTown ${i}\n`)
        .join(""),
  );
  await Deno.writeTextFile(
    `${dir}/corpus.jsonl`,
    qs.map((i) =>
      JSON.stringify({ id: `c${i}`, title: `Town ${i}`, text: `Town ${i} has an old bridge.` })
    ).join("\n") + "\n",
  );
  // MRQA: its questions are the corpus's (their markers), its answers in the contexts.
  await Deno.writeTextFile(
    `${dir}/mrqa.jsonl`,
    JSON.stringify({ header: { dataset: "x", split: "dev" } }) + "\n" +
      qs.map((i) =>
        JSON.stringify({
          id: `m${i}`,
          context: `Town ${i} has a river and a bridge.`,
          qas: [{
            qid: `mq${i}`,
            question: `qmark${100 + i} what has town ${i}`,
            detected_answers: [{ text: "a river", char_spans: [[11, 17]] }],
            answers: ["a river"],
          }],
        })
      ).join("\n") + "\n",
  );
}

let made: Promise<string> | undefined;
/** The fixture folder, made once for the file's tests. */
const fixtureDir = () =>
  made ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "pv-independence-" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch { /* gone */ }
    });
    await fixture(dir);
    return dir;
  })();

Deno.test("independence: the checker finds a question and an answer in the datasets themselves", async () => {
  const dir = await fixtureDir();
  // The same check on a grant of the dataset: it must fail (a test that cannot fail proves nothing).
  const bad: EncoderRun[] = [
    { half: "context", where: "by hand", read: [`${dir}/x.json`] },
    { half: "context", where: "by hand", read: [`${dir}/wiki.tsv`] },
    { half: "question", where: "by hand", read: [`${dir}/x.json`] },
    { half: "question", where: "by hand", read: [`${dir}/nq.qa.csv`] },
    { half: "question", where: "by hand", read: [dir] },
  ];
  const found = await leaks(bad);
  assert(found.length >= 5, found.join("\n"));
  assert(found.some((l) => l.includes("wiki.tsv") && l.includes("a question")), found.join("\n"));
  let refused = "";
  try {
    readGrants(["deno", "run", "--allow-read", "/r/pipeline/embed_context.ts"], "x");
  } catch (e) {
    refused = String(e);
  }
  assert(refused.includes("grants every file"), refused);
});

const fullRuns = new Map<string, Promise<string>>();
/** `full --data x.json FLAGS --out <fixture>/full-NAME` (made once): its output folder. */
const fullRun = (name: string, flags: readonly string[]): Promise<string> => {
  let p = fullRuns.get(name);
  if (p === undefined) {
    p = (async () => {
      const dir = await fixtureDir();
      const out = `${dir}/full-${name}`;
      const r = await runStage("pipeline/full.ts", [
        "--data",
        `${dir}/x.json`,
        ...flags,
        "--out",
        out,
      ]);
      assertEquals(r.code, 0, `${name}: ${r.stderr}`);
      return out;
    })();
    fullRuns.set(name, p);
  }
  return p;
};

Deno.test("independence: full (closed, --open, --open --corpus the dataset or a hard link of it)", async () => {
  const dir = await fixtureDir();
  const cases: [string, string[]][] = [
    ["closed", []],
    ["open", ["--open"]],
    ["corpus-self", ["--open", "--corpus", `${dir}/x.json`]],
    ["corpus-link", ["--open", "--corpus", `${dir}/xlink.json`]],
  ];
  const found: string[] = [];
  for (const [name, flags] of cases) {
    const out = await fullRun(name, flags);
    const { encoders } = encoderRunsOfLogs(`${out}/logs`);
    assertEquals(encoders.length, 2, `${name}: one process per encoder`);
    // The logged command lines are the ones summary.json records.
    const summary = JSON.parse(await Deno.readTextFile(`${out}/summary.json`));
    for (const p of summary.permissions as { stage: string; flags: string[] }[]) {
      const half = p.stage === "embed_context" ? "context" : "question";
      const read = p.flags.filter((f) => f.startsWith("--allow-read=")).flatMap((f) =>
        f.slice("--allow-read=".length).split(",")
      );
      assertEquals(encoders.find((e) => e.half === half)?.read, read, `${name}: ${p.stage}`);
    }
    found.push(...await problems(`full ${flags.join(" ")}`, encoders));
  }
  assertNone(found);
});

/** A run config file of `datasets` with the sparse-pi encoder (or `models`). */
async function runConfig(
  dir: string,
  name: string,
  datasets: unknown[],
  models: unknown[] = [{ abbr: "sp", encoder: "sparse-pi" }],
): Promise<string> {
  const file = `${dir}/${name}.ts`;
  await Deno.writeTextFile(
    file,
    `export const config = ${JSON.stringify({ datasets, models })};\n`,
  );
  return file;
}

/** The one run folder in `work`. */
const runFolder = (work: string) =>
  `${work}/${[...Deno.readDirSync(work)].find((e) => e.isDirectory)!.name}`;

let runDone: Promise<string> | undefined;
/** The run of every kind (made once): its run folder. */
const kindsRun = () =>
  runDone ??= (async () => {
    const dir = await fixtureDir();
    const cfg = await runConfig(dir, "kinds", [
      { abbr: "closed", path: `${dir}/x.json` },
      { abbr: "open", path: `${dir}/x.json`, open: true },
      { abbr: "self", path: `${dir}/x.json`, open: true, corpus: `${dir}/x.json` },
      { abbr: "gzcopy", path: `${dir}/x.json`, open: true, corpus: `${dir}/wiki.tsv` },
      { abbr: "shards", path: `${dir}/x.json`, open: { shards: 2 } },
      { abbr: "nq", type: "open", path: `${dir}/nq.qa.csv`, corpus: `${dir}/psgs.tsv` },
      {
        abbr: "nqshards",
        type: "open",
        path: `${dir}/nq.qa.csv`,
        corpus: `${dir}/psgs.tsv`,
        open: { topK: 5, shards: 2 },
      },
      {
        abbr: "trec",
        type: "open",
        format: "trec",
        path: `${dir}/trec.qa.csv`,
        corpus: `${dir}/corpus.jsonl`,
      },
      {
        abbr: "nqopen",
        type: "open",
        format: "open",
        path: `${dir}/nq-open.jsonl`,
        corpus: `${dir}/mrqa.jsonl`,
      },
    ]);
    const work = `${dir}/work`;
    const r = await runRun([cfg, "--work-dir", work]);
    assertEquals(r.code, 0, r.stderr);
    return runFolder(work);
  })();

/**
 * A generic set (field map) over a corpus: its encoders only (`--mode
 * encode`; the search task is not told a field map): its exit code,
 * stderr and run folder.
 */
const genericRun = async () => {
  const dir = await fixtureDir();
  const fields = { id: "qid", question: "q", answers: "gold", context: "passage" };
  const cfg = await runConfig(dir, "generic", [{
    abbr: "generic",
    type: "open",
    format: "jsonl",
    reader: { fields },
    path: `${dir}/gen.jsonl`,
    corpus: `${dir}/x.json`,
  }]);
  const work = `${dir}/work-generic`;
  const r = await runRun([cfg, "--work-dir", work, "--mode", "encode"]);
  return { code: r.code, stderr: r.stderr, folder: runFolder(work) };
};

Deno.test("independence: run configs of every kind, a corpus that is the dataset, shards", async () => {
  const run = await kindsRun();
  const { encoders, commands } = encoderRunsOfLogs(`${run}/logs`);
  assert(commands > encoders.length, "the other tasks' command lines are logged too");
  const found: string[] = [];
  for (
    const ds of [
      "closed",
      "open",
      "self",
      "gzcopy",
      "shards",
      "nq",
      "nqshards",
      "trec",
      "nqopen",
    ]
  ) {
    const mine = encoders.filter((e) => e.where.includes(`/${ds}.`));
    found.push(...await problems(`run dataset "${ds}"`, mine));
  }
  const generic = await genericRun();
  if (generic.code !== 0) {
    const last = generic.stderr.trimEnd().split("\n").filter((l) => l.includes("|")).pop();
    found.push(`run dataset "generic": exit ${generic.code}: ${last}`);
  }
  found.push(
    ...await problems(
      `run dataset "generic"`,
      encoderRunsOfLogs(`${generic.folder}/logs`).encoders,
    ),
  );
  assertNone(found);
});

/** The pids of the children of `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

/** Starts `serve args`, reads its server processes' command lines once it serves, stops it. */
async function serveCommandLines(args: readonly string[]): Promise<EncoderRun[]> {
  const argv = denoRunArgv(`${ROOT}/pipeline/serve.ts`, args, { all: true }, {
    config: null,
    prompt: true,
  });
  const proc = spawnChild(argv, { cwd: ROOT, env: { NO_COLOR: "1" } });
  proc.stdout.cancel();
  let text = "";
  const reader = proc.stderr.pipeThrough(new TextDecoderStream()).getReader();
  while (!/^serving http/m.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const runs: EncoderRun[] = [];
  try {
    assert(/^serving http/m.test(text), text);
    for (const pid of childrenOf(proc.pid)) {
      const cmd = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").slice(0, -1);
      const half = roleOf(cmd);
      if (half !== undefined) {
        runs.push({ half, where: `serve pid ${pid}`, read: readGrants(cmd, `serve pid ${pid}`) });
      }
    }
  } finally {
    proc.kill("SIGTERM");
    await proc.status;
    reader.releaseLock();
    await proc.stderr.cancel().catch(() => {});
  }
  return runs;
}

Deno.test("independence: serve over an index and over a folder of shards", async () => {
  const run = await kindsRun();
  // One server process over an index; one per shard (both hold passages) over the shards.
  for (
    const [index, processes] of [[`${run}/indexes/sp/nq`, 1], [
      `${run}/indexes/sp/nqshards`,
      2,
    ]] as const
  ) {
    const runs = await serveCommandLines([index, "--encoder", "sparse-pi", "--port", "0"]);
    assertEquals(runs.length, processes, `serve ${index}: its server processes`);
    assertNone(await problems(`serve ${index}`, runs, ["question"]));
  }
});

/**
 * The encoders trained for open search, `piqa-lstm-open` and its hybrid
 * `piqa-lstm-open+sparse` (ONNX halves, and the hybrid's `hybrid.json` and
 * sparse-pi model), in a run config: closed, open over a corpus, open
 * over a corpus in shards; then `serve` over the hybrid's shards.
 */
Deno.test("independence: piqa-lstm-open and piqa-lstm-open+sparse in a run config (closed, a corpus, shards) and serve", async () => {
  const dir = await fixtureDir();
  const cfg = await runConfig(dir, "open-encoders", [
    { abbr: "closed", path: `${dir}/x.json` },
    { abbr: "corpus", path: `${dir}/x.json`, open: true, corpus: `${dir}/psgs.tsv` },
    { abbr: "shards", path: `${dir}/x.json`, open: { shards: 2 }, corpus: `${dir}/corpus.jsonl` },
  ], [{ abbr: "po", encoder: "piqa-lstm-open" }, { abbr: "ph", encoder: "piqa-lstm-open+sparse" }]);
  const work = `${dir}/work-open-encoders`;
  const r = await runRun([cfg, "--work-dir", work]);
  assertEquals(r.code, 0, r.stderr);
  const run = runFolder(work);
  const { encoders } = encoderRunsOfLogs(`${run}/logs`);
  const found: string[] = [];
  for (const m of ["po", "ph"]) {
    for (const ds of ["closed", "corpus", "shards"]) {
      const mine = encoders.filter((e) => e.where.includes(`/${m}/${ds}.`));
      found.push(...await problems(`run ${m} dataset "${ds}"`, mine));
      // The model's own files, each half its own ONNX graph only.
      const granted = (half: string) =>
        mine.filter((e) => e.half === half).flatMap((e) => e.read).join(",");
      const ctx = granted("context"), qst = granted("question");
      assert(ctx.includes("/piqa-lstm-open/context.onnx") && !ctx.includes("question.onnx"), ctx);
      assert(qst.includes("/piqa-lstm-open/question.onnx") && !qst.includes("context.onnx"), qst);
      assertEquals(qst.includes("/piqa-lstm-open/hybrid.json"), m === "ph", qst);
    }
  }
  const served = await serveCommandLines([
    `${run}/indexes/ph/shards`,
    "--encoder",
    "piqa-lstm-open+sparse",
    "--port",
    "0",
  ]);
  assertEquals(served.length, 2, "serve: a server process per shard");
  found.push(...await problems("serve piqa-lstm-open+sparse", served, ["question"]));
  assertNone(found);
});

Deno.test("report: the run folder of open sets searched over corpora, and a full --open --corpus folder, are reportable", async () => {
  const run = await kindsRun();
  const out = `${await fixtureDir()}/report`;
  const r = await runStage("pipeline/report.ts", [run, "--out", out]);
  assertEquals(r.code, 0, r.stderr);
  const report = JSON.parse(await Deno.readTextFile(`${out}/report.json`));
  type Sys = {
    name: string;
    predictions: string;
    rows: string;
    answered: number;
    em: { value: number };
  };
  const systems = new Map<string, Sys>(
    report.datasets.map((d: { name: string; systems: Sys[] }) => [d.name, d.systems[0]]),
  );
  // Over a corpus the system's answers are the search's, scored as the run's eval task scored them.
  for (const ds of ["self", "gzcopy", "nq", "nqshards", "trec", "nqopen"]) {
    const s = systems.get(ds);
    assert(s !== undefined, `dataset ${ds} is not in the report`);
    assertEquals(s.predictions, `${run}/open/sp/${ds}.json`, ds);
    assertEquals(s.rows, `${run}/predictions/sp/${ds}.rows.ndjson`, ds);
    const result = JSON.parse(await Deno.readTextFile(`${run}/results/sp/${ds}.json`));
    assertEquals(s.em.value, result.exact_match, ds);
    assertEquals(s.answered, result.answered, ds);
  }
  // The closed sets keep merge's answers.
  assertEquals(systems.get("closed")?.predictions, `${run}/predictions/sp/closed.json`);
  assertEquals(systems.get("open")?.predictions, `${run}/predictions/sp/open.json`);
  // `report` on a `full --open --corpus` folder: the search's answers, open/pred.json.
  const full = await fullRun("corpus-self", ["--open", "--corpus", `${await fixtureDir()}/x.json`]);
  const f = await runStage("pipeline/report.ts", [full, "--out", `${out}-full`]);
  assertEquals(f.code, 0, f.stderr);
  const fr = JSON.parse(await Deno.readTextFile(`${out}-full/report.json`));
  assertEquals(fr.datasets[0].systems[0].predictions, `${full}/open/pred.json`);
  assertEquals(fr.datasets[0].systems[0].answered, 8);
});
