/**
 * A demo server on a fake searcher, run as its own process by the serve
 * tests that need one (a descriptor limit set with `ulimit -n` before it
 * starts, a search pass that holds the process's only thread, a signal):
 * `startServer` on 127.0.0.1, port 0, the log on stderr, `ready PORT` on
 * stdout once it listens; SIGINT or SIGTERM stop it gracefully (exit 0).
 *
 * Flags: `--max-connections N` (else the server's default, from the
 * descriptor limit); `--busy-ms MS`: each question of a search pass costs
 * MS of synchronous work (the thread is held, as real scoring does);
 * `--hold-file PATH`: the first pass also holds the thread until PATH
 * exists; `--gate-file PATH`: every pass waits (asynchronously, the thread
 * free) until PATH exists. Each pass writes `pass Q1|Q2|...` on stdout
 * when it starts.
 *
 * @module
 */
import { startServer } from "../../serve/server.ts";
import type { SearchAnswer, SearcherLike, SearchRequest } from "../../serve/search.ts";

const flag = (name: string): string | undefined => {
  const i = Deno.args.indexOf(`--${name}`);
  return i < 0 ? undefined : Deno.args[i + 1];
};
const maxConnections = flag("max-connections");
const busyMs = Number(flag("busy-ms") ?? 0);
const holdFile = flag("hold-file");
const gateFile = flag("gate-file");
const enc = new TextEncoder();

const exists = (p: string) => {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
};

let passes = 0;
const answer = (query: string): SearchAnswer => ({ query, took_ms: 0, exact: true, results: [] });
const searchMany = async (items: readonly SearchRequest[]): Promise<SearchAnswer[]> => {
  Deno.stdout.writeSync(enc.encode(`pass ${items.map((i) => i.query).join("|")}\n`));
  if (gateFile !== undefined) {
    while (!exists(gateFile)) await new Promise((r) => setTimeout(r, 10));
  }
  if (passes++ === 0 && holdFile !== undefined) {
    while (!exists(holdFile)) { /* the thread is held */ }
  }
  const end = performance.now() + busyMs * items.length;
  while (performance.now() < end) { /* scoring */ }
  return items.map((i) => answer(i.query));
};
const searcher: SearcherLike = {
  info: { kind: "exact", metric: "ip", phrases: 1, paragraphs: 1, d: 1, encoder: "fake" },
  search: async (query, options) => (await searchMany([{ query, options }]))[0],
  searchMany,
};

const server = await startServer({
  searcher,
  port: 0,
  ...(maxConnections !== undefined ? { maxConnections: Number(maxConnections) } : {}),
});
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(sig, () => server.shutdown());
}
Deno.stdout.writeSync(enc.encode(`ready ${server.port}\n`));
await server.finished;
Deno.exit(0);
