/**
 * JSDoc on every export: `deno doc --lint` over the package's entry
 * (`mod.ts`) and every room's public files (each `<room>/exports.json`)
 * reports no `missing-jsdoc` (an exported symbol, member or constructor
 * without a description) and no `missing-return-type` (an exported function
 * whose return type is only inferred).
 *
 * Its other findings are left alone, and counted so that the parse is seen
 * to work: `private-type-ref` (a public signature naming a type of a package,
 * such as Effect's `Effect` or `Stream`, or of a private file) and
 * `missing-explicit-type` (Effect `Schema` constants, whose types are the
 * schemas themselves).
 *
 * @module
 */
import { assert, assertEquals } from "./_assert.ts";
import { ROOT } from "./_util.ts";

/** One finding of `deno doc --lint`. */
interface Finding {
  /** Its kind (`missing-jsdoc`, ...). */
  readonly kind: string;
  /** Where, relative to the linted folder (`io/fs.ts:12:3`). */
  readonly at: string;
  /** The first line of its message. */
  readonly message: string;
}

/** The findings kept at zero. */
const KEPT_AT_ZERO = ["missing-jsdoc", "missing-return-type"];

/** The public files of every room with an `exports.json` under `root`, relative to it. */
function publicFiles(root: string): string[] {
  const out: string[] = [];
  for (const e of [...Deno.readDirSync(root)].sort((a, b) => a.name < b.name ? -1 : 1)) {
    if (!e.isDirectory || e.name.startsWith(".")) continue;
    let text: string;
    try {
      text = Deno.readTextFileSync(`${root}/${e.name}/exports.json`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    for (const f of (JSON.parse(text) as { exports: string[] }).exports) {
      out.push(`${e.name}/${f.replace(/^\.\//, "")}`);
    }
  }
  return out;
}

/** `deno doc --lint` of `files` (relative to `cwd`): its findings and the total it reports. */
async function docLint(cwd: string, files: string[]): Promise<{ found: Finding[]; total: number }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", ...files],
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
  const found: Finding[] = [];
  const re = /^error\[([a-z-]+)\]: (.*)\n\s*--> (.+)$/gm;
  for (const m of text.matchAll(re)) {
    const at = m[3].trim().replace(/^file:\/\//, "");
    found.push({
      kind: m[1],
      message: m[2],
      at: at.startsWith(cwd) ? at.slice(cwd.length + 1) : at,
    });
  }
  const summary = /Found (\d+) documentation lint errors?/.exec(text);
  const total = summary === null ? 0 : Number(summary[1]);
  // A clean run exits 0 and says nothing; any finding exits 1 with its count.
  assertEquals(r.code, found.length === 0 ? 0 : 1, text.slice(-2000));
  return { found, total };
}

Deno.test("doc lint: every export of mod.ts and of the rooms' public files has JSDoc and an explicit return type", async () => {
  const files = publicFiles(ROOT);
  assert(files.length > 50, `only ${files.length} public files found`);
  const { found, total } = await docLint(ROOT, ["mod.ts", ...files]);
  // Every reported finding was parsed.
  assertEquals(found.length, total);
  const bad = found.filter((f) => KEPT_AT_ZERO.includes(f.kind)).map((f) =>
    `${f.kind} ${f.at}: ${f.message}`
  );
  assertEquals(bad, []);
});

Deno.test("doc lint check: finds an export without JSDoc, a constructor with only @param, an inferred return type", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-doclint-" });
  try {
    await Deno.writeTextFile(
      `${dir}/m.ts`,
      [
        "/**",
        " * A module.",
        " *",
        " * @module",
        " */",
        "",
        "/** Documented. */",
        "export function fine(): void {}",
        "export function bare(x: number): number {",
        "  return x;",
        "}",
        "/** Doubles. */",
        "export const twice = (x: number) => 2 * x;",
        "/** A box. */",
        "export class Box {",
        "  /** @param v the value */",
        "  constructor(readonly v: number) {}",
        "}",
        "",
      ].join("\n"),
    );
    const { found, total } = await docLint(dir, ["m.ts"]);
    assertEquals(found.length, total);
    assertEquals(
      found.filter((f) => KEPT_AT_ZERO.includes(f.kind)).map((f) => `${f.kind} ${f.at}`).sort(),
      ["missing-jsdoc m.ts:17:3", "missing-jsdoc m.ts:9:17", "missing-return-type m.ts:13:14"],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
