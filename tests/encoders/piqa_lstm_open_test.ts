/**
 * The bundled piqa-lstm-open encoder (`data/models/piqa-lstm-open/`, made
 * by the piqa_lstm baseline's `train_open` script, which no test runs): its
 * artifact and training record
 * (held-out curve per technique, ONNX check, piqa-lstm's vocabulary and
 * held-out articles), its hybrid's open-task weight, its registration, and
 * open search in miniature: the questions of two dev articles, each searched
 * against the phrases of all paragraphs of both, where piqa-lstm-open finds
 * the question's own paragraph more often than piqa-lstm.
 */
import * as Effect from "effect/Effect";
import type * as Layer from "effect/Layer";
import { hybridLayers, PIQA_LSTM_OPEN_HYBRID_CONFIG } from "../../encoders/hybrid.ts";
import {
  onnxLayers,
  PIQA_LSTM_MANIFEST,
  PIQA_LSTM_OPEN_MANIFEST,
} from "../../encoders/onnx/encoder.ts";
import { SPARSE_PI_MODEL, sparsePiLayers } from "../../encoders/sparse_pi/encoder.ts";
import { ENCODER_NAMES, encoderSpec } from "../../encoders/registry.ts";
import {
  ContextEncoder,
  type EncoderError,
  type Matrix,
  QuestionEncoder,
} from "../../encoders/types.ts";
import { exactMatchScore, f1Score } from "../../metrics/mod.ts";
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, ROOT } from "../_util.ts";

const DIR = `${ROOT}/data/models/piqa-lstm-open`;
const LSTM_DIR = `${ROOT}/data/models/piqa-lstm`;

Deno.test("piqa-lstm-open: the artifact, its training record and its ONNX check", async () => {
  const m = JSON.parse(await Deno.readTextFile(PIQA_LSTM_OPEN_MANIFEST));
  assertEquals([m.name, m.dim, m.store, m.phrases.maxTokens], ["piqa-lstm-open", 256, "f16", 10]);
  const lstm = JSON.parse(await Deno.readTextFile(`${LSTM_DIR}/manifest.json`));
  // The same tokenizer and phrases as piqa-lstm: only the weights differ.
  assertEquals([m.tokenizer, m.phrases], [lstm.tokenizer, lstm.phrases]);
  assertEquals(
    Deno.readTextFileSync(`${DIR}/vocab.txt`),
    Deno.readTextFileSync(`${LSTM_DIR}/vocab.txt`),
  );
  let total = 0;
  for (const f of ["manifest.json", "vocab.txt", "context.onnx", "question.onnx"]) {
    total += (await Deno.stat(`${DIR}/${f}`)).size;
  }
  assert(total < 20e6, `artifact is ${total} bytes`);
  const t = JSON.parse(await Deno.readTextFile(`${DIR}/training.json`));
  const lt = JSON.parse(await Deno.readTextFile(`${LSTM_DIR}/training.json`));
  assertEquals([t.seed, t.train, t.init, t.threads], [
    20240917,
    "train-subset-v1.1.json.gz",
    "data/models/piqa-lstm",
    1,
  ]);
  // piqa-lstm's held-out articles: the starting model never saw them.
  assertEquals(t.heldout_articles, lt.heldout_articles);
  assertEquals(t.heldout_questions, 1428);
  assertEquals(t.heldout_corpus.paragraphs, 2430);
  // The curve starts at piqa-lstm as bundled (its recorded closed figures) ...
  const start = t.history[0];
  assertEquals([start.phase, start.closed_em, start.closed_f1], ["start", 29.552, 40.154]);
  // Phase A (in-batch and pre-batch negatives) lowered the held-out figures in the tries before
  // (baselines/piqa_lstm/README.md): the bundled run is the start and query-side epochs.
  assertEquals(t.history.map((h: { phase: string }) => h.phase), [
    "start",
    "B",
    "B",
    "B",
    "B",
    "B",
  ]);
  // ... and the exported checkpoint ranks the held-out answers' paragraphs higher (top-k), at a
  // small cost on the closed task (the context encoder is piqa-lstm's, frozen).
  assertEquals(t.heldout, EXPECTED_HELDOUT);
  assertEquals(t.heldout_f16, EXPECTED_HELDOUT);
  assert(t.heldout.top20 > start.top20 + 5 && t.heldout.top100 > start.top100 + 5);
  assert(t.heldout.closed_em > start.closed_em - 2);
  assert(t.onnx_vs_torch_max_diff.context < 1e-5 && t.onnx_vs_torch_max_diff.question < 1e-5);
  assert(t.wall_seconds > 0);
});

