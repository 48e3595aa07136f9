/**
 * A task's last exit status as its log says it (`runs/runners/logs.ts`
 * `lastExitStatus`), which decides a failed run's exit (2 for bad input) and
 * whether a Slurm task exited or was killed. The log is read backwards from
 * its end: before, it was read whole as one string, and a log over
 * JavaScript's string limit (a task's output of gigabytes) read as no status
 * at all (`null`): a task that exited 2 made its run exit 1, and a Slurm task
 * that exited was taken as killed and retried. The large logs here are sparse
 * (`Deno.truncate`): no disk.
 *
 * @module
 */
import { assertEquals } from "../../_assert.ts";
import { lastExitStatus } from "../../../runs/runners/logs.ts";

const TMP = Deno.makeTempDirSync({ prefix: "phraseval-exit-status-" });
globalThis.addEventListener("unload", () => Deno.removeSync(TMP, { recursive: true }));

/** The exit status of a log of `text` (latin-1 bytes: one byte a character). */
function statusOf(text: string): number | null {
  const f = Deno.makeTempFileSync({ dir: TMP });
  Deno.writeFileSync(f, Uint8Array.from(text, (c) => c.charCodeAt(0)));
  return lastExitStatus(f);
}

/** The reference: the whole text, as the status was read before (still right for small logs). */
function wholeStatus(text: string): number | null {
  const m = [...text.matchAll(/^== exit (\d+)/gm)].pop();
  const h = [...text.matchAll(/^== .* attempt /gm)].pop();
  if (!m || (h && (h.index ?? 0) > (m.index ?? 0))) return null;
  return Number(m[1]);
}

Deno.test("lastExitStatus: the same status as the whole log's last exit and attempt lines, across chunks", () => {
  const out = (n: number) => "x".repeat(n) + "\n";
  const logs = [
    "",
    "== exit 0\n",
    "== exit 7",
    "== t attempt 1 local\n",
    "== t attempt 1 local\n" + out(10) + "== exit 3 after 1 s\n",
    "== t attempt 1 local\n== exit 3 after 1 s\n== t attempt 2 local\n" + out(5),
    "== t attempt 1 local\n" + out(200_000) + "== exit 2 after 9 s\n" + out(300_000),
    "== exit 4\n" + out(70_000) + "progress 50%\r== exit 5\n",
    "== exit 4\r\n" + "y".repeat(140_000) + "\n",
    "== exit 1 attempt \n",
    "== exit 6\n" + "== t attempt " + "z".repeat(100_000) + "\n",
    "x== exit 9\n",
    "\xff\xfe== exit 1\n== exit 12 after \xe9\n" + out(65_530),
  ];
  for (const log of logs) {
    assertEquals(statusOf(log), wholeStatus(log), JSON.stringify(log.slice(0, 40)));
  }
});

Deno.test("lastExitStatus: a log of 1 GiB, more than one JavaScript string holds, still says its status", () => {
  const f = `${TMP}/big.log`;
  Deno.writeTextFileSync(f, "== evaluate attempt 1 local\n");
  Deno.truncateSync(f, 2 ** 30);
  Deno.writeTextFileSync(f, "\n== exit 2 after 40 s\n", { append: true });
  assertEquals(lastExitStatus(f), 2);
  Deno.writeTextFileSync(f, "== evaluate attempt 2 local\n", { append: true });
  assertEquals(lastExitStatus(f), null);
});
