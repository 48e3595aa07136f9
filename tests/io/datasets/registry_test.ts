/**
 * The format registry (`io/datasets/formats.ts`): a format only this test
 * knows, registered with one entry (its name, alias, sniff, reader, kind and
 * rules), is detected, read by `records`, scored by `evaluate`'s library call,
 * read by a report and accepted by a run config, with no other file edited; and the built-in
 * entries say what the tables they replace said.
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { assert, assertEquals } from "../../_assert.ts";
import {
  BUILTIN_FORMATS,
  formatsOfKind,
  type FormatSpec,
  kindOfFormat,
  registerFormat,
  rulesOfKind,
} from "../../../io/datasets/formats.ts";
import { detectFormat, parseFormatName } from "../../../io/datasets/detect.ts";
import { readCorpus } from "../../../io/datasets/read.ts";
import { InputError } from "../../../io/errors.ts";
import type { QaRecord } from "../../../io/datasets/types.ts";
import { records } from "../../../io/records.ts";
import { scoreQuestionSet } from "../../../metrics/qa_eval.ts";
import { validateRunConfig } from "../../../runs/config/config.ts";
import { readDataset } from "../../../report/systems.ts";

/**
 * "pipeqa": a first line `#pipeqa`, then one question a line,
 * `id|question|answer;answer`.
 */
const PIPEQA: FormatSpec = {
  name: "pipeqa",
  aliases: ["pipe-qa"],
  role: "questions",
  kinds: ["open"],
  rules: "open-domain",
  sniff: (head) => /^#pipeqa\r?\n/.test(head),
  questions: (src, { path }) =>
    Effect.succeed(Stream.unwrap(Effect.tryPromise({
      try: async () => {
        const lines = (await new Response(src.stream).text()).split("\n").slice(1);
        const out: QaRecord[] = [];
        for (const [i, l] of lines.entries()) {
          if (l === "") continue;
          const [id, question, answers] = l.split("|");
          if (answers === undefined) {
            throw new InputError({ file: path, where: `line ${i + 2}`, message: "not id|q|a" });
          }
          out.push({ kind: "question", id, question, answers: answers.split(";") });
        }
        return Stream.fromIterable(out);
      },
      catch: (e) =>
        e instanceof InputError ? e : new InputError({ file: path, where: "", message: String(e) }),
    }))),
};

const TEXT = "#pipeqa\n" +
  "p1|who wrote hamlet|Shakespeare;William Shakespeare\n" +
  "p2|capital of italy|Rome\n";

