/**
 * The suites' own `assertEquals` (`_assert.ts`): every character and
 * element counts. (It once compared `Deno.inspect` renderings, which cut
 * strings at 400 characters and structures at depth 8.)
 */
import { assert, assertEquals } from "./_assert.ts";

/** The message `f` throws, or `undefined`. */
function thrown(f: () => void): string | undefined {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

Deno.test("assertEquals: a long text that differs at its end, a deep leaf, one byte of many, -0", () => {
  const long = "x".repeat(5000);
  assertEquals(thrown(() => assertEquals(long + "a", long + "b")) !== undefined, true);
  assert(thrown(() => assertEquals(long + "a", long + "b"))!.includes("character 5000"));
  assertEquals(thrown(() => assertEquals([long + "a"], [long + "b"])) !== undefined, true);
  let deep: unknown = 1, deep2: unknown = 2;
  for (let i = 0; i < 12; i++) {
    deep = { a: deep };
    deep2 = { a: deep2 };
  }
  assert(thrown(() => assertEquals(deep, deep2))!.includes(".a.a.a.a.a.a.a.a.a.a.a.a"));
  const bytes = new Uint8Array(1 << 20), other = bytes.slice();
  other[(1 << 20) - 1] = 1;
  assert(thrown(() => assertEquals(bytes, other))!.includes(`[${(1 << 20) - 1}]`));
  assert(
    thrown(() => assertEquals<unknown>(new Float32Array([1]), new Float64Array([1]))) !== undefined,
  );
  assert(thrown(() => assertEquals(-0, 0)) !== undefined);
  assert(thrown(() => assertEquals<unknown>("1", 1)) !== undefined);
  assert(thrown(() => assertEquals({ a: 1, b: 2 }, { b: 2, a: 1 })) !== undefined, "keys in order");
  assert(thrown(() => assertEquals(new Map([[1, 2]]), new Map([[1, 3]]))) !== undefined);
  assert(thrown(() => assertEquals([1, , 3], [1, undefined, 3])) !== undefined, "a hole");
});

Deno.test("assertEquals: equal values of every kind pass", () => {
  const long = "y".repeat(5000);
  assertEquals(long + "a", long + "a");
  assertEquals(
    { s: long, n: [NaN, -0, 1.5], t: new Int32Array([1, -2]), m: new Map([["k", { v: [1] }]]) },
    { s: long, n: [NaN, -0, 1.5], t: new Int32Array([1, -2]), m: new Map([["k", { v: [1] }]]) },
  );
  assertEquals(new Set([1, 2]), new Set([1, 2]));
  assertEquals(new Date(5), new Date(5));
  assertEquals(/a+/g, /a+/g);
  const cyc: Record<string, unknown> = { x: 1 }, cyc2: Record<string, unknown> = { x: 1 };
  cyc.self = cyc;
  cyc2.self = cyc2;
  assertEquals(cyc, cyc2);
});
