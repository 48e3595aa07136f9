/**
 * What `provenance.json` costs `full`: the sha256 of each dump folder
 * given (`sha256Folder`, `io/provenance.ts`: the one `full` runs beside
 * its merge), with its files, bytes and seconds, each folder `--runs`
 * times (default 2; the first read may come from disk, the next from the
 * page cache).
 *
 * usage: npx -y deno@2.9.6 run --allow-read bench/provenance_hash.ts [--runs N] FOLDER...
 *
 * @module
 */
import { sha256Folder } from "../io/provenance.ts";

const args = [...Deno.args];
let runs = 2;
const i = args.indexOf("--runs");
if (i >= 0) {
  runs = Number(args[i + 1]);
  args.splice(i, 2);
}
if (args.length === 0 || !(Number.isInteger(runs) && runs >= 1)) {
  console.error("usage: bench/provenance_hash.ts [--runs N] FOLDER...");
  Deno.exit(2);
}
for (let r = 1; r <= runs; r++) {
  for (const dir of args) {
    const t = performance.now();
    const h = await sha256Folder(dir);
    const s = (performance.now() - t) / 1000;
    console.log(
      `run ${r}  ${dir}  ${h.files} files  ${(h.bytes / 1e6).toFixed(1)} MB  ${s.toFixed(2)} s  ${
        h.sha256.slice(0, 12)
      }…`,
    );
  }
}
