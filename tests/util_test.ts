/**
 * The test helpers themselves: a failing Python reference must show its own
 * error, not the broken pipe of the stdin it never read; the environment a
 * child gets; what a spawned child's result holds.
 *
 * @module
 */
import { assert, assertEquals } from "./_assert.ts";
import { childResult, python, runArgv, runArgvSync, spawnChild } from "./_util.ts";
import { CHILD_ENV } from "../io/process.ts";

Deno.test("python(): a child that dies before reading its stdin reports its stderr", async () => {
  const err = await python(["-c", "import a_module_that_is_not_there"], "x".repeat(1 << 20))
    .then(() => new Error("python() resolved"), (e: Error) => e);
  assert(/exited 1/.test(err.message), err.message);
  assert(/ModuleNotFoundError: No module named 'a_module_that_is_not_there'/.test(err.message));
  assert(!/Broken ?pipe/i.test(err.message), err.message);
});

Deno.test("python(): stdout of a child that succeeds", async () => {
  const r = await python(["-c", "import sys; print(len(sys.stdin.read()))"], "abc");
  assert(r.code === 0 && r.stdout.trim() === "3", JSON.stringify(r));
});

Deno.test("runArgv/runArgvSync/spawnChild: CHILD_ENV and env on top of this environment; clearEnv: env alone", async () => {
  const env = ["env", "-0"];
  const sorted = (o: Record<string, string>) =>
    Object.fromEntries(Object.entries(o).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0));
  const parse = (out: string) =>
    sorted(Object.fromEntries(
      out.split("\0").filter((l) => l !== "").map((l) => {
        const i = l.indexOf("=");
        return [l.slice(0, i), l.slice(i + 1)];
      }),
    ));
  const want = sorted({ ...Deno.env.toObject(), ...CHILD_ENV, PV_X: "1" });
  assertEquals(parse((await runArgv(env, { env: { PV_X: "1" } })).stdout), want);
  assertEquals(parse(runArgvSync(env, { env: { PV_X: "1" } }).stdout), want);
  const child = spawnChild(env, { env: { PV_X: "1" } });
  assertEquals(parse((await childResult(child)).stdout), want);
  assertEquals(parse((await runArgv(env, { clearEnv: true, env: { PV_X: "1" } })).stdout), {
    PV_X: "1",
  });
  assertEquals(parse(runArgvSync(env, { clearEnv: true }).stdout), {});
});

Deno.test("spawnChild/childResult: exit code, the killing signal, streams not piped read as empty", async () => {
  const ok = await childResult(spawnChild(["sh", "-c", "echo out; echo err >&2; exit 3"]));
  assertEquals(ok, { code: 3, signal: null, stdout: "out\n", stderr: "err\n" });
  const killed = spawnChild(["sleep", "60"], { stdout: "null", stderr: "null" });
  killed.kill("SIGKILL");
  assertEquals(await childResult(killed), { code: 137, signal: "SIGKILL", stdout: "", stderr: "" });
  const fed = spawnChild(["cat"], { stdin: "piped", stderr: "null" });
  const w = fed.stdin.getWriter();
  await w.write(new TextEncoder().encode("abc"));
  await w.close();
  assertEquals(await childResult(fed), { code: 0, signal: null, stdout: "abc", stderr: "" });
});
