/**
 * Inputs and outputs that are the same file (issue 11, item 10): every
 * stage refuses an output that would replace one of its inputs (same path,
 * `./` and `..` spellings, a symbolic link, a hard link), two outputs that
 * are one file, and two documents on stdout, with exit 2 and one line,
 * before it writes anything: the inputs keep their bytes and no output
 * appears.
 */
import { assertEquals, assertMatch } from "../_assert.ts";
import { listDir, ROOT, runStage, sha256File } from "../_util.ts";
import { aliasProblem } from "../../io/paths.ts";

const DATA = JSON.stringify({
  version: "1.1",
  data: [{
    title: "Paris",
    paragraphs: [{
      context: "Paris is the capital and largest city of France.",
      qas: [{
        id: "q1",
        question: "What is the capital of France?",
        answers: [{ text: "Paris", answer_start: 0 }],
      }],
    }],
  }],
});

/** A folder with `d.json` (the dataset), `p.json` (predictions) and two empty dump folders. */
async function fixture(): Promise<string> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/d.json`, DATA);
  await Deno.writeTextFile(`${dir}/p.json`, JSON.stringify({ q1: "Paris" }));
  await Deno.mkdir(`${dir}/c_emb`);
  await Deno.mkdir(`${dir}/q_emb`);
  return dir;
}

/** Every file under `dir` with its sha256 (folders as `name/`). */
async function tree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const name of await listDir(dir)) {
    const st = await Deno.lstat(`${dir}/${name}`);
    if (st.isDirectory) {
      out.push(`${prefix}${name}/`, ...await tree(`${dir}/${name}`, `${prefix}${name}/`));
    } else if (st.isSymlink) {
      out.push(`${prefix}${name} -> ${await Deno.readLink(`${dir}/${name}`)}`);
    } else out.push(`${prefix}${name} ${await sha256File(`${dir}/${name}`)}`);
  }
  return out;
}

/** Runs `script args` in `dir` and checks the refusal: exit 2, one line matching `line`, nothing changed. */
async function refused(
  dir: string,
  script: string,
  args: string[],
  line: RegExp,
): Promise<void> {
  const before = await tree(dir);
  const r = await runStage(`pipeline/${script}.ts`, args);
  assertEquals(r.code, 2, r.stderr);
  assertEquals(r.stdout, "");
  assertEquals(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
  assertMatch(r.stderr, new RegExp(`^${script}: `));
  assertMatch(r.stderr, line);
  assertEquals(await tree(dir), before, "a file changed or appeared");
}

Deno.test("alias: split a.json a.json b.json is refused (it replaced its input)", async () => {
  const dir = await fixture();
  try {
    await refused(
      dir,
      "split",
      [`${dir}/d.json`, `${dir}/d.json`, `${dir}/q.json`],
      /context\.json ".*d\.json" is the input data\.json/,
    );
    // The same file by another spelling.
    await refused(
      dir,
      "split",
      [`${dir}/d.json`, `${dir}/c.json`, `${dir}/q_emb/../d.json`],
      /question\.json .* is the input data\.json/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: split d c.json c.json is refused (it lost the context output)", async () => {
  const dir = await fixture();
  try {
    await refused(
      dir,
      "split",
      [`${dir}/d.json`, `${dir}/c.json`, `${dir}/./c.json`],
      /context\.json .* and question\.json .* are the same file/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: split d - - is refused (two documents on stdout)", async () => {
  const dir = await fixture();
  try {
    await refused(dir, "split", [`${dir}/d.json`, "-", "-"], /would both write to stdout/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: an output that is a hard link or a symbolic link to the input is refused", async () => {
  const dir = await fixture();
  try {
    await Deno.link(`${dir}/d.json`, `${dir}/hard.json`);
    await Deno.symlink(`${dir}/d.json`, `${dir}/soft.json`);
    await refused(
      dir,
      "split",
      [`${dir}/d.json`, `${dir}/c.json`, `${dir}/hard.json`],
      /question\.json ".*hard\.json" is the input data\.json/,
    );
    await refused(
      dir,
      "split",
      [`${dir}/d.json`, `${dir}/soft.json`, `${dir}/q.json`],
      /context\.json ".*soft\.json" is the input data\.json/,
    );
    await refused(
      dir,
      "records",
      [`${dir}/d.json`, "--out", `${dir}/hard.json`],
      /--out ".*hard\.json" is the input data\.json/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: merge's output as the dataset (or inside a dump folder) is refused", async () => {
  const dir = await fixture();
  try {
    const dumps = [`${dir}/c_emb`, `${dir}/q_emb`];
    await refused(
      dir,
      "merge",
      [`${dir}/d.json`, ...dumps, `${dir}/d.json`, "--sparse"],
      /pred\.json ".*d\.json" is the input data\.json/,
    );
    await refused(
      dir,
      "merge",
      [`${dir}/d.json`, ...dumps, `${dir}/q_emb/pred.json`, "--sparse"],
      /pred\.json .* would be written inside the input folder question_emb/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: evaluate --per-question as the predictions (or the dataset, or stdout) is refused", async () => {
  const dir = await fixture();
  try {
    const args = [`${dir}/d.json`, `${dir}/p.json`];
    await refused(
      dir,
      "evaluate",
      [...args, "--per-question", `${dir}/p.json`],
      /--per-question ".*p\.json" is the input pred\.json/,
    );
    await refused(
      dir,
      "evaluate",
      [...args, "--per-question", `${dir}/d.json`],
      /--per-question ".*d\.json" is the input data\.json/,
    );
    await refused(
      dir,
      "evaluate",
      [...args, "--per-question", "-"],
      /stdout already carries the scores/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: bem --dump-inputs as the predictions is refused", async () => {
  const dir = await fixture();
  try {
    const model = `${ROOT}/tests/fixtures/bem_surrogate_NOT_BEM.onnx`;
    const args = [`${dir}/d.json`, `${dir}/p.json`, "--model", model];
    await refused(
      dir,
      "bem",
      [...args, "--dump-inputs", `${dir}/p.json`],
      /--dump-inputs ".*p\.json" is the input pred\.json/,
    );
    await refused(dir, "bem", [
      ...args,
      "--rows",
      `${dir}/r.json`,
      "--disagreements",
      `${dir}/r.json`,
    ], /--rows .* and --disagreements .* are the same file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: records --out as its input is refused", async () => {
  const dir = await fixture();
  try {
    await refused(
      dir,
      "records",
      [`${dir}/d.json`, "--out", `${dir}/d.json`],
      /--out ".*d\.json" is the input data\.json/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: an embedding stage's input inside its output folder is refused", async () => {
  const dir = await fixture();
  try {
    await Deno.writeTextFile(
      `${dir}/q_emb/q.ndjson`,
      JSON.stringify({ kind: "question", id: "q1", question: "Where?" }) + "\n",
    );
    await refused(
      dir,
      "embed_question",
      [`${dir}/q_emb/q.ndjson`, `${dir}/q_emb`, "--sparse"],
      /question input ".*q\.ndjson" lies inside the output folder/,
    );
    await refused(
      dir,
      "embed_context",
      [`${dir}/d.json`, `${dir}/d.json`, "--sparse"],
      /output folder ".*d\.json" is the input context input/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("alias: full --data as one of its own outputs is refused", async () => {
  const dir = await fixture();
  try {
    await Deno.mkdir(`${dir}/run`);
    await Deno.copyFile(`${dir}/d.json`, `${dir}/run/context.json`);
    await refused(
      dir,
      "full",
      ["--data", `${dir}/run/context.json`, "--out", `${dir}/run`],
      /--out's context\.json .* is the input --data/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("aliasProblem: distinct files pass; stdin inputs are not compared", () => {
  const dir = Deno.makeTempDirSync();
  try {
    Deno.writeTextFileSync(`${dir}/a`, "x");
    assertEquals(
      aliasProblem([{ name: "in", path: `${dir}/a` }], [{ name: "out", path: `${dir}/b` }]),
      undefined,
    );
    assertEquals(
      aliasProblem([{ name: "in", path: "-" }], [{ name: "out", path: "-" }]),
      undefined,
    );
    assertEquals(
      aliasProblem([{ name: "in", path: `${dir}/a` }], [{ name: "o", path: `${dir}/x/../a` }]),
      `o "${dir}/x/../a" is the input in "${dir}/a" (${
        Deno.realPathSync(dir)
      }/a): an output may not overwrite an input`,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("alias: run with a dataset inside the run folder it writes is refused", async () => {
  const dir = await fixture();
  try {
    const runDir = `${dir}/work/20250101_000000`;
    await Deno.mkdir(`${runDir}/datasets/d`, { recursive: true });
    await Deno.copyFile(`${dir}/d.json`, `${runDir}/datasets/d/data.json`);
    await Deno.writeTextFile(
      `${dir}/cfg.ts`,
      `import { sparsePi } from "${ROOT}/configs/models/sparse_pi.ts";
export const config = {
  datasets: [{ abbr: "d", type: "squad", path: "${runDir}/datasets/d/data.json",
    eval: { metrics: ["em", "f1"] }, reader: { articles: [0, 1] } }],
  models: [sparsePi],
};
`,
    );
    await refused(
      dir,
      "run",
      [`${dir}/cfg.ts`, "-r", "20250101_000000", "--work-dir", `${dir}/work`, "--dry-run"],
      /cfg\.ts: the input dataset d ".*data\.json" lies inside the output folder run folder/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
