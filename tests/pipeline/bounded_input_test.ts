/**
 * Hostile input that used to run for ever or without bound: a CuratedTREC
 * pattern that backtracks catastrophically (cut off, told by question,
 * counted as not matched, and the stage still stops on SIGINT), files that
 * are not regular files (refused by name, exit 2, by every command that
 * reads one), and detected formats held to the same line bounds as named
 * ones.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, spawnChild } from "../_util.ts";
import { denoRunArgv } from "../../runs/sandbox/sandbox.ts";

const tmp = Deno.makeTempDirSync({ prefix: "pv-bounded-" });
globalThis.addEventListener("unload", () => Deno.removeSync(tmp, { recursive: true }));

const EVIL = "a".repeat(40) + "!";

Deno.test("evaluate --format trec: a pattern that backtracks for ever is cut off, named on stderr, counted as not matched", async () => {
  const data = `${tmp}/curatedtrec-test.qa.csv`;
  Deno.writeTextFileSync(data, 'what is it\t["(a+)+$"]\nwho\t["b"]\n');
  const pred = `${tmp}/trec_pred.json`;
  Deno.writeTextFileSync(pred, JSON.stringify({ "0": EVIL, "1": "b" }));
  const r = await stageWithin("evaluate", [data, pred, "--format", "trec"]);
  assertEquals(r.killed, false, "still running after 60 s");
  assertEquals(r.code, 0, r.stderr);
  assertEquals(r.stdout.trim(), '{"exact_match": 50.0, "f1": null}');
  assertEquals(r.stderr.trim().split("\n"), [
    `${data}: question "0": Python regular expression "(a+)+$" cut off after 10000000 steps ` +
    "(catastrophic backtracking) on a text of 41 characters; counted as not matched",
  ]);
});

Deno.test("evaluate --format trec: SIGINT stops a set of patterns that all backtrack for ever (exit 130)", async () => {
  const n = 2000; // about 0.1 s each: minutes in all
  // evaluate writes its stderr lines 64 KiB at a time: a long path in every line makes the
  // first write come after about 100 patterns, not 450 (seconds, not half a minute).
  const dir = `${tmp}/${"many-patterns-".repeat(16)}/${"backtracking-".repeat(18)}`;
  Deno.mkdirSync(dir, { recursive: true });
  const data = `${dir}/many-trec.qa.csv`;
  Deno.writeTextFileSync(
    data,
    Array.from({ length: n }, (_, i) => `q${i}\t["(a+)+$"]\n`).join(""),
  );
  const pred = `${dir}/many_pred.json`;
  Deno.writeTextFileSync(
    pred,
    JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [String(i), EVIL]))),
  );
  const argv = denoRunArgv(`${ROOT}/pipeline/evaluate.ts`, [data, pred, "--format", "trec"], {
    all: true,
  }, { config: null, prompt: true });
  const child = spawnChild(argv, { cwd: ROOT, stdout: "null" });
  // A stage that never starts scoring, or is deaf to SIGINT, is ended here: the test fails on its exit.
  const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
  // Wait for the first cut-off line: the scoring has begun.
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let err = "";
  let done = false;
  while (!done && !err.includes("cut off")) {
    const r = await reader.read();
    done = r.done;
    if (r.value !== undefined) err += r.value;
  }
  if (!done) child.kill("SIGINT");
  while (!done) {
    const r = await reader.read();
    done = r.done;
    if (r.value !== undefined) err += r.value;
  }
  const st = await child.status;
  clearTimeout(guard);
  assertEquals(st.code, 130, err.slice(-400));
  assertMatch(err, /evaluate: interrupted \(SIGINT\)\n$/);
  assert(err.split("\n").filter((l) => l.includes("cut off")).length < n);
});

/** Runs `pipeline/<stage>.ts args` (all permissions), ended after `limitS` seconds if still running. */
async function stageWithin(
  stage: string,
  args: readonly string[],
  limitS = 60,
): Promise<{ code: number; stdout: string; stderr: string; killed: boolean }> {
  const argv = denoRunArgv(`${ROOT}/pipeline/${stage}.ts`, args, { all: true }, {
    config: null,
    prompt: true,
  });
  const child = spawnChild(argv, { cwd: ROOT });
  let killed = false;
  const guard = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, limitS * 1000);
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  const st = await child.status;
  clearTimeout(guard);
  return { code: st.code, stdout, stderr, killed };
}

