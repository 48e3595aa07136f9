/**
 * Three cheap deterministic systems over the bundled dev set, written as
 * prediction files (the rules of `tests/_rule_systems.ts`).
 *
 * @module
 */
import { DEV_GZ } from "../_util.ts";
import { devRuleAnswers, SYSTEMS } from "../_rule_systems.ts";

export { SYSTEMS };

/**
 * Writes `<dir>/<name>.json` for each of {@linkcode SYSTEMS} over the first
 * `articles` articles of dev (all by default) and returns the paths.
 */
export async function writeDevSystems(dir: string, articles?: number): Promise<string[]> {
  const r = await devRuleAnswers(articles);
  const paths: string[] = [];
  for (let i = 0; i < SYSTEMS.length; i++) {
    const path = `${dir}/${SYSTEMS[i]}.json`;
    const preds: Record<string, string> = {};
    r.ids.forEach((id, k) => preds[id] = r.answers[i][k]);
    await Deno.writeTextFile(path, JSON.stringify(preds));
    paths.push(path);
  }
  return paths;
}

/** The first `articles` articles of dev as a SQuAD file at `path`. */
export async function writeDevSubset(path: string, articles: number): Promise<void> {
  const file = await Deno.open(DEV_GZ);
  const text = await new Response(file.readable.pipeThrough(new DecompressionStream("gzip")))
    .text();
  const d = JSON.parse(text) as { version: string; data: unknown[] };
  await Deno.writeTextFile(
    path,
    JSON.stringify({ version: d.version, data: d.data.slice(0, articles) }),
  );
}
