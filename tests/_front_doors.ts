/**
 * The rooms' front doors, for the tests that check the house plan
 * (`house_test.ts`) and the public API's documentation
 * (`doc_lint_test.ts`): each room's `exports.json`, read and checked.
 *
 * @module
 */

/** Folders never scanned (data, generated output, dependencies). */
export const SKIP: ReadonlySet<string> = new Set([
  "data",
  "outputs",
  "node_modules",
  "bench/out",
  "tests/_doc_examples",
]);

/** The name of a room's list of public files. */
export const EXPORTS_FILE = "exports.json";

/** A room's public files, as its {@linkcode EXPORTS_FILE} lists them. */
export interface FrontDoor {
  /** The list's path, relative to the root (`io/exports.json`). */
  readonly list: string;
  /** The public files, relative to the root (`io/fs.ts`). */
  readonly files: ReadonlySet<string>;
  /** What is wrong with the list itself (a file missing, a `_` file, ...). */
  readonly problems: readonly string[];
}

/**
 * Each room's front doors: the top-level folders with an
 * {@linkcode EXPORTS_FILE} (`{"exports": ["./mod.ts", "./fs.ts", ...]}`),
 * and what is wrong with each list: an entry that is not `./<file>.ts`,
 * names no file, is a `_` file (private to its room), is listed twice or out
 * of order.
 */
export async function frontDoors(root: string): Promise<Map<string, FrontDoor>> {
  const out = new Map<string, FrontDoor>();
  for await (const e of Deno.readDir(root)) {
    if (!e.isDirectory || e.name.startsWith(".") || SKIP.has(e.name)) continue;
    const list = `${e.name}/${EXPORTS_FILE}`;
    let text: string;
    try {
      text = await Deno.readTextFile(`${root}/${list}`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    const problems: string[] = [];
    const files = new Set<string>();
    let entries: unknown;
    try {
      entries = (JSON.parse(text) as { exports?: unknown }).exports;
    } catch (err) {
      problems.push(`${list}: not JSON (${err instanceof Error ? err.message : err})`);
    }
    if (!Array.isArray(entries) || entries.some((x) => typeof x !== "string")) {
      if (problems.length === 0) problems.push(`${list}: "exports" is not a list of paths`);
      entries = [];
    }
    const names = entries as string[];
    names.forEach((entry, i) => {
      const m = /^\.\/((?:[\w-]+\/)*[\w.-]+\.ts)$/.exec(entry);
      if (m === null) {
        return problems.push(`${list}: "${entry}" is not a ./<path>.ts in ${e.name}/`);
      }
      const path = `${e.name}/${m[1]}`;
      if (m[1].split("/").some((seg) => seg.startsWith("_"))) {
        problems.push(`${list}: "${entry}" is a _ file, private to ${e.name}/`);
      } else if (!isFile(`${root}/${path}`)) {
        problems.push(`${list}: "${entry}" names no file`);
      }
      if (files.has(path)) problems.push(`${list}: "${entry}" is listed twice`);
      else if (i > 0 && names[i - 1] > entry) {
        problems.push(`${list}: "${entry}" comes before "${names[i - 1]}" (keep the list sorted)`);
      }
      files.add(path);
    });
    out.set(e.name, { list, files, problems });
  }
  return out;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}
