/**
 * A failed embedding run leaves no dump behind (`encoders/embed.ts`, its
 * `Ledger`; `docs/stages.md`, "Atomic writes and resume"): bad input met
 * after thousands of files were written (a question id repeated on the last
 * line of an MRQA file, a paragraph id repeated at the end of NDJSON
 * records) exits 2 with the one line and leaves no folder, no dump file and
 * no manifest (before: 2,518 `.npz` files and `.phraseval-dump.json`). A
 * folder that was there before keeps what it held: a resumed folder its
 * files and manifest, a folder of another job written over with
 * `--overwrite` its files and its own manifest, put back. An encoder's error
 * and an interruption (what SIGINT and SIGTERM do to the runner) keep the
 * complete files instead, for a rerun to resume; a partition's files written
 * beside the run keep the manifest they need.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Layer from "effect/Layer";
import { assert, assertEquals } from "../_assert.ts";
import { listDir, runStage, spawnChild } from "../_util.ts";
import { embedQuestions } from "../../encoders/embed.ts";
import { EncoderError, QuestionEncoder, type QuestionInput } from "../../encoders/types.ts";
import { DUMP_MANIFEST } from "../../io/manifest.ts";
import { InputError } from "../../io/errors.ts";

const TMP = await Deno.makeTempDir({ prefix: "pv-embed-fail-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(TMP, { recursive: true });
  } catch { /* gone */ }
});

/**
 * An MRQA file of `n` contexts, one question each (`q0`, `q1`, ...), the
 * last one's id `q5` again (line n + 1, the first `q5` on line 7).
 */
function mrqaLateDuplicate(path: string, n: number): void {
  const lines = [JSON.stringify({ header: { dataset: "X", split: "dev" } })];
  for (let i = 0; i < n; i++) {
    const qid = i === n - 1 ? "q5" : `q${i}`;
    lines.push(JSON.stringify({
      context: `Paris is big ${i}.`,
      qas: [{ qid, question: "Where?", answers: ["Paris"] }],
    }));
  }
  Deno.writeTextFileSync(path, lines.join("\n") + "\n");
}

const LATE = `${TMP}/late.jsonl`;
mrqaLateDuplicate(LATE, 3001);
const LATE_LINE =
  `embed_question: ${LATE}: line 3002 question "q5": duplicate id (first at line 7)`;

/** Runs `script` until it exits, counting the most dump files seen in `out` meanwhile. */
async function runWatching(
  script: string,
  args: readonly string[],
  out: string,
): Promise<{ code: number; stderr: string; stdout: string; seen: number }> {
  const child = spawnChild([Deno.execPath(), "run", "-A", script, ...args]);
  let seen = 0;
  let done = false;
  const watching = (async () => {
    while (!done) {
      try {
        let n = 0;
        for (const e of Deno.readDirSync(out)) if (e.name.endsWith(".npz")) n++;
        seen = Math.max(seen, n);
      } catch { /* not there yet, or gone */ }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const o = await child.output();
  done = true;
  await watching;
  const dec = new TextDecoder();
  return { code: o.code, stderr: dec.decode(o.stderr), stdout: dec.decode(o.stdout), seen };
}

Deno.test("embed_question: a question id repeated on the last line, after thousands of files: exit 2, one line, no folder left", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "q-" });
  const out = `${dir}/question_emb`;
  const r = await runWatching(
    "pipeline/embed_question.ts",
    [LATE, out, "--sparse", "--batch", "64"],
    out,
  );
  assertEquals(r.code, 2, r.stderr);
  assertEquals(r.stderr, `${LATE_LINE}\n`);
  assertEquals(r.stdout, "");
  assert(r.seen >= 64, `dump files were written before the bad line (seen ${r.seen})`);
  assertEquals(await listDir(dir), [], "no folder, no dump file, no manifest");
});

