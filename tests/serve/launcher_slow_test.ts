/**
 * `deno task serve` as a user runs it (the launcher, spawned directly so
 * that SIGINT has its default disposition): SIGINT and SIGTERM answer the
 * request in flight and exit 0 with no child left; SIGKILL to the launcher
 * stops the server too; the server process's grants; bad arguments exit 2
 * with one line; a context dump is indexed once and reused.
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, runStage, spawnChild } from "../_util.ts";
import { denoRunArgv } from "../../runs/sandbox/sandbox.ts";
import { STATIC_DIR } from "../../serve/server.ts";
import { SPARSE_PI_MODEL } from "../../encoders/sparse_pi/encoder.ts";
import { type Fixture, get, makeFixture, raw, readResponse } from "./_fixture.ts";

let fixture: Promise<Fixture> | undefined;
const fix = () => fixture ??= makeFixture("pv-serve-launch-");
globalThis.addEventListener("unload", () => {
  fixture?.then((f) => Deno.removeSync(f.dir, { recursive: true })).catch(() => {});
});

interface Launched {
  readonly proc: Deno.ChildProcess;
  /** Everything on stderr so far. */
  stderr(): string;
  /** The `serving` URL's port (undefined when it exited first). */
  readonly port?: number;
}

/** Starts `pipeline/serve.ts args` and waits for its `serving` line (or its exit). */
async function launch(args: readonly string[]): Promise<Launched> {
  const argv = denoRunArgv(`${ROOT}/pipeline/serve.ts`, args, { all: true }, {
    config: null,
    prompt: true,
  });
  // Spawned: stderr is read while the server runs (its port), then it is signalled.
  const proc = spawnChild(argv, { cwd: ROOT, env: { NO_COLOR: "1" } });
  let text = "";
  let ready: (port: number | undefined) => void = () => {};
  const got = new Promise<number | undefined>((r) => ready = r);
  (async () => {
    for await (const s of proc.stderr.pipeThrough(new TextDecoderStream())) {
      text += s;
      const m = /^serving http:\/\/127\.0\.0\.1:(\d+)\/ /m.exec(text);
      if (m) ready(Number(m[1]));
    }
    ready(undefined);
  })();
  proc.stdout.cancel();
  const port = await got;
  return { proc, stderr: () => text, port };
}

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

const cmdline = (pid: number): string[] =>
  Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").slice(0, -1);

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  Deno.test(`serve: ${sig} to the launcher: the request in flight is answered, exit 0, no child left`, async () => {
    const f = await fix();
    const l = await launch([f.index, "--encoder", "sparse-pi", "--port", "0"]);
    assert(l.port !== undefined, l.stderr());
    const [child] = childrenOf(l.proc.pid);
    assert(child !== undefined && alive(child), "the server child runs");
    // The child's grants: the index, the model, serve/static; its own address only.
    const argv = cmdline(child);
    assertEquals(argv.filter((a) => a.startsWith("--allow") || a === "-A"), [
      `--allow-read=${f.index},${SPARSE_PI_MODEL},${STATIC_DIR}`,
      `--allow-net=127.0.0.1:${l.port}`,
    ]);
    const health = await raw(l.port!, get("/healthz"));
    assertEquals(JSON.parse(health.body).encoder, "sparse-pi");
    // The dataset beside the index is not served.
    const trav = await raw(l.port!, get("/../../data.json"));
    assertEquals(trav.status, 404);
    // A request in flight: its head is read (100 Continue), its body not yet sent.
    const body = JSON.stringify({ queries: [f.questions[0].question], k: 2 });
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: l.port! });
    await conn.write(
      new TextEncoder().encode(
        `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1:${l.port}\r\nContent-Type: application/json\r\n` +
          `Expect: 100-continue\r\nContent-Length: ${
            new TextEncoder().encode(body).length
          }\r\n\r\n`,
      ),
    );
    const cont = new Uint8Array(64);
    const n = await conn.read(cont);
    assertEquals(new TextDecoder().decode(cont.subarray(0, n!)), "HTTP/1.1 100 Continue\r\n\r\n");
    l.proc.kill(sig);
    // A new connection is no longer taken once the listener is closed.
    let refused = false;
    for (let i = 0; i < 200 && !refused; i++) {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port: l.port! })).close();
        await new Promise((r) => setTimeout(r, 25));
      } catch {
        refused = true;
      }
    }
    assert(refused, "the listener still accepts after the signal");
    await conn.write(new TextEncoder().encode(body));
    const r = await readResponse(conn, 5000);
    conn.close();
    assertEquals(r.status, 200, r.body);
    assertEquals(r.headers["connection"], "close");
    assertEquals(JSON.parse(r.body).results[0].query, f.questions[0].question);
    const status = await l.proc.status;
    assertEquals(status.code, 0, l.stderr());
    assert(!alive(child), `the server child ${child} outlived the launcher`);
    const lines = l.stderr().trim().split("\n");
    assert(
      lines.includes(lines.find((x) => /^POST \/v1\/batch 200 \d+\.\d$/.test(x))!),
      l.stderr(),
    );
  });
}