Deno.test("registry: a format only the test knows goes through detection, records, evaluate and a run config", async () => {
  registerFormat(PIPEQA);
  const dir = await Deno.makeTempDir({ prefix: "phraseval-registry-" });
  try {
    const data = `${dir}/set.pq`;
    await Deno.writeTextFile(data, TEXT);
    await Deno.writeTextFile(`${dir}/pred.json`, '{"p1": "William Shakespeare", "p2": "Milan"}');
    // Named (an alias, any case) and detected by its own sniff.
    assertEquals(parseFormatName("PIPE-QA"), "pipeqa");
    assertEquals(await Effect.runPromise(detectFormat(data)), "pipeqa");
    assertEquals(kindOfFormat("pipeqa"), "open");
    assert(formatsOfKind("open").includes("pipeqa"));

    // records: the questions as NDJSON.
    const n = await Effect.runPromise(
      records({ input: data, kind: "question", out: `${dir}/q.ndjson` }),
    );
    assertEquals(n, 2);
    assertEquals(
      await Deno.readTextFile(`${dir}/q.ndjson`),
      '{"kind":"question","id":"p1","question":"who wrote hamlet"}\n' +
        '{"kind":"question","id":"p2","question":"capital of italy"}\n',
    );
    // A question set without paragraphs is no corpus.
    const corpus = await Effect.runPromiseExit(Stream.runCollect(readCorpus(data)));
    assert(corpus._tag === "Failure");
    assert(String(corpus.cause).includes("a pipeqa file has no paragraphs to search"));

    // evaluate: scored by its rules (open-domain top-1), as the line the script prints.
    const r = await Effect.runPromise(scoreQuestionSet({
      data,
      predictions: new Map([["p1", "William Shakespeare"], ["p2", "Milan"]]),
    }));
    assertEquals(r.format, "pipeqa");
    assertEquals(r.rules, "open-domain");
    assertEquals(r.stdout, '{"exact_match": 50.0, "f1": 50.0}');
    assertEquals(r.unanswered, 0);

    // A report reads it as a set of its kind, scored by its rules.
    const d = await Effect.runPromise(readDataset({
      name: "A",
      dataset: "pq",
      data,
      predictions: `${dir}/pred.json`,
      rows: null,
      input: "A",
      kind: "pred",
    }));
    assertEquals([d.kind, d.rules, d.format], ["open", "open-domain", "pipeqa"]);
    assertEquals(d.questions.map((q) => [q.id, q.golds.join(";")]), [
      ["p1", "Shakespeare;William Shakespeare"],
      ["p2", "Rome"],
    ]);

    // A run config: detected under its kind, named by its alias, refused under another kind.
    const cfg = (dataset: Record<string, unknown>) =>
      Effect.runPromiseExit(validateRunConfig({
        datasets: [{ abbr: "pq", path: data, ...dataset }],
        models: [{ abbr: "m", type: "predictions", predictions: `${dir}/pred.json` }],
      }, `${dir}/cfg.ts`));
    const detected = await cfg({ type: "open" });
    assert(detected._tag === "Success", String(detected._tag === "Failure" && detected.cause));
    assertEquals(detected.value.datasets[0].format, "pipeqa");
    const named = await cfg({ type: "open", format: "pipe-qa" });
    assert(named._tag === "Success");
    assertEquals(named.value.datasets[0].format, "pipeqa");
    const wrong = await cfg({ type: "mrqa", format: "pipeqa" });
    assert(wrong._tag === "Failure");
    assert(
      String(wrong.cause).includes(`"pipeqa" is not a format of type "mrqa" (its formats: mrqa)`),
      String(wrong.cause),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("registry: a name taken, or rules other than its kind's, are refused", () => {
  let msg = "";
  try {
    registerFormat({ name: "x-new", aliases: ["nq-open"], role: "corpus", kinds: [] });
  } catch (e) {
    msg = (e as Error).message;
  }
  assertEquals(msg, 'dataset format name "nq-open" is taken');
  try {
    registerFormat({ name: "x-mrqa", role: "questions", kinds: ["mrqa"], rules: "open-domain" });
  } catch (e) {
    msg = (e as Error).message;
  }
  assertEquals(msg, 'a format of type "mrqa" is scored by MRQA rules');
});

Deno.test("registry: the built-in entries say what the tables they replace said", () => {
  const kindOf = Object.fromEntries(BUILTIN_FORMATS.map((f) => [f.name, kindOfFormat(f.name)]));
  assertEquals(kindOf, {
    squad: "squad",
    squad2: "squad2",
    xquad: "xquad",
    mlqa: "mlqa",
    mrqa: "mrqa",
    dpr: "open",
    trec: "open",
    open: "open",
    jsonl: "jsonl",
    csv: "jsonl",
    tsv: "jsonl",
    "dpr-passages": undefined,
    passages: undefined,
  });
  assertEquals(formatsOfKind("open").slice(0, 6), ["dpr", "trec", "open", "csv", "tsv", "jsonl"]);
  assertEquals(formatsOfKind("jsonl"), ["jsonl", "csv", "tsv"]);
  assertEquals(
    ["squad", "squad2", "mrqa", "xquad", "mlqa", "open", "jsonl"].map((k) =>
      rulesOfKind(k as "squad")
    ),
    ["v1.1", "v2.0", "MRQA", "MLQA", "MLQA", "open-domain", "open-domain"],
  );
  assertEquals(
    BUILTIN_FORMATS.filter((f) => f.squadShaped).map((f) => f.name),
    ["squad", "squad2", "xquad", "mlqa"],
  );
});
