/**
 * The runner service (`runs/runners/status.ts` `RunnerService`): each Layer
 * provides its own runner, a new one each time it is built (a Slurm
 * runner's job-array names count from 0 within one run), with the options
 * it was given.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { LocalRunner, LocalRunnerLive } from "../../../runs/runners/local.ts";
import { SlurmRunner, SlurmRunnerLive } from "../../../runs/runners/slurm.ts";
import { RunnerService } from "../../../runs/runners/status.ts";

const provided = Effect.gen(function* () {
  return yield* RunnerService;
});

Deno.test("RunnerService: LocalRunnerLive provides a new LocalRunner each build", async () => {
  const layer = LocalRunnerLive();
  const a = await Effect.runPromise(Effect.provide(provided, layer));
  const b = await Effect.runPromise(Effect.provide(provided, layer));
  assert(a instanceof LocalRunner && b instanceof LocalRunner);
  assertEquals(a.kind, "local");
  assert(a !== b, "one runner shared by two builds");
});

Deno.test("RunnerService: SlurmRunnerLive provides a SlurmRunner with its options", async () => {
  const opts = { partition: "gpu", runDir: "/nonexistent/run", throttle: 4 };
  const r = await Effect.runPromise(Effect.provide(provided, SlurmRunnerLive(opts)));
  assert(r instanceof SlurmRunner);
  assertEquals(r.kind, "slurm");
  assertEquals(r.opts, opts);
});
