/**
 * The demo server over an index built from a corpus (a DPR passage TSV,
 * `tests/testdata/corpus/psgs.tsv`): each answer carries its passage's id
 * and title as the corpus has them (`wiki:12`, `Zürich`), and the passage
 * text as its context; the page shows both (`serve/static/index.html`).
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, runStage } from "../_util.ts";
import { startServer } from "../../serve/server.ts";
import type { SearchAnswer } from "../../serve/search.ts";

Deno.test("serve over a corpus index: each answer shows its passage id and title", async () => {
  const dir = await Deno.makeTempDir({ prefix: "serve_corpus_" });
  const corpus = `${ROOT}/tests/testdata/corpus/psgs.tsv`;
  try {
    for (
      const [script, args] of [
        ["pipeline/embed_context.ts", [corpus, `${dir}/c_emb`, "--sparse"]],
        ["pipeline/index.ts", [`${dir}/c_emb`, `${dir}/ix`, "--sparse", "--context", corpus]],
      ] as const
    ) {
      const r = await runStage(script, args);
      assertEquals(r.code, 0, r.stderr);
    }
    const s = await startServer({
      index: `${dir}/ix`,
      encoder: "sparse-pi",
      port: 0,
      log: () => {},
    });
    try {
      const r = await fetch(`${s.url}v1/search?q=${encodeURIComponent("where is zürich")}&k=3`);
      assertEquals(r.status, 200);
      const a: SearchAnswer = await r.json();
      const top = a.results[0];
      assertEquals([top.paragraph_id, top.title, top.phrase], ["wiki:12", "Zürich", "Switzerland"]);
      assertEquals(top.context, "Zürich is a city in Switzerland on Lake Zürich.");
      const byId = new Map([
        ["1", "Ada Lovelace"],
        ["wiki:12", "Zürich"],
        ["über-3", "Straße"],
        ["4", "Aare"],
      ]);
      for (const h of a.results) assertEquals(h.title, byId.get(h.paragraph_id));
      const page = await Deno.readTextFile(`${ROOT}/serve/static/index.html`);
      assert(page.includes('el("span", "paragraph-id", String(r.paragraph_id))'), "page shows ids");
      assert(page.includes('el("span", "title", String(r.title ?? r.paragraph_id'), "and titles");
    } finally {
      await s.shutdown();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
