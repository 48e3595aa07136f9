/**
 * The progress clock of a run's tasks (`runs/runners/logs.ts` `lastProgress`), which a
 * task's no-progress limit reads.
 *
 * @module
 */
import { assertEquals } from "../../_assert.ts";
import { lastProgress } from "../../../runs/runners/logs.ts";

Deno.test("progress clock: a file written inside a watched folder is progress (a long search's temporary pred.json), not only the folder's own entries", () => {
  const dir = Deno.makeTempDirSync({ prefix: "phraseval-progress-" });
  try {
    const at = (s: number) => new Date(s * 1000);
    Deno.writeTextFileSync(`${dir}/task.log`, "== t attempt 1\n");
    Deno.mkdirSync(`${dir}/open`);
    Deno.mkdirSync(`${dir}/open/sub`);
    Deno.writeTextFileSync(`${dir}/open/.pred.json.0123abcd.tmp`, "{");
    const task = { log: `${dir}/task.log`, watch: [`${dir}/open`, `${dir}/missing`] };
    for (const p of ["task.log", "open", "open/sub", "open/.pred.json.0123abcd.tmp"]) {
      Deno.utimeSync(`${dir}/${p}`, at(1000), at(1000));
    }
    assertEquals(lastProgress(task), 1_000_000);
    // The search goes on writing its temporary file: the folder's own time stays.
    Deno.utimeSync(`${dir}/open/.pred.json.0123abcd.tmp`, at(3000), at(3000));
    assertEquals(lastProgress(task), 3_000_000);
    // A sub-folder's time counts as the folder's entries do (its files are not read).
    Deno.utimeSync(`${dir}/open/sub`, at(4000), at(4000));
    assertEquals(lastProgress(task), 3_000_000);
    // The log growing is progress too.
    Deno.utimeSync(`${dir}/task.log`, at(5000), at(5000));
    assertEquals(lastProgress(task), 5_000_000);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
