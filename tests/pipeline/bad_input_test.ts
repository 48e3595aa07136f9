/**
 * Bad input: every case exits 2 with exactly one clear line on stderr that
 * names the file and the record (or byte offset), and leaves no output file.
 * Among them, a named pipe, a device (`/dev/zero`, linked) or a symbolic link
 * where a dump or index file should be: refused by name, before it is opened.
 */
import * as Effect from "effect/Effect";
import { assertEquals, assertMatch } from "../_assert.ts";
import {
  childResult,
  listDir,
  ROOT,
  runArgvSync,
  type RunResult,
  runStage,
  spawnChild,
} from "../_util.ts";
import { writeContextDump, writeQuestionDump } from "../../io/dump/writer.ts";
import { denoRunArgv } from "../../runs/sandbox/sandbox.ts";

const enc = new TextEncoder();
const valid = (para: string) =>
  `{"data": [{"title": "T", "paragraphs": [${para}]}], "version": "1.1"}`;

const SQUAD_CASES: Array<[string, Uint8Array, RegExp]> = [
  [
    "truncated JSON",
    enc.encode(valid(`{"context": "c", "qas": []}`).slice(0, 40)),
    /in\.json: byte \d+: truncated JSON/,
  ],
  [
    "invalid JSON",
    enc.encode(`{"data": [{"title": "T", "paragraphs": [}]}`),
    /in\.json: byte 40: invalid JSON: unexpected "}"/,
  ],
  [
    "paragraph without context",
    enc.encode(valid(`{"qas": []}`)),
    /in\.json: article "T" paragraph 0: missing "context"/,
  ],
  [
    "qas not a list",
    enc.encode(valid(`{"context": "c", "qas": {"id": "x"}}`)),
    /in\.json: article "T" paragraph 0: "qas": expected array/,
  ],
  [
    "question id not a string",
    enc.encode(valid(`{"context": "c", "qas": [{"id": 7, "question": "q"}]}`)),
    /in\.json: article "T" paragraph 0 question 0: "id": expected string/,
  ],
  [
    "non-UTF-8 bytes",
    new Uint8Array([
      ...enc.encode(`{"data": [{"title": "T`),
      0xff,
      0xfe,
      ...enc.encode(`", "paragraphs": []}]}`),
    ]),
    /in\.json: byte 22: invalid UTF-8/,
  ],
  ["empty file", new Uint8Array(0), /in\.json: byte 0: empty file/],
  [
    "top level not an object",
    enc.encode(`[1, 2]`),
    /in\.json: byte 0: the top-level value must be an object/,
  ],
  ["no data list", enc.encode(`{"version": "1.1"}`), /in\.json: missing "data"/],
  ["extra data", enc.encode(`{"data": []} {}`), /in\.json: byte 13: invalid JSON: extra data/],
  [
    "control character in a string",
    enc.encode(`{"data": [{"title": "a\u0001"}]}`),
    /in\.json: byte \d+: invalid JSON: unexpected byte 0x01/,
  ],
];

