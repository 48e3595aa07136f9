/**
 * The request-by-id worker threads of the search (`search/workers.ts`):
 *
 * - answers reach their own requests, whichever worker and in whatever
 *   order they come back, and each worker gets its `init` message first;
 * - an error answer fails its own request only; with `sticky`, it fails
 *   every request waiting and every one after, with the described message;
 * - a worker that throws fails the requests then waiting;
 * - `modulesReadable` asks for read permission on file modules only.
 */
import { assert, assertEquals, assertRejectsWith } from "../_assert.ts";
import { modulesReadable, RequestWorkers } from "../../search/workers.ts";

/** A worker module from source text (a blob URL; revoked by the caller). */
function moduleOf(src: string): URL {
  return new URL(URL.createObjectURL(new Blob([src], { type: "text/javascript" })));
}

// Answers `{ x }` with `{ x2, who }` after `x` ms (so later requests may answer first);
// `{ fail }` with an error answer; `{ crash }` by throwing in the worker.
const ECHO = `
let who = -1;
self.onmessage = (e) => {
  const m = e.data;
  if (m.init !== undefined) { who = m.init; return; }
  if (m.crash) throw new Error("crashed on purpose");
  if (m.fail) { self.postMessage({ id: m.id, error: "bad input " + m.fail }); return; }
  setTimeout(() => self.postMessage({ id: m.id, x2: 2 * m.x, who }), m.x);
};`;

type Answer = { id: number; x2: number; who: number };

Deno.test("request workers: answers reach their requests; init first; an error answer fails its own", async () => {
  const url = moduleOf(ECHO);
  const ws = new RequestWorkers<Answer>(url, 3, { init: (i) => ({ init: 10 + i }) });
  try {
    assertEquals(ws.size, 3);
    // Worker 0 gets the slow request; later, faster ones answer first.
    const got = await Promise.all([40, 5, 1, 20].map((x, i) => ws.ask(i, { x })));
    assertEquals(got.map((a) => [a.x2, a.who]), [[80, 10], [10, 11], [2, 12], [40, 10]]);
    const bad = ws.ask(1, { fail: 7 });
    const good = ws.ask(2, { x: 3 });
    await assertRejectsWith(bad, "bad input 7");
    assertEquals((await good).x2, 6);
    // Not sticky: later requests are answered.
    assertEquals((await ws.ask(0, { x: 2 })).x2, 4);
  } finally {
    ws.close();
    URL.revokeObjectURL(url.href);
  }
});

Deno.test("request workers: sticky, one error answer fails every request waiting and after", async () => {
  const url = moduleOf(ECHO);
  const ws = new RequestWorkers<Answer>(url, 2, {
    sticky: true,
    describe: (text, answer) => `${answer ? "answer" : "worker"}: ${text}`,
  });
  try {
    const slow = ws.ask(0, { x: 200 });
    const bad = ws.ask(1, { fail: 1 });
    await assertRejectsWith(bad, "answer: bad input 1");
    await assertRejectsWith(slow, "answer: bad input 1");
    await assertRejectsWith(ws.ask(0, { x: 1 }), "answer: bad input 1");
  } finally {
    ws.close();
    URL.revokeObjectURL(url.href);
  }
});

Deno.test("request workers: a worker that throws fails the requests waiting", async () => {
  const url = moduleOf(ECHO);
  const ws = new RequestWorkers<Answer>(url, 1);
  try {
    const waiting = ws.ask(0, { x: 300 });
    const crash = ws.ask(0, { crash: true });
    await assertRejectsWith(waiting, "crashed on purpose");
    await assertRejectsWith(crash, "crashed on purpose");
  } finally {
    ws.close();
    URL.revokeObjectURL(url.href);
  }
});

Deno.test("request workers: modulesReadable checks file modules only", () => {
  assert(modulesReadable(import.meta.url, ["./workers_test.ts", "../../search/workers.ts"]));
  assert(modulesReadable("https://example.com/a/b.ts", ["./c.ts"]));
});
