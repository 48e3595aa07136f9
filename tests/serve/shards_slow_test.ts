/**
 * `deno task serve` over a folder of shards (`index --shards 3` of the
 * serve fixture), launched as a user runs it (spawned directly, so SIGINT
 * has its default disposition):
 *
 * - its answers (`/v1/search`, `/api`, `/v1/batch`) are the answers of the
 *   server over the unsharded index of the same dump, field for field
 *   (`took_ms` aside); `/healthz` reports each shard; each shard child and
 *   the front have their narrow grants;
 * - a shard child killed with SIGKILL: requests get 503 naming the shard,
 *   at once (no hang), until it is back; then the same answers again, and
 *   `/healthz` counts the restart;
 * - SIGINT and SIGTERM to the launcher: exit 0 and no child left;
 * - a folder missing a shard, and dump flags with shards, are refused with
 *   one line, exit 2.
 *
 * Servers listen on 127.0.0.1 on a free port; every wait is bounded.
 */
import { assert, assertEquals } from "../_assert.ts";
import { runStage } from "../_util.ts";
import { STATIC_DIR } from "../../serve/server.ts";
import { SPARSE_PI_MODEL } from "../../encoders/sparse_pi/encoder.ts";
import { type Fixture, launchServe, makeFixture, stopServe } from "./_fixture.ts";

interface Setup {
  readonly f: Fixture;
  /** The unsharded index. */
  readonly one: string;
  /** The folder of 3 shards. */
  readonly three: string;
}

let setup: Promise<Setup> | undefined;
const fix = () =>
  setup ??= (async () => {
    const f = await makeFixture("pv-serve-shards-");
    const dump = `${f.run}/dumps/context_emb`;
    const common = ["--sparse", "--context", f.data];
    const one = `${f.dir}/one`, three = `${f.dir}/three`;
    const a = await runStage("pipeline/index.ts", [dump, one, ...common]);
    assertEquals(a.code, 0, a.stderr);
    const b = await runStage("pipeline/index.ts", [dump, three, ...common, "--shards", "3"]);
    assertEquals(b.code, 0, b.stderr);
    return { f, one, three };
  })();
globalThis.addEventListener("unload", () => {
  setup?.then((s) => Deno.removeSync(s.f.dir, { recursive: true })).catch(() => {});
});

/** Starts `pipeline/serve.ts args`, waiting at most 120 s for its `serving` line. */
const launch = (args: readonly string[]) => launchServe(args, 120_000);

/** Stops a launcher (SIGINT, SIGKILL after 30 s): its exit status. */
const stop = stopServe;

/** Pids of the children of `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

const alive = (pid: number): boolean => {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
};

const cmdline = (pid: number): string[] => {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").slice(0, -1);
  } catch {
    return [];
  }
};

/** A request with a 20 s bound: status and body. */
async function ask(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
  return { status: r.status, body: await r.text(), ms: performance.now() - t0 };
}

/** A `/v1/search` or `/v1/batch` answer without its timings. */
function answers(body: string): unknown {
  return JSON.parse(body, (k, v) => k === "took_ms" ? undefined : v);
}

const search = (base: string, q: string, k: number) =>
  ask(`${base}/v1/search?q=${encodeURIComponent(q)}&k=${k}`);

Deno.test("serve over 3 shards: the unsharded server's answers, each shard up in /healthz, narrow grants", async () => {
  const { f, one, three } = await fix();
  const [a, b] = await Promise.all([
    launch([one, "--encoder", "sparse-pi", "--port", "0"]),
    launch([three, "--encoder", "sparse-pi", "--port", "0"]),
  ]);
  try {
    assert(a.port !== undefined, a.stderr());
    assert(b.port !== undefined, b.stderr());
    // The children: three shard servers, each granted its own shard, and the front.
    const kids = childrenOf(b.proc.pid).map(cmdline);
    assertEquals(kids.length, 4, JSON.stringify(kids));
    const grants = kids.map((c) => c.filter((x) => x.startsWith("--allow") || x === "-A"));
    const front = grants.find((g) => g[0] === `--allow-read=${STATIC_DIR}`);
    assert(front !== undefined, JSON.stringify(grants));
    assertEquals(front.length, 2);
    assert(front[1].startsWith(`--allow-net=127.0.0.1:${b.port},127.0.0.1:`), front[1]);
    for (let i = 0; i < 3; i++) {
      const g = grants.find((g) => g[0].includes(`/shard-${i}-of-3,`));
      assert(g !== undefined, JSON.stringify(grants));
      assertEquals(g[0], `--allow-read=${three}/shard-${i}-of-3,${SPARSE_PI_MODEL},${STATIC_DIR}`);
      assert(/^--allow-net=127\.0\.0\.1:\d+$/.test(g[1]) && g.length === 2, g.join(" "));
    }
    const ha = JSON.parse((await ask(`${a.base}/healthz`)).body);
    const hb = JSON.parse((await ask(`${b.base}/healthz`)).body);
    assertEquals(hb.status, "ok");
    assertEquals(hb.phrases, ha.phrases);
    assertEquals(hb.paragraphs, ha.paragraphs);
    assertEquals(
      hb.shards,
      [0, 1, 2].map((index) => ({ index, count: 3, state: "up", restarts: 0 })),
    );
    // Every question of the fixture, k 10 and k 1; PIQA's /api on some.
    const qs = f.questions.slice(0, 40).map((q) => q.question);
    for (const q of qs) {
      for (const k of [10, 1]) {
        const [x, y] = await Promise.all([search(a.base, q, k), search(b.base, q, k)]);
        assertEquals(y.status, 200, y.body);
        assertEquals(answers(y.body), answers(x.body), `${q} k=${k}`);
      }
    }
    for (const q of qs.slice(0, 5)) {
      const path = `/api?query=${encodeURIComponent(q)}`;
      const [x, y] = await Promise.all([ask(a.base + path), ask(b.base + path)]);
      assertEquals(y.body, x.body);
    }
    const init = () => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queries: qs.slice(0, 12), k: 7 }),
    });
    const [x, y] = await Promise.all([
      ask(`${a.base}/v1/batch`, init()),
      ask(`${b.base}/v1/batch`, init()),
    ]);
    assertEquals(y.status, 200, y.body);
    assertEquals(answers(y.body), answers(x.body));
    // A bad request is the single server's 400.
    const bad = await ask(`${b.base}/v1/search?q=x&k=0`);
    assertEquals(bad.status, 400);
    assertEquals(bad.body, (await ask(`${a.base}/v1/search?q=x&k=0`)).body);
  } finally {
    const [sa, sb] = await Promise.all([stop(a), stop(b)]);
    assertEquals(sa.code, 0, a.stderr());
    assertEquals(sb.code, 0, b.stderr());
  }
});