Deno.test("serve: SIGKILL to the launcher stops the server child too", async () => {
  const f = await fix();
  const l = await launch([f.index, "--port", "0"]);
  assert(l.port !== undefined, l.stderr());
  const [child] = childrenOf(l.proc.pid);
  assert(alive(child));
  l.proc.kill("SIGKILL");
  await l.proc.status;
  for (let i = 0; i < 400 && alive(child); i++) await new Promise((r) => setTimeout(r, 25));
  assert(!alive(child), `the server child ${child} outlived a killed launcher`);
});

Deno.test("serve: bad arguments and bad indexes exit 2 with one line", async () => {
  const f = await fix();
  const cases: [string[], RegExp][] = [
    [[`${f.dir}/nope`], /^serve: .*nope.*(No such file|not found)/i],
    [[f.data], /^serve: .*data\.json: is neither an index folder nor a context dump/],
    [
      [f.index, "--nlist", "4", "--bpv", "2"],
      /^serve: .* is an index: --nlist, --bpv.* apply to a context dump$/,
    ],
    [[f.index, "--top-k", "0"], /^serve: --top-k must be 1\.\.100$/],
    [
      [f.index, "--nprobe", "3"],
      /^serve: .*index: is an exact index: --nprobe, --candidates and --exact/,
    ],
    [
      [f.index, "--refine", "100"],
      /^serve: .*index: is an exact index: --nprobe, --candidates and --exact/,
    ],
    [[f.index, "--candidates", "-1"], /^serve: --candidates must be at least 0/],
    [
      [f.index, "--candidates", "1", "--refine", "1"],
      /^serve: --refine is the older name of --candidates: give one$/,
    ],
    [[f.index, "--encoder", "piqa-lstm"], /has csr vectors but the encoder piqa-lstm writes dense/],
    [[f.index, "--encoder", "nope"], /^serve: unknown encoder "nope"/],
    [[`${f.run}/dumps/context_emb`, "--nlist", "4"], /needs both --nlist and --bpv/],
  ];
  for (const [args, want] of cases) {
    const l = await launch([...args, "--port", "0"]);
    const status = await l.proc.status;
    const lines = l.stderr().trim().split("\n");
    assertEquals(status.code, 2, `${args.join(" ")}: ${l.stderr()}`);
    assertEquals(lines.length, 1, l.stderr());
    assert(want.test(lines[0]), lines[0]);
  }
});

Deno.test("serve: a context dump is indexed once, reused while it is the same dump, rebuilt when it changes", async () => {
  const f = await fix();
  const dump = `${f.dir}/dump_copy`;
  Deno.mkdirSync(dump);
  for (const e of Deno.readDirSync(`${f.run}/dumps/context_emb`)) {
    Deno.copyFileSync(`${f.run}/dumps/context_emb/${e.name}`, `${dump}/${e.name}`);
  }
  const args = [dump, "--exact-index", "--context", `${f.run}/context.json`, "--port", "0"];
  const start = async (want: RegExp) => {
    const l = await launch(args);
    assert(l.port !== undefined, l.stderr());
    assert(want.test(l.stderr()), l.stderr());
    const a = JSON.parse(
      (await raw(l.port!, get(`/v1/search?q=${encodeURIComponent(f.questions[0].question)}&k=5`)))
        .body,
    );
    const [child] = childrenOf(l.proc.pid);
    const grants = cmdline(child).find((x) => x.startsWith("--allow-read="));
    l.proc.kill("SIGTERM");
    assertEquals((await l.proc.status).code, 0);
    return { a, grants };
  };
  const first = await start(/^serve: building the index .*dump_copy\.index from /m);
  assertEquals(first.grants, `--allow-read=${dump}.index,${SPARSE_PI_MODEL},${STATIC_DIR}`);
  const want = f.topk.get(f.questions[0].id)!;
  assertEquals(
    first.a.results.map((h: Record<string, unknown>) => [h.paragraph_id, h.phrase, h.score]),
    want.map((o) => [o.paragraph, o.phrase, o.score]),
  );
  assert(first.a.results.every((h: Record<string, unknown>) => typeof h.context === "string"));
  const second = await start(/^serve: reusing the index .*dump_copy\.index/m);
  assertEquals(second.a, { ...first.a, took_ms: second.a.took_ms });
  // The dump changes (a file rewritten): rebuilt.
  const name = [...Deno.readDirSync(dump)].find((e) => e.name.endsWith(".json"))!.name;
  const t = new Date(Date.now() + 5000);
  Deno.utimeSync(`${dump}/${name}`, t, t);
  await start(/^serve: rebuilding the index .*dump_copy\.index: the dump changed/m);
  // Another folder where the index would go is not replaced.
  Deno.mkdirSync(`${f.dir}/other`);
  Deno.writeTextFileSync(`${f.dir}/other/keep.txt`, "mine");
  const l = await launch([...args, "--index-dir", `${f.dir}/other`]);
  assertEquals((await l.proc.status).code, 2, l.stderr());
  assert(/other: exists and is not an index serve built from a dump/.test(l.stderr()));
  assertEquals(Deno.readTextFileSync(`${f.dir}/other/keep.txt`), "mine");
});

