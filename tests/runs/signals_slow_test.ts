/**
 * Children and signals: `full` sent SIGINT or SIGTERM while both encoders
 * run stops and awaits them (exit 130 / 143, no `deno` process of the run
 * left, no temporary file) and a rerun into the same folder gives the same
 * `pred.json` as a clean run; one encoder failing stops the other at once
 * (in `full` and in `runStages` itself); `split` interrupted mid-write
 * leaves no temporary file, and a temporary file left by a killed `split`
 * or `merge` (SIGKILL) is removed by the next run.
 *
 * Every process under test is spawned directly (`spawnChild`, not through
 * a shell's `&`), so SIGINT has its default disposition in it.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../_assert.ts";
import {
  canMount,
  childResult,
  DEV_FULL_PRED_SHA256,
  devJson,
  ROOT,
  runArgv,
  sha256File,
  spawnChild,
} from "../_util.ts";
import { DEFAULT_ENCODER, encoderSpec } from "../../encoders/registry.ts";
import { type Manifest, writeManifest } from "../../io/manifest.ts";
import { DEFAULT_DATA, runManifest } from "../../runs/full.ts";
import { exitCodeOf } from "../../pipeline/_cli.ts";
import { RunError } from "../../runs/errors.ts";
import { runStages } from "../../runs/single.ts";
import type { Plan, Task } from "../../runs/plan/task.ts";

/** The permissions of `deno task full`. */
const FULL_PERMS = ["--allow-read", "--allow-write", "--allow-run"];

/** Spawns a stage: the signal tests kill the child it returns while it runs. */
function spawnStage(script: string, perms: readonly string[], args: readonly string[]) {
  return spawnChild([Deno.execPath(), "run", ...perms, `${ROOT}/pipeline/${script}`, ...args], {
    cwd: ROOT,
    env: { NO_COLOR: "1" },
  });
}

/** Live processes (not zombies) whose command line mentions `deno` and `needle`. */
function denoProcessesMentioning(needle: string): string[] {
  const found: string[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    let cmdline: string;
    try {
      cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
    } catch {
      continue; // gone
    }
    const argv = cmdline.split("\0").filter((s) => s !== "");
    if (argv.some((a) => /deno/.test(a)) && argv.some((a) => a.includes(needle))) {
      found.push(`${e.name}: ${argv.join(" ").slice(0, 200)}`);
    }
  }
  return found;
}

/** Every `*.tmp` file under `dir`. */
function tmpFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory) walk(p);
      else if (e.name.endsWith(".tmp")) out.push(p);
    }
  };
  walk(dir);
  return out;
}

function count(dir: string): number {
  try {
    return [...Deno.readDirSync(dir)].length;
  } catch {
    return 0;
  }
}

/** Waits (at most `ms`) until `cond` holds; false when it never did. */
async function until(cond: () => boolean, ms = 120000): Promise<boolean> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** The manifest `full` writes for its default job (sparse-pi on dev), as a resume finds it. */
function defaultManifest(): Promise<Manifest> {
  return Effect.runPromise(
    Effect.flatMap(
      encoderSpec(DEFAULT_ENCODER),
      (spec) => runManifest(DEFAULT_DATA, spec, false, undefined, undefined),
    ),
  );
}

/**
 * Starts `full` on the dev set into a fresh folder, waits until both
 * encoders have written files, sends `signal`, and checks the aftermath.
 */
async function interruptFull(
  signal: "SIGINT" | "SIGTERM",
  code: number,
  viaTask = false,
): Promise<string> {
  const out = await Deno.makeTempDir({ prefix: `pv-sig-${signal}-` });
  // The test sends `signal` to it while it runs.
  const child = viaTask
    ? spawnChild([Deno.execPath(), "task", "full", "--out", out], {
      cwd: ROOT,
      env: { NO_COLOR: "1" },
    })
    : spawnStage("full.ts", FULL_PERMS, ["--out", out]);
  const started = await until(() =>
    count(`${out}/dumps/context_emb`) > 20 && count(`${out}/dumps/question_emb`) > 20
  );
  try {
    child.kill(signal);
    const r = await childResult(child);
    assert(started, `the encoders never wrote files: ${r.stderr}`);
    assertEquals(r.code, code, r.stderr);
    assertEquals(r.signal, null, "exited by itself, not killed by the signal");
    assertStringIncludes(r.stderr, `full: interrupted (${signal})`);
    assertEquals(denoProcessesMentioning(out), [], "no deno process of the run is left");
    assertEquals(tmpFiles(out), [], "no temporary file is left");
    // Both encoders were stopped before they finished (2067 paragraphs: 4134 files).
    assert(count(`${out}/dumps/context_emb`) < 4134, "embed_context was stopped");
    for (const half of ["context", "question"]) {
      const log = Deno.readTextFileSync(`${out}/logs/encode_${half}.log`);
      assertMatch(log, /== exit (143|137) after [\d.]+ s\n$/, `encode_${half} ended by our signal`);
    }
  } catch (e) {
    // Tidy up after a failure: what is still running of this run, and its folder.
    for (const p of denoProcessesMentioning(out)) Deno.kill(Number(p.split(":")[0]), "SIGKILL");
    await Deno.remove(out, { recursive: true }).catch(() => {});
    throw e;
  }
  return out;
}

