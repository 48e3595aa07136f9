/**
 * The bundled piqa-lstm baseline (`data/models/piqa-lstm/`): the training
 * tokenizer (Python) and the encoder's (TypeScript) agree on every dev
 * question and context; the artifact is small and complete; and the model
 * answers two dev articles with the recorded EM/F1 (in process, via the
 * Layers); the hybrid beats both of its parts there.
 */
import * as Effect from "effect/Effect";
import type * as Layer from "effect/Layer";
import { hybridLayers, PIQA_LSTM_SA_HYBRID_CONFIG } from "../../encoders/hybrid.ts";
import {
  onnxLayers,
  PIQA_LSTM_MANIFEST,
  PIQA_LSTM_SA_MANIFEST,
} from "../../encoders/onnx/encoder.ts";
import { SPARSE_PI_MODEL, sparsePiLayers } from "../../encoders/sparse_pi/encoder.ts";
import { casingClass, wordTokenizer } from "../../encoders/onnx/tokenizer.ts";
import {
  ContextEncoder,
  type EncoderError,
  type Matrix,
  QuestionEncoder,
} from "../../encoders/types.ts";
import { exactMatchScore, f1Score } from "../../metrics/mod.ts";
import { assert, assertEquals } from "../_assert.ts";
import { DEV_GZ, python, ROOT } from "../_util.ts";

const MODEL_DIR = `${ROOT}/data/models/piqa-lstm`;
const VOCAB = Deno.readTextFileSync(`${MODEL_DIR}/vocab.txt`).split("\n").slice(0, -1);

