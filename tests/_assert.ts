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

/** A value for a message: abbreviated (long strings, deep or long structures). */
function show(v: unknown): string {
  return Deno.inspect(v, { depth: 8, iterableLimit: 200, strAbbreviateSize: 400 });
}

/** A typed array or a `DataView` (compared element by element). */
type Typed = ArrayBufferView & { readonly length?: number; [i: number]: number | bigint };

/**
 * Where `a` and `b` first differ (a path such as `.rows[3]`, `""` for the
 * values themselves), or `undefined` when they are equal: primitives by
 * `Object.is` (so `NaN` equals `NaN` and `-0` is not `0`); arrays, typed
 * arrays, `Map`s and `Set`s element by element in order; other objects by
 * their prototype and own enumerable keys, in order, and those keys'
 * values; `Date`s by time, `RegExp`s by source and flags. Every element
 * and character counts: nothing is abbreviated.
 */
function difference(
  a: unknown,
  b: unknown,
  path: string,
  seen: Map<object, object>,
): string | undefined {
  if (Object.is(a, b)) return undefined;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return path;
  if (seen.get(a) === b) return undefined; // (a cycle met again: equal so far)
  seen.set(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return path;
  if (ArrayBuffer.isView(a)) {
    const x = a as Typed, y = b as Typed;
    if (a instanceof DataView) {
      const p = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      const q = new Uint8Array(
        (b as DataView).buffer,
        (b as DataView).byteOffset,
        (b as DataView).byteLength,
      );
      return difference(p, q, path, seen);
    }
    if (x.length !== y.length) return `${path}.length`;
    for (let i = 0; i < x.length!; i++) if (!Object.is(x[i], y[i])) return `${path}[${i}]`;
    return undefined;
  }
  if (a instanceof ArrayBuffer || a instanceof SharedArrayBuffer) {
    return difference(new Uint8Array(a), new Uint8Array(b as ArrayBuffer), path, seen);
  }
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime()) ? undefined : path;
  if (a instanceof RegExp) {
    return a.source === (b as RegExp).source && a.flags === (b as RegExp).flags ? undefined : path;
  }
  if (a instanceof Map || a instanceof Set) {
    const x = [...a.entries()], y = [...(b as Map<unknown, unknown>).entries()];
    if (x.length !== y.length) return `${path}.size`;
    return difference(x, y, `${path}.entries()`, seen);
  }
  if (Array.isArray(a)) {
    const y = b as unknown[];
    if (a.length !== y.length) return `${path}.length`;
    for (let i = 0; i < a.length; i++) {
      if (!(i in a) !== !(i in y)) return `${path}[${i}]`;
      const d = difference(a[i], y[i], `${path}[${i}]`, seen);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (a instanceof Error) {
    const y = b as Error;
    if (a.name !== y.name || a.message !== y.message) return `${path}.message`;
  }
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return `${path} (keys)`;
  for (const k of ka) {
    const d = difference(
      (a as Record<string, unknown>)[k],
      (b as Record<string, unknown>)[k],
      `${path}.${k}`,
      seen,
    );
    if (d !== undefined) return d;
  }
  return undefined;
}

/** For a message: where two strings first differ, with some text either side. */
function stringDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const near = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 60), i + 60));
  return `first difference at character ${i} (lengths ${a.length} and ${b.length})\n` +
    `  actual:   …${near(a)}…\n  expected: …${near(b)}…`;
}

/**
 * Deep equality of every element and character ({@linkcode difference}:
 * primitives by `Object.is`; arrays, typed arrays, maps and sets in order;
 * objects by prototype and own enumerable keys in order). The message says
 * where the values first differ.
 */
export function assertEquals<T>(actual: T, expected: T, msg?: string): void {
  const where = difference(actual, expected, "", new Map());
  if (where === undefined) return;
  const head = msg ? msg + "\n" : "";
  if (typeof actual === "string" && typeof expected === "string") {
    throw new Error(`${head}strings differ: ${stringDifference(actual, expected)}`);
  }
  throw new Error(
    `${head}values differ${where === "" ? "" : ` at ${where}`}\n  actual:   ${
      show(actual)
    }\n  expected: ${show(expected)}`,
  );
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
