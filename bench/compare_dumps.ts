/**
 * `deno run --allow-read bench/compare_dumps.ts A_DIR B_DIR [--rtol 2e-3] [--atol 1e-3]`:
 * compares two dense dump folders (context_emb or question_emb) file by
 * file: same file names, identical phrase lists (`.json`), same shapes, and
 * every value within `|a − b| ≤ atol + rtol · max(|a|, |b|)` (defaults fit
 * two f16 dumps of the same f32 model run on different devices: one f16
 * rounding step is a relative 2^-11). Prints one summary line; exits 1 when
 * they disagree.
 *
 * @module
 */
import { parseNpz } from "../io/npz.ts";

/** Result of {@linkcode compareDumps}. */
export interface DumpComparison {
  /** Matrices compared. */
  readonly files: number;
  /** Values compared. */
  readonly values: number;
  /** Largest |a − b|. */
  readonly maxAbs: number;
  /** Values outside the tolerance. */
  readonly outside: number;
  /** First problems (missing files, shape or phrase differences, values). */
  readonly problems: readonly string[];
}

/**
 * Compares two dense dump folders.
 *
 * @example
 * ```ts ignore
 * import { compareDumps } from "./compare_dumps.ts";
 * const r = await compareDumps("/tmp/cpu/context_emb", "/tmp/cuda/context_emb");
 * r.outside; // 0
 * ```
 */
export async function compareDumps(
  a: string,
  b: string,
  rtol = 2e-3,
  atol = 1e-3,
): Promise<DumpComparison> {
  const names = async (d: string) => {
    const out: string[] = [];
    for await (const e of Deno.readDir(d)) {
      if (e.isFile && !e.name.startsWith(".")) out.push(e.name);
    }
    return out.sort();
  };
  const na = await names(a), nb = new Set(await names(b));
  const problems: string[] = [];
  let files = 0, values = 0, maxAbs = 0, outside = 0;
  for (const n of na) {
    if (!nb.has(n)) {
      problems.push(`${n}: only in ${a}`);
      continue;
    }
    nb.delete(n);
    if (n.endsWith(".json")) {
      const [x, y] = await Promise.all([
        Deno.readTextFile(`${a}/${n}`),
        Deno.readTextFile(`${b}/${n}`),
      ]);
      if (x !== y) problems.push(`${n}: phrase lists differ`);
      continue;
    }
    if (!n.endsWith(".npz")) continue;
    const x = parseNpz(await Deno.readFile(`${a}/${n}`), n).get("arr_0");
    const y = parseNpz(await Deno.readFile(`${b}/${n}`), n).get("arr_0");
    if (!x || !y || x.shape.join() !== y.shape.join()) {
      problems.push(`${n}: shapes ${x?.shape} vs ${y?.shape}`);
      continue;
    }
    files++;
    const dx = x.data as ArrayLike<number>, dy = y.data as ArrayLike<number>;
    for (let k = 0; k < dx.length; k++) {
      const d = Math.abs(dx[k] - dy[k]);
      if (d > maxAbs) maxAbs = d;
      if (d > atol + rtol * Math.max(Math.abs(dx[k]), Math.abs(dy[k]))) {
        if (outside++ < 3) problems.push(`${n}[${k}]: ${dx[k]} vs ${dy[k]}`);
      }
    }
    values += dx.length;
  }
  for (const n of nb) problems.push(`${n}: only in ${b}`);
  return { files, values, maxAbs, outside, problems };
}

if (import.meta.main) {
  const args = [...Deno.args];
  const opt = (name: string, def: number) => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return def;
    const v = Number(args[i + 1]);
    args.splice(i, 2);
    return v;
  };
  const rtol = opt("rtol", 2e-3), atol = opt("atol", 1e-3);
  if (args.length !== 2) {
    console.error("usage: compare_dumps.ts A_DIR B_DIR [--rtol R] [--atol A]");
    Deno.exit(2);
  }
  const r = await compareDumps(args[0], args[1], rtol, atol);
  const ok = r.outside === 0 && r.problems.length === 0;
  console.log(
    `${ok ? "agree" : "DISAGREE"}: ${r.files} matrices, ${r.values} values, max |diff| ` +
      `${r.maxAbs.toExponential(2)}, ${r.outside} outside atol ${atol} + rtol ${rtol}` +
      (r.problems.length ? `; ${r.problems.slice(0, 5).join("; ")}` : ""),
  );
  Deno.exit(ok ? 0 : 1);
}
