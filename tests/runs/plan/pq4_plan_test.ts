/**
 * A run config's 4-bit IVF-PQ (`open: { ivf: { pqBits: 4 } }`) with shards
 * and a hybrid model's dense block: the planned tasks' command lines. The
 * quantizer task (`index --train-only`) gets `--pq-bits=4` (and the
 * hybrid's `--dense-dims`), each shard's index task `--quantizer` and no
 * `--pq-bits` (the quantizer fixes it; `index` refuses both together),
 * an unsharded index task `--pq-bits=4`. (The run itself, unsharded
 * against 2 shards, is in `tests/search/index/ivfpq/fastscan_test.ts`.)
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { DEV_GZ } from "../../_util.ts";
import { validateRunConfig } from "../../../runs/config/config.ts";
import { planRun } from "../../../runs/plan/plan.ts";

Deno.test("run plan: pqBits 4 with shards and denseDims: the quantizer task gets --pq-bits=4, the shards take it from the quantizer", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-pq4plan-" });
  try {
    const ivf = { nlist: 8, bpv: 16, denseDims: 256, pqBits: 4 as const };
    const cfg = await Effect.runPromise(validateRunConfig({
      datasets: [
        { abbr: "u", path: DEV_GZ, reader: { articles: [3, 4] }, open: { ivf } },
        { abbr: "s", path: DEV_GZ, reader: { articles: [3, 4] }, open: { shards: 3, ivf } },
      ],
      models: [{ abbr: "h", encoder: "piqa-lstm+sparse" }],
    }, `${dir}/cfg.ts`));
    const plan = await Effect.runPromise(
      planRun(cfg, { runDir: `${dir}/run`, maxPartitionSize: 1000 }),
    );
    const of = (stage: string, ds: string) =>
      plan.tasks.filter((t) => t.stage === stage && t.dataset === ds);
    const train = of("index_train", "s");
    assertEquals(train.length, 1);
    for (const a of ["--train-only", "--pq-bits=4", "--dense-dims=256", "--nlist=8", "--bpv=16"]) {
      assert(train[0].argv.includes(a), `${a}: ${train[0].argv.join(" ")}`);
    }
    const shards = of("index", "s");
    assertEquals(shards.length, 3);
    for (const t of shards) {
      assert(t.argv.some((a) => a.startsWith("--quantizer=")), t.argv.join(" "));
      assert(!t.argv.some((a) => a.startsWith("--pq-bits")), t.argv.join(" "));
    }
    const one = of("index", "u");
    assertEquals(one.length, 1);
    assert(one[0].argv.includes("--pq-bits=4") && one[0].argv.includes("--dense-dims=256"));
    assertEquals(of("index_train", "u").length, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
