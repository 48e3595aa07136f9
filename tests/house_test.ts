/**
 * The house plan's import directions, checked over the repository's own
 * `.ts` files. Rooms are top-level folders, in tiers read from the
 * repository's `ARCHITECTURE.md` (`io` ← `encoders` ← `metrics`, `search`
 * ← `runs` ← `report`, `serve` ← `pipeline`); imports run one way:
 *
 * - a room → its own files and the rooms of lower tiers, never a room of
 *   its own tier;
 * - `configs/*` → only other files of `configs/` (datasets and models compose into runs, as
 *   OpenCompass configs do); `configs/types.ts` may also import `runs/` (the schema's types);
 * - the root `mod.ts` → any room;
 * - `tests/`, `bench/`, `notebooks/`, `baselines/`, `tools/` may import
 *   anything, and nothing else may import them;
 * - no file imports a `_` file (a path segment starting with `_`) of another
 *   room;
 * - an import from another room (the root `mod.ts` and `configs/` too) names
 *   one of the room's public files, its front doors, listed in
 *   `<room>/exports.json` (`{"exports": ["./mod.ts", ...]}`, as a
 *   `deno.json`'s `exports` lists a package's entry files: per file, so an
 *   import loads no more than the file it names); a room without the file
 *   has no public file.
 *
 * Counted: static `import` / `export ... from` (type-only too), side-effect
 * imports, dynamic `import("...")` with a literal, and
 * `new URL("...", import.meta.url)` used to start a `Worker`. Comments are
 * not code; bare specifiers (`effect`, `npm:x`, `node:fs`) are packages, not
 * rooms.
 *
 * A path to a `pipeline/` script is a dependency no import shows: below
 * `pipeline/`, only `runs/plan/scripts.ts` (the table of the stage scripts a
 * run starts) builds one, and each script it names exists.
 *
 * @module
 */
import { assert, assertEquals } from "./_assert.ts";
import { ROOT } from "./_util.ts";
import { STAGE_SCRIPTS } from "../runs/plan/scripts.ts";
import { EXPORTS_FILE, type FrontDoor, frontDoors, SKIP } from "./_front_doors.ts";

export { EXPORTS_FILE, type FrontDoor, frontDoors };

/** Folders whose files may import anything and which nothing else may import. */
const FREE = new Set(["tests", "bench", "notebooks", "baselines", "tools"]);

/**
 * The tiers of the rooms, read from the repository's `ARCHITECTURE.md` (its
 * "Tiers" table: `| tier | rooms | why |`), lowest first. A row without a
 * reason is refused: every place in the chain says why it is there.
 */
export function parseTiers(markdown: string): { tier: number; rooms: string[]; why: string }[] {
  const at = markdown.indexOf("\n## Tiers");
  if (at < 0) throw new Error('ARCHITECTURE.md has no "## Tiers" section');
  const end = markdown.indexOf("\n## ", at + 1);
  const rows: { tier: number; rooms: string[]; why: string }[] = [];
  for (const line of markdown.slice(at, end < 0 ? undefined : end).split("\n")) {
    const m = /^\|\s*(\d+)\s*\|([^|]*)\|([^|]*)\|\s*$/.exec(line);
    if (!m) continue;
    const why = m[3].trim();
    if (why === "") throw new Error(`ARCHITECTURE.md: tier ${m[1]} gives no reason`);
    rows.push({ tier: Number(m[1]), rooms: m[2].split(",").map((r) => r.trim()), why });
  }
  if (rows.length === 0) throw new Error("ARCHITECTURE.md: the Tiers table has no rows");
  return rows.sort((a, b) => a.tier - b.tier);
}

const TIERS = parseTiers(await Deno.readTextFile(`${ROOT}/ARCHITECTURE.md`));

/** Each room's tier (`ARCHITECTURE.md`). */
const TIER_OF: ReadonlyMap<string, number> = new Map(
  TIERS.flatMap((t) => t.rooms.map((r) => [r, t.tier] as const)),
);

/** What each room may import besides itself: the rooms of lower tiers, lowest first. */
const ALLOWED: Record<string, readonly string[]> = Object.fromEntries(
  TIERS.flatMap((t) =>
    t.rooms.map((r) => [r, TIERS.filter((u) => u.tier < t.tier).flatMap((u) => u.rooms)])
  ),
);

