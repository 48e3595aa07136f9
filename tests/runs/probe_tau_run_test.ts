/**
 * A run config's adaptive probing, run (piqa-lstm × articles [8, 10) of
 * dev, an 8-list 4-bit IVF-PQ index (the quicker to train), `nprobe: 4`,
 * a `probeTau` no list but the best is within): the search task's record
 * says `probe_tau`, and its answers are `search --nprobe 1`'s (not
 * `--nprobe 4`'s); over 2 shards, each shard's task probes the same lists:
 * the merged search is the unsharded one's bytes, and the shards' hits
 * files name the tau. (The plan's command lines are
 * `tests/runs/plan/probe_tau_plan_test.ts`.)
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { runOpenIvfConfig, runStage } from "../_util.ts";
import { parseSearchRecord } from "../../search/open/record.ts";

/** A tau below every gap between the best list's probing score and the next one's. */
const TAU = 1e-9;

Deno.test("run config: open.ivf.probeTau reaches the search (its record, nprobe 1's answers) and every shard's search", async () => {
  const work = Deno.makeTempDirSync({ prefix: "phraseval-taurun-" });
  try {
    const ivf = `ivf: { nlist: 8, bpv: 16, nprobe: 4, pqBits: 4, probeTau: ${TAU} }`;
    const run = await runOpenIvfConfig(work, ivf, ["t1", "t2"]);
    const open = `${run}/open/piqa-lstm`;
    const rec = parseSearchRecord(
      Deno.readTextFileSync(`${open}/t1.search.json`),
      "t1.search.json",
    );
    assertEquals([rec.mode, rec.nprobe, rec.probe_tau, rec.questions], [
      "approximate",
      4,
      TAU,
      232,
    ]);
    // The same index and questions searched by hand: the run's answers are one list's.
    const byHand = async (flags: string[]) => {
      const out = `${work}/hand${flags.join("")}`;
      const s = await runStage("pipeline/search.ts", [
        `${run}/datasets/t1/data.json`,
        `${run}/indexes/piqa-lstm/t1`,
        `${run}/dumps/piqa-lstm/t1/question_emb`,
        `${out}.json`,
        "--top-k",
        "10",
        "--topk-out",
        `${out}.topk.ndjson`,
        ...flags,
      ]);
      assertEquals(s.code, 0, s.stderr);
      return Deno.readTextFileSync(`${out}.topk.ndjson`);
    };
    const topk = Deno.readTextFileSync(`${open}/t1.topk.ndjson`);
    const one = await byHand(["--nprobe", "1"]);
    assert(one !== (await byHand(["--nprobe", "4"])), "one list and four differ on this index");
    assertEquals(topk, one);
    // The shards' tasks and their merge: the unsharded search's bytes; each hits file names tau.
    for (const f of [".json", ".topk.ndjson"]) {
      assertEquals(
        Deno.readTextFileSync(`${open}/t2${f}`),
        Deno.readTextFileSync(`${open}/t1${f}`),
        f,
      );
    }
    for (let i = 0; i < 2; i++) {
      const hits = Deno.readTextFileSync(`${run}/hits/piqa-lstm/t2/shard-${i}-of-2.hits.ndjson`);
      const header = JSON.parse(hits.slice(0, hits.indexOf("\n")));
      assertEquals([header.search.nprobe, header.search.probe_tau], [4, TAU]);
    }
  } finally {
    Deno.removeSync(work, { recursive: true });
  }
});
