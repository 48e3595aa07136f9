/**
 * Exit codes: 2 is bad input or usage, 1 is the work failing. `full`
 * passes a task's bad-input exit (2) through; a write the system refuses
 * (disk full, read-only folder, permission denied on a write) is a failure
 * of the work (1), not bad input; an early failure of `full` leaves no
 * empty dump folders.
 *
 * The disk-full and read-only cases mount a small tmpfs, so they run only
 * where this process may mount one (root); `exitCodeOf` is also checked on
 * the injected errors themselves.
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { canMount, DEV_GZ, ROOT, runArgv } from "../_util.ts";
import { exitCodeOf } from "../../pipeline/_cli.ts";
import { FileError, InputError, WriteError } from "../../io/errors.ts";

function stage(script: string, perms: readonly string[], args: readonly string[]) {
  return runArgv([Deno.execPath(), "run", ...perms, `${ROOT}/pipeline/${script}`, ...args], {
    cwd: ROOT,
  });
}

const RW = ["--allow-read", "--allow-write"];

const MOUNT = canMount();

/** Runs `f` with a fresh tmpfs (`opts`: mount options) mounted on a temporary folder. */
async function withTmpfs(opts: string, f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "pv-mnt-" });
  const m = await runArgv(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir]);
  assert(m.code === 0, m.stderr);
  try {
    await f(dir);
  } finally {
    await runArgv(["umount", dir]);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("exitCodeOf: OS write failures are the work failing (1); bad input and missing inputs are 2", () => {
  // EACCES on a write cannot be provoked as root: the error as the writers make it.
  assertEquals(
    exitCodeOf(new WriteError({ file: "/o/pred.json", message: "permission denied" })),
    1,
  );
  assertEquals(
    exitCodeOf(
      new FileError({
        file: "/o/c.json",
        message: "No space left on device (os error 28)",
      }),
    ),
    1,
  );
  assertEquals(
    exitCodeOf(
      new FileError({
        file: "/o/x.npz",
        message: "cannot write file: Read-only file system (os error 30)",
      }),
    ),
    1,
  );
  // Out of descriptors (EMFILE) reading an input: the environment, not the input.
  assertEquals(
    exitCodeOf(
      new FileError({
        file: "q/a.npz",
        message: "Too many open files (os error 24): readfile 'q/a.npz'",
      }),
    ),
    1,
  );
  assertEquals(exitCodeOf(new FileError({ file: "/i/d.json", message: "no such file" })), 2);
  assertEquals(exitCodeOf(new FileError({ file: "/i/d.json", message: "permission denied" })), 2);
  assertEquals(exitCodeOf(new InputError({ file: "d.json", where: "", message: "bad" })), 2);
  // A WriteError is still a FileError to every handler that matches on it.
  const w = new WriteError({ file: "f", message: "m" });
  assert(w instanceof FileError && w._tag === "FileError" && w.toString() === "f: m");
});

Deno.test({
  name: "split: disk full (ENOSPC) exits 1 with one line, leaves no file",
  ignore: !MOUNT,
  fn: () =>
    withTmpfs("size=64k", async (dir) => {
      const r = await stage("split.ts", RW, [DEV_GZ, `${dir}/c.json`, `${dir}/q.json`]);
      assertEquals(r.code, 1, r.stderr);
      assertMatch(r.stderr, /^split: .*No space left on device.*\n$/);
      assertEquals([...Deno.readDirSync(dir)], []);
    }),
});

Deno.test({
  name: "split, embed_question, merge: a read-only output folder (EROFS) exits 1",
  ignore: !MOUNT,
  fn: () =>
    withTmpfs("ro,size=64k", async (dir) => {
      const s = await stage("split.ts", RW, [DEV_GZ, `${dir}/c.json`, `${dir}/q.json`]);
      assertEquals(s.code, 1, s.stderr);
      assertMatch(s.stderr, /^split: .*Read-only file system.*\n$/);
      const q = await stage("embed_question.ts", [...RW, "--allow-ffi"], [
        DEV_GZ,
        dir,
        "--sparse",
        "--range=0:3",
      ]);
      assertEquals(q.code, 1, q.stderr);
      assertMatch(q.stderr, /^embed_question: .*Read-only file system.*\n$/);
      const empty = await Deno.makeTempDir({ prefix: "pv-empty-" });
      const m = await stage("merge.ts", RW, [
        DEV_GZ,
        empty,
        empty,
        `${dir}/pred.json`,
        "--workers",
        "0",
      ]);
      await Deno.remove(empty);
      assertEquals(m.code, 1, m.stderr);
      assertMatch(m.stderr, /^merge: .*Read-only file system.*\n$/m);
    }),
});

Deno.test({
  name: "full: --out on a read-only mount (EROFS) exits 1 with one line, new folder or existing",
  ignore: !MOUNT,
  fn: () =>
    withTmpfs("ro,size=64k", async (dir) => {
      for (const out of [`${dir}/run`, dir]) {
        const r = await stage("full.ts", ["-A"], ["--out", out]);
        assertEquals(r.code, 1, r.stderr);
        assertMatch(r.stderr, /^full: .*Read-only file system.*\n$/);
      }
      assertEquals([...Deno.readDirSync(dir)], []);
    }),
});

Deno.test("merge, embed_context, validate: a limit on open files too low (ulimit -n) is one line, exit 1, not a panic of Deno", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-nofile-" });
  try {
    await Deno.mkdir(`${dir}/empty`);
    const runs: [string, string[]][] = [
      ["merge", [DEV_GZ, `${dir}/empty`, `${dir}/empty`, `${dir}/pred.json`, "--workers", "4"]],
      ["embed_context", [DEV_GZ, `${dir}/emb`, "--sparse"]],
      ["validate", [DEV_GZ, `${dir}/empty`, `${dir}/empty`]],
    ];
    // Below about 20, Deno itself fails before any code of the command runs.
    for (const limit of [24, 40]) {
      for (const [name, args] of runs) {
        const quoted = [Deno.execPath(), "run", "-A", `${ROOT}/pipeline/${name}.ts`, ...args]
          .map((a) => `'${a}'`).join(" ");
        const o = await runArgv(["bash", "-c", `ulimit -n ${limit} && exec ${quoted}`], {
          cwd: ROOT,
        });
        const err = o.stderr;
        assertEquals([o.code, err], [
          1,
          `${name}: the limit on open files (ulimit -n) is ${limit}, below the 64 this command ` +
          `needs: raise it (ulimit -n 1024)\n`,
        ]);
      }
    }
    // Nothing written.
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["empty"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("numeric flags below their range are usage errors (exit 2) before any work", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-range-" });
  try {
    const data = `${dir}/d.json`;
    await Deno.writeTextFile(
      data,
      JSON.stringify({
        version: "1.1",
        data: [{
          title: "T",
          paragraphs: [{
            context: "Paris is nice",
            qas: [{ id: "q1", question: "Where?", answers: [{ text: "Paris", answer_start: 0 }] }],
          }],
        }],
      }),
    );
    await Deno.mkdir(`${dir}/c`);
    await Deno.mkdir(`${dir}/q`);
    const cases: [string, string[], string][] = [
      [
        "validate.ts",
        [data, `${dir}/c`, `${dir}/q`, "--max-bytes-per-word", "-5"],
        "greater than 0",
      ],
      ["validate.ts", [data, `${dir}/c`, `${dir}/q`, "--max-bytes-per-word=0"], "greater than 0"],
      [
        "embed_context.ts",
        [data, `${dir}/e`, "--sparse", "--max-paragraph-chars", "0"],
        "at least 1",
      ],
      [
        "embed_context.ts",
        [data, `${dir}/e`, "--sparse", "--max-paragraph-phrases", "-5"],
        "at least 1",
      ],
      ["embed_context.ts", [data, `${dir}/e`, "--sparse", "--batch", "0"], "at least 1"],
      ["embed_question.ts", [data, `${dir}/e`, "--sparse", "--batch", "-5"], "at least 1"],
      ["run.ts", [`${ROOT}/configs/eval_two_models_mini.ts`, "--retries", "-1"], "at least 0"],
    ];
    for (const [script, args, want] of cases) {
      const r = await stage(script, ["-A"], args);
      const name = script.slice(0, -3);
      const flag = args.find((a) => a.startsWith("--") && a !== "--sparse")!.split("=")[0];
      assertEquals(r.code, 2, `${script} ${args.join(" ")}: ${r.stderr}`);
      assertMatch(
        r.stderr,
        new RegExp(`^${name}: ${flag} must be ${want}, got -?\\d+ \\(see --help\\)\\n$`),
      );
    }
    // Nothing was written: no dump folder, no run folder.
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["c", "d.json", "q"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("full: a task's bad input (exit 2) makes full exit 2; no empty dump folders are left", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-exit2-" });
  try {
    const data = `${dir}/d.json`;
    // The dataset scans, but split refuses the paragraph without a context.
    Deno.writeTextFileSync(
      data,
      JSON.stringify({
        version: "1.1",
        data: [{
          title: "A",
          paragraphs: [
            {
              context: "Paris is the capital of France.",
              qas: [{
                id: "q1",
                question: "Capital?",
                answers: [{ text: "Paris", answer_start: 0 }],
              }],
            },
            { qas: [{ id: "q2", question: "x?", answers: [{ text: "y", answer_start: 0 }] }] },
          ],
        }],
      }),
    );
    const out = `${dir}/out`;
    const r = await stage("full.ts", [...RW, "--allow-run"], ["--data", data, "--out", out]);
    assertEquals(r.code, 2, r.stderr);
    assertMatch(
      r.stderr,
      /^full: prepare failed \(exit 2\): .*article "A" paragraph 1: missing "context"\n$/,
    );
    assertEquals(
      [...Deno.readDirSync(out)].map((e) => e.name).sort(),
      [".phraseval-run.json", "logs"],
      "the run manifest and the log of the failed task stay; no empty dumps folder",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embed_context and embed_question: refused input leaves no (empty) output folder behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-exit-tidy-" });
  try {
    const bad = {
      version: "1.1",
      data: [{ title: "T", paragraphs: [{ context: 7, qas: [{ id: "q1", question: 8 }] }] }],
    };
    await Deno.writeTextFile(`${dir}/bad.json`, JSON.stringify(bad));
    for (const s of ["embed_context.ts", "embed_question.ts"]) {
      const r = await stage(s, RW, [`${dir}/bad.json`, `${dir}/emb`, "--sparse"]);
      assertEquals(r.code, 2, r.stderr);
      assertEquals(r.stderr.trim().split("\n").length, 1, r.stderr);
      assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["bad.json"], s);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
