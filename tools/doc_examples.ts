/**
 * The JSDoc examples as one test file: every ```` ```ts ```` block of a JSDoc comment (the blocks
 * `deno test --doc` runs: `ts`, `typescript`, `tsx`, `js`, `javascript`, `jsx`, `mts`, `cts`,
 * `mjs`, `cjs`, not marked `ignore`) becomes a module of its own under `tests/_doc_examples/`,
 * its relative imports pointed back at the source, and `tests/_doc_examples/doc_examples_test.ts`
 * runs each with `import()` in a `Deno.test` named `doc: FILE$FIRST-LAST` (the block's lines).
 *
 * Why: `deno test --doc` runs every block in a test module of its own, and each test module costs
 * the runtime about 0.3 s of set-up (80 MB of fresh memory touched per module, measured on Deno
 * 2.9.6 with an empty test); over 579 blocks that was a third of the fast suite's CPU. Here the
 * blocks share one module, and are type-checked with the rest of the suite (the `import()`
 * specifiers are literals, so `deno test` checks their graph). `deno test --doc` still passes on
 * the same files.
 *
 * ```sh
 * deno run --allow-read --allow-write tools/doc_examples.ts io/ metrics/ mod.ts
 * ```
 *
 * The folder is written afresh each time (built beside it, then renamed into place); it is not
 * tracked (`.gitignore`) nor formatted or linted.
 *
 * @module
 */
import { posix } from "node:path";

/** The languages whose blocks `deno test --doc` runs. */
const LANGUAGES = new Set([
  "ts",
  "typescript",
  "tsx",
  "js",
  "javascript",
  "jsx",
  "mts",
  "cts",
  "mjs",
  "cjs",
]);

/** One example: the source file (relative to the repository), its lines, and its code. */
export interface DocExample {
  /** The source file, relative to the repository root, with `/`. */
  readonly file: string;
  /** The 1-based line of the block's first code line. */
  readonly first: number;
  /** The 1-based line of the block's last code line. */
  readonly last: number;
  /** The code, without the comment's ` * ` and the fence's indentation. */
  readonly code: string;
}

/**
 * The runnable examples of one file's JSDoc comments, in order.
 *
 * ```ts
 * import { examplesOf } from "./doc_examples.ts";
 * const src = "/**\n * ```ts\n * console.log(1);\n * ```\n *" + "/\nexport const x = 1;\n";
 * if (examplesOf("a.ts", src)[0].code !== "console.log(1);") throw new Error("extracted wrong");
 * ```
 */
export const examplesOf = (file: string, text: string): DocExample[] => {
  const lines = text.split("\n");
  const out: DocExample[] = [];
  let inJsDoc = false;
  let fence: { indent: number; run: boolean; start: number; body: string[] } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!inJsDoc) {
      if (!/^\s*\/\*\*/.test(line)) continue;
      inJsDoc = !line.includes("*/", line.indexOf("/**") + 3);
      continue;
    }
    if (line.includes("*/")) {
      inJsDoc = false;
      fence = undefined;
      continue;
    }
    const content = line.replace(/^\s*\* ?/, "");
    const marker = /^(\s*)```(.*)$/.exec(content);
    if (fence === undefined) {
      if (marker === null) continue;
      const [lang = "", ...attributes] = marker[2].trim().split(/[\s,]+/);
      fence = {
        indent: marker[1].length,
        run: LANGUAGES.has(lang.toLowerCase()) && !attributes.includes("ignore"),
        start: i + 2,
        body: [],
      };
      continue;
    }
    if (marker !== null && marker[2].trim() === "") {
      if (fence.run) {
        out.push({
          file,
          first: fence.start,
          last: i,
          code: fence.body.join("\n") + "\n",
        });
      }
      fence = undefined;
      continue;
    }
    const indent = /^\s*/.exec(content)![0].length;
    fence.body.push(content.slice(Math.min(indent, fence.indent)));
  }
  return out;
};

/**
 * Points every relative import of `code`, written in the folder `fromDir`, at the same file from
 * the folder `toDir` (both relative to the repository root).
 *
 * ```ts
 * import { reroot } from "./doc_examples.ts";
 * const code = reroot('import { a } from "./a.ts";', "io", "tests/_doc_examples");
 * if (code !== 'import { a } from "../../io/a.ts";') throw new Error(code);
 * ```
 */
export const reroot = (code: string, fromDir: string, toDir: string): string =>
  code.replace(
    /((?:from|import)\s*\(?\s*)(["'])(\.\.?\/[^"']*)\2/g,
    (_all, head: string, quote: string, spec: string) => {
      const rel = posix.relative(toDir, posix.join(fromDir, spec));
      return `${head}${quote}${rel.startsWith(".") ? rel : `./${rel}`}${quote}`;
    },
  );

/** Every `.ts`/`.tsx`/`.js`/`.jsx`/`.mts`/`.mjs` file under `root` (a file or folder), sorted. */
const sourcesOf = async (root: string): Promise<string[]> => {
  const info = await Deno.stat(root);
  if (info.isFile) return [posix.normalize(root)];
  const found: string[] = [];
  for await (const entry of Deno.readDir(root)) {
    const path = `${root.replace(/\/$/, "")}/${entry.name}`;
    if (entry.isDirectory) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      if (posix.normalize(path) === OUT_DIR) continue;
      found.push(...await sourcesOf(path));
    } else if (entry.isFile && /\.(m?[jt]sx?)$/.test(entry.name)) found.push(posix.normalize(path));
  }
  return found.sort();
};

/** Where the examples and their test file are written, relative to the repository root. */
export const OUT_DIR = "tests/_doc_examples";

/**
 * Writes `OUT_DIR` afresh from the examples of `roots` (files or folders, relative to the current
 * folder, which must be the repository root) and returns how many examples it wrote.
 */
export const writeDocExamples = async (roots: readonly string[]): Promise<number> => {
  const examples: DocExample[] = [];
  for (const root of roots) {
    for (const file of await sourcesOf(root)) {
      examples.push(...examplesOf(file, await Deno.readTextFile(file)));
    }
  }
  const staging = `${OUT_DIR}.tmp-${Deno.pid}`;
  await Deno.mkdir(staging, { recursive: true });
  try {
    await writeInto(staging, examples);
  } catch (e) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw e;
  }
  await Deno.remove(OUT_DIR, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  await Deno.rename(staging, OUT_DIR);
  return examples.length;
};

/** Writes one module an example and the test file that imports them into `dir`. */
const writeInto = async (dir: string, examples: readonly DocExample[]): Promise<void> => {
  const tests = [
    "// Generated by tools/doc_examples.ts (the JSDoc examples of the sources); do not edit.",
  ];
  for (const [n, example] of examples.entries()) {
    const name = `ex_${String(n).padStart(4, "0")}.ts`;
    const from = posix.dirname(example.file);
    await Deno.writeTextFile(
      `${dir}/${name}`,
      `// ${example.file}$${example.first}-${example.last} (generated by tools/doc_examples.ts)\n` +
        reroot(example.code, from, OUT_DIR),
    );
    const label = JSON.stringify(`doc: ${example.file}$${example.first}-${example.last}`);
    tests.push(`Deno.test(${label}, async () => {\n  await import("./${name}");\n});`);
  }
  await Deno.writeTextFile(`${dir}/doc_examples_test.ts`, tests.join("\n") + "\n");
};

if (import.meta.main) {
  const roots = Deno.args.length > 0 ? Deno.args : ["."];
  const n = await writeDocExamples(roots);
  console.error(`doc examples: ${n} written to ${OUT_DIR}/`);
}
