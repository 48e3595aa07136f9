/**
 * What the numpy cross-check suites (`npy_test.ts`, `npz_test.ts`) share:
 * the JSON form of an array that `tests/py/npz_crosscheck.py` writes, the
 * comparison of a parsed array with it, arrays built from it without the
 * reader, and temporary folders removed when the process ends.
 *
 * @module
 */
import { assertEquals } from "../_assert.ts";
import { type Dtype, type NdArray, type NdData, stringsOf } from "../../io/npy.ts";

/** One element as the cross-check script writes it (NaN/inf as strings, ints as text). */
export type Val = number | string | boolean;

/** An array as the cross-check script describes it. */
export interface Spec {
  descr: string;
  shape: number[];
  fortran_order: boolean;
  values: Val[];
  version?: number;
}

const tempDirs: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const d of tempDirs) {
    try {
      Deno.removeSync(d, { recursive: true });
    } catch { /* already gone */ }
  }
});

/** A temporary folder, removed when the test process ends. */
export async function tempDir(prefix: string): Promise<string> {
  const d = await Deno.makeTempDir({ prefix });
  tempDirs.push(d);
  return d;
}

/** The elements of `arr` in the cross-check script's JSON form. */
export function encodeAll(arr: NdArray): Val[] {
  const k = arr.dtype[0];
  if (k === "U") return stringsOf(arr);
  if (k === "S") {
    const n = Number(arr.dtype.slice(1));
    const out: string[] = [];
    for (let i = 0; i < arr.data.length / n; i++) {
      let end = (i + 1) * n;
      while (end > i * n && arr.data[end - 1] === 0) end--;
      out.push(String.fromCharCode(...(arr.data as Uint8Array).subarray(i * n, end)));
    }
    return out;
  }
  return Array.from({ length: arr.data.length }, (_, i): Val => {
    const x = arr.data[i];
    if (k === "b") return x !== 0;
    if (k !== "f") return String(x);
    const v = x as number;
    if (Number.isNaN(v)) return "nan";
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    return Object.is(v, -0) ? "-0.0" : v;
  });
}

/** Asserts that `arr` holds exactly `values` (numbers compare by value). */
export function assertValues(arr: NdArray, values: Val[], where: string): void {
  const got = encodeAll(arr);
  assertEquals(got.length, values.length, `${where}: number of values`);
  for (let i = 0; i < got.length; i++) {
    // Python writes 2.0 as 2.0, JSON.parse gives 2: numbers compare by value.
    if (got[i] !== values[i]) {
      throw new Error(`${where}: value ${i} is ${got[i]}, expected ${values[i]}`);
    }
  }
}

/** Asserts that `arr` has exactly the dtype, shape, order and values of `spec`. */
export function assertMatchesSpec(arr: NdArray, spec: Spec, where: string): void {
  assertEquals((arr.byteOrder ?? "<") + arr.dtype, spec.descr, `${where}: descr`);
  assertEquals([...arr.shape], spec.shape, `${where}: shape`);
  assertEquals(arr.fortranOrder === true, spec.fortran_order, `${where}: fortran_order`);
  assertValues(arr, spec.values, where);
}

/** Builds an array from a spec without going through the NPY reader. */

/** Builds an array from a spec without going through the NPY reader. */
export function arrayFromSpec(spec: Spec): NdArray {
  const order = spec.descr[0] as "<" | ">" | "|";
  const dtype = spec.descr.slice(1) as Dtype;
  const k = dtype[0];
  const n = Number(dtype.slice(1));
  const vals = spec.values;
  const num = (v: Val): number =>
    v === "nan"
      ? NaN
      : v === "inf"
      ? Infinity
      : v === "-inf"
      ? -Infinity
      : v === "-0.0"
      ? -0
      : Number(v);
  let data: NdData;
  if (k === "S") {
    const b = new Uint8Array(vals.length * n);
    vals.forEach((s, i) => {
      for (let j = 0; j < (s as string).length; j++) b[i * n + j] = (s as string).charCodeAt(j);
    });
    data = b;
  } else if (k === "U") {
    const u = new Uint32Array(vals.length * n);
    vals.forEach((s, i) =>
      [...(s as string)].forEach((c, j) => (u[i * n + j] = c.codePointAt(0)!))
    );
    data = u;
  } else if (dtype === "b1") data = Uint8Array.from(vals, (v) => (v ? 1 : 0));
  else if (dtype === "i8") data = BigInt64Array.from(vals, (v) => BigInt(v as string));
  else if (dtype === "u8") data = BigUint64Array.from(vals, (v) => BigInt(v as string));
  else {
    const ctor = {
      f2: Float16Array,
      f4: Float32Array,
      f8: Float64Array,
      i1: Int8Array,
      i2: Int16Array,
      i4: Int32Array,
      u1: Uint8Array,
      u2: Uint16Array,
      u4: Uint32Array,
    }[dtype as string] as unknown as { from(xs: ArrayLike<number>): NdData };
    data = ctor.from(vals.map(num));
  }
  return { dtype, shape: spec.shape, data, byteOrder: order, fortranOrder: spec.fortran_order };
}