Deno.test("embed_context: a paragraph id repeated at the end (with --metadata): exit 2, one line, no folder left", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "c-" });
  const input = `${dir}/paragraphs.ndjson`;
  const lines = [];
  for (let i = 0; i <= 300; i++) {
    const id = i === 300 ? "T_5" : `T_${i}`;
    lines.push(JSON.stringify({ kind: "paragraph", id, context: `Paris is city ${i}.` }));
  }
  Deno.writeTextFileSync(input, lines.join("\n") + "\n");
  const out = `${dir}/context_emb`;
  const r = await runWatching(
    "pipeline/embed_context.ts",
    [input, out, "--sparse", "--metadata", "--batch", "16"],
    out,
  );
  assertEquals(r.code, 2, r.stderr);
  assertEquals(
    r.stderr,
    `embed_context: ${input}: paragraph "T_5": occurs twice in the input (paragraph ids must be unique)\n`,
  );
  assert(r.seen >= 16, `dump files were written before the bad record (seen ${r.seen})`);
  assertEquals(await listDir(dir), ["paragraphs.ndjson"]);
});

Deno.test("embed_question: a failed resume keeps the folder's earlier files and manifest; --overwrite over another job's folder puts its manifest back", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "r-" });
  // Items 0..99 of the same input: a folder a rerun resumes.
  const out = `${dir}/question_emb`;
  const first = await runStage("pipeline/embed_question.ts", [
    LATE,
    out,
    "--sparse",
    "--range",
    "0:100",
  ]);
  assertEquals(first.code, 0, first.stderr);
  const before = await listDir(out);
  assertEquals(before.length, 101);
  assert(before.includes(DUMP_MANIFEST) && before.includes("q99.npz"), before.join());
  const manifest = await Deno.readFile(`${out}/${DUMP_MANIFEST}`);
  const q0 = await Deno.readFile(`${out}/q0.npz`);
  const again = await runStage("pipeline/embed_question.ts", [LATE, out, "--sparse"]);
  assertEquals([again.code, again.stderr], [2, `${LATE_LINE}\n`]);
  assertEquals(await listDir(out), before);
  assertEquals(await Deno.readFile(`${out}/${DUMP_MANIFEST}`), manifest);
  assertEquals(await Deno.readFile(`${out}/q0.npz`), q0);

  // A folder of another job (ids a0..a9), written over with --overwrite by a run that fails.
  const other = `${dir}/other.ndjson`;
  Deno.writeTextFileSync(
    other,
    Array.from(
      { length: 10 },
      (_, i) => JSON.stringify({ kind: "question", id: `a${i}`, question: "Where is Paris?" }),
    ).join("\n") + "\n",
  );
  const theirs = `${dir}/theirs`;
  const made = await runStage("pipeline/embed_question.ts", [other, theirs, "--sparse"]);
  assertEquals(made.code, 0, made.stderr);
  const theirFiles = await listDir(theirs);
  const theirManifest = await Deno.readFile(`${theirs}/${DUMP_MANIFEST}`);
  const over = await runStage("pipeline/embed_question.ts", [
    LATE,
    theirs,
    "--sparse",
    "--overwrite",
  ]);
  assertEquals([over.code, over.stderr], [2, `${LATE_LINE}\n`]);
  assertEquals(await listDir(theirs), theirFiles);
  assertEquals(await Deno.readFile(`${theirs}/${DUMP_MANIFEST}`), theirManifest);
  // Their job resumes it as complete.
  const resumed = await runStage("pipeline/embed_question.ts", [other, theirs, "--sparse"]);
  assertEquals(resumed.code, 0, resumed.stderr);
  assertEquals(
    resumed.stderr,
    "embed_question: 0 questions written, 10 already complete (sparse-pi, d=4194304)\n",
  );
});

/** Question input: NDJSON records `q0`..`q{n-1}`. */
function questionRecords(path: string, n: number): void {
  Deno.writeTextFileSync(
    path,
    Array.from(
      { length: n },
      (_, i) => JSON.stringify({ kind: "question", id: `q${i}`, question: `Where ${i}?` }),
    ).join("\n") + "\n",
  );
}

/**
 * A question encoder (d = 2) that runs `onBatch` before encoding batch k
 * (from 0): what it returns instead of the vectors, when it returns an effect.
 */