/** The exported checkpoint's held-out figures (training.json `heldout`). */
const EXPECTED_HELDOUT = {
  open_em: 1.261,
  open_f1: 3.435,
  top1: 3.852,
  top5: 12.325,
  top20: 27.031,
  top100: 50.49,
  closed_em: 28.011,
  closed_f1: 38.661,
};

Deno.test("piqa-lstm-open+sparse: an open-task weight, chosen on the held-out grid", async () => {
  const c = JSON.parse(await Deno.readTextFile(PIQA_LSTM_OPEN_HYBRID_CONFIG));
  assertEquals(c.format, "phraseval/hybrid");
  const grid = c.provenance.grid as { w: number | string; em: number; f1: number }[];
  const fit = grid.filter((g) => typeof g.w === "number");
  const best = fit.reduce((a, b) => (b.em > a.em || (b.em === a.em && b.f1 > a.f1) ? b : a));
  assertEquals(c.denseWeight, best.w);
  assertEquals(c.provenance.questions, 1428);
  assert(/^open:/.test(c.provenance.task), c.provenance.task);
});

Deno.test("both new encoders are registered, with their files", async () => {
  for (const name of ["piqa-lstm-open", "piqa-lstm-open+sparse"]) {
    assert(ENCODER_NAMES.includes(name), name);
    const spec = await Effect.runPromise(encoderSpec(name));
    assertEquals(spec.name, name);
    assert(spec.contextFiles.some((f) => f.endsWith("/piqa-lstm-open/context.onnx")), name);
    assert(!spec.contextFiles.some((f) => f.endsWith("question.onnx")), name);
    assert(!spec.questionFiles.some((f) => f.endsWith("context.onnx")), name);
  }
  const hybrid = await Effect.runPromise(encoderSpec("piqa-lstm-open+sparse"));
  assert(hybrid.sparse && hybrid.questionFiles.includes(PIQA_LSTM_OPEN_HYBRID_CONFIG));
});

const ARTICLES = ["Amazon_rainforest", "Black_Death"];

