/**
 * What a command loads before it runs: its static module graph (`deno info
 * --json`, imports that are not `import()`). `evaluate --help` loads only the
 * argument parser; `evaluate` loads ONNX Runtime, Vega and the other
 * question sets' metrics only when its flags ask for them (`import()`), and
 * Effect module by module, never through the `effect` index (which loads
 * all of Effect).
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT } from "../_util.ts";

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

/** The modules `script` loads before its first line runs (static imports only). */
async function staticGraph(script: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", script],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects?: Record<string, string>;
  };
  const byName = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const todo = [...info.roots];
  while (todo.length > 0) {
    const s = info.redirects?.[todo[todo.length - 1]] ?? todo[todo.length - 1];
    todo.pop();
    if (seen.has(s)) continue;
    seen.add(s);
    for (const d of byName.get(s)?.dependencies ?? []) {
      if (d.code !== undefined && d.isDynamic !== true) todo.push(d.code.specifier);
    }
  }
  return [...seen].map((s) => s.startsWith(`file://${ROOT}/`) ? s.slice(ROOT.length + 8) : s)
    .sort();
}

Deno.test("startup: evaluate --help loads only the argument parser, its error type and the open-files limit", async () => {
  const g = await staticGraph("pipeline/evaluate.ts");
  assertEquals(g.filter((s) => !s.startsWith("npm:")), [
    "io/errors.ts",
    "io/limits.ts",
    "pipeline/_args.ts",
    "pipeline/evaluate.ts",
  ]);
  assertEquals(g.filter((s) => s.startsWith("npm:")), ["npm:/effect@4.1.0/Data"]);
});

Deno.test("startup: scoring SQuAD loads no ONNX Runtime, Vega, tokenizer or Effect index", async () => {
  const g = await staticGraph("pipeline/_evaluate.ts");
  assert(g.includes("metrics/evaluate.ts"), `not the scoring's graph: ${g}`);
  const npm = g.filter((s) => s.startsWith("npm:"));
  for (const s of npm) {
    assert(
      /^npm:\/(effect@4\.1\.0\/[A-Z][A-Za-z]*|@streamparser\/json@[0-9.]+|fflate@[0-9.]+)$/.test(s),
      `pipeline/_evaluate.ts loads ${s} before it is needed`,
    );
  }
  for (const later of ["metrics/bem/", "metrics/qa_eval.ts", "metrics/open.ts", "encoders/"]) {
    assertEquals(g.filter((s) => s.startsWith(later)), [], `${later} is loaded up front`);
  }
});
