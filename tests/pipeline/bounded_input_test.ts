/**
 * Hostile input that used to run for ever or without bound: a CuratedTREC
 * pattern that backtracks catastrophically (cut off, told by question,
 * counted as not matched, and the stage still stops on SIGINT), files that
 * are not regular files (refused by name, exit 2, by every command that
 * reads one), and detected formats held to the same line bounds as named
 * ones.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, runStage, spawnChild } from "../_util.ts";
import { denoRunArgv } from "../../runs/sandbox/sandbox.ts";

const tmp = Deno.makeTempDirSync({ prefix: "pv-bounded-" });
globalThis.addEventListener("unload", () => Deno.removeSync(tmp, { recursive: true }));

const EVIL = "a".repeat(40) + "!";

Deno.test("evaluate --format trec: a pattern that backtracks for ever is cut off, named on stderr, counted as not matched", async () => {
  const data = `${tmp}/curatedtrec-test.qa.csv`;
  Deno.writeTextFileSync(data, 'what is it\t["(a+)+$"]\nwho\t["b"]\n');
  const pred = `${tmp}/trec_pred.json`;
  Deno.writeTextFileSync(pred, JSON.stringify({ "0": EVIL, "1": "b" }));
  const r = await runStage("pipeline/evaluate.ts", [data, pred, "--format", "trec"]);
  assertEquals(r.code, 0, r.stderr);
  assertEquals(r.stdout.trim(), '{"exact_match": 50.0, "f1": null}');
  assertEquals(r.stderr.trim().split("\n"), [
    `${data}: question "0": Python regular expression "(a+)+$" cut off after 10000000 steps ` +
    "(catastrophic backtracking) on a text of 41 characters; counted as not matched",
  ]);
});

Deno.test("evaluate --format trec: SIGINT stops a set of patterns that all backtrack for ever (exit 130)", async () => {
  const n = 2000; // about 0.1 s each: minutes in all
  const data = `${tmp}/many-trec.qa.csv`;
  Deno.writeTextFileSync(
    data,
    Array.from({ length: n }, (_, i) => `q${i}\t["(a+)+$"]\n`).join(""),
  );
  const pred = `${tmp}/many_pred.json`;
  Deno.writeTextFileSync(
    pred,
    JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [String(i), EVIL]))),
  );
  const argv = denoRunArgv(`${ROOT}/pipeline/evaluate.ts`, [data, pred, "--format", "trec"], {
    all: true,
  }, { config: null, prompt: true });
  const child = spawnChild(argv, { cwd: ROOT, stdout: "null" });
  // Wait for the first cut-off line: the scoring has begun.
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let err = "";
  while (!err.includes("cut off")) {
    const { value, done } = await reader.read();
    if (done) break;
    err += value;
  }
  child.kill("SIGINT");
  // A stage deaf to SIGINT is ended here, and the test fails on its exit.
  const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    err += value;
  }
  const st = await child.status;
  clearTimeout(guard);
  assertEquals(st.code, 130, err.slice(-400));
  assertMatch(err, /evaluate: interrupted \(SIGINT\)\n$/);
  assert(err.split("\n").filter((l) => l.includes("cut off")).length < n);
});
