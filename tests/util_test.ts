/**
 * The test helpers themselves: a failing Python reference must show its own
 * error, not the broken pipe of the stdin it never read.
 *
 * @module
 */
import { assert } from "./_assert.ts";
import { python } from "./_util.ts";

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
