/**
 * What a command loads before it runs: its static module graph (`deno info
 * --json`, imports that are not `import()`). Every command's `--help` (and a
 * usage error) loads only the argument parser, its error type, the
 * open-files limit and the light modules its spec reads (the names of
 * encoders, the defaults it shows); the work loads with `import()`.
 * `evaluate` loads ONNX Runtime, Vega and the other
 * question sets' metrics only when its flags ask for them (`import()`), and
 * Effect module by module, never through the `effect` index (which loads
 * all of Effect). `embed_context` with the default encoder (sparse-pi) loads
 * at most 40 of the repository's modules, none of ONNX Runtime's encoders.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, runArgv } from "../_util.ts";

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

/** The modules `script` loads before its first line runs (static imports only). */
async function staticGraph(script: string): Promise<string[]> {
  const out = await runArgv([Deno.execPath(), "info", "--json", script], { cwd: ROOT });
  assertEquals(out.code, 0, out.stderr);
  const info = JSON.parse(out.stdout) as {
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

/** What every command file loads: the argument parser, its error type, the open-files limit. */
const PARSER = ["io/errors.ts", "io/limits.ts", "pipeline/_args.ts"];

/**
 * Each command of deno.json and the light modules its spec (or its start,
 * before the work loads) reads besides {@linkcode PARSER}.
 */
const COMMANDS: Readonly<Record<string, readonly string[]>> = {
  bem: [],
  embed_context: ["encoders/names.ts", "pipeline/_embed_flags.ts"],
  embed_question: ["encoders/names.ts", "pipeline/_embed_flags.ts"],
  evaluate: [],
  full: ["encoders/names.ts"],
  index: ["search/index/defaults.ts"],
  inspect: [],
  // Its workers start before the stage loads: their plan and pool.
  merge: [
    "pipeline/_merge_early.ts",
    "search/merge/early.ts",
    "search/merge/plan.ts",
    "search/workers.ts",
  ],
  records: [],
  report: ["pipeline/_report_args.ts"],
  run: ["pipeline/_run_args.ts", "runs/config/defaults.ts"],
  search: ["pipeline/_index_flags.ts", "search/index/defaults.ts"],
  serve: ["pipeline/_index_flags.ts", "search/index/defaults.ts"],
  split: [],
  subset: [],
  validate: [],
};

Deno.test("startup: the commands of deno.json are the ones checked here", async () => {
  const tasks = await Deno.readTextFile(`${ROOT}/deno.json`);
  const run = [...new Set([...tasks.matchAll(/pipeline\/([a-z_]+)\.ts/g)].map((m) => m[1]))];
  assertEquals(run.sort(), Object.keys(COMMANDS).sort());
});

for (const [command, light] of Object.entries(COMMANDS)) {
  Deno.test(
    `startup: ${command} --help loads only the argument parser${
      light.length > 0 ? ` and ${light.join(", ")}` : ""
    }`,
    async () => {
      const g = await staticGraph(`pipeline/${command}.ts`);
      assertEquals(
        g.filter((s) => !s.startsWith("npm:")),
        [...PARSER, ...light, `pipeline/${command}.ts`].sort(),
      );
      assertEquals(g.filter((s) => s.startsWith("npm:")), ["npm:/effect@4.1.0/Data"]);
    },
  );
}

for (const command of Object.keys(COMMANDS)) {
  Deno.test(`startup: ${command}'s work (pipeline/_${command}.ts) imports only types from its command file`, async () => {
    // A value imported from the command file would wait forever on the
    // command's top-level await of this very module: the process would
    // end with "Top-level await promise never resolved".
    const g = await staticGraph(`pipeline/_${command}.ts`);
    assert(g.includes(`pipeline/_${command}.ts`), `not the work's graph: ${g}`);
    assertEquals(g.filter((s) => s === `pipeline/${command}.ts`), []);
  });
}

Deno.test("startup: embed_context with the default encoder loads at most 40 of the repository's modules, none of ONNX's", async () => {
  // What a run evaluates: the command, then with `import()` its work and the
  // runner; sparse-pi on a SQuAD file or NDJSON records loads nothing more.
  const graphs = await Promise.all(
    ["pipeline/embed_context.ts", "pipeline/_cli.ts", "pipeline/_embed_context.ts"].map(
      staticGraph,
    ),
  );
  const local = [...new Set(graphs.flat())].filter((s) => !s.includes(":")).sort();
  assert(local.includes("encoders/sparse_pi/encoder.ts"), `not the run's graph: ${local}`);
  const later = [
    "encoders/onnx/", // ONNX Runtime's encoders: registry.ts loads them when one is asked for
    "encoders/hybrid.ts",
    "io/datasets/read.ts", // the readers of other formats
    "io/datasets/parquet", // a .parquet file or a folder of shards
    "io/npy.ts", // files as Effects: the dump writer needs only the byte formats
    "io/npz.ts",
    "runs/sandbox/sandbox.ts", // command lines: the output folder's check has its own module
  ];
  for (const prefix of later) {
    assertEquals(local.filter((s) => s.startsWith(prefix)), [], `${prefix} is loaded up front`);
  }
  assert(local.length <= 40, `${local.length} modules:\n${local.join("\n")}`);
});
