/**
 * A run config's adaptive probing (`open: { ivf: { nprobe, probeTau } }`):
 * the planned search task's command line has `--probe-tau` beside
 * `--nprobe`, each shard's `search-shard` task too (read back by the task
 * command's parser and contract as `probeTau`); a config without it plans
 * exactly the command lines and resolved config it did before. A
 * `probeTau` that is not a number above 0 is refused with one line naming
 * the field, in the config's validation and on `run`'s command line. (The
 * run itself, with the search's record, is `tests/runs/probe_tau_run_test.ts`.)
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "../../_assert.ts";
import { DEV_GZ, runRun } from "../../_util.ts";
import { InputError } from "../../../io/errors.ts";
import { parseArgs } from "../../../pipeline/_args.ts";
import { TASK_COMMANDS } from "../../../pipeline/_run_task.ts";
import { validateRunConfig } from "../../../runs/config/config.ts";
import { planRun } from "../../../runs/plan/plan.ts";
import { TASK_ARGS } from "../../../runs/plan/task_args.ts";

const IVF = { nlist: 8, bpv: 16, nprobe: 3 };

/** The run config data of piqa-lstm × articles [3, 4) of dev, with `open` per dataset. */
const configOf = (opens: Record<string, unknown>) => ({
  datasets: Object.entries(opens).map(([abbr, open]) => ({
    abbr,
    path: DEV_GZ,
    reader: { articles: [3, 4] },
    open,
  })),
  models: [{ abbr: "m", encoder: "piqa-lstm" }],
});

/** A `search-shard` task's arguments as the task command reads them from its command line. */
function shardArgs(argv: readonly string[]): { probeTau?: number; nprobe?: number } {
  const rest = argv.slice(argv.indexOf("search-shard") + 1);
  const parsed = parseArgs(TASK_COMMANDS["search-shard"].spec, rest);
  if (parsed === "help") throw new Error("help");
  return TASK_ARGS["search-shard"].fromFlags(parsed.flags as never);
}

Deno.test("run plan: open.ivf.probeTau gives the search task --probe-tau (and each shard's task probeTau); without it the plan is as before", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-tauplan-" });
  try {
    const cfg = await Effect.runPromise(validateRunConfig(
      configOf({
        tau1: { ivf: { ...IVF, probeTau: 0.13 } },
        tau2: { shards: 2, ivf: { ...IVF, probeTau: 0.13 } },
        all1: { ivf: IVF },
        all2: { shards: 2, ivf: IVF },
      }),
      `${dir}/cfg.ts`,
    ));
    const ivfOf = (abbr: string) => cfg.datasets.find((d) => d.abbr === abbr)!.open!.ivf;
    assertEquals(JSON.stringify(ivfOf("tau1")), '{"nlist":8,"bpv":16,"nprobe":3,"probeTau":0.13}');
    // Without it: the resolved config (saved in the run folder, compared on -r) as before.
    assertEquals(JSON.stringify(ivfOf("all1")), '{"nlist":8,"bpv":16,"nprobe":3}');
    const plan = await Effect.runPromise(
      planRun(cfg, { runDir: `${dir}/run`, maxPartitionSize: 1000 }),
    );
    const of = (stage: string, ds: string) =>
      plan.tasks.filter((t) => t.stage === stage && t.dataset === ds);
    const [search] = of("search", "tau1");
    const at = search.argv.indexOf("--nprobe=3");
    assert(at > 0, search.argv.join(" "));
    assertEquals(search.argv[at + 1], "--probe-tau=0.13", search.argv.join(" "));
    const shards = of("search", "tau2");
    assertEquals(shards.length, 2);
    for (const t of shards) {
      assert(t.argv.includes("--probe-tau=0.13"), t.argv.join(" "));
      const a = shardArgs(t.argv);
      assertEquals([a.nprobe, a.probeTau], [3, 0.13]);
    }
    // The same config without probeTau: no --probe-tau anywhere, the same lines but that flag.
    for (const [abbr, tau] of [["all1", "tau1"], ["all2", "tau2"]]) {
      const without = plan.tasks.filter((t) => t.dataset === abbr);
      assert(without.length > 0);
      for (const t of without) {
        assert(!t.argv.some((x) => x.startsWith("--probe-tau")), t.argv.join(" "));
      }
      for (const t of of("search", abbr).filter((t) => t.argv.includes("search-shard"))) {
        assertEquals(shardArgs(t.argv).probeTau, undefined);
      }
      const strip = (argv: readonly string[], ds: string) =>
        argv.filter((x) => x !== "--probe-tau=0.13").map((x) =>
          x.replace(new RegExp(`/${ds}(?=[/.,]|$)`, "g"), "/DS")
        );
      assertEquals(
        of("search", abbr).map((t) => strip(t.argv, abbr)),
        of("search", tau).map((t) => strip(t.argv, tau)),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run config: a probeTau that is not a number above 0 is refused with one line naming it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "phraseval-taubad-" });
  try {
    const where = "datasets[0].open.ivf.probeTau";
    const cases: [unknown, string][] = [
      [0, "expected a number > 0, got 0"],
      [-1, "expected a number > 0, got -1"],
      ["0.13", 'expected number, got "0.13"'],
      [NaN, "expected a number > 0, got NaN"],
      [Infinity, "expected a number > 0, got Infinity"],
    ];
    for (const [v, message] of cases) {
      const e = await Effect.runPromise(Effect.flip(validateRunConfig(
        configOf({ d: { ivf: { ...IVF, probeTau: v } } }),
        `${dir}/cfg.ts`,
      )));
      assert(e instanceof InputError, String(e));
      assertEquals([e.where, e.message], [where, message], String(v));
    }
    // On the command line (--dry-run): one line, exit 2, nothing made.
    const cfg = `${dir}/tau.ts`;
    Deno.writeTextFileSync(
      cfg,
      `export const config = ${
        JSON.stringify(configOf({ d: { ivf: { ...IVF, probeTau: 0 } } }))
      };\n`,
    );
    const r = await runRun([cfg, "--dry-run", "--work-dir", `${dir}/work`]);
    assertEquals(r.code, 2, r.stderr);
    const lines = r.stderr.trimEnd().split("\n");
    assertEquals(lines.length, 1, r.stderr);
    assert(lines[0].includes(`${where}: expected a number > 0, got 0`), r.stderr);
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["tau.ts"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
