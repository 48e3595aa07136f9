/**
 * Headless Chromium for the browser tests (Debian `chromium`, driven by
 * puppeteer-core): launching it, and a guard on a page that records every
 * console error, page error and failed request, and aborts (and records)
 * every request the test does not allow. Without `/usr/bin/chromium` the
 * tests fail: they do not skip (`.ci/run` installs the package).
 *
 * @module
 */
import puppeteer, { type Browser, type HTTPRequest, type Page } from "puppeteer-core";
import { assert, assertEquals } from "./_assert.ts";

/** Debian's Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/** Launches headless Chromium (fails the test with a hint when it is missing). */
export async function launchChromium(): Promise<Browser> {
  assert(
    await Deno.stat(CHROMIUM).then(() => true, () => false),
    `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`,
  );
  return await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

/** What a guarded page saw. */
export interface PageGuard {
  /** Requests that were not allowed (each was aborted). */
  readonly blocked: string[];
  /** Console errors, page errors and failed requests, one line each. */
  readonly errors: string[];
  /** Allowed requests, in order (method and URL). */
  readonly allowed: string[];
}

/** How {@linkcode guardPage} treats requests. */
export interface GuardOptions {
  /** Whether a request may go out (default: only `data:` and `about:` URLs). */
  readonly allow?: (url: URL) => boolean;
  /**
   * Called for each allowed request before it continues; returning true
   * means the test took it over (it responds, holds or aborts it itself).
   */
  readonly take?: (req: HTTPRequest) => boolean;
  /** An allowed request that the page itself aborted (`net::ERR_ABORTED`) is not an error. */
  readonly abortsOk?: boolean;
}

/** `http:` on 127.0.0.1, `localhost` or `[::1]`. */
export const isLoopback = (url: URL): boolean =>
  url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);

/** Intercepts every request of `page` (see {@linkcode GuardOptions}) and records errors. */
export async function guardPage(page: Page, opts: GuardOptions = {}): Promise<PageGuard> {
  const g: PageGuard = { blocked: [], errors: [], allowed: [] };
  const allow = opts.allow ?? (() => false);
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const url = req.url();
    if (url.startsWith("data:") || url.startsWith("about:")) {
      req.continue();
      return;
    }
    let ok = false;
    try {
      ok = allow(new URL(url));
    } catch { /* not a URL: blocked */ }
    if (!ok) {
      g.blocked.push(url);
      req.abort();
      return;
    }
    g.allowed.push(`${req.method()} ${url}`);
    if (opts.take?.(req) === true) return;
    req.continue();
  });
  page.on("console", (m) => {
    if (m.type() === "error") g.errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => g.errors.push(`page: ${e instanceof Error ? e.message : e}`));
  page.on("requestfailed", (r) => {
    if (g.blocked.includes(r.url())) return;
    const why = r.failure()?.errorText ?? "";
    if (opts.abortsOk === true && why === "net::ERR_ABORTED") return;
    g.errors.push(`request failed: ${r.url()} ${why}`);
  });
  return g;
}

/**
 * The interception is not vacuous: a fresh guarded page whose content
 * loads an image from another host records exactly that request (a fresh
 * page: a Content-Security-Policy would stay with the document of another).
 */
export async function assertGuardCatches(browser: Browser, opts: GuardOptions = {}): Promise<void> {
  const probe = await browser.newPage();
  try {
    const g = await guardPage(probe, opts);
    await probe.setContent('<img src="https://example.invalid/x.png">', { waitUntil: "load" });
    assertEquals(g.blocked, ["https://example.invalid/x.png"]);
  } finally {
    await probe.close();
  }
}
