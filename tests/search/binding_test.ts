/**
 * The paragraph table is bound to the vectors it describes: an index's
 * header records `binding` (`indexBinding`, one digest over every file's
 * name, size and sha256), so a `paragraphs.ndjson` whose lines were swapped
 * and its sha256 in `index.json` recomputed is refused (exit 2, one line
 * naming `index.json`) by `search` (in memory, `--exact`, under a memory
 * budget, over shards) and `inspect`; a header without `binding` (written
 * before it, or with it deleted to get past it) is refused the same way.
 */
import { createHash } from "node:crypto";
import { assertEquals } from "../_assert.ts";
import { indexBinding } from "../../search/index/format.ts";
import { numpyDumps, ok, refused, smallIvfIndex } from "./_stages.ts";

/** Swaps lines `a` and `b` of `dir`'s paragraph table and recomputes its sha256 in the header. */
function swapLines(dir: string, a: number, b: number): void {
  const path = `${dir}/paragraphs.ndjson`;
  const lines = Deno.readTextFileSync(path).split("\n");
  [lines[a], lines[b]] = [lines[b], lines[a]];
  const text = lines.join("\n");
  Deno.writeTextFileSync(path, text);
  const h = JSON.parse(Deno.readTextFileSync(`${dir}/index.json`));
  h.files["paragraphs.ndjson"].sha256 = createHash("sha256").update(text).digest("hex");
  Deno.writeTextFileSync(`${dir}/index.json`, JSON.stringify(h, null, 2) + "\n");
}

/** A copy of the index folder `from` (its `ivf/` too) at `to`. */
function copyIndex(from: string, to: string): void {
  Deno.mkdirSync(to, { recursive: true });
  for (const e of Deno.readDirSync(from)) {
    if (e.isDirectory) copyIndex(`${from}/${e.name}`, `${to}/${e.name}`);
    else Deno.copyFileSync(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

const REFUSED = /index\.json: the files' sha256 do not match the binding recorded at the build/;

Deno.test("an index whose paragraph lines were swapped (sha256 recomputed) is refused; so is one without a binding", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "binding_" });
  try {
    await numpyDumps(dir, 8);
    const q = `${dir}/question_emb`, data = `${dir}/data.json`;
    const ivf = `${dir}/ivf`, sh = `${dir}/sh`;
    await smallIvfIndex(dir, ivf);
    await ok("pipeline/index.ts", [`${dir}/context_emb`, sh, "--context", data, "--shards", "2"]);
    const h = JSON.parse(Deno.readTextFileSync(`${ivf}/index.json`));
    assertEquals(h.binding, indexBinding(h.files));
    await ok("pipeline/search.ts", [data, ivf, q, `${dir}/good.json`]);
    await ok("pipeline/search.ts", [data, ivf, q, `${dir}/good_exact.json`, "--exact"]);

    const bad = `${dir}/bad`;
    copyIndex(ivf, bad);
    swapLines(bad, 2, 3);
    for (const extra of [[], ["--exact"], ["--memory-budget", "1"], ["--closed"]]) {
      await refused("pipeline/search.ts", [data, bad, q, `${dir}/p.json`, ...extra], REFUSED);
    }
    await refused("pipeline/inspect.ts", [bad], REFUSED);
    // A shard's table the same.
    swapLines(`${sh}/shard-1-of-2`, 0, 1);
    await refused("pipeline/search.ts", [data, sh, q, `${dir}/p.json`], REFUSED);

    // A header without the binding (written before it, or deleted to get past it): refused.
    const old = `${dir}/old`;
    copyIndex(ivf, old);
    const o = JSON.parse(Deno.readTextFileSync(`${old}/index.json`));
    delete o.binding;
    Deno.writeTextFileSync(`${old}/index.json`, JSON.stringify(o, null, 2) + "\n");
    for (const extra of [[], ["--exact"]]) {
      await refused(
        "pipeline/search.ts",
        [data, old, q, `${dir}/old.json`, ...extra],
        /index\.json: no binding of the files/,
      );
    }
    await refused("pipeline/inspect.ts", [old], /index\.json: no binding of the files/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
