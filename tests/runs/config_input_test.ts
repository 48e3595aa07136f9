/**
 * Bad input to `run`, said once: a config module that does not parse (its
 * line and column), a cyclic object or a function in a config (by path),
 * `retries` past its bound (config and flag), an `onnx` manifest that is
 * not one (refused when the config loads, so `--dry-run` refuses it too),
 * and a task that exits 2 (bad input): not retried, its running siblings
 * stopped, and the run exits 2 with that task's own error line naming the
 * file the config gave. The whole run here is one `eval` task of a
 * one-question set (a few seconds).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Layer from "effect/Layer";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../_assert.ts";
import { ROOT, runRun } from "../_util.ts";
import { InputError, UsageError } from "../../io/errors.ts";
import { validateRunConfig } from "../../runs/config/config.ts";
import { toData } from "../../runs/config/config_loader.ts";
import { MAX_RETRIES } from "../../runs/config/defaults.ts";
import { loadRunConfig } from "../../runs/config/load.ts";
import { run } from "../../runs/run.ts";
import { endAttempt, executeUntil } from "../../runs/runners/execute.ts";
import { LocalRunner } from "../../runs/runners/local.ts";
import { newStatus, RunnerService, type TaskStatus } from "../../runs/runners/status.ts";
import type { Task } from "../../runs/plan/task.ts";
import { PIQA_LSTM_MANIFEST } from "../../encoders/onnx/encoder.ts";

const MRQA = '{"header": {"dataset": "X", "split": "dev"}}\n' +
  '{"context": "Paris is big.", "qas": [{"qid": "a1", "question": "Where?", "answers": ["Paris"], ' +
  '"detected_answers": [{"text": "Paris", "char_spans": [[0, 4]]}]}]}\n';

/** A folder with a one-question MRQA set (`mq.jsonl`) and its answers (`pred.json`). */
function scratch(prefix: string): string {
  const dir = Deno.makeTempDirSync({ prefix });
  Deno.writeTextFileSync(`${dir}/mq.jsonl`, MRQA);
  Deno.writeTextFileSync(`${dir}/pred.json`, '{"a1": "Paris"}\n');
  return dir;
}

/** The config data of one predictions model on the MRQA set of `dir`, with `extra` fields. */
const predConfig = (dir: string, extra: Record<string, unknown> = {}) => ({
  datasets: [{ abbr: "mq", type: "mrqa", path: `${dir}/mq.jsonl` }],
  models: [{ abbr: "pm", type: "predictions", predictions: `${dir}/pred.json` }],
  ...extra,
});

/** The InputError `validateRunConfig` fails with, as `[where, message]`. */
async function refusal(data: unknown, file: string): Promise<[string, string]> {
  const exit = await Effect.runPromiseExit(validateRunConfig(data, file));
  assert(Exit.isFailure(exit), "the config was accepted");
  const e = await Effect.runPromise(Effect.flip(validateRunConfig(data, file)));
  assert(e instanceof InputError, String(e));
  return [e.where, e.message];
}