function fakeEncoder(
  onBatch: (k: number) => Effect.Effect<never, EncoderError | InputError> | undefined,
): Layer.Layer<QuestionEncoder> {
  let k = 0;
  return Layer.succeed(QuestionEncoder, {
    info: { name: "fake", dim: 2, sparse: false, files: [] },
    encode: (batch: readonly QuestionInput[]) => {
      const stop = onBatch(k++);
      // Bad input is met by the reader in a real run; here the encoder stands in for it.
      if (stop !== undefined) return stop as Effect.Effect<never, EncoderError>;
      return Effect.succeed(batch.map((q) => ({
        id: q.id,
        vector: {
          kind: "dense" as const,
          rows: 1,
          cols: 2,
          dtype: "f32" as const,
          data: new Float32Array([1, 0]),
        },
      })));
    },
  });
}

Deno.test("embedQuestions: bad input in batch 3 takes back the two batches written; an encoder's error or an interruption keeps them for a rerun; a partition's files keep the manifest", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP, prefix: "lib-" });
  const input = `${dir}/q.ndjson`;
  questionRecords(input, 50);
  const opts = { input, batchSize: 10 } as const;
  // Batches 0 and 1 are written (20 files and the manifest), batch 2 fails or is interrupted.
  const seenAt2: number[] = [];
  const count = (out: string) => [...Deno.readDirSync(out)].length;
  const bad = new InputError({ file: input, where: "line 50", message: "bad" });
  for (
    const [name, stop, kept] of [
      ["bad-input", Effect.fail(bad), false],
      ["error", Effect.fail(new EncoderError({ encoder: "fake", message: "boom" })), true],
      ["interrupt", Effect.interrupt, true],
    ] as const
  ) {
    const out = `${dir}/${name}`;
    const exit = await Effect.runPromiseExit(
      embedQuestions({ ...opts, out }).pipe(
        Effect.provide(fakeEncoder((k) => {
          if (k !== 2) return undefined;
          seenAt2.push(count(out));
          return stop;
        })),
      ),
    );
    assert(Exit.isFailure(exit), name);
    assertEquals(await listDir(dir).then((l) => l.includes(name)), kept, `${name}: folder left`);
    if (!kept) continue;
    // Kept: the 20 complete files and the manifest, and a rerun writes the other 30.
    assertEquals(count(out), 21, name);
    const rest = await Effect.runPromise(
      embedQuestions({ ...opts, out }).pipe(Effect.provide(fakeEncoder(() => undefined))),
    );
    assertEquals([rest.written, rest.skipped], [30, 20], name);
  }
  assertEquals(seenAt2, [21, 21, 21], "20 dump files and the manifest were there before batch 2");

  // A partition beside this one writes its file while this run works: the manifest stays for it.
  const shared = `${dir}/shared`;
  const exit = await Effect.runPromiseExit(
    embedQuestions({ ...opts, out: shared }).pipe(
      Effect.provide(fakeEncoder((k) => {
        if (k === 1) Deno.writeFileSync(`${shared}/p1.npz`, new Uint8Array([1]));
        return k === 2 ? Effect.fail(bad) : undefined;
      })),
    ),
  );
  assert(Exit.isFailure(exit));
  assertEquals(await listDir(shared), [DUMP_MANIFEST, "p1.npz"]);

  // The same run, successful: every file, and the manifest written again after the last batch
  // (a new file renamed into place: another inode than the one written before batch 1).
  const ok = `${dir}/ok`;
  const inodes: (number | null)[] = [];
  const r = await Effect.runPromise(
    embedQuestions({ ...opts, out: ok }).pipe(Effect.provide(fakeEncoder((k) => {
      if (k === 1) inodes.push(Deno.statSync(`${ok}/${DUMP_MANIFEST}`).ino);
      return undefined;
    }))),
  );
  assertEquals([r.written, r.skipped], [50, 0]);
  assertEquals((await listDir(ok)).length, 51);
  const final = Deno.statSync(`${ok}/${DUMP_MANIFEST}`).ino;
  assert(
    inodes[0] !== null && final !== null && final !== inodes[0],
    "the manifest is written last",
  );
  assertEquals(
    JSON.parse(Deno.readTextFileSync(`${ok}/${DUMP_MANIFEST}`)).encoder,
    "fake",
  );
});
