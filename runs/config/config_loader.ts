/**
 * The config loader process behind `runs/config/load.ts`: imports a config
 * module and prints it as one JSON line on stdout (`{"ok": config}` or
 * `{"error": message}`). It runs in its own Deno process with read
 * permission only, so a config module cannot write, run programs, use the
 * network or read the environment, and a broken one cannot take the runner
 * down.
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
  if (seen.has(v)) return { [NON_DATA]: "circular reference" };
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
    const msg = e instanceof Error
      ? `${e.name === "Error" ? "" : `${e.name}: `}${e.message}`
      : String(e);
    print({ error: msg.split("\n")[0] });
  }
}