Deno.test("config: retries is bounded (0 to MAX_RETRIES) in the config and on the command line", async () => {
  const dir = scratch("pv-cfg-retries-");
  try {
    const file = `${dir}/cfg.ts`;
    assertEquals(MAX_RETRIES, 100);
    assertEquals(await refusal(predConfig(dir, { retries: 1e12 }), file), [
      "retries",
      "expected at most 100 retries, got 1000000000000",
    ]);
    assertEquals(await refusal(predConfig(dir, { retries: 101 }), file), [
      "retries",
      "expected at most 100 retries, got 101",
    ]);
    assertEquals(await refusal(predConfig(dir, { retries: -1 }), file), [
      "retries",
      "expected an integer >= 0, got -1",
    ]);
    // As taskTimeout: a number past the safe integers is no integer.
    assertEquals(await refusal(predConfig(dir, { taskTimeout: 1e300 }), file), [
      "taskTimeout",
      "expected an integer > 0, got 1e+300",
    ]);
    const ok = await Effect.runPromise(
      validateRunConfig(predConfig(dir, { retries: MAX_RETRIES }), file),
    );
    assertEquals(ok.retries, 100);
    // The flag: refused before the config is even loaded (this one does not exist).
    const flag = await Effect.runPromise(
      Effect.flip(run({ config: `${dir}/none.ts`, retries: 1e12, dryRun: true, print: () => {} })),
    );
    assert(flag instanceof UsageError, String(flag));
    assertEquals(flag.message, "--retries must be an integer from 0 to 100, got 1000000000000");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("config: a cyclic object, or a function where an object belongs, is named by its path", async () => {
  const dir = scratch("pv-cfg-cyclic-");
  try {
    const file = `${dir}/cfg.ts`;
    // What the loader process hands over (toData) is what is validated.
    // deno-lint-ignore no-explicit-any
    const d: any = { abbr: "mq", type: "mrqa", path: `${dir}/mq.jsonl` };
    d.reader = d;
    assertEquals(await refusal(toData({ ...predConfig(dir), datasets: [d] }), file), [
      "datasets[0].reader",
      "a cyclic object (it contains itself)",
    ]);
    // deno-lint-ignore no-explicit-any
    const top: any = { models: predConfig(dir).models };
    top.datasets = top;
    assertEquals(await refusal(toData(top), file), [
      "datasets",
      "a cyclic object (it contains itself)",
    ]);
    // The same object twice, not inside itself, is data.
    Deno.mkdirSync(`${dir}/preds`);
    for (const a of ["mq", "mq2"]) Deno.writeTextFileSync(`${dir}/preds/${a}.json`, "{}");
    const shared = {};
    const twice = await Effect.runPromise(validateRunConfig(
      toData({
        datasets: [
          { abbr: "mq", type: "mrqa", path: `${dir}/mq.jsonl`, reader: shared },
          { abbr: "mq2", type: "mrqa", path: `${dir}/mq.jsonl`, reader: shared },
        ],
        models: [{ abbr: "pm", type: "predictions", predictions: `${dir}/preds` }],
      }),
      file,
    ));
    assertEquals(twice.datasets.map((x) => x.abbr), ["mq", "mq2"]);
    const fn = { abbr: "mq", type: "mrqa", path: `${dir}/mq.jsonl`, reader: () => 1 };
    assertEquals(await refusal(toData({ ...predConfig(dir), datasets: [fn] }), file), [
      "datasets[0].reader",
      "expected an object, got a function",
    ]);
    // Through the loader process, one line naming the config file and the path.
    Deno.writeTextFileSync(
      file,
      `const d: any = { abbr: "mq", type: "mrqa", path: "mq.jsonl" };
d.reader = d;
export const config = { datasets: [d], models: [{ abbr: "pm", type: "predictions", predictions: "pred.json" }] };
`,
    );
    const e = await Effect.runPromise(Effect.flip(loadRunConfig(file)));
    assert(e instanceof InputError, String(e));
    assertEquals(e.toString(), `${file}: datasets[0].reader: a cyclic object (it contains itself)`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("config: a module that does not parse, or throws, is named with its line and column", async () => {
  const dir = scratch("pv-cfg-syntax-");
  try {
    const file = `${dir}/cfg.ts`;
    Deno.writeTextFileSync(
      file,
      `export const config = {
  datasets: [{ abbr: "mq", type: "mrqa", path: "mq.jsonl" }]
  models: [{ abbr: "pm", type: "predictions", predictions: "pred.json" }],
};
`,
    );
    const e = await Effect.runPromise(Effect.flip(loadRunConfig(file)));
    assert(e instanceof InputError, String(e));
    assertEquals(e.where, "line 3, column 3");
    assertEquals(e.message, "cannot load: SyntaxError: Expected ',', got 'models'");
    // In a module the config imports: that module is named first.
    Deno.writeTextFileSync(`${dir}/part.ts`, "export const x = {\n  a: 1\n  b: 2 };\n");
    Deno.writeTextFileSync(
      file,
      `import { x } from "./part.ts";\nexport const config = { datasets: [x], models: [] };\n`,
    );
    const imp = await Effect.runPromise(Effect.flip(loadRunConfig(file)));
    assert(imp instanceof InputError, String(imp));
    assertEquals(imp.where, `${dir}/part.ts, line 3, column 3`);
    assertEquals(imp.message, "cannot load: SyntaxError: Expected ',', got 'b'");
    // A module that throws: where the throw is.
    Deno.writeTextFileSync(file, `export const config = {};\n\nthrow new Error("boom");\n`);
    const thrown = await Effect.runPromise(Effect.flip(loadRunConfig(file)));
    assert(thrown instanceof InputError, String(thrown));
    assertEquals([thrown.where, thrown.message], ["line 3, column 7", "cannot load: boom"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("config: an onnx manifest (or an ONNX encoder's model) that is not one is refused when the config loads", async () => {
  const dir = scratch("pv-cfg-onnx-");
  try {
    const file = `${dir}/cfg.ts`;
    const dev = {
      abbr: "dev",
      path: `${ROOT}/data/dev-v1.1.json.gz`,
      reader: { articles: [0, 1] },
    };
    const withModel = (m: Record<string, unknown>) => ({ datasets: [dev], models: [m] });
    const not = `"${dir}/pred.json" is not an ONNX encoder manifest`;
    assertEquals(await refusal(withModel({ abbr: "m", onnx: `${dir}/pred.json` }), file), [
      "models[0].onnx",
      `${not}: format: missing key`,
    ]);
    assertEquals(
      await refusal(
        withModel({ abbr: "m", encoder: "piqa-lstm", model: `${dir}/pred.json` }),
        file,
      ),
      ["models[0].model", `${not}: format: missing key`],
    );
    Deno.writeTextFileSync(`${dir}/bad.json`, "{ not json");
    const [where, msg] = await refusal(withModel({ abbr: "m", onnx: `${dir}/bad.json` }), file);
    assertEquals(where, "models[0].onnx");
    assertMatch(msg, /^"[^"]*\/bad\.json" is not an ONNX encoder manifest: invalid JSON \(.+\)$/);
    // The bundled manifest is one.
    const ok = await Effect.runPromise(
      validateRunConfig(withModel({ abbr: "m", onnx: PIQA_LSTM_MANIFEST }), file),
    );
    assertEquals(ok.models[0].model, PIQA_LSTM_MANIFEST);
    // --dry-run loads the config: refused there too, before anything is planned or made.
    Deno.writeTextFileSync(
      file,
      `export const config = {
  datasets: [{ abbr: "dev", path: ${JSON.stringify(dev.path)}, reader: { articles: [0, 1] } }],
  models: [{ abbr: "m", onnx: "pred.json" }],
};
`,
    );
    const e = await Effect.runPromise(
      Effect.flip(run({ config: file, dryRun: true, workDir: `${dir}/work`, print: () => {} })),
    );
    assert(e instanceof InputError, String(e));
    assertEquals(e.toString(), `${file}: models[0].onnx: ${not}: format: missing key`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** A task that runs `code` (a Deno script) with its log in `dir`; complete when `dir/<id>.out` exists. */
function scriptTask(dir: string, id: string, code: string): TaskStatus {
  const script = `${dir}/${id}.ts`;
  Deno.writeTextFileSync(script, code);
  return newStatus({
    id: `eval/${id}/d`,
    stage: "eval",
    model: id,
    dataset: "d",
    part: null,
    range: null,
    items: 1,
    unit: "questions",
    argv: [Deno.execPath(), "run", "--allow-read", "--allow-write", script],
    log: `${dir}/${id}.log`,
    watch: [dir],
    check: { kind: "files", files: [`${dir}/${id}.out`] },
    deps: [],
    gres: null,
  } as unknown as Task);
}

Deno.test("endAttempt: an attempt that exited 2 (bad input) fails at once, retries left or not", () => {
  const st = newStatus({ id: "t", check: { kind: "files", files: ["/nonexistent"] } } as never);
  const events: string[] = [];
  const ctx = {
    maxWorkers: 1,
    timeoutS: 1,
    retries: 5,
    notify: (_: TaskStatus, e: string) => events.push(e),
  };
  st.attempts = 1;
  assertEquals(endAttempt(st, ctx, "exit 1", false, 1), "retry");
  assertEquals([st.state, st.badInput], ["pending", false]);
  st.attempts = 2;
  assertEquals(endAttempt(st, ctx, "exit 2", false, 2), "failed");
  assertEquals([st.state, st.badInput, st.error], ["failed", true, "exit 2"]);
  // Stopped (no exit status of its own) or interrupted: not bad input.
  const stalled = newStatus(
    { id: "s", check: { kind: "files", files: ["/nonexistent"] } } as never,
  );
  stalled.attempts = 1;
  assertEquals(endAttempt(stalled, ctx, "no progress for 1 s: killed", false, null), "retry");
  assertEquals(stalled.badInput, false);
  assertEquals(events, ["retry", "failed", "retry"]);
});

Deno.test("executeUntil: a task that exits 2 is not retried and stops its running sibling", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-badinput-" });
  try {
    const bad = scriptTask(
      dir,
      "bad",
      `console.error("eval: /data/p.json: byte 3: invalid JSON"); Deno.exit(2);`,
    );
    const slow = scriptTask(dir, "slow", `await new Promise((r) => setTimeout(r, 60000));`);
    const t0 = Date.now();
    const events: string[] = [];
    const exit = await Effect.runPromise(
      executeUntil(
        [bad.task, slow.task],
        [bad, slow],
        {
          maxWorkers: 2,
          timeoutS: 120,
          retries: 3,
          notify: (st, e) => events.push(`${st.task.model} ${e}`),
        },
        Effect.never,
      ).pipe(Effect.provide(Layer.succeed(RunnerService, new LocalRunner()))),
    );
    const secs = (Date.now() - t0) / 1000;
    assert(secs < 30, `stopped after ${secs} s`);
    assert(Exit.isFailure(exit), "the execution was stopped");
    assertEquals([bad.state, bad.attempts, bad.badInput, bad.error], ["failed", 1, true, "exit 2"]);
    assertEquals([slow.state, slow.attempts, slow.badInput], ["cancelled", 1, false]);
    assertEquals(events.filter((e) => e.endsWith("retry")), []);
    assertStringIncludes(Deno.readTextFileSync(bad.task.log), "\n== exit 2 after ");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("run: a predictions file that is not {id: answer} is one attempt, exit 2, its line naming the file", async () => {
  const dir = scratch("pv-run-badpred-");
  try {
    // An MRQA file given as the answers (the audit's case): read by the eval task.
    Deno.writeTextFileSync(`${dir}/answers.jsonl`, MRQA);
    Deno.writeTextFileSync(
      `${dir}/cfg.ts`,
      `export const config = {
  datasets: [{ abbr: "mq", type: "mrqa", path: "mq.jsonl" }],
  models: [{ abbr: "pm", type: "predictions", predictions: "answers.jsonl" }],
  retries: 5,
};
`,
    );
    const r = await runRun([`${dir}/cfg.ts`, "--work-dir", `${dir}/work`]);
    assertEquals(r.code, 2, r.stderr);
    const lines = r.stderr.trim().split("\n");
    assertEquals(
      lines.at(-1),
      `run: eval/pm/mq: bad input (exit 2), not retried: eval: ${dir}/answers.jsonl: byte 45: ` +
        "invalid JSON: extra data after the top-level value",
    );
    assertEquals(lines.filter((l) => l.startsWith("run: retrying")), []);
    assertMatch(
      lines.find((l) => l.startsWith("run: FAILED"))!,
      /^run: FAILED {3}eval\/pm\/mq \(attempt 1\): exit 2 \(bad input: not retried\); log /,
    );
    const [runDir] = [...Deno.readDirSync(`${dir}/work`)].map((e) => `${dir}/work/${e.name}`);
    const record = JSON.parse(Deno.readTextFileSync(`${runDir}/runs.jsonl`).trim());
    assertEquals(record.attempts, { "eval/pm/mq": 1 });
    assertEquals(record.failed, ["eval/pm/mq"]);
    // Nothing was scored: no result, and no copy of the answers.
    assertEquals([...Deno.readDirSync(`${runDir}/results/pm`)].length, 0);
    assertEquals([...Deno.readDirSync(`${runDir}/predictions/pm`)].length, 0);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
