/**
 * The config loader process behind `runs/config/load.ts`: imports a config
 * module and prints it as one JSON line on stdout (`{"ok": config}` or
 * `{"error": message, "at"?: {file, line, column}}`, `at` where the error
 * points when Deno says it: the line and column of a syntax error, or of a
 * throw). It runs in its own Deno process with read permission only, so a
 * config module cannot write, run programs, use the network or read the
 * environment, and a broken one cannot take the runner down.
 *
 * `URL` values (`new URL("x", import.meta.url)`) become file paths;
 * functions, symbols and other non-data values are reported by path.
 *
 * Usage: `deno run --no-prompt --allow-read runs/config/config_loader.ts <config.ts>`
 *
 * @module
 */

/** A value of a loaded config that JSON cannot carry. */
export const NON_DATA = "$phraseval-non-data";

/** The {@linkcode NON_DATA} marker of an object met again inside itself (a cyclic object). */
export const CIRCULAR = "circular reference";

/** Where in a module an error of its loading points: its file (absolute), line and column. */
export interface SourcePosition {
  /** The module's file, absolute (`file:` URLs become paths). */
  readonly file: string;
  /** Line, from 1. */
  readonly line: number;
  /** Column, from 1. */
  readonly column: number;
}

const FRAME_RE = /^\s*at (?:.*\()?(file:\/\/[^\s()]+?):(\d+):(\d+)\)?\s*$/;

/**
 * The position an error of importing a config points at: for a module that
 * does not parse, the `at file:///...:L:C` line Deno puts in the message;
 * else the first frame of the stack in a module other than `skip` (the
 * loader itself). `undefined` when neither names a `file:` module.
 *
 * @example
 * ```ts
 * import { errorPosition } from "./config_loader.ts";
 * const e = new TypeError(
 *   "SyntaxError: Expected ',', got 'models'\n  |\n3 |   models: [],\n  |   ~~~~~~\n    at file:///c/run.ts:3:3",
 * );
 * const p = errorPosition(e);
 * if (p?.file !== "/c/run.ts" || p.line !== 3 || p.column !== 3) throw new Error(JSON.stringify(p));
 * ```
 */
export function errorPosition(e: unknown, skip?: string): SourcePosition | undefined {
  if (!(e instanceof Error)) return undefined;
  const lines = [...e.message.split("\n"), ...(e.stack ?? "").split("\n")];
  for (const l of lines) {
    const m = FRAME_RE.exec(l);
    if (!m || (skip !== undefined && m[1] === skip)) continue;
    let file: string;
    try {
      file = decodeURIComponent(new URL(m[1]).pathname);
    } catch {
      continue;
    }
    return { file, line: Number(m[2]), column: Number(m[3]) };
  }
  return undefined;
}

/**
 * Converts a config value into plain JSON data: `URL`s into paths (`file:`)
 * or their `href`, non-data values into a marker naming their type.
 *
 * @example
 * ```ts
 * import { toData } from "./config_loader.ts";
 * const d = toData({ path: new URL("file:///d/x.json"), f: () => 1 });
 * if (JSON.stringify(d) !== '{"path":"/d/x.json","f":{"$phraseval-non-data":"function"}}') {
 *   throw new Error(JSON.stringify(d));
 * }
 * ```
 */
export function toData(v: unknown, seen: Set<unknown> = new Set()): unknown {
  if (v instanceof URL) return v.protocol === "file:" ? decodeURIComponent(v.pathname) : v.href;
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : { [NON_DATA]: String(v) };
  if (typeof v === "undefined") return undefined;
  if (typeof v !== "object") return { [NON_DATA]: typeof v };
  if (seen.has(v)) return { [NON_DATA]: CIRCULAR };
  seen.add(v);
  try {
    if (Array.isArray(v)) return v.map((x) => toData(x, seen) ?? null);
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      return { [NON_DATA]: (v as object).constructor?.name ?? "object" };
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const d = toData(x, seen);
      if (d !== undefined) out[k] = d;
    }
    return out;
  } finally {
    seen.delete(v);
  }
}

if (import.meta.main) {
  const file = Deno.args[0];
  const print = (o: unknown) => console.log(JSON.stringify(o));
  try {
    const url = file.startsWith("/") ? new URL(`file://${encodeURI(file)}`) : new URL(file);
    const mod = await import(url.href) as Record<string, unknown>;
    let cfg: unknown;
    if ("config" in mod) cfg = mod.config;
    else if ("datasets" in mod || "models" in mod) {
      const { datasets, models, ...rest } = mod;
      cfg = {
        datasets,
        models,
        ...Object.fromEntries(Object.entries(rest).filter(([k]) => k !== "default")),
      };
    } else {
      print({
        error:
          "exports no `config` (nor `datasets` and `models`): add `export const config = { ... }`",
      });
      Deno.exit(0);
    }
    print({ ok: toData(cfg) });
  } catch (e) {
    // Deno reports a module that does not parse as a TypeError whose message is the
    // SyntaxError's: said once, as a SyntaxError.
    const wrapped = e instanceof Error && /^[A-Z][A-Za-z]*Error: /.test(e.message);
    const msg = e instanceof Error
      ? `${e.name === "Error" || wrapped ? "" : `${e.name}: `}${e.message}`
      : String(e);
    const at = errorPosition(e, import.meta.url);
    print({ error: msg.split("\n")[0], ...(at !== undefined ? { at } : {}) });
  }
}
