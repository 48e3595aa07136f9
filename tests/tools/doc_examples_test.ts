/**
 * `tools/doc_examples.ts`: the JSDoc blocks it gathers are the ones `deno test --doc` runs, with
 * their lines, and their relative imports still reach the source.
 *
 * @module
 */
import { assertEquals } from "../_assert.ts";
import { examplesOf, reroot } from "../../tools/doc_examples.ts";

const FENCE = "```";

Deno.test("doc examples: runnable languages only, not `ignore`, lines and indentation kept", () => {
  const src = [
    "/**", //                            1
    " * Text.", //                       2
    ` * ${FENCE}ts`, //                  3
    ' * import { x } from "./a.ts";', // 4
    " *   if (x) {}", //                 5
    ` * ${FENCE}`, //                    6
    ` * ${FENCE}ts ignore`, //           7
    " * nope();", //                     8
    ` * ${FENCE}`, //                    9
    ` * ${FENCE}json`, //                10
    " * {}", //                          11
    ` * ${FENCE}`, //                    12
    " *", //                             13
    ` *   ${FENCE}js`, //                14
    " *   one();", //                    15
    " *   two();", //                    16
    ` *   ${FENCE}`, //                  17
    " */", //                            18
    "/* A plain comment is not JSDoc:", //19
    ` * ${FENCE}ts`, //                  20
    " * three();", //                    21
    ` * ${FENCE}`, //                    22
    " */", //                            23
    "/** One line. */", //               24
    "const glob = 'tests/**/x';", //     25
    "/** After it:", //                  26
    ` * ${FENCE}typescript`, //          27
    " * four();", //                     28
    ` * ${FENCE}`, //                    29
    " */", //                            30
  ].join("\n");
  assertEquals(examplesOf("d/f.ts", src), [
    { file: "d/f.ts", first: 4, last: 5, code: 'import { x } from "./a.ts";\n  if (x) {}\n' },
    { file: "d/f.ts", first: 15, last: 16, code: "one();\ntwo();\n" },
    { file: "d/f.ts", first: 28, last: 28, code: "four();\n" },
  ]);
});

Deno.test("doc examples: every runnable fence of the sources is gathered", async () => {
  const root = new URL("../../", import.meta.url);
  const open =
    /^[ \t]*\*[ \t]*```(?:ts|typescript|tsx|js|javascript|jsx|mts|cts|mjs|cjs)(?![^\n]*ignore)[ \t]*$/gm;
  let fences = 0;
  let gathered = 0;
  const walk = async (rel: string): Promise<void> => {
    for await (const e of Deno.readDir(new URL(rel, root))) {
      if (e.isDirectory) await walk(`${rel}${e.name}/`);
      else if (e.name.endsWith(".ts")) {
        const text = await Deno.readTextFile(new URL(`${rel}${e.name}`, root));
        fences += text.match(open)?.length ?? 0;
        gathered += examplesOf(`${rel}${e.name}`, text).length;
      }
    }
  };
  for (
    const room of ["io", "encoders", "metrics", "search", "runs", "report", "serve", "pipeline"]
  ) {
    await walk(`${room}/`);
  }
  // Hundreds of examples, each found by the simple count above.
  assertEquals(gathered, fences);
  assertEquals(gathered > 400, true);
});

Deno.test("doc examples: relative imports reach the same file from the examples' folder", () => {
  const code = [
    'import { a } from "./a.ts";',
    'import * as B from "../b/b.ts";',
    'import "./side.ts";',
    'const c = await import("./c.ts");',
    'export { d } from "./d/d.ts";',
    'import * as Effect from "effect/Effect";',
    'const s = "./not/an/import.ts";',
  ].join("\n");
  assertEquals(
    reroot(code, "search/index", "tests/_doc_examples"),
    [
      'import { a } from "../../search/index/a.ts";',
      'import * as B from "../../search/b/b.ts";',
      'import "../../search/index/side.ts";',
      'const c = await import("../../search/index/c.ts");',
      'export { d } from "../../search/index/d/d.ts";',
      'import * as Effect from "effect/Effect";',
      'const s = "./not/an/import.ts";',
    ].join("\n"),
  );
  assertEquals(
    reroot('import { m } from "./mod.ts";', ".", "tests/_doc_examples"),
    'import { m } from "../../mod.ts";',
  );
});