/** One import that breaks a rule. */
interface Violation {
  /** The importing file, relative to the root. */
  readonly file: string;
  /** The imported file, relative to the root (or the specifier when outside it). */
  readonly target: string;
  /** The rule broken. */
  readonly rule: string;
}

/**
 * The source with comments removed, every string or template literal
 * replaced by `"#k"` (its text is `strings[k]`, `"\0"` for a template with
 * a `${}`; `texts[k]` is its text in every case) and every regular expression
 * by `/r/`, so only code is left to match: a JSDoc example's `import` or a
 * string that holds import-like text is not counted.
 */
export function lex(src: string): { code: string; strings: string[]; texts: string[] } {
  const strings: string[] = [];
  const texts: string[] = [];
  let out = "";
  let i = 0;
  const n = src.length;
  let last = ""; // the last significant token's tail
  const regexMayStart = () =>
    last === "" || /[(,=:[!&|?{};+\-*%<>~^]$/.test(last) ||
    /^(?:return|typeof|case|do|else|in|of|void|yield|await)$/.test(last);
  while (i < n) {
    const c = src[i];
    const d = src[i + 1];
    if (c === "/" && d === "/") {
      while (i < n && src[i] !== "\n") i++;
      continue;
    }
    if (c === "/" && d === "*") {
      const end = src.indexOf("*/", i + 2);
      const stop = end < 0 ? n : end + 2;
      out += src.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      let text = "";
      while (j < n && src[j] !== c) {
        if (src[j] === "\\") {
          text += src[j + 1] ?? "";
          j += 2;
          continue;
        }
        if (c !== "`" && src[j] === "\n") break;
        text += src[j++];
      }
      out += `"#${strings.length}"`;
      strings.push(c === "`" && text.includes("${") ? "\0" : text);
      texts.push(text);
      last = '"';
      i = j + 1;
      continue;
    }
    if (c === "/" && regexMayStart()) {
      let j = i + 1;
      let inClass = false;
      while (j < n && src[j] !== "\n") {
        if (src[j] === "\\") j++;
        else if (src[j] === "[") inClass = true;
        else if (src[j] === "]") inClass = false;
        else if (src[j] === "/" && !inClass) break;
        j++;
      }
      out += "/r/";
      last = "/";
      i = j + 1;
      continue;
    }
    out += c;
    if (/[A-Za-z0-9_$]/.test(c)) last = /^[A-Za-z0-9_$]+$/.test(last) ? last + c : c;
    else if (!/\s/.test(c)) last = c;
    i++;
  }
  return { code: out, strings, texts };
}

/** The module specifiers a source file imports (see the module doc for what counts). */
export function importsOf(src: string): string[] {
  const { code, strings } = lex(src);
  const found: { at: number; spec: string }[] = [];
  const add = (re: RegExp) => {
    for (const m of code.matchAll(re)) {
      const spec = strings[Number(m[1])];
      if (spec !== "\0") found.push({ at: m.index!, spec });
    }
  };
  // import x from "a"; import type { X } from "a"; export { a } from "a"; export * from "a"
  add(/\b(?:import|export)\s+(?:type\s+)?[^;"]*?\bfrom\s*"#(\d+)"/g);
  // import "a";
  add(/\bimport\s*"#(\d+)"/g);
  // import("a") with a literal
  add(/\bimport\s*\(\s*"#(\d+)"\s*[,)]/g);
  // new Worker(new URL("a", import.meta.url)) directly or through a variable
  const urlRe = /new\s+URL\s*\(\s*"#(\d+)"\s*,\s*import\.meta\.url\s*\)/g;
  for (const m of code.matchAll(urlRe)) {
    const before = code.slice(Math.max(0, m.index! - 40), m.index!);
    const v = /(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*$/.exec(before);
    if (
      /new\s+Worker\s*\(\s*$/.test(before) ||
      (v && new RegExp(`new\\s+Worker\\s*\\(\\s*${v[1].replace("$", "\\$")}\\b`).test(code))
    ) {
      found.push({ at: m.index!, spec: strings[Number(m[1])] });
    }
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.spec);
}

function normalize(parts: string[]): string[] | undefined {
  const out: string[] = [];
  for (const p of parts) {
    if (p === "" || p === ".") continue;
    if (p === "..") {
      if (out.length === 0) return undefined;
      out.pop();
    } else out.push(p);
  }
  return out;
}

/** Why `file` may not import `target` (both relative to the root), or undefined. */
export function ruleBroken(file: string, target: string): string | undefined {
  const from = file.split("/");
  const to = target.split("/");
  const room = from.length > 1 ? from[0] : "";
  const targetRoom = to.length > 1 ? to[0] : "";
  if (FREE.has(room)) return undefined;
  if (FREE.has(targetRoom)) return `nothing may import ${targetRoom}/`;
  if (targetRoom !== room && to.some((seg) => seg.startsWith("_"))) {
    return `a _ file is private to its room (${targetRoom || "root"})`;
  }
  if (room === "configs") {
    if (file === "configs/types.ts") {
      return targetRoom === "runs" || target === "configs/types.ts"
        ? undefined
        : "configs/types.ts may import only runs/";
    }
    return targetRoom === "configs" ? undefined : "configs/* may import only configs/";
  }
  if (room === "") return undefined; // the root mod.ts: any room
  const allowed = ALLOWED[room];
  if (allowed === undefined) return undefined; // not a room of the plan (docs/, ...)
  if (targetRoom === room) return undefined;
  if (TIER_OF.get(targetRoom) === TIER_OF.get(room)) {
    return `${room} and ${targetRoom} are on one tier (ARCHITECTURE.md): neither imports the other`;
  }
  if (!allowed.includes(targetRoom)) {
    return allowed.length === 0
      ? `${room} may import nothing outside ${room}`
      : `${room} may import only ${[room, ...allowed].join(", ")}`;
  }
  return undefined;
}

/**
 * Why `file` may not import `target` through `target`'s room's front doors,
 * or undefined: an import from another room (free rooms aside) must name one
 * of the files the room lists.
 */
export function frontDoorBroken(
  file: string,
  target: string,
  doors: ReadonlyMap<string, FrontDoor>,
): string | undefined {
  const room = file.includes("/") ? file.slice(0, file.indexOf("/")) : "";
  const targetRoom = target.includes("/") ? target.slice(0, target.indexOf("/")) : "";
  if (FREE.has(room) || targetRoom === "" || targetRoom === room) return undefined;
  const door = doors.get(targetRoom);
  if (door === undefined) {
    return `${target} is not public: ${targetRoom}/ has no ${EXPORTS_FILE}, so no file of it is`;
  }
  if (door.files.has(target)) return undefined;
  return `${target} is not one of ${targetRoom}/'s public files (${door.list}): ` +
    `import a file listed there, or list it`;
}

/** Every `.ts` file under `root` (relative paths), skipping data and generated folders. */
export async function sourceFiles(root: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(rel ? `${root}/${rel}` : root)) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.name.startsWith(".") || SKIP.has(path)) continue;
    if (e.isDirectory) out.push(...await sourceFiles(root, path));
    else if (e.isFile && /\.(?:ts|tsx|mts)$/.test(e.name)) out.push(path);
  }
  return out.sort();
}

/** All violations of the house plan in the tree at `root`. */
export async function houseViolations(root: string): Promise<Violation[]> {
  const out: Violation[] = [];
  const doors = await frontDoors(root);
  for (const file of await sourceFiles(root)) {
    const src = await Deno.readTextFile(`${root}/${file}`);
    const dir = file.split("/").slice(0, -1);
    for (const spec of importsOf(src)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(spec) && !spec.startsWith("file:")) continue; // npm:, node:, https:
      if (!spec.startsWith(".") && !spec.startsWith("/") && !spec.startsWith("file:")) continue;
      if (!spec.startsWith(".")) {
        out.push({ file, target: spec, rule: "no import by absolute path" });
        continue;
      }
      const parts = normalize([...dir, ...spec.split("/")]);
      if (parts === undefined) {
        out.push({ file, target: spec, rule: "no import from outside the repository" });
        continue;
      }
      const target = parts.join("/");
      const rule = ruleBroken(file, target) ?? frontDoorBroken(file, target, doors);
      if (rule !== undefined) out.push({ file, target, rule });
    }
  }
  return out;
}

function show(vs: readonly Violation[]): string {
  return vs.map((v) => `  ${v.file} → ${v.target} (${v.rule})`).join("\n");
}

Deno.test("house plan: imports run one way (io ← encoders ← metrics/search ← runs ← pipeline)", async () => {
  const vs = await houseViolations(ROOT);
  if (vs.length > 0) {
    throw new Error(`${vs.length} import(s) break the house plan:\n${show(vs)}`);
  }
});

Deno.test("house plan: every room lists its public files, and each list names real, non-private files", async () => {
  const doors = await frontDoors(ROOT);
  const missing = TIERS.flatMap((t) => t.rooms).filter((r) => !doors.has(r));
  assertEquals(missing, [], `rooms without a ${EXPORTS_FILE}`);
  assertEquals([...doors.values()].flatMap((d) => d.problems), []);
  // Every room's index is one of its doors; pipeline/'s commands are run, not imported.
  for (const [room, door] of doors) {
    if (room !== "pipeline") {
      assert(door.files.has(`${room}/mod.ts`), `${door.list} lacks ./mod.ts`);
    }
  }
  assertEquals([...doors.get("pipeline")!.files], []);
});

Deno.test("house plan checker: finds one violation of each rule in a synthetic tree", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-house-" });
  try {
    const files: Record<string, string> = {
      // Allowed imports (no violation expected).
      "mod.ts": [
        'export { a } from "./io/a.ts";',
        'export { p } from "./pipeline/p.ts";',
        'export * from "./search/s.ts";',
      ].join("\n"),
      "io/a.ts": [
        'import { Effect } from "effect";',
        'import { b } from "./b.ts";',
        'import { c } from "./_core.ts";',
        '/** Example: import { x } from "../pipeline/p.ts"; */',
        '// import { y } from "../runs/r.ts";',
        'const re = /import "..\\/runs\\/r.ts"/;',
        "export const a = b + c + String(Effect) + String(re);",
        // Breaks "io may import nothing outside io":
        'export { e } from "../encoders/e.ts";',
      ].join("\n"),
      "io/b.ts": "export const b = 1;",
      "io/_core.ts": "export const c = 1;",
      // Breaks "encoders may import only encoders, io" (a type-only import).
      "encoders/e.ts": [
        'import { a } from "../io/a.ts";',
        'import type { M } from "../metrics/m.ts";',
        "export const e: M | number = a;",
      ].join("\n"),
      // Breaks the metrics rule with a dynamic import of search.
      "metrics/m.ts": [
        'import { e } from "../encoders/e.ts";',
        "export type M = number;",
        'export const load = () => import("../search/s.ts");',
        "export const m = e;",
      ].join("\n"),
      // Breaks the search rule with a worker started from metrics/.
      "search/s.ts": [
        'import "../io/b.ts";',
        'const url = new URL("../metrics/w.ts", import.meta.url);',
        'export const s = () => new Worker(url, { type: "module" });',
        'export const data = new URL("../data/x.json", import.meta.url);',
      ].join("\n"),
      "metrics/w.ts": "export {};",
      // Breaks the runs rule (runs may not import pipeline).
      "runs/r.ts": [
        'import { m } from "../metrics/m.ts";',
        'import { s } from "../search/s.ts";',
        'import { p } from "../pipeline/p.ts";',
        "export const r = [m, s, p];",
      ].join("\n"),
      // Breaks the report rule (report may not import pipeline either).
      "report/x.ts": [
        'import { r } from "../runs/r.ts";',
        'import { p } from "../pipeline/p.ts";',
        "export const x = [r, p];",
      ].join("\n"),
      // pipeline may import any room, but not another room's _ file, nor tests/.
      "pipeline/p.ts": [
        'import { r } from "../runs/r.ts";',
        'import { c } from "../io/_core.ts";',
        'import { t } from "../tests/_util.ts";',
        'import { q } from "./_q.ts";',
        'const w = new Worker(new URL("./_q.ts", import.meta.url), { type: "module" });',
        "export const p = [r, c, t, q, w];",
      ].join("\n"),
      "pipeline/_q.ts": "export const q = 1;",
      // Front doors: io/ lists a.ts and b.ts, not c.ts; report/ has no list.
      "io/c.ts": "export const c2 = 1;",
      "pipeline/v.ts": [
        'import { a } from "../io/a.ts";',
        'import { c2 } from "../io/c.ts";',
        'import { x } from "../report/x.ts";',
        "export const v = [a, c2, x];",
      ].join("\n"),
      "configs/types.ts": [
        'import type { R } from "../runs/r.ts";',
        'import { a } from "../io/a.ts";',
        "export type T = R | typeof a;",
      ].join("\n"),
      "configs/one.ts": [
        'import type { T } from "./types.ts";',
        'import { r } from "../runs/r.ts";',
        "export const one: T = r;",
      ].join("\n"),
      "configs/models/two.ts": 'export { one as two } from "../one.ts";',
      // Free rooms may import anything.
      "tests/_util.ts": 'export { c as t } from "../io/_core.ts";',
      "tests/a_test.ts": [
        'import { p } from "../pipeline/_q.ts";',
        'import { t } from "./_util.ts";',
        "export const z = [p, t];",
      ].join("\n"),
      "bench/b.ts": 'import "../tests/_util.ts";',
      "data/skipped.ts": 'import "../tests/_util.ts";',
    };
    const lists: Record<string, string[]> = {
      io: ["./a.ts", "./b.ts"],
      encoders: ["./e.ts"],
      metrics: ["./m.ts", "./w.ts"],
      search: ["./s.ts"],
      runs: ["./r.ts"],
      pipeline: ["./p.ts"],
      configs: ["./one.ts"],
    };
    for (const [room, list] of Object.entries(lists)) {
      files[`${room}/exports.json`] = JSON.stringify({ exports: list });
    }
    for (const [path, text] of Object.entries(files)) {
      await Deno.mkdir(`${dir}/${path.split("/").slice(0, -1).join("/") || "."}`, {
        recursive: true,
      });
      await Deno.writeTextFile(`${dir}/${path}`, text + "\n");
    }
    const got = (await houseViolations(dir)).map((v) => `${v.file} → ${v.target} (${v.rule})`);
    assertEquals(got, [
      "configs/one.ts → runs/r.ts (configs/* may import only configs/)",
      "configs/types.ts → io/a.ts (configs/types.ts may import only runs/)",
      "encoders/e.ts → metrics/m.ts (encoders may import only encoders, io)",
      "io/a.ts → encoders/e.ts (io may import nothing outside io)",
      "metrics/m.ts → search/s.ts (metrics and search are on one tier (ARCHITECTURE.md): neither imports the other)",
      "pipeline/p.ts → io/_core.ts (a _ file is private to its room (io))",
      "pipeline/p.ts → tests/_util.ts (nothing may import tests/)",
      "pipeline/v.ts → io/c.ts (io/c.ts is not one of io/'s public files (io/exports.json): import a file listed there, or list it)",
      "pipeline/v.ts → report/x.ts (report/x.ts is not public: report/ has no exports.json, so no file of it is)",
      "report/x.ts → pipeline/p.ts (report may import only report, io, encoders, metrics, search, runs)",
      "runs/r.ts → pipeline/p.ts (runs may import only runs, io, encoders, metrics, search)",
      "search/s.ts → metrics/w.ts (search and metrics are on one tier (ARCHITECTURE.md): neither imports the other)",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("house plan checker: a list of public files that names a missing, private, repeated or unsorted file is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-doors-" });
  try {
    await Deno.mkdir(`${dir}/io/dump`, { recursive: true });
    for (const f of ["a.ts", "b.ts", "_p.ts", "dump/w.ts"]) {
      await Deno.writeTextFile(`${dir}/io/${f}`, "");
    }
    const list = ["./a.ts", "./dump/w.ts", "./b.ts", "./b.ts", "./_p.ts", "./gone.ts", "io/a.ts"];
    await Deno.writeTextFile(`${dir}/io/exports.json`, JSON.stringify({ exports: list }));
    await Deno.mkdir(`${dir}/runs`);
    await Deno.writeTextFile(`${dir}/runs/exports.json`, '{"exports": "./mod.ts"}');
    const doors = await frontDoors(dir);
    assertEquals(doors.get("io")!.problems, [
      'io/exports.json: "./b.ts" comes before "./dump/w.ts" (keep the list sorted)',
      'io/exports.json: "./b.ts" is listed twice',
      'io/exports.json: "./_p.ts" is a _ file, private to io/',
      'io/exports.json: "./_p.ts" comes before "./b.ts" (keep the list sorted)',
      'io/exports.json: "./gone.ts" names no file',
      'io/exports.json: "io/a.ts" is not a ./<path>.ts in io/',
    ]);
    assertEquals([...doors.get("io")!.files].sort(), [
      "io/_p.ts",
      "io/a.ts",
      "io/b.ts",
      "io/dump/w.ts",
      "io/gone.ts",
    ]);
    assertEquals(doors.get("runs")!.problems, [
      'runs/exports.json: "exports" is not a list of paths',
    ]);
    assertEquals(frontDoorBroken("runs/r.ts", "io/dump/w.ts", doors), undefined);
    assertEquals(frontDoorBroken("io/x.ts", "io/inner.ts", doors), undefined); // its own room
    assertEquals(frontDoorBroken("tests/t.ts", "io/inner.ts", doors), undefined); // a free room
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("house plan checker: what counts as an import", () => {
  const src = [
    'import a from "./a.ts";',
    'import type { B } from "./b.ts";',
    "import {",
    "  c,",
    "  d,",
    '} from "./cd.ts";',
    'export { e } from "./e.ts";',
    'export * as f from "./f.ts";',
    'import "./side.ts";',
    'const g = await import("./g.ts");',
    "const h = await import(`./h.ts`);",
    "const dyn = await import(name);",
    'new Worker(new URL("./w.ts", import.meta.url), { type: "module" });',
    'const file = new URL("./data.json", import.meta.url);',
    "/* import x from './no1.ts'; */",
    "// import y from './no2.ts';",
    "const s = 'import z from \"./no3.ts\"';",
    "const u = 'https://example.org/x'; // import from './no4.ts'",
    'import { Effect } from "effect";',
  ].join("\n");
  assertEquals(importsOf(src), [
    "./a.ts",
    "./b.ts",
    "./cd.ts",
    "./e.ts",
    "./f.ts",
    "./side.ts",
    "./g.ts",
    "./h.ts",
    "./w.ts",
    "effect",
  ]);
});

/** The files of rooms below `pipeline/` whose strings build a path to a `pipeline/` script. */
export async function scriptPathsBelowPipeline(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const file of await sourceFiles(root)) {
    const room = file.includes("/") ? file.slice(0, file.indexOf("/")) : "";
    if (room === "" || room === "pipeline" || room === "configs" || FREE.has(room)) continue;
    const { texts } = lex(await Deno.readTextFile(`${root}/${file}`));
    if (texts.some((t) => /(?:^|\/)pipeline\/(?:\$\{|[\w.-]+\.ts)/.test(t))) out.push(file);
  }
  return out;
}

Deno.test("house plan: below pipeline/, only the table of stage scripts names a pipeline script", async () => {
  assertEquals(await scriptPathsBelowPipeline(ROOT), ["runs/plan/scripts.ts"]);
  for (const script of Object.values(STAGE_SCRIPTS)) {
    assert(Deno.statSync(`${ROOT}/pipeline/${script}`).isFile, `pipeline/${script} is missing`);
  }
  // The checker sees a path built in a template, not one in a comment.
  const dir = Deno.makeTempDirSync();
  try {
    Deno.mkdirSync(`${dir}/serve`);
    Deno.writeTextFileSync(`${dir}/serve/a.ts`, "const p = `${R}/pipeline/${s}`;");
    Deno.writeTextFileSync(`${dir}/serve/b.ts`, "// pipeline/merge.ts\nconst x = 'pipeline/';");
    Deno.writeTextFileSync(`${dir}/serve/c.ts`, 'run("../pipeline/merge.ts");');
    assertEquals(await scriptPathsBelowPipeline(dir), ["serve/a.ts", "serve/c.ts"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