Deno.test("full: SIGINT mid-encode stops and awaits both encoders, exit 130; a rerun gives the same pred.json", async () => {
  const out = await interruptFull("SIGINT", 130);
  try {
    const r = await childResult(spawnStage("full.ts", FULL_PERMS, ["--out", out]));
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await sha256File(`${out}/pred.json`), DEV_FULL_PRED_SHA256);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("deno task full: SIGINT to the task process reaches full; nothing left, exit 130", async () => {
  const out = await interruptFull("SIGINT", 130, true);
  await Deno.remove(out, { recursive: true });
});

Deno.test("full: SIGTERM mid-encode stops and awaits both encoders, exit 143", async () => {
  const out = await interruptFull("SIGTERM", 143);
  await Deno.remove(out, { recursive: true });
});

/** Whether this process may mount a tmpfs (root in a namespace that allows it). */
const MOUNT = canMount();

Deno.test({
  name:
    "full: one encoder failing (read-only question_emb) stops the other at once; a rerun gives the same pred.json",
  ignore: !MOUNT,
  fn: async () => {
    const out = await Deno.makeTempDir({ prefix: "pv-sig-fail-" });
    const qdir = `${out}/dumps/question_emb`;
    // The run manifest of this job (it holds no paths), as a resume finds it:
    // a folder with dumps and no manifest would be refused before any task.
    await Effect.runPromise(writeManifest(`${out}/.phraseval-run.json`, await defaultManifest()));
    Deno.mkdirSync(qdir, { recursive: true });
    const mount = await runArgv(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", qdir]);
    assert(mount.code === 0, mount.stderr);
    let mounted = true;
    try {
      const r = await childResult(spawnStage("full.ts", FULL_PERMS, ["--out", out]));
      assertEquals(denoProcessesMentioning(out), [], "no deno process of the run is left");
      assertEquals(r.code, 1, r.stderr); // a write the system refused: the work failed
      assertMatch(r.stderr, /^full: encode_question failed \(exit 1\): .*Read-only file system/m);
      assertEquals(tmpFiles(out), []);
      // embed_context was stopped, not left to finish.
      assert(count(`${out}/dumps/context_emb`) < 4134, "embed_context was stopped");
      assertMatch(
        Deno.readTextFileSync(`${out}/logs/encode_context.log`),
        /== exit (143|137) after [\d.]+ s\n$/,
      );
      await runArgv(["umount", qdir]);
      mounted = false;
      const again = await childResult(spawnStage("full.ts", FULL_PERMS, ["--out", out]));
      assertEquals(again.code, 0, again.stderr);
      assertEquals(await sha256File(`${out}/pred.json`), DEV_FULL_PRED_SHA256);
    } finally {
      if (mounted) await runArgv(["umount", qdir]);
      await Deno.remove(out, { recursive: true });
    }
  },
});

/** A task that runs `code` in a bare Deno process (nothing granted). */
function evalTask(dir: string, stage: Task["stage"], code: string, done: string): Task {
  return {
    id: `${stage}/t`,
    stage,
    model: "m",
    dataset: "d",
    part: null,
    range: null,
    items: 1,
    unit: "paragraphs",
    argv: [Deno.execPath(), "eval", "--no-prompt", code],
    log: `${dir}/${stage}.log`,
    watch: [`${dir}/${stage}.log`],
    check: { kind: "files", files: [done] },
    deps: [],
    gres: null,
  };
}

Deno.test("runStages: a task that fails stops its running sibling at once; exit 2 passes through", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sig-stages-" });
  try {
    const tasks = [
      evalTask(dir, "encode_context", "setInterval(() => {}, 1000)", `${dir}/never`),
      evalTask(dir, "encode_question", "console.error('bad input here'); Deno.exit(2)", `${dir}/x`),
    ];
    const plan = { runDir: dir, tasks } as unknown as Plan;
    // A safety net, not a measurement: a runStages that waits for its sleeping
    // sibling would wait for the 1800 s task timeout; after 60 s the sleeper
    // is killed here and the test fails below.
    const sleeper = setTimeout(() => {
      for (const p of denoProcessesMentioning("setInterval(() => {}, 1000)")) {
        Deno.kill(Number(p.split(":")[0]), "SIGKILL");
      }
    }, 60000);
    const exit = await Effect.runPromiseExit(
      runStages(plan, ["encode_context", "encode_question"], () => {}),
    );
    clearTimeout(sleeper);
    assert(exit._tag === "Failure", "runStages fails");
    const err = (exit.cause as unknown as { reasons: { error?: unknown }[] }).reasons
      .map((r) => r.error).find((e) => e !== undefined);
    assert(err instanceof RunError, `a RunError: ${err}`);
    assertStringIncludes(err.message, "encode_question failed (exit 2): bad input here");
    assertEquals(exitCodeOf(err), 2);
    // The sleeper was stopped (SIGTERM) and awaited, not left to the 30-minute timeout.
    assertMatch(
      Deno.readTextFileSync(`${dir}/encode_context.log`),
      /== exit 143 after [\d.]+ s\n$/,
    );
    assertEquals(denoProcessesMentioning("setInterval(() => {}, 1000)"), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The dev set five times over (unique titles and ids): a split that takes seconds. */
async function bigDataset(dir: string): Promise<string> {
  const dev = JSON.parse(await Deno.readTextFile(await devJson()));
  const data = [];
  for (let k = 0; k < 5; k++) {
    for (const a of dev.data) {
      data.push({
        ...a,
        title: `${a.title}_${k}`,
        paragraphs: a.paragraphs.map((p: { qas: { id: string }[] }) => ({
          ...p,
          qas: p.qas.map((q) => ({ ...q, id: `${q.id}_${k}` })),
        })),
      });
    }
  }
  const path = `${dir}/big.json`;
  await Deno.writeTextFile(path, JSON.stringify({ version: "1.1", data }));
  return path;
}

for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  Deno.test(`split: ${signal} mid-write removes its temporary files, exit ${code}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "pv-sig-split-" });
    try {
      const data = await bigDataset(dir);
      const out = `${dir}/out`;
      Deno.mkdirSync(out);
      const child = spawnStage("split.ts", ["--allow-read", "--allow-write"], [
        data,
        `${out}/c.json`,
        `${out}/q.json`,
      ]);
      // Writing has started once the temporary files hold bytes.
      const writing = await until(() =>
        [...Deno.readDirSync(out)].some((e) =>
          e.name.endsWith(".tmp") && Deno.statSync(`${out}/${e.name}`).size > 0
        )
      );
      child.kill(signal);
      const r = await childResult(child);
      assert(writing, `split never wrote: ${r.stderr}`);
      assertEquals([...Deno.readDirSync(out)].map((e) => e.name), [], "nothing left behind");
      assertEquals([r.code, r.signal], [code, null], r.stderr);
      assertEquals(r.stderr.trim(), `split: interrupted (${signal})`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("split and merge: a temporary file left by a killed run is removed by the next run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sig-stale-" });
  try {
    const data = `${dir}/d.json`;
    const context = "Paris is the capital and largest city of France.";
    await Deno.writeTextFile(
      data,
      JSON.stringify({
        version: "1.1",
        data: [{
          title: "Paris",
          paragraphs: [{
            context,
            qas: [{
              id: "q1",
              question: "What is the capital of France?",
              answers: [{ text: "Paris", answer_start: 0 }],
            }],
          }],
        }],
      }),
    );
    const stale = [".c.json.deadbeef.tmp", ".q.json.0badf00d.tmp", ".pred.json.12345678.tmp"];
    // Another file's temporary file and a look-alike are not ours: they stay.
    const keep = [".other.json.deadbeef.tmp", ".c.json.notahex1.tmp"];
    for (const n of [...stale, ...keep]) Deno.writeTextFileSync(`${dir}/${n}`, "partial");
    const s = await childResult(spawnStage("split.ts", ["--allow-read", "--allow-write"], [
      data,
      `${dir}/c.json`,
      `${dir}/q.json`,
    ]));
    assertEquals(s.code, 0, s.stderr);
    // Empty dumps: merge answers nothing ("Missing" lines) but writes pred.json.
    Deno.mkdirSync(`${dir}/ce`);
    Deno.mkdirSync(`${dir}/qe`);
    const m = await childResult(spawnStage("merge.ts", ["--allow-read", "--allow-write"], [
      data,
      `${dir}/ce`,
      `${dir}/qe`,
      `${dir}/pred.json`,
      "--workers",
      "0",
    ]));
    assertEquals(m.code, 0, m.stderr);
    assertEquals(Deno.readTextFileSync(`${dir}/pred.json`), "{}");
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".tmp"));
    assertEquals(names.sort(), [...keep].sort());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