Deno.test("serve: the PIQA flags: a piqa-lstm dump with --nlist --nprobe --bpv is indexed (ivf-pq) and served; exact=1 = search --exact; all lists with --candidates over every phrase = exact", async () => {
  const f = await fix();
  const run = `${f.dir}/lstm`;
  let r = await runStage("pipeline/full.ts", [
    "--data",
    f.data,
    "--out",
    run,
    "--encoder",
    "piqa-lstm",
  ]);
  assertEquals(r.code, 0, r.stderr);
  const dump = `${run}/dumps/context_emb`;
  const l = await launch([
    dump,
    "--encoder",
    "piqa-lstm",
    "--nlist",
    "4",
    "--nprobe",
    "2",
    "--bpv",
    "128",
    "--candidates",
    "10000",
    "--context",
    `${run}/context.json`,
    "--port",
    "0",
  ]);
  try {
    assert(l.port !== undefined, l.stderr());
    assert(l.stderr().includes(`serve: building the index ${dump}.index from ${dump}`));
    const health = JSON.parse((await raw(l.port!, get("/healthz"))).body);
    assertEquals(
      [health.kind, health.nlist, health.d, health.encoder, health.paragraphs],
      ["ivf-pq", 4, 256, "piqa-lstm", 16],
    );
    const bad = await raw(l.port!, get("/v1/search?q=Who&nprobe=5"));
    assertEquals([bad.status, JSON.parse(bad.body).error], [
      400,
      'nprobe must be an integer from 1 to 4, got "5"',
    ]);
    r = await runStage("pipeline/search.ts", [
      f.data,
      `${dump}.index`,
      `${run}/dumps/question_emb`,
      `${f.dir}/lstm_exact.json`,
      "--exact",
      "--top-k",
      "3",
      "--topk-out",
      `${f.dir}/lstm_exact.ndjson`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    const want = new Map<string, unknown[][]>();
    for (const line of Deno.readTextFileSync(`${f.dir}/lstm_exact.ndjson`).trim().split("\n")) {
      const o = JSON.parse(line);
      if (!want.has(o.id)) want.set(o.id, []);
      want.get(o.id)!.push([o.paragraph, o.phrase, o.score]);
    }
    for (const q of f.questions.slice(0, 5)) {
      const target = `/v1/search?q=${encodeURIComponent(q.question)}&k=3`;
      const exact = JSON.parse((await raw(l.port!, get(`${target}&exact=1`))).body);
      assertEquals(exact.exact, true);
      assertEquals(
        exact.results.map((h: Record<string, unknown>) => [h.paragraph_id, h.phrase, h.score]),
        want.get(q.id),
        q.id,
      );
      // Every list probed and more candidates re-scored (--candidates) than phrases: exact's answers.
      const approx = JSON.parse((await raw(l.port!, get(`${target}&nprobe=4`))).body);
      assertEquals([approx.exact, approx.results.length], [false, 3]);
      assertEquals(
        approx.results.map((h: Record<string, unknown>) => [h.paragraph_id, h.phrase, h.score]),
        want.get(q.id),
        q.id,
      );
    }
  } finally {
    l.proc.kill("SIGTERM");
    assertEquals((await l.proc.status).code, 0, l.stderr());
  }
});

Deno.test("serve (issue 22 item 1): a --model with a second name (a hard link) is refused before the server starts", async () => {
  const f = await fix();
  const dir = Deno.makeTempDirSync({ prefix: "pv-serve-hardlink-" });
  try {
    // A model file that is also the dataset (same inode): the child would read the dataset.
    Deno.linkSync(f.data, `${dir}/model.json.gz`);
    const l = await launch([f.index, "--model", `${dir}/model.json.gz`, "--port", "0"]);
    if (l.port !== undefined) {
      l.proc.kill("SIGTERM");
      await l.proc.status;
      throw new Error(`the server started on port ${l.port}: ${l.stderr()}`);
    }
    assertEquals((await l.proc.status).code, 2, l.stderr());
    const lines = l.stderr().trim().split("\n");
    assertEquals(lines.length, 1, l.stderr());
    assertEquals(
      lines[0],
      `serve: --model: ${dir}/model.json.gz has 2 hard links (a second name could be any file; ` +
        `a granted file must have one, or be a bundled model); the server may not be granted it`,
    );
    assertEquals(l.port, undefined);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