async function devArticles() {
  const dev = JSON.parse(
    await new Response(
      (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
    ).text(),
  ) as {
    data: {
      title: string;
      paragraphs: {
        context: string;
        qas: { id: string; question: string; answers: { text: string }[] }[];
      }[];
    }[];
  };
  return dev.data.filter((a) => ARTICLES.includes(a.title));
}

/** Scores of every row of m with q, added to `out` from row `at` on. */
function scoreRows(m: Matrix, q: Float64Array, out: Float64Array, at: number): void {
  for (let r = 0; r < m.rows; r++) {
    let s = 0;
    if (m.kind === "dense") {
      const o = r * m.cols;
      for (let c = 0; c < m.cols; c++) s += m.data[o + c] * q[c];
    } else {
      for (let k = m.indptr[r]; k < m.indptr[r + 1]; k++) s += m.data[k] * q[m.indices[k]];
    }
    out[at + r] = s;
  }
}

/**
 * Open search in miniature: every question of the two articles against every
 * phrase of their paragraphs; top-1 EM/F1 and how often the top phrase comes
 * from the question's own paragraph.
 */
async function searchArticles(
  layer: Layer.Layer<ContextEncoder | QuestionEncoder, EncoderError>,
): Promise<{ em: number; f1: number; own: number; n: number }> {
  const arts = await devArticles();
  const program = Effect.gen(function* () {
    const ctx = yield* ContextEncoder;
    const qst = yield* QuestionEncoder;
    const paras = arts.flatMap((a) =>
      a.paragraphs.map((p, k) => ({ id: `${a.title}_${k}`, context: p.context, qas: p.qas }))
    );
    const enc = yield* ctx.encode(paras.map((p) => ({ id: p.id, context: p.context })));
    const texts: string[] = [], owner: number[] = [];
    enc.forEach((e, k) =>
      e.phrases.forEach((p) => {
        texts.push(p.text);
        owner.push(k);
      })
    );
    const cols = enc[0].matrix.cols;
    const q = new Float64Array(cols);
    const s = new Float64Array(texts.length);
    let em = 0, f1 = 0, own = 0, n = 0;
    for (let k = 0; k < paras.length; k++) {
      const qas = paras[k].qas;
      const qv = yield* qst.encode(qas.map((x) => ({ id: x.id, question: x.question })));
      qv.forEach((v, i) => {
        const m = v.vector;
        if (m.kind === "dense") { for (let c = 0; c < m.cols; c++) q[c] = m.data[c]; }
        else m.indices.forEach((c, t) => q[c] = m.data[t]);
        let at = 0;
        for (const e of enc) {
          scoreRows(e.matrix, q, s, at);
          at += e.matrix.rows;
        }
        if (m.kind === "dense") q.fill(0);
        else m.indices.forEach((c) => q[c] = 0);
        let best = 0;
        for (let r = 1; r < s.length; r++) if (s[r] > s[best]) best = r;
        const golds = qas[i].answers.map((x) => x.text);
        em += Math.max(...golds.map((g) => (exactMatchScore(texts[best], g) ? 1 : 0)));
        f1 += Math.max(...golds.map((g) => f1Score(texts[best], g)));
        if (owner[best] === k) own++;
        n++;
      });
    }
    return { em: (100 * em) / n, f1: (100 * f1) / n, own: (100 * own) / n, n };
  });
  return await Effect.runPromise(Effect.provide(program, layer));
}

/** piqa-lstm-open searching the two articles' paragraphs: EM, F1, own paragraph %. */
const OPEN_TWO_ARTICLES = ["4.47", "7.86", "16.84"];

Deno.test("piqa-lstm-open searches across paragraphs better than piqa-lstm", async () => {
  const open = await searchArticles(onnxLayers(PIQA_LSTM_OPEN_MANIFEST, { threads: 2 }));
  const lstm = await searchArticles(onnxLayers(PIQA_LSTM_MANIFEST, { threads: 2 }));
  assertEquals([open.n, lstm.n], [291, 291]);
  assertEquals([open.em, open.f1, open.own].map((x) => x.toFixed(2)), OPEN_TWO_ARTICLES);
  // piqa-lstm there: EM 2.75, its top phrase from the question's own paragraph for 9.97 %.
  assert(open.em > lstm.em + 1 && open.own > lstm.own + 5, JSON.stringify({ open, lstm }));
});

const hasSparse = await Deno.stat(SPARSE_PI_MODEL).then(() => true, () => false);

Deno.test({
  name: "piqa-lstm-open+sparse searches the two articles better than sparse-pi alone",
  ignore: !hasSparse,
  fn: async () => {
    // Relative, not exact: the bundled sparse-pi model is refitted by its own owner.
    const sparse = await searchArticles(sparsePiLayers(SPARSE_PI_MODEL));
    const hybrid = await searchArticles(
      hybridLayers({
        manifest: PIQA_LSTM_OPEN_MANIFEST,
        config: PIQA_LSTM_OPEN_HYBRID_CONFIG,
        threads: 2,
      }),
    );
    assertEquals([sparse.n, hybrid.n], [291, 291]);
    assert(hybrid.em > sparse.em && hybrid.f1 > sparse.f1, JSON.stringify({ sparse, hybrid }));
  },
});
