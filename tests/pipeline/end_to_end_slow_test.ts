/**
 * The encode → dump → merge pipeline as a user runs it: encoder processes
 * with narrowed permissions, resumable dumps, shell pipes, `full`.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { encoderPermissions } from "../../runs/mod.ts";
import { SPARSE_PI_MODEL } from "../../encoders/sparse_pi/encoder.ts";
import { DUMP_MANIFEST } from "../../io/manifest.ts";
import { devJson, listDir, ROOT, runArgv, runStage, spawnChild } from "../_util.ts";

const DEV = await devJson();

/** The first `n` articles of dev as a SQuAD file in `dir`. */
async function devSubset(dir: string, n: number, from = 0): Promise<string> {
  const dev = JSON.parse(await Deno.readTextFile(DEV));
  const path = `${dir}/dev-${from}-${n}.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({ data: dev.data.slice(from, from + n), version: "1.1" }),
  );
  return path;
}

async function split(dir: string, data: string) {
  const r = await runStage("pipeline/split.ts", [
    data,
    `${dir}/context.json`,
    `${dir}/question.json`,
  ]);
  assertEquals(r.code, 0, r.stderr);
}

/** Every file of a folder with its bytes, for byte-for-byte comparison. */
async function snapshot(dir: string, skip: readonly string[] = []): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of await listDir(dir)) {
    if (skip.includes(name)) continue;
    const d = await crypto.subtle.digest("SHA-256", await Deno.readFile(`${dir}/${name}`));
    out.set(name, [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join(""));
  }
  return out;
}

Deno.test("the question encoder's process cannot read the context file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await split(dir, await devSubset(dir, 1));
    const perms = encoderPermissions({
      input: `${dir}/question.json`,
      out: `${dir}/question_emb`,
      files: [SPARSE_PI_MODEL],
    });
    // A probe that tries to read the context file under exactly those flags.
    await Deno.writeTextFile(
      `${dir}/probe.ts`,
      `try { await Deno.readTextFile(${
        JSON.stringify(`${dir}/context.json`)
      }); console.log("READ"); }
       catch (e) { console.log(e instanceof Deno.errors.NotCapable ? "NotCapable" : String(e)); }`,
    );
    const probe = await runArgv([
      Deno.execPath(),
      "run",
      "--no-prompt",
      ...perms,
      `${dir}/probe.ts`,
    ]);
    // Deno 2 reports a permission the process was not granted as NotCapable
    // (PermissionDenied is kept for the operating system's own refusals).
    assertEquals(probe.stdout.trim(), "NotCapable");
    // The real question encoder under those flags: its own input works ...
    const ok = await runStage(
      "pipeline/embed_question.ts",
      [`${dir}/question.json`, `${dir}/question_emb`, "--sparse"],
      { permissions: ["--no-prompt", ...perms] },
    );
    assertEquals(ok.code, 0, ok.stderr);
    // 810 question files and the folder's manifest.
    assertEquals((await listDir(`${dir}/question_emb`)).length, 811);
    // ... and pointing it at the context file is refused.
    const denied = await runStage(
      "pipeline/embed_question.ts",
      [`${dir}/context.json`, `${dir}/question_emb`, "--sparse"],
      { permissions: ["--no-prompt", ...perms] },
    );
    assertEquals(denied.code, 2);
    assertMatch(
      denied.stderr,
      /^embed_question: .*context\.json: permission denied \(not granted to this process\)\n$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embed_context killed with SIGKILL half way resumes to the same bytes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = await devSubset(dir, 6);
    await split(dir, data);
    const ref = await runStage("pipeline/embed_context.ts", [
      `${dir}/context.json`,
      `${dir}/ref`,
      "--sparse",
    ]);
    assertEquals(ref.code, 0, ref.stderr);
    const total = (await listDir(`${dir}/ref`)).length;
    assert(total > 200, `only ${total} files`);
    // Spawned: the test kills it part way through.
    const child = spawnChild([
      Deno.execPath(),
      "run",
      "-A",
      `${ROOT}/pipeline/embed_context.ts`,
      `${dir}/context.json`,
      `${dir}/run`,
      "--sparse",
      "--batch=4",
    ], { stdout: "null", stderr: "null" });
    // Wait until about a third of the files are there, then kill it.
    for (let i = 0; i < 600; i++) {
      await new Promise((r) => setTimeout(r, 20));
      let n = 0;
      try {
        for await (const _ of Deno.readDir(`${dir}/run`)) n++;
      } catch { /* not created yet */ }
      if (n >= total / 3) break;
    }
    child.kill("SIGKILL");
    const status = await child.status;
    assertEquals(status.signal, "SIGKILL");
    const partial = (await listDir(`${dir}/run`)).filter((f) => !f.startsWith(".")).length;
    assert(partial < total, `the run finished before it was killed (${partial} files)`);
    const again = await runStage("pipeline/embed_context.ts", [
      `${dir}/context.json`,
      `${dir}/run`,
      "--sparse",
    ]);
    assertEquals(again.code, 0, again.stderr);
    assertMatch(again.stderr, /already complete/);
    assertEquals(await snapshot(`${dir}/run`), await snapshot(`${dir}/ref`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shell pipes: records | embed_question - and merge - | evaluate -", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = await devSubset(dir, 2, 3);
    await split(dir, data);
    const viaFile = await runStage("pipeline/embed_question.ts", [
      `${dir}/question.json`,
      `${dir}/q_file`,
      "--sparse",
    ]);
    assertEquals(viaFile.code, 0, viaFile.stderr);
    // records question.json --kind question | embed_question - q_pipe/
    const sh = (cmd: string) => runArgv(["bash", "-o", "pipefail", "-c", cmd], { cwd: ROOT });
    const deno = `'${Deno.execPath()}' run -A`;
    const piped = await sh(
      `${deno} pipeline/records.ts '${dir}/question.json' --kind question | ${deno} pipeline/embed_question.ts - '${dir}/q_pipe' --sparse`,
    );
    assertEquals(piped.code, 0, piped.stderr);
    // The same dump files; the manifests differ only in the input's hash
    // (stdin's is not known before it is read).
    assertEquals(
      await snapshot(`${dir}/q_pipe`, [DUMP_MANIFEST]),
      await snapshot(`${dir}/q_file`, [DUMP_MANIFEST]),
    );
    const manifest = (d: string) => JSON.parse(Deno.readTextFileSync(`${d}/${DUMP_MANIFEST}`));
    assertEquals(manifest(`${dir}/q_pipe`), { ...manifest(`${dir}/q_file`), input_sha256: null });
    // merge ... - | evaluate data -
    const c = await runStage("pipeline/embed_context.ts", [
      `${dir}/context.json`,
      `${dir}/c_emb`,
      "--sparse",
    ]);
    assertEquals(c.code, 0, c.stderr);
    const m = await runStage("pipeline/merge.ts", [
      data,
      `${dir}/c_emb`,
      `${dir}/q_file`,
      `${dir}/pred.json`,
      "--sparse",
    ]);
    assertEquals(m.code, 0, m.stderr);
    const fromFile = await runStage("pipeline/evaluate.ts", [data, `${dir}/pred.json`]);
    const pipe = await sh(
      `${deno} pipeline/merge.ts '${data}' '${dir}/c_emb' '${dir}/q_pipe' - --sparse | ${deno} pipeline/evaluate.ts '${data}' -`,
    );
    assertEquals(pipe.code, 0, pipe.stderr);
    assertEquals(pipe.stdout, fromFile.stdout);
    assertMatch(fromFile.stdout, /^\{"exact_match": [0-9.]+, "f1": [0-9.]+\}\n$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("full runs end to end on two articles and writes summary.json", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = await devSubset(dir, 2);
    const r = await runStage("pipeline/full.ts", ["--data", data, "--out", `${dir}/run`]);
    assertEquals(r.code, 0, r.stderr);
    assertMatch(r.stdout, /EM\s+\d+\.\d\d\nF1\s+\d+\.\d\d/);
    const s = JSON.parse(await Deno.readTextFile(`${dir}/run/summary.json`));
    assertEquals(s.counts.paragraphs, 103);
    assertEquals(s.counts.contextFiles, 206);
    assertEquals(s.counts.questionFiles, 1057);
    assertEquals(s.encoder.name, "sparse-pi");
    assertEquals(s.permissions.map((p: { stage: string }) => p.stage), [
      "embed_context",
      "embed_question",
    ]);
    assert(
      !s.permissions[1].flags.join(" ").includes("context.json"),
      "question encoder may read contexts",
    );
    for (const k of ["split", "embed_context", "embed_question", "validate", "merge", "evaluate"]) {
      assert(typeof s.timings[k] === "number", k);
    }
    const files = await listDir(`${dir}/run`);
    for (const f of ["context.json", "dumps", "pred.json", "question.json", "summary.json"]) {
      assert(files.includes(f), f);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embed_context writes a title with ../ in it inside its folder ('/' becomes '_')", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/c.json`,
      JSON.stringify({
        data: [{ title: "../etc", paragraphs: [{ context: "Paris is in France." }] }],
        version: "1.1",
      }),
    );
    const r = await runStage("pipeline/embed_context.ts", [
      `${dir}/c.json`,
      `${dir}/emb`,
      "--sparse",
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await listDir(dir), ["c.json", "emb"]);
    assertEquals(await listDir(`${dir}/emb`), [
      ".._etc_0.json",
      ".._etc_0.npz",
      ".phraseval-dump.json",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
