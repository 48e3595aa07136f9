/**
 * SIGINT while a stage works and while it finishes: `merge` (every
 * question missing, 2 workers, so it runs a few seconds and then commits `pred.json`)
 * gets SIGINTs, one every few milliseconds until it exits, from a varied
 * delay after it started its work (its first `Missing` line: its signal
 * listeners are in place) or after its output appeared (the commit).
 * Whenever that is, the process itself handles the signal: it exits 130
 * with the line `merge: interrupted (SIGINT)`, or 0 with the complete
 * predictions file when the work was done before any signal came; it is
 * never killed by the signal (no line) and never exits 0 after printing
 * that it was interrupted. The children are spawned from Deno directly, so
 * SIGINT is not ignored in them.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, ROOT, spawnChild } from "../_util.ts";

/**
 * Tries: when each try's first SIGINT goes, in ms after the first `Missing`
 * line (mid-work) or after `pred.json` appears (its commit: the process is
 * finishing).
 */
const TRIES: readonly { readonly after: "work" | "commit"; readonly delay: number }[] = [
  { after: "work", delay: 0 },
  { after: "work", delay: 150 },
  { after: "work", delay: 400 },
  { after: "commit", delay: 0 },
  { after: "commit", delay: 0 },
  { after: "commit", delay: 2 },
  { after: "commit", delay: 5 },
];
/** At most this many SIGINTs per try, 3 ms apart. */
const MAX_SIGNALS = 2000;

interface Outcome {
  code: number;
  signal: Deno.Signal | null;
  stderrTail: string;
  pred: string | undefined;
}

async function tryOnce(
  dir: string,
  after: "work" | "commit",
  delay: number,
): Promise<Outcome> {
  const pred = `${dir}/pred.json`;
  await Deno.remove(pred).catch(() => {});
  // Spawned: the test sends it SIGINT while it runs.
  const child = spawnChild([
    Deno.execPath(),
    "run",
    "-A",
    `${ROOT}/pipeline/merge.ts`,
    DEV_GZ,
    `${dir}/empty`,
    `${dir}/empty`,
    pred,
    // Workers, as on a dump of real size: the run lasts seconds, so the early tries' signals
    // come mid-work (in this thread, the default for an empty dump, it ends in a fraction of
    // a second and the first try's signal may come after its end on a loaded machine).
    "--workers",
    "2",
  ], { cwd: ROOT, stdout: "null", env: { NO_COLOR: "1" } });
  let exited = false;
  const status = child.status.then((s) => (exited = true, s));
  // Read stderr as it comes; the first line means the stage's work has begun.
  let text = "";
  let started: () => void = () => {};
  const begun = new Promise<void>((r) => started = r);
  const reading = (async () => {
    const dec = new TextDecoder();
    for await (const chunk of child.stderr) {
      text += dec.decode(chunk, { stream: true });
      if (text.includes("\n")) started();
      if (text.length > 4096) text = text.slice(-4096);
    }
    started();
  })();
  await begun;
  if (after === "commit") {
    // Poll for the renamed file (bounded: merge ends within its run time).
    for (let i = 0; i < 60_000 && !exited; i++) {
      try {
        await Deno.lstat(pred);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 1));
      }
    }
  }
  await new Promise((r) => setTimeout(r, delay));
  for (let n = 0; n < MAX_SIGNALS && !exited; n++) {
    try {
      child.kill("SIGINT");
    } catch {
      break; // it has exited
    }
    await new Promise((r) => setTimeout(r, 3));
  }
  const s = await status;
  await reading;
  let out: string | undefined;
  try {
    out = await Deno.readTextFile(pred);
  } catch { /* none */ }
  return {
    code: s.code,
    signal: s.signal,
    stderrTail: text.trimEnd().split("\n").slice(-2).join("\n"),
    pred: out,
  };
}

Deno.test("merge: SIGINTs at any moment of its end give 130 with its line, or 0 with the whole output", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sigrace-" });
  try {
    await Deno.mkdir(`${dir}/empty`);
    const codes: number[] = [];
    for (const { after, delay } of TRIES) {
      const o = await tryOnce(dir, after, delay);
      const what = `${delay} ms after the ${after}: ${o.code} ${JSON.stringify(o.stderrTail)}`;
      // The stage handled the signal itself: not killed by it.
      assertEquals(o.signal, null, what);
      const last = o.stderrTail.split("\n").at(-1);
      if (o.code === 130) {
        assertEquals(last, "merge: interrupted (SIGINT)", what);
      } else {
        assertEquals(o.code, 0, what);
        assert(!o.stderrTail.includes("interrupted"), what);
        // Every question of the dataset is in the predictions, unanswered.
        assertEquals(o.pred, "{}", what);
      }
      codes.push(o.code);
    }
    // The early SIGINTs come while merge is still reading: those interrupt it.
    assertEquals(codes[0], 130);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
