/**
 * The documentation's rules, checked over the repository's markdown files:
 *
 * - no table line (a line starting with `|`) of any markdown file is wider
 *   than {@linkcode MAX_TABLE_WIDTH} characters (code points);
 * - every relative link of `README.md` and `docs/*.md` (`[text](path)`,
 *   `![alt](path)`, `<img src="path">`) points to a file that exists, and a
 *   `#fragment` to a heading of that file (GitHub's heading ids);
 * - `README.md` holds the two commands exactly, `npx -y deno@2.9.6 task full`
 *   and `npx -y deno@2.9.6 task test`, each at the start of a line (CI and
 *   other tools rely on them);
 * - every `./phraseval TASK` of `README.md` and `docs/*.md` names a task of
 *   `deno.json` (an upper-case word, such as `TASK` or `STAGE`, is a
 *   placeholder).
 *
 * The markdown files are found by walking the checkout (a copy without
 * `.git`, as `.ci/run` makes, has them too), leaving out the folders
 * `.gitignore` names (generated output such as `outputs/`). Links and
 * commands are read outside fenced code blocks and inline code for links, and
 * everywhere for commands. Each checker is also run on synthetic text that
 * breaks its rule, so a checker that finds nothing is caught.
 *
 * @module
 */
import { assert, assertEquals } from "./_assert.ts";
import { ROOT } from "./_util.ts";

/** The widest table line allowed in any markdown file (a screen). */
const MAX_TABLE_WIDTH = 100;

/** The README's two commands, exactly as CI and other tools run them. */
const README_COMMANDS = ["npx -y deno@2.9.6 task full", "npx -y deno@2.9.6 task test"];

/** Folders `.gitignore` names, as relative paths (`bench/out`) or bare names (`outputs`). */
async function ignoredFolders(): Promise<{ paths: Set<string>; names: Set<string> }> {
  const paths = new Set<string>([".git"]);
  const names = new Set<string>([".git"]);
  const text = await Deno.readTextFile(`${ROOT}/.gitignore`);
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line.endsWith("/") || line.startsWith("#") || line.startsWith("!")) continue;
    const p = line.replace(/^\/+|\/+$/g, "");
    if (p.includes("/")) paths.add(p);
    else names.add(p);
  }
  return { paths, names };
}

/** Every markdown file of the checkout, relative to the root, sorted. */
async function markdownFiles(): Promise<string[]> {
  const { paths, names } = await ignoredFolders();
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for await (const e of Deno.readDir(rel === "" ? ROOT : `${ROOT}/${rel}`)) {
      const r = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory) {
        if (!paths.has(r) && !names.has(e.name)) await walk(r);
      } else if (e.isFile && e.name.endsWith(".md")) out.push(r);
    }
  };
  await walk("");
  return out.sort();
}

/** `[line number, width]` of each table line wider than `max` code points. */
export function wideTableLines(text: string, max = MAX_TABLE_WIDTH): [number, number][] {
  const out: [number, number][] = [];
  text.split("\n").forEach((line, i) => {
    const width = [...line.replace(/\r$/, "")].length;
    if (line.startsWith("|") && width > max) out.push([i + 1, width]);
  });
  return out;
}

/** The text with fenced code blocks blanked out (line numbers kept). */
function withoutFences(text: string): string {
  let fence: string | null = null;
  return text.split("\n").map((line) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === null && m) {
      fence = m[1];
      return "";
    }
    if (fence !== null) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length) fence = null;
      return "";
    }
    return line;
  }).join("\n");
}

/** Link targets of markdown prose: `[t](x)`, `![a](x)`, `<img src="x">`, outside code. */
export function linkTargets(text: string): string[] {
  const prose = withoutFences(text).replace(/(`+)[\s\S]*?\1/g, "");
  const out: string[] = [];
  for (const m of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    out.push(m[1]);
  }
  for (const m of prose.matchAll(/<img\b[^>]*\bsrc\s*=\s*"([^"]+)"/g)) out.push(m[1]);
  return out;
}

/** GitHub's heading ids of a markdown text (`## A b's C` → `a-bs-c`; repeats get `-1`, `-2`). */
export function headingIds(text: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text).split("\n")) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{N}\p{M} _-]/gu, "").replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** Relative links of `file` (relative to the root) that do not resolve: `target: why`. */
export async function brokenLinks(file: string, text: string): Promise<string[]> {
  const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : "";
  const out: string[] = [];
  for (const target of linkTargets(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
    const hash = target.indexOf("#");
    const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const fragment = hash < 0 ? null : target.slice(hash + 1);
    if (pathPart === "") { // a heading of this very text
      if (fragment && !headingIds(text).has(fragment)) {
        out.push(`${target}: no heading #${fragment} in ${file}`);
      }
      continue;
    }
    const rel = dir === "" ? pathPart : `${dir}/${pathPart}`;
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(`${ROOT}/${rel}`);
    } catch {
      out.push(`${target}: no such file`);
      continue;
    }
    if (fragment !== null && fragment !== "" && info.isFile && rel.endsWith(".md")) {
      const ids = headingIds(await Deno.readTextFile(`${ROOT}/${rel}`));
      if (!ids.has(fragment)) out.push(`${target}: no heading #${fragment} in ${rel}`);
    }
  }
  return out;
}

