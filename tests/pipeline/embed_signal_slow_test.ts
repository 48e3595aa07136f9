/**
 * SIGINT or SIGTERM to `embed_question` while it writes its dump: it exits
 * 130 or 143 with its line (`embed_question: interrupted (SIGINT)`), not
 * killed by the signal, and keeps the complete files it wrote and its
 * manifest (`encoders/embed.ts`, `docs/stages.md`: only bad input, which a
 * rerun would meet again, takes them back), so a rerun finishes the dump.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { childResult, listDir, ROOT, runStage, spawnChild } from "../_util.ts";
import { DUMP_MANIFEST } from "../../io/manifest.ts";

const TMP = await Deno.makeTempDir({ prefix: "pv-embed-sig-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

/** 5,000 NDJSON question records `q0`..`q4999`: a second or two of sparse-pi. */
const INPUT = `${TMP}/q.ndjson`;
const N = 5000;
Deno.writeTextFileSync(
  INPUT,
  Array.from(
    { length: N },
    (_, i) => JSON.stringify({ kind: "question", id: `q${i}`, question: `Where is ${i}?` }),
  ).join("\n") + "\n",
);

const npzCount = (dir: string): number => {
  try {
    return [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".npz")).length;
  } catch {
    return 0;
  }
};

/** Starts `embed_question INPUT out`, sends `signal` once `more` new dump files are there. */
async function interrupt(out: string, signal: "SIGINT" | "SIGTERM", more: number) {
  const start = npzCount(out);
  const child = spawnChild([
    Deno.execPath(),
    "run",
    "-A",
    `${ROOT}/pipeline/embed_question.ts`,
    INPUT,
    out,
    "--sparse",
  ]);
  const until = Date.now() + 60_000;
  while (npzCount(out) < start + more && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const seen = npzCount(out);
  child.kill(signal);
  const r = await childResult(child);
  assert(seen >= start + more, `the run wrote ${seen - start} files before the signal`);
  return r;
}

for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  Deno.test(`embed_question: ${signal} mid-dump exits ${code} and keeps its complete files; a rerun finishes them`, async () => {
    const out = `${TMP}/${signal}`;
    const r = await interrupt(out, signal, 300);
    assertEquals([r.code, r.signal], [code, null], r.stderr);
    assertEquals(r.stderr.trimEnd().split("\n").at(-1), `embed_question: interrupted (${signal})`);
    // Only complete files (no temporary one) and the manifest: a stopped run is resumed.
    const kept = await listDir(out);
    assert(kept.includes(DUMP_MANIFEST), kept.slice(0, 5).join());
    const done = npzCount(out);
    assert(done >= 300 && done < N, String(done));
    assertEquals(kept.length, done + 1, "no file but the dump files and the manifest");
    const rest = await runStage("pipeline/embed_question.ts", [INPUT, out, "--sparse"]);
    assertEquals(rest.code, 0, rest.stderr);
    assertEquals(
      rest.stderr,
      `embed_question: ${N - done} questions written, ${done} already complete ` +
        "(sparse-pi, d=4194304)\n",
    );
    assertEquals((await listDir(out)).length, N + 1);
  });
}
