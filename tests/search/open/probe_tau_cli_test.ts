/**
 * `search --probe-tau T` (adaptive probing of an ivf-pq index's lists): a tau
 * every list is within gives `--nprobe`'s answers, a tau none is within gives
 * `--nprobe 1`'s, one between gives answers between; the search record says
 * `probe_tau` (null without the flag); a bad tau, `--exact` with it, and an
 * exact index are refused with one line, exit 2, nothing written.
 *
 * @module
 */
import { parseSearchRecord } from "../../../search/open/record.ts";
import { assert, assertEquals } from "../../_assert.ts";
import { numpyDumps, ok, refused, smallIvfIndex } from "../_stages.ts";

Deno.test("search --probe-tau: all lists within it = --nprobe, none = --nprobe 1, the record's probe_tau; bad values refused", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "phraseval-probe-tau-" });
  try {
    await numpyDumps(tmp, 12);
    const ix = `${tmp}/ivf`;
    await smallIvfIndex(tmp, ix, ["--pq-bits", "4"]);
    const data = `${tmp}/data.json`, qe = `${tmp}/question_emb`;
    const run = async (name: string, flags: string[]) => {
      await ok("pipeline/search.ts", [
        data,
        ix,
        qe,
        `${tmp}/${name}.json`,
        "--top-k",
        "5",
        "--topk-out",
        `${tmp}/${name}.topk.ndjson`,
        "--candidates",
        "20",
        ...flags,
      ]);
      const rec = parseSearchRecord(
        Deno.readTextFileSync(`${tmp}/${name}.search.json`),
        `${name}.search.json`,
      );
      return { topk: Deno.readTextFileSync(`${tmp}/${name}.topk.ndjson`), rec };
    };
    const all = await run("all", ["--nprobe", "5"]);
    const one = await run("one", ["--nprobe", "1"]);
    const wide = await run("wide", ["--nprobe", "5", "--probe-tau", "1000"]);
    const tight = await run("tight", ["--nprobe", "5", "--probe-tau", "1e-12"]);
    const mid = await run("mid", ["--nprobe", "5", "--probe-tau", "0.2", "--threads", "2"]);
    assert(all.topk !== one.topk, "one list and five differ on this index");
    assertEquals(wide.topk, all.topk);
    assertEquals(tight.topk, one.topk);
    assert(mid.topk !== "" && mid.topk.split("\n").length === all.topk.split("\n").length);
    assertEquals(
      [all.rec.probe_tau, wide.rec.probe_tau, tight.rec.probe_tau, mid.rec.probe_tau],
      [null, 1000, 1e-12, 0.2],
    );
    assertEquals([wide.rec.nprobe, wide.rec.mode], [5, "approximate"]);

    // Bad values, --exact with it, an exact index: one line, exit 2, no predictions.
    const base = [data, ix, qe, `${tmp}/bad.json`];
    for (const v of ["0", "-0.5", "nan", "x"]) {
      await refused("pipeline/search.ts", [...base, "--probe-tau", v], /probe-tau/);
    }
    await refused(
      "pipeline/search.ts",
      [...base, "--exact", "--probe-tau", "0.1"],
      /^search: --exact cannot go with --probe-tau$/,
    );
    await ok("pipeline/index.ts", [`${tmp}/context_emb`, `${tmp}/exact`, "--context", data]);
    await refused(
      "pipeline/search.ts",
      [data, `${tmp}/exact`, qe, `${tmp}/bad.json`, "--probe-tau", "0.1"],
      /exact: is an exact index: --probe-tau applies to ivf-pq only$/,
    );
    assert(![...Deno.readDirSync(tmp)].some((e) => e.name.startsWith("bad")));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