Deno.test("serve over 3 shards: a shard child SIGKILLed gives 503 naming it, at once, until it is restarted", async () => {
  const { f, one, three } = await fix();
  const [a, b] = await Promise.all([
    launch([one, "--encoder", "sparse-pi", "--port", "0"]),
    launch([three, "--encoder", "sparse-pi", "--port", "0"]),
  ]);
  try {
    assert(a.port !== undefined && b.port !== undefined, a.stderr() + b.stderr());
    const q = f.questions[3].question;
    const want = answers((await search(a.base, q, 5)).body);
    assertEquals(answers((await search(b.base, q, 5)).body), want);
    const victim = childrenOf(b.proc.pid).find((p) =>
      cmdline(p).some((x) => x.includes("/shard-1-of-3,"))
    );
    assert(victim !== undefined);
    Deno.kill(victim, "SIGKILL");
    const t0 = performance.now();
    const statuses = new Map<number, number>();
    let degraded = false, back = -1;
    while (performance.now() - t0 < 90_000) {
      const r = await search(b.base, q, 5);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 503) {
        assert(r.ms < 5000, `a 503 took ${r.ms} ms`);
        assert(/shard 1 of 3/.test(JSON.parse(r.body).error), r.body);
        const h = JSON.parse((await ask(`${b.base}/healthz`)).body);
        if (h.status === "degraded") {
          degraded = true;
          assert(["down", "restarting"].includes(h.shards[1].state), JSON.stringify(h));
          assertEquals(h.shards[0].state, "up");
        }
      } else {
        assertEquals(r.status, 200, r.body);
        if (statuses.has(503)) {
          back = performance.now() - t0;
          assertEquals(answers(r.body), want);
          break;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert(statuses.has(503), `no 503 after the kill: ${JSON.stringify([...statuses])}`);
    assert(degraded, "/healthz never said degraded");
    assert(back > 0, `the shard did not come back: ${JSON.stringify([...statuses])}`);
    const h = JSON.parse((await ask(`${b.base}/healthz`)).body);
    assertEquals(h.status, "ok");
    assertEquals(h.shards[1], { index: 1, count: 3, state: "up", restarts: 1 });
    assertEquals(h.shards[0].restarts + h.shards[2].restarts, 0);
    assert(!JSON.stringify(h).includes("pid"), JSON.stringify(h));
    assertEquals(childrenOf(b.proc.pid).length, 4);
  } finally {
    const [sa, sb] = await Promise.all([stop(a), stop(b)]);
    assertEquals(sa.code, 0, a.stderr());
    assertEquals(sb.code, 0, b.stderr());
  }
});

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  Deno.test(`serve over 3 shards: ${sig} to the launcher ends the front and every shard child, exit 0`, async () => {
    const { three } = await fix();
    const l = await launch([three, "--encoder", "sparse-pi", "--port", "0"]);
    assert(l.port !== undefined, l.stderr());
    const kids = childrenOf(l.proc.pid);
    assertEquals(kids.length, 4);
    assert(kids.every(alive));
    l.proc.kill(sig);
    const t = setTimeout(() => l.proc.kill("SIGKILL"), 30_000);
    const st = await l.proc.status;
    clearTimeout(t);
    assertEquals(st.code, 0, l.stderr());
    const left = kids.filter(alive);
    assertEquals(left, [], `children left: ${left.map((p) => cmdline(p).join(" "))}`);
  });
}

Deno.test("serve over shards: a missing shard and dump flags are refused with one line, exit 2", async () => {
  const { f } = await fix();
  const part = `${f.dir}/part`;
  const r = await runStage("pipeline/index.ts", [
    `${f.run}/dumps/context_emb`,
    part,
    "--sparse",
    "--context",
    f.data,
    "--shards",
    "3",
    "--shard",
    "0",
  ]);
  assertEquals(r.code, 0, r.stderr);
  const a = await runStage("pipeline/serve.ts", [part, "--encoder", "sparse-pi", "--port", "0"]);
  assertEquals(a.code, 2, a.stderr);
  const lines = a.stderr.trim().split("\n");
  assertEquals(lines.length, 1, a.stderr);
  assert(
    /shard-1-of-3: missing: 1 of the 3 shards are present \(2 missing\)$/.test(lines[0]),
    a.stderr,
  );
  const b = await runStage("pipeline/serve.ts", [
    `${f.dir}/three`,
    "--encoder",
    "sparse-pi",
    "--nlist",
    "4",
    "--bpv",
    "8",
  ]);
  assertEquals(b.code, 2, b.stderr);
  assert(/is a folder of shards: --nlist/.test(b.stderr), b.stderr);
});