Deno.test("every command that reads a file refuses a character device and a named pipe by name (exit 2)", async () => {
  const fifo = `${tmp}/pipe`;
  new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
  Deno.symlinkSync("/dev/zero", `${tmp}/zero.npz`);
  Deno.symlinkSync(fifo, `${tmp}/pipe.npz`);
  const small = `${tmp}/small.json`;
  Deno.writeTextFileSync(
    small,
    JSON.stringify({
      version: "1.1",
      data: [{
        title: "T",
        paragraphs: [{
          context: "Ada built it.",
          qas: [{
            id: "q1",
            question: "Who built it?",
            answers: [{ text: "Ada", answer_start: 0 }],
          }],
        }],
      }],
    }),
  );
  const pred = `${tmp}/small_pred.json`;
  Deno.writeTextFileSync(pred, '{"q1": "Ada"}');
  const kinds: [string, string][] = [["/dev/zero", "a character device"], [fifo, "a named pipe"]];
  for (const [f, kind] of kinds) {
    const npz = f === fifo ? `${tmp}/pipe.npz` : `${tmp}/zero.npz`;
    const cases: [string, string[], string][] = [
      ["full", ["--open", "--corpus", f, "--out", `${tmp}/full_out`], f],
      ["report", [`A=${pred}`, "--data", small, "--labels", f, "--out", `${tmp}/rep`], f],
      ["inspect", [npz], npz],
      ["records", [f], f],
      ["records", [f, "--kind", "paragraph"], f],
      ["evaluate", [f, pred], f],
      ["evaluate", [small, f], f],
      ["evaluate", [small, pred, "--topk-file", f], f],
      ["split", [f, `${tmp}/c.json`, `${tmp}/q.json`], f],
      ["report", [`A=${f}`, "--data", small, "--out", `${tmp}/rep`], f],
      ["bem", [small, pred, "--model", f], f],
      ["evaluate", [small, pred, "--bem", f], f],
      ["run", [f], f],
    ];
    for (const [stage, args, named] of cases) {
      const r = await stageWithin(stage, args, 20);
      const what = `${stage} ${args.join(" ")}`;
      assertEquals(r.killed, false, `${what}: still running after 20 s`);
      assertEquals(r.code, 2, `${what}: ${r.stderr}`);
      assertEquals(r.stdout, "", `${what}: nothing printed before the refusal`);
      assertEquals(
        r.stderr.trim().split("\n").at(-1),
        `${stage}: ${named}: is ${kind}, not a regular file`,
        what,
      );
    }
  }
  for (const d of ["full_out", "rep", "c.json", "q.json"]) {
    assertEquals(await Deno.stat(`${tmp}/${d}`).then(() => true, () => false), false, d);
  }
});

/**
 * Writes `prefix`, `n` bytes of `unit` repeated (`a` by default; `n` a multiple of 1 MiB when
 * `unit` is longer than one byte) and `suffix` to `path` gzipped, streamed (never held whole).
 */
async function gzipOf(
  path: string,
  prefix: string,
  n: number,
  suffix: string,
  unit = "a",
): Promise<void> {
  const enc = new TextEncoder();
  const block = enc.encode(unit.repeat((1 << 20) / unit.length));
  let left = n;
  let state = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (state === 0) {
        c.enqueue(enc.encode(prefix));
        state = 1;
      } else if (left > 0) {
        const k = Math.min(left, block.byteLength);
        c.enqueue(block.slice(0, k));
        left -= k;
      } else if (state === 1) {
        c.enqueue(enc.encode(suffix));
        state = 2;
      } else c.close();
    },
  });
  await Deno.writeFile(
    path,
    body.pipeThrough(new CompressionStream("gzip") as unknown as TransformStream<Uint8Array>),
  );
}

Deno.test("a detected format has the line and string bounds of a named one, with the readers' message", async () => {
  const big = 24 << 20; // over the 16 MiB bound
  const pred = `${tmp}/p0.json`;
  Deno.writeTextFileSync(pred, '{"0": "a", "q1": "a"}');
  const line = `${tmp}/one-line.txt.gz`;
  await gzipOf(line, "", big, "\n");
  const jsonl = `${tmp}/nq.jsonl.gz`;
  await gzipOf(jsonl, '{"question": "', big, '", "answer": ["x"]}\n');
  const squad = `${tmp}/dev.json.gz`;
  await gzipOf(
    squad,
    '{"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "',
    big,
    '", "qas": [{"id": "q1", "question": "q?", "answers": [{"text": "a", "answer_start": 0}]}]}]}]}',
  );
  // An article of 40 MiB of tiny values: no string is long, the article is.
  const articles = `${tmp}/articles.json.gz`;
  await gzipOf(
    articles,
    '{"version": "1.1", "data": [{"title": "T", "paragraphs": [',
    40 << 20,
    "1]}]}",
    "1,",
  );
  const lineMsg = "line 1: line longer than 16777216 bytes";
  const stringMsg = "byte 70: a string longer than 16777216 bytes " +
    "(phraseval reads no string, as no line, longer than 16 MiB)";
  const articleMsg = 'byte 28: an element of "data" longer than 33554432 bytes ' +
    "(an article: phraseval reads none longer than 32 MiB)";
  const cases: [string, string[], string][] = [
    ["records", [line], `${line}: ${lineMsg}`],
    ["evaluate", [line, pred], `${line}: ${lineMsg}`],
    ["records", [jsonl], `${jsonl}: ${lineMsg}`],
    ["evaluate", [jsonl, pred], `${jsonl}: ${lineMsg}`],
    ["records", [jsonl, "--format", "open"], `${jsonl}: ${lineMsg}`],
    ["records", [squad, "--kind", "paragraph"], `${squad}: ${stringMsg}`],
    ["evaluate", [squad, pred], `${squad}: ${stringMsg}`],
    ["records", [articles], `${articles}: ${articleMsg}`],
    ["evaluate", [articles, pred], `${articles}: ${articleMsg}`],
  ];
  for (const [stage, args, want] of cases) {
    const r = await stageWithin(stage, args);
    const what = `${stage} ${args.join(" ")}`;
    assertEquals(r.killed, false, what);
    assertEquals(r.code, 2, `${what}: ${r.stderr.slice(-300)}`);
    assertEquals(r.stderr.trim(), `${stage}: ${want}`, what);
  }
});
