/**
 * The task contract (`runs/plan/task_args.ts`): each kind's arguments
 * written by `toArgv` and read by the task command's parser (its spec in
 * `pipeline/_run_task.ts`) and `fromFlags` come back equal; a missing or
 * malformed flag is the command's one usage line, exit 2, for every kind
 * (a sharded search's `--probe-tau` not above 0 too).
 */
import { assert, assertEquals } from "../../_assert.ts";
import { ROOT, runArgv } from "../../_util.ts";
import { parseArgs } from "../../../pipeline/_args.ts";
import { TASK_COMMANDS } from "../../../pipeline/_run_task.ts";
import { type EvalArgs, TASK_ARGS, type TaskKind } from "../../../runs/plan/task_args.ts";

/** `args` through `toArgv`, the command's parser and `fromFlags`. */
function roundTrip<K extends TaskKind>(kind: K, args: unknown): unknown {
  const contract = TASK_ARGS[kind] as {
    toArgv(a: unknown): string[];
    fromFlags(f: never): unknown;
  };
  const [first, ...rest] = contract.toArgv(args);
  assertEquals(first, kind);
  const parsed = parseArgs(TASK_COMMANDS[kind].spec, rest);
  if (parsed === "help") throw new Error("help");
  return contract.fromFlags(parsed.flags as never);
}

Deno.test("task contract: every kind's arguments survive toArgv, the command's parser and fromFlags", () => {
  const prepare = {
    data: "/d/nq.csv",
    out: "/r/datasets/nq",
    articles: [2, 5] as [number, number],
    uniqueIds: true,
    subsetOnly: false,
    questionsOnly: { format: "csv" as const, lang: "en", fields: { question: "q", id: "k" } },
    corpus: "/d/psgs.tsv",
  };
  assertEquals(roundTrip("prepare", prepare), prepare);
  assertEquals(TASK_ARGS.prepare.toArgv(prepare), [
    "prepare",
    "--data=/d/nq.csv",
    "--out=/r/datasets/nq",
    "--articles=2:5",
    "--unique-ids",
    "--questions-only",
    "--format=csv",
    "--lang=en",
    '--fields={"question":"q","id":"k"}',
    "--corpus=/d/psgs.tsv",
  ]);
  const closed: EvalArgs = {
    predictions: {
      data: "/d.json",
      pred: "/p.json",
      out: "/r.json",
      rows: "/rows.ndjson",
      bem: "/bem.onnx",
      bemReport: "score",
      open: { pred: "/o.json", topk: "/o.topk.ndjson", uniqueIds: true },
    },
  };
  assertEquals(roundTrip("eval", closed), closed);
  const copied: EvalArgs = {
    predictions: {
      data: "/d.jsonl",
      pred: "/p.json",
      out: "/r.json",
      rows: undefined,
      bem: undefined,
      bemReport: undefined,
      from: "/answers.json",
      format: "mrqa",
    },
  };
  assertEquals(roundTrip("eval", copied), copied);
  const corpus: EvalArgs = {
    corpusSearch: {
      data: "/q.csv",
      out: "/r.json",
      rows: "/rows.ndjson",
      pred: "/o.json",
      topk: "/o.topk.ndjson",
      index: "/index",
      ranks: 20,
      format: "trec",
    },
  };
  assertEquals(roundTrip("eval", corpus), corpus);
  const shard = {
    data: "/d.json",
    index: "/index",
    shard: 3,
    questionEmb: "/q_emb",
    out: "/hits/3.ndjson",
    topK: 10,
    nprobe: 16,
    candidates: 200,
    uniqueIds: false,
    lang: "de",
  };
  assertEquals(roundTrip("search-shard", shard), shard);
  // Adaptive probing: `--probe-tau` after `--nprobe`, back as the same number.
  // (In the contract's key order: probeTau after nprobe.)
  const { candidates, uniqueIds, lang, ...head } = shard;
  const tau = { ...head, probeTau: 0.13, candidates, uniqueIds, lang };
  assertEquals(roundTrip("search-shard", tau), tau);
  const argv = TASK_ARGS["search-shard"].toArgv(tau);
  assertEquals(argv.slice(argv.indexOf("--nprobe=16"), argv.indexOf("--nprobe=16") + 3), [
    "--nprobe=16",
    "--probe-tau=0.13",
    "--candidates=200",
  ]);
  assert(!TASK_ARGS["search-shard"].toArgv(shard).some((a) => a.startsWith("--probe-tau")));
  assertEquals(
    (roundTrip("search-shard", { ...shard, probeTau: 1e-7 }) as { probeTau: number }).probeTau,
    1e-7,
  );
  const merge = { parts: "/hits", shards: 8, pred: "/o.json", topk: "/o.topk.ndjson" };
  assertEquals(roundTrip("search-merge", merge), merge);
});

Deno.test("task command: a missing or malformed flag is one usage line, exit 2, for each kind", async () => {
  const cases: [string[], string][] = [
    [["prepare", "--data=x"], "prepare: --data and --out are required"],
    [
      ["prepare", "--data=x", "--out=y", "--articles=3:1"],
      'prepare: --articles expects A:B with A < B, got "3:1"',
    ],
    [["eval", "--data=x", "--out=y"], "eval: --data, --pred and --out are required"],
    [
      ["eval", "--data=x", "--pred=p", "--out=y", "--open-pred=o"],
      "eval: --open-pred and --topk go together",
    ],
    [
      ["eval", "--corpus-index=i", "--data=x"],
      "eval: --corpus-index needs --data, --out, --open-pred and --topk",
    ],
    [
      ["search-shard", "--data=d", "--index=i"],
      "search-shard: --data, --index, --shard, --question-emb, --out and --top-k are required",
    ],
    [
      ["search-shard", "--data=d", "--index=i", "--shard=x"],
      'search-shard: --shard expects an integer, got "x" (see --help)',
    ],
    [
      [
        "search-shard",
        "--data=d",
        "--index=i",
        "--shard=0",
        "--question-emb=q",
        "--out=o",
        "--top-k=1",
        "--probe-tau=0",
      ],
      "search-shard: --probe-tau must be a number above 0, got 0",
    ],
    [
      ["search-shard", "--data=d", "--index=i", "--probe-tau=x"],
      'search-shard: --probe-tau expects a number, got "x" (see --help)',
    ],
    [
      ["search-merge", "--parts=p", "--shards=0", "--pred=x"],
      "search-merge: --parts, --shards and --pred are required",
    ],
  ];
  for (const [args, line] of cases) {
    const r = await runArgv([
      Deno.execPath(),
      "run",
      "--allow-read",
      "--allow-write",
      `${ROOT}/pipeline/_run_task.ts`,
      ...args,
    ]);
    assertEquals([r.code, r.stderr], [2, `${line}\n`], args.join(" "));
  }
});
