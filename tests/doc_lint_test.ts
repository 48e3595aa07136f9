/**
 * JSDoc on every export: `deno doc --lint` over the package's entry
 * (`mod.ts`) and every room's public files (each `<room>/exports.json`)
 * reports no `missing-jsdoc` (an exported symbol, member or constructor
 * without a description) and no `missing-return-type` (an exported function
 * whose return type is only inferred).
 *
 * A public signature may name a type no entry exports (`private-type-ref`)
 * only when it is a package's ({@linkcode PACKAGE_TYPES}: Effect's `Effect`,
 * `Stream`, `Layer`..., onnxruntime's `InferenceSession`) or one of the two
 * worker handles the index build and the early merge take as options
 * ({@linkcode WORKER_HANDLES}); every other type a public signature names is
 * public. `missing-explicit-type` (Effect `Schema` constants, whose types are
 * the schemas themselves) is left alone, and counted so that the parse is
 * seen to work.
 *
 * @module
 */
import { assert, assertEquals } from "./_assert.ts";
import { ROOT } from "./_util.ts";
import { frontDoors } from "./_front_doors.ts";

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

/** Types of packages that public signatures may name (Effect's and onnxruntime's). */
const PACKAGE_TYPES = new Set([
  "Effect",
  "InferenceSession",
  "Layer",
  "ManagedRuntime",
  "Schema",
  "Schema.Type",
  "Service",
  "Stream",
  "TaggedError",
  "Tensor",
]);

/**
 * Our own types that public signatures may name without exporting them: the
 * worker pools behind `IvfBuildOptions.pool` (`search/index/ivfpq/ivf_encode.ts`)
 * and `EarlyPool.result` (`search/merge/protocol.ts`), whose messages are
 * internal.
 */
const WORKER_HANDLES = new Set(["EncodeWorkers", "WorkerReply"]);

/** The public files of every room (its `exports.json`; see `house_test.ts`), relative to `root`. */
async function publicFiles(root: string): Promise<string[]> {
  const doors = await frontDoors(root);
  return [...doors.values()].flatMap((d) => [...d.files]).sort();
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

/**
 * What the house does not allow among `found`: a finding of
 * {@linkcode KEPT_AT_ZERO}, or a private type named by a public signature
 * that is neither a package's nor a worker handle (`kind location: message`).
 */
function problems(found: readonly Finding[]): string[] {
  return found.flatMap((f) => {
    if (KEPT_AT_ZERO.includes(f.kind)) return [`${f.kind} ${f.at}: ${f.message}`];
    if (f.kind !== "private-type-ref") return [];
    const m = /references private type '([^']+)'/.exec(f.message);
    assert(m !== null, f.message);
    return PACKAGE_TYPES.has(m[1]) || WORKER_HANDLES.has(m[1])
      ? []
      : [`${f.kind} ${f.at}: ${f.message}`];
  });
}

Deno.test("doc lint: every export of mod.ts and of the rooms' public files has JSDoc and an explicit return type, and names no private type of ours", async () => {
  const files = await publicFiles(ROOT);
  assert(files.length > 50, `only ${files.length} public files found`);
  const { found, total } = await docLint(ROOT, ["mod.ts", ...files]);
  // Every reported finding was parsed.
  assertEquals(found.length, total);
  // The parse sees the findings left alone (Effect's types, the Schema constants).
  assert(found.some((f) => f.kind === "private-type-ref"), "no private-type-ref parsed");
  assert(found.some((f) => f.kind === "missing-explicit-type"), "no missing-explicit-type parsed");
  assertEquals(problems(found), []);
});

Deno.test("doc lint check: finds an export without JSDoc, a constructor with only @param, an inferred return type, a private type in a public signature", async () => {
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
        "interface Hidden {",
        "  /** A field. */",
        "  readonly x: number;",
        "}",
        "/** Makes one. */",
        "export function make(): Hidden {",
        "  return { x: 1 };",
        "}",
        "",
      ].join("\n"),
    );
    const { found, total } = await docLint(dir, ["m.ts"]);
    assertEquals(found.length, total);
    assertEquals(problems(found).map((p) => p.slice(0, p.indexOf(": "))).sort(), [
      "missing-jsdoc m.ts:17:3",
      "missing-jsdoc m.ts:9:17",
      "missing-return-type m.ts:13:14",
      "private-type-ref m.ts:24:1",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