for (const [name, bytes, expected] of SQUAD_CASES) {
  Deno.test(`split rejects ${name}`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeFile(`${dir}/in.json`, bytes);
      const r = await runStage("pipeline/split.ts", [
        `${dir}/in.json`,
        `${dir}/c.json`,
        `${dir}/q.json`,
      ]);
      assertEquals(r.code, 2, r.stderr);
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals(lines.length, 1, r.stderr);
      assertMatch(lines[0], /^split: /);
      assertMatch(lines[0], expected);
      assertEquals(r.stdout, "");
      assertEquals(await listDir(dir), ["in.json"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("split: bad usage and a missing file exit 2 with one line", async () => {
  const r1 = await runStage("pipeline/split.ts", ["only-one.json"]);
  assertEquals(r1.code, 2);
  assertEquals(r1.stderr.trimEnd().split("\n").length, 1);
  assertMatch(r1.stderr, /missing arguments: context\.json question\.json/);
  const r2 = await runStage("pipeline/split.ts", ["/nonexistent/x.json", "/tmp/c", "/tmp/q"]);
  assertEquals(r2.code, 2);
  assertMatch(r2.stderr, /^split: \/nonexistent\/x\.json: no such file\n$/);
  const r3 = await runStage("pipeline/split.ts", ["--help"]);
  assertEquals(r3.code, 0);
  assertMatch(r3.stdout, /^Usage: \.\/phraseval split data\.json context\.json question\.json/);
});

/**
 * Runs a stage as `runStage` does, but under a 2 GiB data limit (`ulimit
 * -d`) and SIGKILLed after 90 s: a stage that reads a device without end or
 * blocks on a named pipe fails the test instead of filling the machine.
 */
async function bounded(script: string, args: readonly string[]): Promise<RunResult> {
  const argv = denoRunArgv(`${ROOT}/${script}`, args, { all: true }, {
    config: null,
    prompt: true,
  });
  // Spawned: the test SIGKILLs it after 90 s.
  const child = spawnChild(["bash", "-c", 'ulimit -d 2097152; exec "$@"', "bash", ...argv], {
    cwd: ROOT,
  });
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, 90_000);
  try {
    const out = await childResult(child);
    const stderr = out.stderr + (killed ? "\n(killed after 90 s)" : "");
    return { code: out.code, stdout: out.stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

const mkfifo = (path: string) => {
  // Synchronous: passed to variant() as a sync callback.
  const r = runArgvSync(["mkfifo", path]);
  if (r.code !== 0) throw new Error(`mkfifo ${path}: ${r.stderr}`);
};

/** A one-paragraph dense dump (`c`), its question dump (`q`), `data.json` and an index (`ix`). */
async function smallRun(dir: string): Promise<void> {
  const fmt = { sparse: false, compressed: false };
  const m = (rows: number, v: number[]) =>
    ({ kind: "dense", rows, cols: 4, dtype: "f32", data: new Float32Array(v) }) as const;
  for (const d of ["c", "q"]) Deno.mkdirSync(`${dir}/${d}`);
  const phrases = [{ text: "a", start: 0, end: 1 }, { text: "b", start: 2, end: 3 }];
  await Effect.runPromise(
    writeContextDump(
      `${dir}/c`,
      { id: "T_0", phrases, matrix: m(2, [1, 0, 0, 0, 0, 1, 0, 0]) },
      fmt,
    ),
  );
  await Effect.runPromise(
    writeQuestionDump(`${dir}/q`, { id: "q1", vector: m(1, [0, 1, 0, 0]) }, fmt),
  );
  const qas = [{ id: "q1", question: "?", answers: [{ text: "b", answer_start: 2 }] }];
  Deno.writeTextFileSync(
    `${dir}/data.json`,
    JSON.stringify({
      version: "1.1",
      data: [{ title: "T", paragraphs: [{ context: "a b", qas }] }],
    }),
  );
  const r = await runStage("pipeline/index.ts", [`${dir}/c`, `${dir}/ix`]);
  assertEquals(r.code, 0, r.stderr);
}

/** A copy of the folder `from` at `to` whose file `name` is replaced by `make(path)`. */
function variant(from: string, to: string, name: string, make: (path: string) => void): string {
  Deno.mkdirSync(to);
  for (const e of Deno.readDirSync(from)) Deno.copyFileSync(`${from}/${e.name}`, `${to}/${e.name}`);
  Deno.removeSync(`${to}/${name}`);
  make(`${to}/${name}`);
  return to;
}

const zero = (p: string) => Deno.symlinkSync("/dev/zero", p);

Deno.test("a named pipe or /dev/zero (linked) in place of a dump file: index, validate, merge and search exit 2 naming it", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-special-dump-" });
  try {
    await smallRun(dir);
    const cz = variant(`${dir}/c`, `${dir}/c_zero`, "T_0.npz", zero);
    const cf = variant(`${dir}/c`, `${dir}/c_fifo`, "T_0.npz", mkfifo);
    const jf = variant(`${dir}/c`, `${dir}/c_jfifo`, "T_0.json", mkfifo);
    const qz = variant(`${dir}/q`, `${dir}/q_zero`, "q1.npz", zero);
    const qf = variant(`${dir}/q`, `${dir}/q_fifo`, "q1.npz", mkfifo);
    mkfifo(`${dir}/dump.zip`);
    const dev = "is a character device, not a regular file";
    const pipe = "is a named pipe, not a regular file";
    // [script, arguments, the file named, what it is]
    const cases: [string, string[], string, string][] = [
      ["index", [cz, `${dir}/ix1`], `${cz}/T_0.npz`, dev],
      ["index", [cf, `${dir}/ix2`], `${cf}/T_0.npz`, pipe],
      ["index", [jf, `${dir}/ix3`], `${jf}/T_0.json`, pipe],
      [
        "index",
        [`${dir}/dump.zip`, `${dir}/ix4`],
        `${dir}/dump.zip`,
        "is a named pipe, not a dump folder or a .zip of one",
      ],
      ["validate", [`${dir}/data.json`, cz, `${dir}/q`], `${cz}/T_0.npz`, dev],
      ["validate", [`${dir}/data.json`, cf, `${dir}/q`], `${cf}/T_0.npz`, pipe],
      ["merge", [`${dir}/data.json`, cf, `${dir}/q`, `${dir}/m.json`], `${cf}/T_0.npz`, pipe],
      ["merge", [`${dir}/data.json`, `${dir}/c`, qz, `${dir}/m.json`], `${qz}/q1.npz`, dev],
      ["search", [`${dir}/data.json`, `${dir}/ix`, qf, `${dir}/p.json`], `${qf}/q1.npz`, pipe],
      ["search", [`${dir}/data.json`, `${dir}/ix`, qz, `${dir}/p.json`], `${qz}/q1.npz`, dev],
    ];
    for (const [stage, args, file, what] of cases) {
      const r = await bounded(`pipeline/${stage}.ts`, args);
      assertEquals(r.code, 2, `${stage} ${args.join(" ")}: ${r.stderr}`);
      assertEquals(r.stderr.trimEnd(), `${stage}: ${file}: ${what}`);
    }
    assertEquals((await listDir(dir)).filter((n) => /^(ix\d|m\.json|p\.json|.*\.tmp)/.test(n)), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a named pipe, /dev/zero or a link in an index folder: search and the serve child exit 2 naming the file", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-special-ix-" });
  try {
    await smallRun(dir);
    const ix = `${dir}/ix`;
    // A link to a copy of the file outside the folder: the same bytes, still refused.
    Deno.copyFileSync(`${ix}/paragraphs.ndjson`, `${dir}/outside.ndjson`);
    const out = (p: string) => Deno.symlinkSync(`${dir}/outside.ndjson`, p);
    const only =
      "not a regular file (an index folder holds only the regular files its build wrote)";
    const cases: [string, string][] = [
      [`${variant(ix, `${dir}/ix_zero`, "vectors.f32", zero)}/vectors.f32`, "a symbolic link"],
      [`${variant(ix, `${dir}/ix_fifo`, "vectors.f32", mkfifo)}/vectors.f32`, "a named pipe"],
      [`${variant(ix, `${dir}/ix_hfifo`, "index.json", mkfifo)}/index.json`, "a named pipe"],
      [
        `${variant(ix, `${dir}/ix_link`, "paragraphs.ndjson", out)}/paragraphs.ndjson`,
        "a symbolic link",
      ],
    ];
    for (const [file, what] of cases) {
      const index = file.slice(0, file.lastIndexOf("/"));
      for (
        const [stage, args] of [
          ["search", [`${dir}/data.json`, index, `${dir}/q`, `${dir}/p.json`]],
          ["serve", [index, "--port", "0"]],
        ] as const
      ) {
        const r = await bounded(
          stage === "serve" ? "pipeline/_serve_child.ts" : "pipeline/search.ts",
          args,
        );
        assertEquals(r.code, 2, `${stage} ${index}: ${r.stderr}`);
        assertEquals(r.stderr.trimEnd(), `${stage}: ${file}: is ${what}, ${only}`);
      }
    }
    assertEquals((await listDir(dir)).filter((n) => n.startsWith("p.")), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a bad corpus: records, embed_context and index exit 2 with one line (file, line, passage id) and write nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bad_corpus_" });
  try {
    const good =
      "id\ttext\ttitle\n1\tAda built the bridge.\tAda\nwiki:2\tZürich is a city.\tZürich\n";
    await Deno.writeTextFile(`${dir}/good.tsv`, good);
    const e = await runStage("pipeline/embed_context.ts", [
      `${dir}/good.tsv`,
      `${dir}/emb`,
      "--sparse",
    ]);
    assertEquals(e.code, 0, e.stderr);
    const cases: Array<[string, string, string]> = [
      ["no_id.tsv", good + "\tA text.\tT\n", "line 4: passage without id"],
      ["dup.tsv", good + "1\tAgain.\tT\n", 'line 4 passage "1": duplicate id (first at line 2)'],
      [
        "columns.tsv",
        good + "3\tA text.\n",
        'line 4 passage "3": expected 3 tab-separated columns (id, text, title), found 2',
      ],
      ["empty.tsv", good + '3\t""\tT\n', 'line 4 passage "3": empty text'],
      [
        "dup.jsonl",
        '{"id": "wiki:2", "text": "A."}\n{"id": "wiki:2", "text": "B."}\n',
        'line 2 passage "wiki:2": duplicate id (first at line 1)',
      ],
    ];
    for (const [name, text, what] of cases) {
      const path = `${dir}/${name}`;
      await Deno.writeTextFile(path, text);
      const runs: Array<[string, string[]]> = [
        ["records", ["--kind", "paragraph", "--out", `${dir}/out.ndjson`]],
        ["embed_context", [`${dir}/out_emb`, "--sparse"]],
        ["index", []],
      ];
      for (const [stage, rest] of runs) {
        const args = stage === "index"
          ? [`${dir}/emb`, `${dir}/ix`, "--sparse", "--context", path]
          : [path, ...rest];
        const r = await runStage(`pipeline/${stage}.ts`, args);
        assertEquals([r.code, r.stderr], [2, `${stage}: ${path}: ${what}\n`], `${stage} ${name}`);
        assertEquals(r.stdout, "");
        assertEquals(
          (await listDir(dir)).filter((n) => !n.endsWith(".tsv") && !n.endsWith(".jsonl")),
          ["emb"],
          `${stage} ${name} left something`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('a question without text (no "question", or white space): embed_question exits 2 naming it and writes nothing', async () => {
  const dir = await Deno.makeTempDir({ prefix: "no_question_" });
  try {
    const squad = (qa: Record<string, unknown>) =>
      JSON.stringify({
        version: "1.1",
        data: [{
          title: "T",
          paragraphs: [{
            context: "Ada built the bridge.",
            qas: [
              {
                id: "q0",
                question: "Who built the bridge?",
                answers: [{ text: "Ada", answer_start: 0 }],
              },
              { id: "q1", answers: [{ text: "Ada", answer_start: 0 }], ...qa },
            ],
          }],
        }],
      });
    const cases: Array<[string, string]> = [
      ["missing.json", squad({})],
      ["blank.json", squad({ question: " \t" })],
      ["ndjson.ndjson", '{"kind": "question", "id": "q1", "question": ""}\n'],
    ];
    for (const [name, text] of cases) {
      const path = `${dir}/${name}`;
      await Deno.writeTextFile(path, text);
      const r = await runStage("pipeline/embed_question.ts", [path, `${dir}/emb`, "--sparse"]);
      assertEquals(
        [r.code, r.stderr],
        [
          2,
          `embed_question: ${path}: question "q1": no question text (its "question" is missing or ` +
          "empty): nothing to encode\n",
        ],
        name,
      );
      assertEquals(
        await listDir(dir),
        cases.slice(0, cases.findIndex((c) => c[0] === name) + 1).map((c) => c[0]).sort(),
        name,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
