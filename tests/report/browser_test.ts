/**
 * `report.html` in headless Chromium (Debian `chromium`, driven by
 * puppeteer-core): no console error, no page error, and no request leaves
 * the page (every request other than `data:`/`about:` is recorded and
 * aborted); a full-page screenshot is saved in the test's output folder
 * (its path is printed). Without `/usr/bin/chromium` this test fails: it
 * does not skip (`.ci/run` installs the package).
 */
import puppeteer from "puppeteer-core";
import { Effect } from "effect";
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ } from "../_util.ts";
import { report } from "../../report/mod.ts";
import { SYSTEMS, writeDevSystems } from "./_systems.ts";

const CHROMIUM = "/usr/bin/chromium";

Deno.test("report.html in headless Chromium: no console error, no request leaves the page, a screenshot", async () => {
  assert(
    await Deno.stat(CHROMIUM).then(() => true, () => false),
    `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`,
  );
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
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const requests: string[] = [];
  const errors: string[] = [];
  try {
    const page = await browser.newPage();
    await page.setRequestInterception(true);
    page.on("request", (req) => {
      const url = req.url();
      if (url.startsWith("data:") || url.startsWith("about:")) {
        req.continue();
        return;
      }
      requests.push(url);
      req.abort();
    });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => errors.push(`page: ${e instanceof Error ? e.message : e}`));
    page.on("requestfailed", (r) => {
      if (!requests.includes(r.url())) errors.push(`request failed: ${r.url()}`);
    });
    await page.setViewport({ width: 1280, height: 900 });
    await page.setContent(html, { waitUntil: "load" });
    const svgs = await page.$$eval("figure svg", (els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return [r.width, r.height];
      }));
    assertEquals(svgs.length, 3);
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
    // The interception is not vacuous: a page that fetches is caught (a fresh page: the
    // report's Content-Security-Policy would stay with the document of the first one).
    const probe = await browser.newPage();
    const seen: string[] = [];
    await probe.setRequestInterception(true);
    probe.on("request", (req) => {
      seen.push(req.url());
      req.abort();
    });
    await probe.setContent('<img src="https://example.invalid/x.png">', { waitUntil: "load" });
    assertEquals(seen, ["https://example.invalid/x.png"]);
  } finally {
    await browser.close();
  }
  assertEquals(requests, []);
  assertEquals(errors, []);
});