/** The task names written as `./phraseval NAME` (placeholders in upper case left out). */
export function launcherTasks(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?<![\w/.])\.\/phraseval[ \t]+([A-Za-z0-9_:+-]+)/g)) {
    const name = m[1];
    if (name.startsWith("-") || /^[A-Z][A-Z_]*$/.test(name)) continue;
    out.push(name);
  }
  return out;
}

/** `README.md` and the pages of `docs/`, relative to the root. */
async function guidePages(): Promise<string[]> {
  const pages = ["README.md"];
  for await (const e of Deno.readDir(`${ROOT}/docs`)) {
    if (e.isFile && e.name.endsWith(".md")) pages.push(`docs/${e.name}`);
  }
  return pages.sort();
}

Deno.test("docs: the checkers catch what they look for (synthetic text)", async () => {
  const rows = ["| a | b |", "| - | - |", `| ${"x".repeat(97)} |`, `|${"é".repeat(99)}|`];
  const wide = [...rows, `text ${"y".repeat(200)}`].join("\n");
  assertEquals(wideTableLines(wide), [[3, 101], [4, 101]]);
  assertEquals(wideTableLines(`|${"é".repeat(98)}|`), []);

  const links = [
    "[ok](README.md) ![pic](docs/serve.png) [web](https://example.org/x)",
    '<img src="docs/nope.png" width="3">',
    "[gone](docs/missing.md) `[code](not/a/link.md)`",
    "```\n[fenced](not/a/link.md)\n```",
    "[frag](data/README.md#no-such-heading) [self](#a-heading) [bad self](#nope)",
    "## A heading",
  ].join("\n");
  assertEquals(linkTargets(links), [
    "README.md",
    "docs/serve.png",
    "https://example.org/x",
    "docs/missing.md",
    "data/README.md#no-such-heading",
    "#a-heading",
    "#nope",
    "docs/nope.png",
  ]);
  assertEquals(await brokenLinks("README.md", links), [
    "docs/missing.md: no such file",
    "data/README.md#no-such-heading: no heading #no-such-heading in data/README.md",
    "#nope: no heading #nope in README.md",
    "docs/nope.png: no such file",
  ]);
  assertEquals(
    [...headingIds(
      "# phraseval's IVF-PQ\n## Open-domain EM/F1 on dev\n## Open-domain EM/F1 on dev",
    )],
    ["phrasevals-ivf-pq", "open-domain-emf1-on-dev", "open-domain-emf1-on-dev-1"],
  );

  assertEquals(
    launcherTasks(
      "`./phraseval TASK` is short; ./phraseval full --open | ./phraseval test:slurm\n" +
        "./phraseval --help; ./phraseval nope-task x; ../x/phraseval other; ./phraseval STAGE",
    ),
    ["full", "test:slurm", "nope-task"],
  );
});

Deno.test("docs: no markdown table line is wider than 100 characters", async () => {
  const files = await markdownFiles();
  assert(files.includes("README.md") && files.includes("docs/stages.md"), files.join(" "));
  assert(files.includes("data/README.md") && files.includes("encoders/ONNX.md"), files.join(" "));
  const wide: string[] = [];
  for (const f of files) {
    for (const [line, width] of wideTableLines(await Deno.readTextFile(`${ROOT}/${f}`))) {
      wide.push(`${f}:${line}: ${width} characters`);
    }
  }
  assertEquals(wide, []);
});

Deno.test("docs: every relative link of README.md and docs/ resolves", async () => {
  const pages = await guidePages();
  assert(pages.length >= 10, `only ${pages.join(" ")}`);
  const broken: string[] = [];
  let links = 0;
  for (const f of pages) {
    const text = await Deno.readTextFile(`${ROOT}/${f}`);
    links += linkTargets(text).length;
    for (const b of await brokenLinks(f, text)) broken.push(`${f}: ${b}`);
  }
  assert(links > 50, `only ${links} links found`);
  assertEquals(broken, []);
});

Deno.test("docs: README.md holds the two commands exactly", async () => {
  const lines = (await Deno.readTextFile(`${ROOT}/README.md`)).split("\n");
  for (const cmd of README_COMMANDS) {
    const at = lines.filter((l) => l === cmd || l.startsWith(`${cmd} `));
    assert(at.length >= 1, `README.md: no line starts with "${cmd}"`);
  }
});

Deno.test("docs: every ./phraseval TASK of README.md and docs/ is a task of deno.json", async () => {
  const tasks = new Set(
    Object.keys(JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)).tasks),
  );
  assert(tasks.has("full") && tasks.has("test"), [...tasks].join(" "));
  const unknown: string[] = [];
  let seen = 0;
  for (const f of await guidePages()) {
    for (const name of launcherTasks(await Deno.readTextFile(`${ROOT}/${f}`))) {
      seen++;
      if (!tasks.has(name)) unknown.push(`${f}: ./phraseval ${name}`);
    }
  }
  assert(seen > 40, `only ${seen} ./phraseval commands found`);
  assertEquals(unknown, []);
});
