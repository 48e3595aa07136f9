/**
 * The import-cycle check of a run config, done on the source text before
 * the config module is run: a cycle of `import`s between config modules
 * would otherwise surface as a confusing "used before initialization".
 *
 * @module
 */
import { REPO_ROOT } from "../../io/repo.ts";
import { absPath, dirOf, normalize } from "../../io/fs.ts";

/** Folders (and files) of the repository's library: not followed by the cycle check. */
const LIBRARY = ["io/", "encoders/", "metrics/", "search/", "runs/", "pipeline/", "mod.ts"];

const IMPORT_RE =
  /(?:^|[;\s])(?:import|export)\s+(type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/g;

function localImports(file: string, text: string): string[] {
  const noComments = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
  const out: string[] = [];
  for (const m of noComments.matchAll(IMPORT_RE)) {
    if (m[1]) continue; // `import type`: erased, cannot cycle at run time
    const spec = m[2] ?? m[3];
    let target: string | undefined;
    if (spec.startsWith("./") || spec.startsWith("../")) target = absPath(spec, dirOf(file));
    else if (spec.startsWith("/")) target = normalize(spec);
    else if (spec.startsWith("file://")) {
      target = normalize(decodeURIComponent(new URL(spec).pathname));
    }
    if (target && /\.(m?[jt]sx?)$/.test(target)) out.push(target);
  }
  return out;
}

/**
 * The first import cycle reachable from `file` through local module
 * imports, as the list of files around it (first = last), or `undefined`.
 * The repository's library modules (`io/`, `encoders/`, `metrics/`,
 * `search/`, `runs/`, `pipeline/`, `mod.ts`) are not followed (they have no
 * cycles by design); `import type` lines are ignored.
 *
 * @example
 * ```ts
 * import { REPO_ROOT } from "../../io/repo.ts";
 * import { findImportCycle } from "./imports.ts";
 * const c = await findImportCycle(`${REPO_ROOT}/configs/eval_two_models_mini.ts`);
 * if (c !== undefined) throw new Error(c.join(" → "));
 * ```
 */
export async function findImportCycle(file: string): Promise<string[] | undefined> {
  const state = new Map<string, "active" | "done">();
  const stack: string[] = [];
  const follow = (f: string) => !LIBRARY.some((d) => f.startsWith(`${REPO_ROOT}/${d}`));
  const visit = async (f: string): Promise<string[] | undefined> => {
    const s = state.get(f);
    if (s === "active") return [...stack.slice(stack.indexOf(f)), f];
    if (s === "done") return undefined;
    state.set(f, "active");
    stack.push(f);
    let text = "";
    try {
      text = await Deno.readTextFile(f);
    } catch { /* a missing file is reported by the import itself */ }
    for (const t of localImports(f, text)) {
      if (!follow(t) && t !== file) continue;
      const c = await visit(t);
      if (c) return c;
    }
    stack.pop();
    state.set(f, "done");
    return undefined;
  };
  return await visit(file);
}
