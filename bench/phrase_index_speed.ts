/**
 * Phrase-list reading speed: `decode + JSON.parse` (what `parsePhrases` does)
 * against `indexPhrases` (`io/dump/phrases.ts`), which validates in one pass
 * and decodes only the phrases asked for. Reads every `.json` phrase list of
 * a dump folder into memory first (default: the `merge` speed dumps), then
 * times each way over all of them, best of 5:
 *
 * - (a) decode + JSON.parse + the check that every element is a string;
 * - (b) indexPhrases + `at()` of one phrase per file (what `merge` needs);
 * - (c) indexPhrases + `at()` of every phrase.
 *
 * ```sh
 * npx -y deno@2.9.6 run --allow-read bench/phrase_index_speed.ts [--dir DIR] [--runs 5]
 * ```
 *
 * @module
 */
import { indexPhrases } from "../io/dump/phrases.ts";

const arg = (name: string, dflt: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : dflt;
};
const root = new URL("..", import.meta.url).pathname;
const dir = arg("dir", `${root}bench/out/merge_speed/dense_/context_emb`);
const runs = Number(arg("runs", "5"));

const names: string[] = [];
for (const e of Deno.readDirSync(dir)) {
  if (e.isFile && e.name.endsWith(".json")) names.push(e.name);
}
names.sort();
const files = names.map((n) => Deno.readFileSync(`${dir}/${n}`));
const totalBytes = files.reduce((s, f) => s + f.length, 0);
console.log(`${files.length} files, ${(totalBytes / 1e6).toFixed(1)} MB in ${dir}`);

const decoder = new TextDecoder("utf-8", { fatal: true });
let sink = 0;

function parseAll(): void {
  for (const f of files) {
    const v = JSON.parse(decoder.decode(f));
    if (!Array.isArray(v)) throw new Error("not a list");
    for (let i = 0; i < v.length; i++) {
      if (typeof v[i] !== "string") throw new Error("not a string");
    }
    sink += v[v.length >> 1].length;
  }
}

function indexOne(): void {
  for (let k = 0; k < files.length; k++) {
    const list = indexPhrases(files[k], names[k]);
    sink += list.at(list.length >> 1).length;
  }
}

function indexEvery(): void {
  for (let k = 0; k < files.length; k++) {
    const list = indexPhrases(files[k], names[k]);
    for (let i = 0; i < list.length; i++) sink += list.at(i).length;
  }
}

function best(f: () => void): number {
  let b = Infinity;
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    f();
    b = Math.min(b, performance.now() - t0);
  }
  return b;
}

// One untimed round each, so that all three are compiled before timing.
parseAll();
indexOne();
indexEvery();
const a = best(parseAll);
const b = best(indexOne);
const c = best(indexEvery);
const mbs = (ms: number) => (totalBytes / 1e6 / (ms / 1e3)).toFixed(0);
const line = (what: string, ms: number, vsA: string) =>
  console.log(
    `${what.padEnd(34)} ${ms.toFixed(1).padStart(6)} ms  ${mbs(ms).padStart(5)} MB/s${vsA}`,
  );
line("(a) decode + JSON.parse + check", a, "");
line("(b) indexPhrases + at(one)", b, `  (a)/(b) = ${(a / b).toFixed(2)}`);
line("(c) indexPhrases + at(every)", c, `  (a)/(c) = ${(a / c).toFixed(2)}`);
if (sink < 0) console.log(sink);
