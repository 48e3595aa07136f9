/**
 * The errors of the Effect channel are tagged (`Data.TaggedError`): each is
 * matched by `Effect.catchTag`, is an `Error` with its one line as
 * `message`, and carries the exit code it calls for (`exitCode`), which
 * `io/errors.ts` `exitCodeOf` (the one mapping every command uses) reads.
 *
 * A plain `class X extends Error` is left only where the error never enters
 * the Effect channel: the product rooms' plain classes are the list below,
 * each with the reason, and none of them is failed with, yielded or named
 * in an `Effect.Effect<...>` type. A new plain class fails this test until
 * it is tagged or listed here with its reason.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals } from "./_assert.ts";
import { ROOT } from "./_util.ts";
import {
  exitCodeOf,
  FileError,
  InputError,
  UsageError,
  WorkError,
  WriteError,
} from "../io/errors.ts";
import { RunError } from "../runs/errors.ts";
import { ReportError } from "../report/stage.ts";
import { MergeWorkerError } from "../search/merge/protocol.ts";
import { exitCodeOf as cliExitCodeOf } from "../pipeline/_cli.ts";

Deno.test("tagged errors: catchTag matches each, its message is its line, its exitCode is what exitCodeOf answers", async () => {
  const cases: [Error & { readonly _tag: string; readonly exitCode: number }, string, 1 | 2][] = [
    [new UsageError("--k must be positive"), "UsageError", 2],
    [new WorkError("3 violations"), "WorkError", 1],
    [new RunError("interrupted: tasks stopped"), "RunError", 1],
    [new RunError('prepare failed (exit 2): bad.json: missing "context"', 2), "RunError", 2],
    [new ReportError("statistics: no questions"), "ReportError", 1],
    [new MergeWorkerError("merge worker failed: out of memory"), "MergeWorkerError", 1],
    [new InputError({ file: "d.json", where: "byte 3", message: "invalid JSON" }), "InputError", 2],
    [new FileError({ file: "d.json", message: "no such file" }), "FileError", 2],
    [
      new FileError({ file: "o.json", message: "No space left on device (os error 28)" }),
      "FileError",
      1,
    ],
    [new WriteError({ file: "o.json", message: "permission denied" }), "FileError", 1],
  ];
  for (const [e, tag, code] of cases) {
    assert(e instanceof Error, `${tag}: not an Error`);
    assertEquals(e._tag, tag);
    assertEquals(e.exitCode, code, `${tag}: ${e.message}`);
    assertEquals(exitCodeOf(e), code, `${tag}: ${e.message}`);
    assertEquals(cliExitCodeOf(e), code, "pipeline/_cli.ts answers as io/errors.ts");
    // Failed with, then caught by its tag: the very error, its line intact.
    const caught = await Effect.runPromise(
      Effect.fail(e).pipe(
        Effect.catchTag(tag as never, (x: unknown) => Effect.succeed(x)),
      ) as Effect.Effect<unknown>,
    );
    assert(caught === e, `${tag}: catchTag did not match`);
    // Yielded in a generator: it fails the Effect with itself.
    const exit = await Effect.runPromise(Effect.flip(Effect.gen(function* () {
      return yield* (e as unknown as Effect.Effect<never, unknown>);
    })));
    assert(exit === e, `${tag}: yield* did not fail with it`);
  }
  assertEquals(new UsageError("a").message, "a");
  assertEquals(new RunError("b").exitCode, 1);
  // Values without an exitCode of 2 are the work failing.
  for (const e of [new Error("crash"), "crash", null, undefined, { exitCode: 3 }]) {
    assertEquals(exitCodeOf(e), 1, String(e));
  }
  assertEquals(exitCodeOf({ exitCode: 2 }), 2);
});

/**
 * The plain `Error` classes of the product rooms, each with why it stays
 * plain: it never enters the Effect channel.
 */
const PLAIN: Readonly<Record<string, string>> = {
  QueueFull: "serve/api.ts: a rejected promise of the search queue, answered 503 by asHttp",
  Unavailable: "serve/api.ts (thrown in serve/shards.ts): a shard not answering, answered 503",
  HttpError: "serve/api.ts, private: the status of a request's answer, in promise code",
  ReadFailure: "serve/http.ts, private: the HTTP reader's 4xx/5xx, answered on the connection",
  Gone: "serve/http.ts, private: the client went away; the connection is closed",
  ShardStartError:
    "serve/supervise.ts: a shard process that exited before ready; serve/stage.ts passes its " +
    "exit status through (any status, in promise code)",
  I8NonFinite: "search/kernels/i8_rows.ts: thrown by the kernel, made an InputError in open.ts",
  NonFiniteError:
    "search/index/exact/score.ts: thrown by the exact scorer, made an InputError in open.ts",
  JsonSyntaxError:
    "io/json_events.ts: the JSON decoder's error (no Effect: evaluate's whole-file path), " +
    "made an InputError by its callers",
  PyLiteralError:
    "the Python string-list parser's error (a DPR/generic answers cell), made an InputError by " +
    "its callers",
  LiteralError:
    "the .npy header's Python-literal parser's error, made an NpyError (corrupt header) by " +
    "io/npy_format.ts",
  SessionOpenError:
    "encoders/onnx/session.ts: createSession's promise error, worded by each caller " +
    "(OnnxConfigError, BEM's message)",
};

const ROOMS = [
  "io",
  "encoders",
  "metrics",
  "search",
  "runs",
  "report",
  "serve",
  "pipeline",
  "configs",
];

async function* productFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(`${ROOT}/${dir}`)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* productFiles(p);
    else if (e.isFile && p.endsWith(".ts")) yield p;
  }
}

Deno.test("plain Error classes: only the listed ones, and none of them in the Effect channel", async () => {
  const sources = new Map<string, string>();
  for (const room of ROOMS) {
    for await (const f of productFiles(room)) {
      sources.set(f, await Deno.readTextFile(`${ROOT}/${f}`));
    }
  }
  sources.set("mod.ts", await Deno.readTextFile(`${ROOT}/mod.ts`));
  const found: string[] = [];
  for (const text of sources.values()) {
    for (const m of text.matchAll(/^(?:export )?class (\w+) extends Error\b/gm)) found.push(m[1]);
  }
  assertEquals(found.sort(), Object.keys(PLAIN).sort());
  for (const [file, text] of sources) {
    for (const name of Object.keys(PLAIN)) {
      for (
        const re of [
          new RegExp(`Effect\\.fail\\(\\s*new ${name}\\b`),
          new RegExp(`yield\\*\\s*new ${name}\\b`),
          new RegExp(`Effect\\.Effect<[^;{]*\\b${name}\\b`),
        ]
      ) {
        assert(!re.test(text), `${file}: ${name} enters the Effect channel (${re}): tag it`);
      }
    }
  }
});
