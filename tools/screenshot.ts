/**
 * A full-page screenshot of a self-contained HTML page (a report), in
 * headless Chromium (Debian's `/usr/bin/chromium`, driven by
 * puppeteer-core, `--no-sandbox`), for the pictures of `docs/`:
 *
 * ```sh
 * npx -y deno@2.9.6 run -A tools/screenshot.ts outputs/search-error/report/report.html \
 *   docs/report_search_error.png [--width 1100]
 * ```
 *
 * The page is loaded from its text (`setContent`) with every request other
 * than `data:` and `about:` aborted: if the page asked for anything, or
 * logged a console or page error, nothing is written and the command exits
 * 1 naming it. It prints the PNG's path and size.
 *
 * @module
 */
import puppeteer from "puppeteer-core";

const CHROMIUM = "/usr/bin/chromium";

if (import.meta.main) {
  const args = [...Deno.args];
  const wi = args.indexOf("--width");
  const width = wi >= 0 ? Number(args.splice(wi, 2)[1]) : 1100;
  if (args.length !== 2 || !(width >= 320)) {
    console.error("usage: tools/screenshot.ts PAGE.html OUT.png [--width PX]");
    Deno.exit(2);
  }
  const [page, out] = args;
  const html = Deno.readTextFileSync(page);
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const problems: string[] = [];
  try {
    const tab = await browser.newPage();
    await tab.setRequestInterception(true);
    tab.on("request", (req) => {
      const url = req.url();
      if (url.startsWith("data:") || url.startsWith("about:")) req.continue();
      else {
        problems.push(`request ${url}`);
        req.abort();
      }
    });
    tab.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    tab.on("pageerror", (e) => problems.push(`page error: ${e}`));
    await tab.setViewport({ width, height: 800 });
    await tab.setContent(html, { waitUntil: "load" });
    if (problems.length === 0) {
      const png = await tab.screenshot({ fullPage: true });
      Deno.writeFileSync(out, png);
      console.log(`${out}: ${png.byteLength} bytes (${width} px wide)`);
    }
  } finally {
    await browser.close();
  }
  if (problems.length > 0) {
    console.error(`${page}: ${problems.join("; ")}`);
    Deno.exit(1);
  }
}