Deno.test("the training tokenizer and the TS tokenizer agree on all dev texts", async () => {
  const r = await python(["baselines/piqa_lstm/dump_tokens.py", DEV_GZ, `${MODEL_DIR}/vocab.txt`]);
  const tok = wordTokenizer({ vocab: VOCAB, lowercase: true, pad: 0, unk: 1 });
  const texts = new Map<string, string>();
  const dev = JSON.parse(
    await new Response(
      (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
    )
      .text(),
  ) as {
    data: {
      title: string;
      paragraphs: { context: string; qas: { id: string; question: string }[] }[];
    }[];
  };
  for (const a of dev.data) {
    a.paragraphs.forEach((p, k) => {
      texts.set(`context ${a.title}_${k}`, p.context);
      for (const q of p.qas) texts.set(`question ${q.id}`, q.question);
    });
  }
  let n = 0, questions = 0, units = 0;
  for (const line of r.stdout.split("\n")) {
    if (!line) continue;
    const py = JSON.parse(line) as {
      kind: string;
      id: string;
      units: [string, number, number][];
      casing: number[];
      ids: number[];
    };
    const text = texts.get(`${py.kind} ${py.id}`)!;
    const t = tok.tokenize(text);
    const ts = t.units.texts.map((u, k) => [u, t.units.start[k], t.units.end[k]]);
    assertEquals(ts, py.units, `${py.kind} ${py.id}: units`);
    assertEquals(t.units.texts.map(casingClass), py.casing, `${py.kind} ${py.id}: casing`);
    assertEquals(t.ids, py.ids, `${py.kind} ${py.id}: ids`);
    n++;
    units += ts.length;
    if (py.kind === "question") questions++;
  }
  assertEquals([n, questions], [2067 + 10570, 10570]);
  assert(units > 300_000);
});

Deno.test("the artifact: manifest, vocabulary, both models, under 20 MB, with provenance", async () => {
  const m = JSON.parse(await Deno.readTextFile(PIQA_LSTM_MANIFEST));
  assertEquals([m.name, m.dim, m.store, m.phrases.maxTokens], ["piqa-lstm", 256, "f16", 10]);
  let total = 0;
  for (const f of ["manifest.json", "vocab.txt", "context.onnx", "question.onnx"]) {
    total += (await Deno.stat(`${MODEL_DIR}/${f}`)).size;
  }
  assert(total < 20e6, `artifact is ${total} bytes`);
  assertEquals(VOCAB.length, m.tokenizer.size);
  const t = JSON.parse(await Deno.readTextFile(`${MODEL_DIR}/training.json`));
  assertEquals(t.seed, 20240917);
  assertEquals(t.train, "train-subset-v1.1.json");
  assert(t.heldout_articles.length === 5 && t.wall_seconds > 0);
});

const ARTICLES = ["Amazon_rainforest", "Black_Death"];

async function devArticles() {
  const dev = JSON.parse(
    await new Response(
      (await Deno.open(DEV_GZ)).readable.pipeThrough(new DecompressionStream("gzip")),
    )
      .text(),
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

/** Dot products of every row of m with the 1×d vector q (dense or CSR). */
function scores(m: Matrix, q: Matrix): Float64Array {
  const qd = new Map<number, number>();
  if (q.kind === "dense") q.data.forEach((v, c) => qd.set(c, v));
  else q.indices.forEach((c, k) => qd.set(c, q.data[k]));
  const out = new Float64Array(m.rows);
  for (let r = 0; r < m.rows; r++) {
    let s = 0;
    if (m.kind === "dense") {
      for (let c = 0; c < m.cols; c++) s += m.data[r * m.cols + c] * (qd.get(c) ?? 0);
    } else {
      for (let k = m.indptr[r]; k < m.indptr[r + 1]; k++) {
        s += m.data[k] * (qd.get(m.indices[k]) ?? 0);
      }
    }
    out[r] = s;
  }
  return out;
}

async function answerArticles(
  layer: Layer.Layer<ContextEncoder | QuestionEncoder, EncoderError>,
): Promise<{ em: number; f1: number; n: number }> {
  const arts = await devArticles();
  const program = Effect.gen(function* () {
    const ctx = yield* ContextEncoder;
    const qst = yield* QuestionEncoder;
    let em = 0, f1 = 0, n = 0;
    for (const a of arts) {
      const paras = a.paragraphs.map((p, k) => ({ id: `${a.title}_${k}`, context: p.context }));
      const enc = yield* ctx.encode(paras);
      for (let k = 0; k < paras.length; k++) {
        const qas = a.paragraphs[k].qas;
        const qv = yield* qst.encode(qas.map((q) => ({ id: q.id, question: q.question })));
        qv.forEach((v, i) => {
          const s = scores(enc[k].matrix, v.vector);
          let best = 0;
          for (let r = 1; r < s.length; r++) if (s[r] > s[best]) best = r;
          const pred = enc[k].phrases[best]?.text ?? "";
          const golds = qas[i].answers.map((x) => x.text);
          em += Math.max(...golds.map((g) => (exactMatchScore(pred, g) ? 1 : 0)));
          f1 += Math.max(...golds.map((g) => f1Score(pred, g)));
          n++;
        });
      }
    }
    return { em: (100 * em) / n, f1: (100 * f1) / n, n };
  });
  return await Effect.runPromise(Effect.provide(program, layer));
}

Deno.test("piqa-lstm answers two dev articles with the recorded EM/F1", async () => {
  const r = await answerArticles(onnxLayers(PIQA_LSTM_MANIFEST, { threads: 2 }));
  assertEquals(r.n, 291);
  assertEquals([r.em.toFixed(2), r.f1.toFixed(2)], ["24.05", "31.06"]);
});

/** piqa-lstm-sa on Amazon_rainforest and Black_Death: EM, F1. */
const SA_TWO_ARTICLES = ["23.71", "31.67"];

const hasSparse = await Deno.stat(SPARSE_PI_MODEL).then(() => true, () => false);

Deno.test({
  name: "piqa-lstm+sparse beats both of its parts on the same articles",
  ignore: !hasSparse,
  fn: async () => {
    // Relative, not exact: the bundled sparse-pi model is refitted by its own owner.
    const dense = { em: 24.05, f1: 31.06 };
    const sparse = await answerArticles(sparsePiLayers(SPARSE_PI_MODEL));
    const hybrid = await answerArticles(hybridLayers({ threads: 2 }));
    assertEquals([sparse.n, hybrid.n], [291, 291]);
    assert(
      hybrid.f1 > sparse.f1 + 1 && hybrid.f1 > dense.f1 + 10,
      JSON.stringify({ sparse, hybrid }),
    );
    assert(hybrid.em > sparse.em && hybrid.em > dense.em, JSON.stringify({ sparse, hybrid }));
  },
});

const SA_DIR = `${ROOT}/data/models/piqa-lstm-sa`;

Deno.test("piqa-lstm-sa: the artifact (two heads, d 512), its training record and its ONNX check", async () => {
  const m = JSON.parse(await Deno.readTextFile(PIQA_LSTM_SA_MANIFEST));
  assertEquals([m.name, m.dim, m.store, m.phrases.maxTokens], ["piqa-lstm-sa", 512, "f16", 10]);
  const t = JSON.parse(await Deno.readTextFile(`${SA_DIR}/training.json`));
  // Trained as long as piqa-lstm (11 epochs), the same seed and held-out articles.
  const lstm = JSON.parse(await Deno.readTextFile(`${MODEL_DIR}/training.json`));
  assertEquals([t.seed, t.heads, t.history.length, t.best_epoch], [20240917, 2, 11, 10]);
  assertEquals(t.heldout_articles, lstm.heldout_articles);
  assertEquals([t.heldout_em, t.heldout_f1], [29.832, 39.822]);
  // The exported f16 model scores the held-out articles as the PyTorch one rounded to f16.
  assertEquals([t.heldout_em_f16, t.heldout_f1_f16], [t.heldout_em, t.heldout_f1]);
  assert(t.onnx_vs_torch_max_diff.context < 1e-5 && t.onnx_vs_torch_max_diff.question < 1e-5);
  // The same vocabulary as piqa-lstm (the same GloVe rows and train-subset words).
  assertEquals(Deno.readTextFileSync(`${SA_DIR}/vocab.txt`).split("\n").slice(0, -1), VOCAB);
});

Deno.test("piqa-lstm-sa answers two dev articles with the recorded EM/F1", async () => {
  const r = await answerArticles(onnxLayers(PIQA_LSTM_SA_MANIFEST, { threads: 2 }));
  assertEquals(r.n, 291);
  assertEquals([r.em.toFixed(2), r.f1.toFixed(2)], SA_TWO_ARTICLES);
});

Deno.test({
  name: "piqa-lstm-sa+sparse: F1 above both of its parts on the same articles, EM not below",
  ignore: !hasSparse,
  fn: async () => {
    const [em, f1] = SA_TWO_ARTICLES.map(Number);
    const sparse = await answerArticles(sparsePiLayers(SPARSE_PI_MODEL));
    const hybrid = await answerArticles(
      hybridLayers({
        manifest: PIQA_LSTM_SA_MANIFEST,
        config: PIQA_LSTM_SA_HYBRID_CONFIG,
        threads: 2,
      }),
    );
    assert(hybrid.f1 > sparse.f1 && hybrid.f1 > f1, JSON.stringify({ sparse, hybrid }));
    // On these two articles the SA hybrid's EM ties sparse-pi's (116 of 291); on dev it is above.
    assert(hybrid.em >= sparse.em && hybrid.em > em, JSON.stringify({ sparse, hybrid }));
  },
});
