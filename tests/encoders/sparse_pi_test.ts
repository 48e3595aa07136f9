/**
 * Tests of the built-in `sparse-pi` encoder: tokenizer, stemmer, hash,
 * candidate phrases, CSR layout, question independence, a hand-made model,
 * the bundled artifact and a small end-to-end score on SQuAD v1.1 dev.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ } from "../_util.ts";
import {
  contextModelFromArtifact,
  encodeContext,
  encodeQuestion,
  keyColumn,
  questionModelFromArtifact,
  readArtifact,
  SPARSE_PI_FORMAT,
  SPARSE_PI_MODEL,
  SPARSE_PI_VERSION,
  type SparsePiArtifact,
  SparsePiContextEncoderLive,
  sparsePiLayers,
  SparsePiQuestionEncoderLive,
} from "../../encoders/sparse_pi/encoder.ts";
import {
  FEATURE_VERSION,
  GROUPS,
  MAX_SPAN_TOKENS,
  N_GROUPS,
  questionFeatures,
  shapeVocabulary,
} from "../../encoders/sparse_pi/features.ts";
import {
  ARTICLES,
  fnv1a32,
  NO_START_WORDS,
  porterStem,
  sentenceIds,
  STOP_WORDS,
  tokenize,
  WORD,
} from "../../encoders/sparse_pi/text.ts";
import {
  ContextEncoder,
  type CsrMatrix,
  EncoderError,
  QuestionEncoder,
} from "../../encoders/types.ts";
import { evaluateV1 } from "../../metrics/squad.ts";
import { firstMaxRow, readSquad, type SquadFile } from "../../bench/sparse_pi_eval.ts";

let devCache: SquadFile | undefined;
async function dev(): Promise<SquadFile> {
  devCache ??= await readSquad(DEV_GZ);
  return devCache;
}

function assertCanonicalCsr(m: CsrMatrix, label: string): void {
  assertEquals(m.kind, "csr");
  assertEquals(m.indptr.length, m.rows + 1, `${label}: indptr length`);
  assertEquals(m.indptr[0], 0, `${label}: indptr[0]`);
  assertEquals(m.indptr[m.rows], m.data.length, `${label}: indptr end`);
  assertEquals(m.indices.length, m.data.length, `${label}: indices length`);
  for (let r = 0; r < m.rows; r++) {
    assert(m.indptr[r + 1] >= m.indptr[r], `${label}: indptr not monotone at ${r}`);
    for (let k = m.indptr[r]; k < m.indptr[r + 1]; k++) {
      const c = m.indices[k];
      assert(c >= 0 && c < m.cols, `${label}: column ${c} out of range`);
      if (k > m.indptr[r]) assert(m.indices[k - 1] < c, `${label}: row ${r} not strictly sorted`);
      assert(Number.isFinite(m.data[k]) && m.data[k] !== 0, `${label}: bad value ${m.data[k]}`);
    }
  }
}

function innerProducts(m: CsrMatrix, q: CsrMatrix): number[] {
  const qv = new Map<number, number>();
  for (let k = 0; k < q.data.length; k++) qv.set(q.indices[k], q.data[k]);
  const out: number[] = [];
  for (let r = 0; r < m.rows; r++) {
    let s = 0;
    for (let k = m.indptr[r]; k < m.indptr[r + 1]; k++) {
      s += m.data[k] * (qv.get(m.indices[k]) ?? 0);
    }
    out.push(s);
  }
  return out;
}

Deno.test("sparse-pi: tokenizer keeps exact UTF-16 offsets", () => {
  const text = "Denver's 1,000 fans — “café” 😀 naïve\u0301 x_y.";
  const t = tokenize(text);
  assertEquals(t.text, [
    "Denver",
    "'",
    "s",
    "1",
    ",",
    "000",
    "fans",
    "—",
    "“",
    "café",
    "”",
    "😀",
    "naïve\u0301",
    "x",
    "_",
    "y",
    ".",
  ]);
  for (let i = 0; i < t.text.length; i++) {
    assertEquals(text.slice(t.start[i], t.end[i]), t.text[i]);
  }
  assertEquals([...t.kind].map((k) => k === WORD), [
    true,
    false,
    true,
    true,
    false,
    true,
    true,
    false,
    false,
    true,
    false,
    false,
    true,
    true,
    false,
    true,
    false,
  ]);
});

Deno.test("sparse-pi: Porter stemmer and FNV-1a reference values", () => {
  const cases: [string, string][] = [
    ["caresses", "caress"],
    ["ponies", "poni"],
    ["cats", "cat"],
    ["agreed", "agre"],
    ["hopping", "hop"],
    ["happy", "happi"],
    ["relational", "relat"],
    ["generalization", "gener"],
    ["universities", "univers"],
    ["running", "run"],
    ["sky", "sky"],
  ];
  for (const [w, s] of cases) assertEquals(porterStem(w), s, w);
  assertEquals(fnv1a32(""), 2166136261);
  assertEquals(fnv1a32("a"), 3826002220);
  assertEquals(fnv1a32("foobar"), 3214735720);
  assertEquals(fnv1a32("é"), fnv1a32("\u00e9")); // two UTF-8 bytes
  const col = keyColumn("IN", "denver", 1 << 22, 859);
  assertEquals(col, 859 + (fnv1a32("IN|denver") % ((1 << 22) - 859)));
});

Deno.test("sparse-pi: sentence splitter", () => {
  const t = tokenize('Dr. Smith went to the U.S. Army. He left in 1990! "Why?" she asked.');
  const ids = sentenceIds(t);
  const sentences: string[] = [];
  for (let i = 0; i < t.text.length; i++) {
    sentences[ids[i]] = (sentences[ids[i]] ? sentences[ids[i]] + " " : "") + t.text[i];
  }
  assertEquals(sentences, [
    "Dr . Smith went to the U . S . Army .",
    "He left in 1990 !",
    '" Why ? " she asked .',
  ]);
});

Deno.test("sparse-pi: phrases are exact substrings with valid boundaries (dev paragraphs)", async () => {
  const squad = await dev();
  const model = contextModelFromArtifact(await readArtifact(SPARSE_PI_MODEL));
  const paragraphs = [
    ...squad.data[0].paragraphs.slice(0, 3),
    ...squad.data[10].paragraphs.slice(0, 2),
    ...squad.data[47].paragraphs.slice(0, 2),
  ];
  let total = 0;
  for (const p of paragraphs) {
    const enc = encodeContext(model, { id: "x", context: p.context });
    const toks = tokenize(p.context);
    const startTok = new Map<number, number>();
    const endTok = new Map<number, number>();
    for (let i = 0; i < toks.text.length; i++) {
      startTok.set(toks.start[i], i);
      endTok.set(toks.end[i], i);
    }
    const m = enc.matrix as CsrMatrix;
    assertEquals(m.rows, enc.phrases.length);
    assertCanonicalCsr(m, "phrase matrix");
    let prev = [-1, -1];
    for (const ph of enc.phrases) {
      total++;
      assertEquals(p.context.slice(ph.start, ph.end), ph.text);
      const a = startTok.get(ph.start);
      const b = endTok.get(ph.end);
      assert(a !== undefined && b !== undefined, `not on token boundaries: ${ph.text}`);
      assert(b - a + 1 <= MAX_SPAN_TOKENS, `too long: ${ph.text}`);
      assertEquals(toks.kind[a], WORD, `starts on punctuation: ${ph.text}`);
      assertEquals(toks.kind[b], WORD, `ends on punctuation: ${ph.text}`);
      const first = toks.text[a].toLowerCase();
      const last = toks.text[b].toLowerCase();
      assert(!ARTICLES.has(first) && !ARTICLES.has(last), `article at a boundary: ${ph.text}`);
      assert(!NO_START_WORDS.has(first), `bad start: ${ph.text}`);
      assert(!STOP_WORDS.has(last), `bad end: ${ph.text}`);
      assert(a > prev[0] || (a === prev[0] && b > prev[1]), "phrases not in (start, end) order");
      prev = [a, b];
    }
  }
  assert(total > 2000, `only ${total} phrases`);
});

// A hand-made model: question words 1..3 tokens left of a phrase score +1,
// inside it -5; a `when` question adds +2 to a phrase starting with a year.
function handModel(): SparsePiArtifact {
  const S = shapeVocabulary([], []).length;
  const classes = ["*", "wh=when"];
  const gw = new Float32Array(classes.length * 3 * N_GROUPS);
  gw[GROUPS.indexOf("IN")] = -5;
  for (const g of ["L1", "L2", "L3"]) gw[GROUPS.indexOf(g)] = 1;
  const sw = new Float32Array(classes.length * S);
  sw[S + shapeVocabulary([], []).indexOf("fcls=YEAR")] = 2;
  const b64 = (a: Float32Array) => btoa(String.fromCharCode(...new Uint8Array(a.buffer)));
  return {
    format: SPARSE_PI_FORMAT,
    version: SPARSE_PI_VERSION,
    featureVersion: FEATURE_VERSION,
    dim: 1 << 20,
    shapeDim: S,
    groups: GROUPS,
    hash: "fnv1a32",
    context: { lex: [], suffixes: [] },
    question: {
      classes,
      idf: {},
      idfUnknown: 1,
      groupWeights: b64(gw),
      shapeWeights: b64(sw),
    },
  };
}

Deno.test("sparse-pi: inner-product argmax on a hand-made model", () => {
  const art = handModel();
  const cm = contextModelFromArtifact(art);
  const qm = questionModelFromArtifact(art);
  const ctx = encodeContext(cm, {
    id: "t",
    context: "The tower was built in 1889 by Gustave Eiffel.",
  });
  assertEquals(ctx.phrases.map((p) => p.text), [
    "tower",
    "tower was built",
    "tower was built in 1889",
    "tower was built in 1889 by Gustave",
    "tower was built in 1889 by Gustave Eiffel",
    "built",
    "built in 1889",
    "built in 1889 by Gustave",
    "built in 1889 by Gustave Eiffel",
    "in 1889",
    "in 1889 by Gustave",
    "in 1889 by Gustave Eiffel",
    "1889",
    "1889 by Gustave",
    "1889 by Gustave Eiffel",
    "by Gustave",
    "by Gustave Eiffel",
    "Gustave",
    "Gustave Eiffel",
    "Eiffel",
  ]);
  const m = ctx.matrix as CsrMatrix;
  const when = encodeQuestion(qm, { id: "q1", question: "When was the tower built?" });
  const sWhen = innerProducts(m, when.vector as CsrMatrix);
  assertEquals(ctx.phrases[sWhen.indexOf(Math.max(...sWhen))].text, "1889");
  assertEquals(sWhen[12], 3);
  const scratch = new Float32Array(art.dim);
  assertEquals(firstMaxRow(m, when.vector as CsrMatrix, scratch), 12);
  // Without the `when` class, "in 1889" (built at L1, tower at L3) ties at 2
  // with the longer phrases that start there: the first maximum wins.
  const where = encodeQuestion(qm, { id: "q2", question: "Where was the tower built?" });
  const sWhere = innerProducts(m, where.vector as CsrMatrix);
  assertEquals([sWhere[9], sWhere[10], sWhere[11], sWhere[12]], [2, 2, 2, 1]);
  assertEquals(Math.max(...sWhere), 2);
  assertEquals(firstMaxRow(m, where.vector as CsrMatrix, scratch), 9);
  assert(scratch.every((x) => x === 0), "scratch not cleared");
});

Deno.test("sparse-pi: question vectors never depend on contexts or order", async () => {
  const art = await readArtifact(SPARSE_PI_MODEL);
  const questions = [
    { id: "a", question: "Which NFL team represented the AFC at Super Bowl 50?" },
    { id: "b", question: "In what year did the Broncos win?" },
    { id: "c", question: "Who was the MVP?" },
  ];
  const fresh = questionModelFromArtifact(art);
  const alone = questions.map((q) => encodeQuestion(fresh, q).vector as CsrMatrix);
  // A second model, used after encoding contexts and the questions in reverse.
  const cm = contextModelFromArtifact(art);
  const squad = await dev();
  for (const p of squad.data[1].paragraphs.slice(0, 3)) {
    encodeContext(cm, { id: "x", context: p.context });
  }
  const other = questionModelFromArtifact(art);
  const reversed = [...questions].reverse().map((q) =>
    encodeQuestion(other, q).vector as CsrMatrix
  );
  reversed.reverse();
  for (let i = 0; i < questions.length; i++) {
    assertCanonicalCsr(alone[i], "question");
    assertEquals(alone[i].rows, 1);
    assertEquals(alone[i].cols, art.dim);
    assertEquals([...reversed[i].indices], [...alone[i].indices]);
    assertEquals([...reversed[i].data], [...alone[i].data]);
    assertEquals([...encodeQuestion(fresh, questions[i]).vector.data], [...alone[i].data]);
  }
  assertEquals(questionFeatures("In what year did Denver win?").classes.slice(0, 3), [
    "*",
    "wh=what",
    "wh1=what year",
  ]);
});

Deno.test("sparse-pi: the artifact loads and has the documented fields", async () => {
  const art = await readArtifact(SPARSE_PI_MODEL);
  assertEquals(art.format, "phraseval/sparse-pi");
  assertEquals(art.version, 1);
  assertEquals(art.featureVersion, FEATURE_VERSION);
  assertEquals(art.dim, 1 << 22);
  assertEquals(art.hash, "fnv1a32");
  assertEquals(art.groups, GROUPS);
  assertEquals(art.context.lex.length, 300);
  assertEquals(art.context.suffixes.length, 80);
  assertEquals(art.shapeDim, shapeVocabulary(art.context.lex, art.context.suffixes).length);
  assertEquals(art.question.classes[0], "*");
  const idf = Object.values(art.question.idf);
  assert(idf.length > 10_000 && idf.every((x) => x > 0 && x <= art.question.idfUnknown));
  const qm = questionModelFromArtifact(art);
  assertEquals(qm.groupWeights.length, art.question.classes.length * 3 * N_GROUPS);
  assertEquals(qm.shapeWeights.length, art.question.classes.length * art.shapeDim);
  const prov = art.provenance as {
    made: string;
    train: { file: string; sha256: string };
    fit: { seed: number; lambda: number };
  };
  assertEquals(prov.made, "deno run -A baselines/sparse_pi/fit.ts");
  assertEquals(prov.train.file, "train-subset-v1.1.json");
  assertEquals(prov.fit.seed, 20240601);
  const bad = { ...art, featureVersion: -1 };
  let error: unknown;
  try {
    questionModelFromArtifact(bad);
  } catch (e) {
    error = e;
  }
  assert(error instanceof EncoderError, "a wrong feature version is refused");
});

Deno.test("sparse-pi: Layers encode batches; the question half needs no context", async () => {
  const program = Effect.gen(function* () {
    const qe = yield* QuestionEncoder;
    const [q] = yield* qe.encode([{ id: "q", question: "Where is Paris?" }]);
    return { info: qe.info, rows: q.vector.rows };
  });
  const qOnly = await Effect.runPromise(
    Effect.provide(program, SparsePiQuestionEncoderLive(SPARSE_PI_MODEL)),
  );
  assertEquals(qOnly.info.name, "sparse-pi");
  assertEquals(qOnly.info.files, [SPARSE_PI_MODEL]);
  assertEquals(qOnly.info.sparse, true);
  assertEquals(qOnly.rows, 1);
  const both = Effect.gen(function* () {
    const ce = yield* ContextEncoder;
    const [c] = yield* ce.encode([{ id: "T_0", context: "Paris is the capital of France." }]);
    return c.phrases.map((p) => p.text);
  });
  assertEquals(
    await Effect.runPromise(Effect.provide(both, sparsePiLayers(SPARSE_PI_MODEL))),
    [
      "Paris",
      "Paris is the capital",
      "Paris is the capital of France",
      "capital",
      "capital of France",
      "France",
    ],
  );
  const missing = await Effect.runPromise(
    Effect.flip(Effect.provide(both, SparsePiContextEncoderLive("/nonexistent/model.json"))),
  );
  assert(missing instanceof EncoderError);
  void Layer;
});

Deno.test("sparse-pi: end to end on the first two dev articles", async () => {
  const squad = await dev();
  const art = await readArtifact(SPARSE_PI_MODEL);
  const cm = contextModelFromArtifact(art);
  const qm = questionModelFromArtifact(art);
  const scratch = new Float32Array(art.dim);
  const preds = new Map<string, string>();
  const gold: { id: string; answers: string[] }[] = [];
  for (const a of squad.data.slice(0, 2)) {
    for (let i = 0; i < a.paragraphs.length; i++) {
      const p = a.paragraphs[i];
      const enc = encodeContext(cm, { id: `${a.title}_${i}`, context: p.context });
      for (const q of p.qas) {
        const qv = encodeQuestion(qm, { id: q.id, question: q.question }).vector as CsrMatrix;
        preds.set(q.id, enc.phrases[firstMaxRow(enc.matrix as CsrMatrix, qv, scratch)].text);
        gold.push({ id: q.id, answers: q.answers.map((x) => x.text) });
      }
    }
  }
  const r = await Effect.runPromise(evaluateV1(gold, preds));
  assertEquals(r.total, 1057);
  assertEquals(r.answered, 1057);
  assertEquals(r.exact_match.toFixed(2), "47.68");
  assertEquals(r.f1.toFixed(2), "52.20");
  assert(r.exact_match >= 40 && r.f1 >= 45, "quality floor");
  assertEquals(preds.get("56be8e613aeaaa14008c90d2"), "February 7, 2016");
  assertEquals(preds.get("56bea9923aeaaa14008c91ba"), "American Football Conference");
});
