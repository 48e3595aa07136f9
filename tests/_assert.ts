/**
 * Minimal assertions for the test suites (`jsr:@std/assert` cannot be
 * reached from where this project is built).
 *
 * @module
 */

/** Throws unless `cond` holds. */
export function assert(cond: unknown, msg = "assertion failed"): asserts cond {
  if (!cond) throw new Error(msg);
}

function show(v: unknown): string {
  return Deno.inspect(v, { depth: 8, iterableLimit: Infinity, strAbbreviateSize: 400 });
}

/** Deep equality (structural, via Deno.inspect of sorted-insensitive values). */
export function assertEquals<T>(actual: T, expected: T, msg?: string): void {
  const a = show(actual), e = show(expected);
  if (a !== e) {
    throw new Error(`${msg ? msg + "\n" : ""}values differ\n  actual:   ${a}\n  expected: ${e}`);
  }
}

/** Throws unless `text` includes `part`. */
export function assertStringIncludes(text: string, part: string, msg?: string): void {
  if (!text.includes(part)) {
    throw new Error(`${msg ? msg + "\n" : ""}expected ${show(text)} to include ${show(part)}`);
  }
}

/** Throws unless `re` matches `text`. */
export function assertMatch(text: string, re: RegExp, msg?: string): void {
  if (!re.test(text)) {
    throw new Error(`${msg ? msg + "\n" : ""}expected ${show(text)} to match ${re}`);
  }
}

/** Throws unless `p` rejects with an `Error` whose message includes `part`. */
export async function assertRejectsWith(p: Promise<unknown>, part: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof Error)) throw new Error(`rejected with a non-Error: ${show(e)}`);
    assertStringIncludes(e.message, part);
    return;
  }
  throw new Error(`expected a rejection including ${show(part)}; it resolved`);
}
