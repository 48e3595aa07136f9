/**
 * `report.html` in headless Chromium (Debian `chromium`, driven by
 * puppeteer-core): no console error, no page error, and no request leaves
 * the page (every request other than `data:`/`about:` is recorded and
 * aborted); a full-page screenshot is saved in the test's output folder
 * (its path is printed). The same for a report with `--search-error` alone
 * (hand-made searches, `_searches.ts`): its three charts, each with its
 * table under it and hover titles on its points. Without `/usr/bin/chromium` this test fails: it
 * does not skip (`.ci/run` installs the package).
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../_assert.ts";
import { assertGuardCatches, guardPage, launchChromium, type PageGuard } from "../_browser.ts";
import { DEV_GZ } from "../_util.ts";
import { report } from "../../report/mod.ts";
import { SYSTEMS, writeDevSystems } from "./_systems.ts";
import { fixture, SAME, writeSearch } from "./_searches.ts";

Deno.test("report.html in headless Chromium: no console error, no request leaves the page, a screenshot", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-report-browser-" });
  const preds = await writeDevSystems(dir);
  const out = `${dir}/report`;
  await Effect.runPromise(report({
    inputs: SYSTEMS.map((n, i) => `${n}=${preds[i]}`),
    data: DEV_GZ,
    out,
    resamples: 200,
    shuffles: 999,
  }));
  const html = await Deno.readTextFile(`${out}/report.html`);
  for (const p of preds) await Deno.remove(p); // keep only the report and its screenshot
  const browser = await launchChromium();
  let guard: PageGuard | undefined;
  try {
    const page = await browser.newPage();
    guard = await guardPage(page);
    await page.setViewport({ width: 1280, height: 900 });
    await page.setContent(html, { waitUntil: "load" });
    const svgs = await page.$$eval("figure svg", (els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return [r.width, r.height];
      }));
    assertEquals(svgs.length, 4); // scores, question type, F1 histograms, metric disagreements
    for (const [w, h] of svgs) assert(w > 100 && h > 100, `a chart of ${w}×${h}`);
    const tables = await page.$$eval("table", (els) => els.length);
    assert(tables >= 5, `${tables} tables`);
    const shot = `${out}/report.png`;
    await page.screenshot({ path: shot, fullPage: true });
    const png = await Deno.readFile(shot);
    assertEquals([...png.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
    assert(png.byteLength > 20000, `screenshot of ${png.byteLength} bytes`);
    // Printing works too (the @media print rules apply).
    const pdf = await page.pdf({ format: "A4" });
    assert(pdf.byteLength > 10000);
    console.log(`screenshot: ${shot}`);
    // The interception is not vacuous: a page that fetches is caught.
    await assertGuardCatches(browser);
  } finally {
    await browser.close();
  }
  assertEquals(guard?.blocked, []);
  assertEquals(guard?.errors, []);
});

Deno.test("report.html with --search-error in headless Chromium: three charts each over its table, hover titles, no request leaves the page", async () => {
  const dir = fixture();
  writeSearch(dir, "np4", SAME, { nprobe: 4 });
  const out = `${dir}/report`;
  await Effect.runPromise(report({
    inputs: [],
    searchError: { exact: `${dir}/exact.json`, approx: [dir] },
    out,
  }));
  const html = await Deno.readTextFile(`${out}/report.html`);
  const browser = await launchChromium();
  let guard: PageGuard | undefined;
  try {
    const page = await browser.newPage();
    guard = await guardPage(page);
    await page.setViewport({ width: 1280, height: 900 });
    await page.setContent(html, { waitUntil: "load" });
    const figures = await page.$$eval("figure", (els) =>
      els.map((e) => {
        const r = e.querySelector("svg")!.getBoundingClientRect();
        const next = e.nextElementSibling;
        return {
          id: e.id,
          w: r.width,
          h: r.height,
          tableUnder: next?.tagName === "TABLE" &&
            next.getBoundingClientRect().top >= e.getBoundingClientRect().bottom,
          titles: e.querySelectorAll("svg title").length,
        };
      }));
    assertEquals(figures.map((f) => f.id), [
      "search-error-em",
      "search-error-recall",
      "search-error-speed",
    ]);
    for (const f of figures) {
      assert(f.w > 100 && f.h > 100, `${f.id}: ${f.w}×${f.h}`);
      assert(f.tableUnder, `${f.id}: no table under it`);
      assert(f.titles >= 2, `${f.id}: ${f.titles} hover titles`);
    }
    const shot = `${out}/report.png`;
    await page.screenshot({ path: shot, fullPage: true });
    assert((await Deno.readFile(shot)).byteLength > 20000);
    console.log(`screenshot: ${shot}`);
  } finally {
    await browser.close();
  }
  assertEquals(guard?.blocked, []);
  assertEquals(guard?.errors, []);
  // Keep only the report and its screenshot.
  for await (const e of Deno.readDir(dir)) {
    if (e.name !== "report") await Deno.remove(`${dir}/${e.name}`, { recursive: true });
  }
});
