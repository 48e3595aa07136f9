/**
 * What `serve` refuses before it starts any server: a `--host` that does
 * not resolve (or is not this machine's), and a folder of shards whose
 * files are not the sizes their headers say (two shards' data files
 * swapped). Each is bad usage or bad input: exit 2, one line, and no
 * shard server started (no `starting N shard servers` line).
 */
import { assertEquals, assertMatch } from "../_assert.ts";
import { ROOT, runStage, spawnChild } from "../_util.ts";
import { makeFixture } from "./_fixture.ts";

/** `serve args` to its end, stopped with SIGTERM (and failed) if it still runs after 120 s. */
async function serveUntilExit(args: readonly string[]): Promise<{ code: number; stderr: string }> {
  const child = spawnChild([Deno.execPath(), "run", "-A", `${ROOT}/pipeline/serve.ts`, ...args], {
    cwd: ROOT,
    stdout: "null",
  });
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    child.kill("SIGTERM");
  }, 120_000);
  const out = await child.output();
  clearTimeout(timer);
  const stderr = new TextDecoder().decode(out.stderr);
  if (late) throw new Error(`serve ${args.join(" ")} was still running after 120 s:\n${stderr}`);
  return { code: out.code, stderr };
}

/** The stderr lines, `Download` lines of a cold cache left out. */
const lines = (s: string) => s.trimEnd().split("\n").filter((l) => !/^\S*Download /.test(l));

Deno.test("serve refuses a host that does not resolve before starting (exit 2, one line)", async () => {
  const f = await makeFixture("serve_host_");
  try {
    for (const host of ["0.0.0.0.1", "no-such-host.invalid"]) {
      const r = await serveUntilExit([f.index, "--host", host, "--port", "0"]);
      assertEquals(r.code, 2, r.stderr);
      const l = lines(r.stderr);
      assertEquals(l.length, 1, r.stderr);
      assertMatch(
        l[0],
        new RegExp(`^serve: --host ${host.replaceAll(".", "\\.")}: not an address`),
      );
    }
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});

Deno.test("serve refuses shards whose files are not their headers' sizes before starting any (exit 2, one line)", async () => {
  const f = await makeFixture("serve_shards_");
  try {
    // Three shards of the run's dump; shards 0 and 1 swap their values and columns.
    const sh = `${f.dir}/sh`;
    const ix = await runStage("pipeline/index.ts", [
      `${f.run}/dumps/context_emb`,
      sh,
      "--sparse",
      "--context",
      `${f.run}/context.json`,
      "--shards",
      "3",
    ]);
    assertEquals(ix.code, 0, ix.stderr);
    const [a, b] = [`${sh}/shard-0-of-3`, `${sh}/shard-1-of-3`];
    for (const name of ["data.f32", "indices.i32"]) {
      Deno.renameSync(`${a}/${name}`, `${f.dir}/tmp`);
      Deno.renameSync(`${b}/${name}`, `${a}/${name}`);
      Deno.renameSync(`${f.dir}/tmp`, `${b}/${name}`);
    }
    const r = await serveUntilExit([sh, "--port", "0"]);
    assertEquals(r.code, 2, r.stderr);
    const l = lines(r.stderr);
    assertEquals(l.length, 1, r.stderr);
    assertMatch(
      l[0],
      /^serve: \S*shard-0-of-3\/data\.f32: \d+ bytes but index\.json says \d+ \(truncated or corrupt index\)$/,
    );
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});
