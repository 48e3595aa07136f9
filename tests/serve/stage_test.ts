/**
 * Tests of `serve/stage.ts`'s children: {@linkcode runServerChild} and
 * {@linkcode runShardedServers} pass on the launcher's signal, and when
 * the Effect that runs them is interrupted they stop every child (SIGTERM)
 * and wait for it: no process of theirs is left (each stand-in server
 * writes its process id, and `/proc/<pid>` is gone afterwards).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Fiber from "effect/Fiber";
import { freePort, PICKED_PORTS, runServerChild, runShardedServers } from "../../serve/stage.ts";
import { assert, assertEquals } from "../_assert.ts";

/** A stand-in server: writes its pid to `file`, says it is ready, then waits. */
const server = (file: string) => [
  "sh",
  "-c",
  `echo $$ > ${file}; echo ready http://127.0.0.1:1/; exec sleep 30`,
];

/** Waits until `file` holds a process id; the id. */
async function pidIn(file: string): Promise<number> {
  for (let i = 0; i < 400; i++) {
    try {
      const t = Deno.readTextFileSync(file).trim();
      if (t !== "") return Number(t);
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${file}: no pid`);
}

const alive = (pid: number): boolean => {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
};

Deno.test("serve stage: an interrupted server child is stopped and awaited", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-serve-stage-" });
  try {
    const never = new AbortController().signal;
    let url = "";
    const fiber = Effect.runFork(runServerChild(server(`${tmp}/pid`), never, (u) => url = u));
    const pid = await pidIn(`${tmp}/pid`);
    assert(alive(pid));
    await Effect.runPromise(Fiber.interrupt(fiber));
    assertEquals(url, "http://127.0.0.1:1/");
    assert(!alive(pid), `child ${pid} outlived the interrupted stage`);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("serve stage: SIGTERM is passed on to the child, whose exit code is the stage's", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-serve-stage-" });
  try {
    const stop = new AbortController();
    const done = Effect.runPromise(runServerChild(server(`${tmp}/pid`), stop.signal, () => {}));
    const pid = await pidIn(`${tmp}/pid`);
    stop.abort("SIGTERM");
    assertEquals(await done, 143);
    assert(!alive(pid));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("serve stage: an interrupted server over shards stops its shards and its front", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-serve-stage-" });
  try {
    const never = new AbortController().signal;
    let url = "";
    const fiber = Effect.runFork(
      runShardedServers(
        [server(`${tmp}/s0`), server(`${tmp}/s1`)],
        server(`${tmp}/front`),
        never,
        (u) => url = u,
      ),
    );
    const pids = [await pidIn(`${tmp}/s0`), await pidIn(`${tmp}/s1`), await pidIn(`${tmp}/front`)];
    while (url === "") await new Promise((r) => setTimeout(r, 25));
    assert(pids.every(alive));
    await Effect.runPromise(Fiber.interrupt(fiber));
    assertEquals(pids.filter(alive), [], "no shard or front process is left");
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("serve stage: a child's port is picked below the ephemeral ranges, one taken or picked before passed over, else the system's", () => {
  const [low, high] = PICKED_PORTS;
  // The draw that gives port p (ports of the range found free here, none typed in: another
  // process may hold any given one).
  const drawOf = (p: number) => (p - low + 0.5) / (high - low + 1);
  const a = freePort("127.0.0.1"), b = freePort("127.0.0.1", new Set([a]));
  assert(a !== b && [a, b].every((p) => p >= low && p <= high), `${a} ${b}`);
  assertEquals(freePort("127.0.0.1", new Set(), () => drawOf(b)), b);
  // A port picked for another child is passed over.
  const again = [drawOf(a), drawOf(b)];
  assertEquals(freePort("127.0.0.1", new Set([a]), () => again.shift()!), b);
  assertEquals(again.length, 0);
  // A port another process holds is passed over.
  const held = Deno.listen({ hostname: "127.0.0.1", port: a });
  try {
    const draws = [drawOf(a), drawOf(a), drawOf(b)];
    assertEquals(freePort("127.0.0.1", new Set(), () => draws.shift()!), b);
    assertEquals(draws.length, 0);
    // Every draw taken (64 of them): the system's choice, outside the picked range, and free.
    let n = 0;
    const p = freePort("127.0.0.1", new Set(), () => (n++, drawOf(a)));
    assertEquals(n, 64);
    assert(p < low || p > high, String(p));
    Deno.listen({ hostname: "127.0.0.1", port: p }).close();
  } finally {
    held.close();
  }
  // The range's two ends are drawn too.
  assertEquals(Math.floor(drawOf(low) * (high - low + 1)) + low, low);
  assertEquals(Math.floor(drawOf(high) * (high - low + 1)) + low, high);
  // Random draws: in the range and free.
  for (let i = 0; i < 20; i++) {
    const p = freePort("127.0.0.1");
    assert(p >= low && p <= high, String(p));
    Deno.listen({ hostname: "127.0.0.1", port: p }).close();
  }
});
