/**
 * `subset`: articles A..B-1 of dev, byte for byte what Python's
 * `json.dumps` writes for the same slice; a bad range is one line, exit 2,
 * and no file.
 *
 * @module
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { DEV_GZ, python, runStage, sha256File } from "../_util.ts";

Deno.test("subset: articles 8..10 of dev = Python's json.dumps of the slice; bad ranges exit 2, nothing written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-subset-" });
  try {
    const r = await runStage("pipeline/subset.ts", [DEV_GZ, `${dir}/s.json`, "--articles", "8:11"]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(r.stderr.trim(), `subset: 3 articles written to ${dir}/s.json`);
    const want = (await python([
      "-c",
      "import gzip, hashlib, json, sys\n" +
      "d = json.load(gzip.open(sys.argv[1]))\nd['data'] = d['data'][8:11]\n" +
      "print(hashlib.sha256(json.dumps(d).encode()).hexdigest())",
      DEV_GZ,
    ])).stdout.trim();
    assertEquals(await sha256File(`${dir}/s.json`), want);
    for (
      const [range, re] of [
        ["40:60", /^subset: .*dev-v1\.1\.json\.gz: articles \[40, 60\) asked, the file has 48$/],
        ["3:1", /^subset: --articles must be A:B with A < B \(articles A..B-1\), got "3:1"$/],
        ["x", /^subset: --articles must be A:B/],
      ] as const
    ) {
      const bad = await runStage("pipeline/subset.ts", [
        DEV_GZ,
        `${dir}/b.json`,
        "--articles",
        range,
      ]);
      assertEquals(bad.code, 2, bad.stderr);
      assertMatch(bad.stderr.trim(), re);
      assertEquals(bad.stderr.trim().split("\n").length, 1);
      let exists = true;
      try {
        Deno.statSync(`${dir}/b.json`);
      } catch {
        exists = false;
      }
      assert(!exists, `${range}: a file was written`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
