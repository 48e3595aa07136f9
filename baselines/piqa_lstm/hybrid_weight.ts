/**
 * Chooses the dense weight of `piqa-lstm+sparse` (or, with `--dense
 * piqa-lstm-sa`, of `piqa-lstm-sa+sparse`) on the held-out articles of the
 * training subset (the ones the dense model's training held out, from
 * `data/models/<dense>/training.json`) and writes
 * `data/models/<dense>/hybrid.json`. Nothing here reads the dev set.
 *
 * Usage: `deno run -A baselines/piqa_lstm/hybrid_weight.ts [--dense piqa-lstm|piqa-lstm-sa]
 * [--sparse-model PATH] [--train FILE] [--work DIR] [--out FILE]`
 *
 * The bundled sparse-pi model was fitted on the whole subset, held-out
 * articles included, so on them it looks better than it is (and a weight
 * chosen with it leans towards sparse). So, unless `--sparse-model` is
 * given, sparse-pi is first refitted without the held-out articles
 * (`baselines/sparse_pi/fit.ts --train <subset minus held-out>`, ~5 min,
 * into `--work`, default `outputs/piqa_lstm_hybrid`), and the weight is
 * chosen with that model; the encoder then uses it with the bundled one.
 *
 * For each held-out question, every sparse-pi span of its paragraph gets a
 * dense score (the dense model's `[start_i ; end_j] · [q_s ; q_e]`) and a sparse
 * score (sparse-pi's); the answer for weight w is the first span with the
 * largest `w · dense + sparse`. The weight with the best F1 (then EM) over
 * a grid is kept.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { hybridLayers } from "../../encoders/hybrid.ts";
import { PIQA_LSTM_MANIFEST, PIQA_LSTM_SA_MANIFEST } from "../../encoders/onnx/encoder.ts";
import { ContextEncoder, type CsrMatrix, QuestionEncoder } from "../../encoders/types.ts";
import { exactMatchScore, f1Score } from "../../metrics/mod.ts";
import { readTextMaybeGzip } from "../../io/source.ts";
import { runInherited } from "../../io/process.ts";

/** The weights tried (∞: dense only is reported separately). */
export const WEIGHT_GRID: readonly number[] = [
  0,
  0.05,
  0.1,
  0.2,
  0.3,
  0.5,
  0.75,
  1,
  1.5,
  2,
  3,
  5,
  10,
];

/** Score of each grid weight (and dense only). */
export interface WeightScore {
  /** Dense weight (`Infinity`: dense only). */
  readonly w: number;
  /** Exact match, %. */
  readonly em: number;
  /** F1, %. */
  readonly f1: number;
}

const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);

interface Question {
  readonly id: string;
  readonly question: string;
  readonly answers: readonly string[];
}

/** The dense models a hybrid is made of: manifest and folder (training.json, hybrid.json). */
export const DENSE_MODELS: Readonly<Record<string, { manifest: string; dir: string }>> = {
  "piqa-lstm": { manifest: PIQA_LSTM_MANIFEST, dir: "data/models/piqa-lstm" },
  "piqa-lstm-sa": { manifest: PIQA_LSTM_SA_MANIFEST, dir: "data/models/piqa-lstm-sa" },
};

/**
 * Dense and sparse scores of every phrase for every question of the given
 * paragraphs, and the grid scores (`manifest`: the dense model, default
 * piqa-lstm's).
 */
export async function scoreGrid(
  paragraphs: readonly { id: string; context: string; questions: readonly Question[] }[],
  sparseModel: string,
  onProgress?: (done: number) => void,
  manifest: string = PIQA_LSTM_MANIFEST,
): Promise<WeightScore[]> {
  const layers = { manifest, sparseModel, denseWeight: 1, threads: 2 };
  const dDense = (JSON.parse(await Deno.readTextFile(manifest)) as { dim: number }).dim;
  const program = Effect.gen(function* () {
    const ctx = yield* ContextEncoder;
    const qst = yield* QuestionEncoder;
    const rows: {
      dense: number[];
      sparse: number[];
      phrases: string[];
      answers: readonly string[];
    }[] = [];
    let done = 0;
    for (let b = 0; b < paragraphs.length; b += 16) {
      const group = paragraphs.slice(b, b + 16);
      const enc = yield* ctx.encode(group.map((p) => ({ id: p.id, context: p.context })));
      for (let k = 0; k < group.length; k++) {
        const m = enc[k].matrix as CsrMatrix;
        const qs = yield* qst.encode(
          group[k].questions.map((q) => ({ id: q.id, question: q.question })),
        );
        for (let qi = 0; qi < qs.length; qi++) {
          const qv = qs[qi].vector as CsrMatrix;
          const qmap = new Map<number, number>();
          for (let t = 0; t < qv.indices.length; t++) qmap.set(qv.indices[t], qv.data[t]);
          const dense: number[] = [], sparse: number[] = [];
          for (let r = 0; r < m.rows; r++) {
            let sd = 0, ss = 0;
            for (let t = m.indptr[r]; t < m.indptr[r + 1]; t++) {
              const v = qmap.get(m.indices[t]);
              if (v === undefined) continue;
              if (m.indices[t] < dDense) sd += v * m.data[t];
              else ss += v * m.data[t];
            }
            dense.push(sd);
            sparse.push(ss);
          }
          rows.push({
            dense,
            sparse,
            phrases: enc[k].phrases.map((p) => p.text),
            answers: group[k].questions[qi].answers,
          });
        }
      }
      done += group.length;
      onProgress?.(done);
    }
    return rows;
  });
  const rows = await Effect.runPromise(
    Effect.provide(program, hybridLayers(layers)),
  );
  const score = (w: number): WeightScore => {
    let em = 0, f1 = 0;
    for (const r of rows) {
      let best = -Infinity, arg = -1;
      for (let k = 0; k < r.dense.length; k++) {
        const s = w === Infinity ? r.dense[k] : w * r.dense[k] + r.sparse[k];
        if (s > best) {
          best = s;
          arg = k;
        }
      }
      const pred = arg >= 0 ? r.phrases[arg] : "";
      em += Math.max(...r.answers.map((g) => (exactMatchScore(pred, g) ? 1 : 0)));
      f1 += Math.max(...r.answers.map((g) => f1Score(pred, g)));
    }
    return { w, em: (100 * em) / rows.length, f1: (100 * f1) / rows.length };
  };
  return [...WEIGHT_GRID.map(score), score(Infinity)];
}

if (import.meta.main) {
  const args = [...Deno.args];
  const opt = (name: string, def: string) => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
  };
  const denseName = opt("--dense", "piqa-lstm");
  const dense = DENSE_MODELS[denseName];
  if (dense === undefined) {
    console.error(`--dense: "${denseName}" is not one of ${Object.keys(DENSE_MODELS).join(", ")}`);
    Deno.exit(2);
  }
  const train = opt("--train", `${ROOT}data/train-subset-v1.1.json.gz`);
  const work = opt("--work", `${ROOT}outputs/piqa_lstm_hybrid`);
  const out = opt("--out", `${ROOT}${dense.dir}/hybrid.json`);
  if (/dev-v1\.1/.test(train)) throw new Error("refusing to tune on dev");
  const training = JSON.parse(await Deno.readTextFile(`${ROOT}${dense.dir}/training.json`));
  const held = new Set<string>(training.heldout_articles);
  const squad = JSON.parse(await readTextMaybeGzip(train));
  let sparseModel = opt("--sparse-model", "");
  if (sparseModel === "") {
    await Deno.mkdir(work, { recursive: true });
    const rest = `${work}/train_minus_heldout.json`;
    const kept = squad.data.filter((a: { title: string }) => !held.has(a.title));
    await Deno.writeTextFile(rest, JSON.stringify({ ...squad, data: kept }));
    sparseModel = `${work}/sparse-pi-without-heldout.json`;
    console.error(`refitting sparse-pi without the held-out articles -> ${sparseModel}`);
    const code = await Effect.runPromise(runInherited([
      Deno.execPath(),
      "run",
      "-A",
      `${ROOT}baselines/sparse_pi/fit.ts`,
      "--train",
      rest,
      "--work",
      `${work}/sparse_pi_fit`,
      "--out",
      sparseModel,
    ]));
    if (code !== 0) throw new Error(`sparse-pi refit failed (exit ${code})`);
  }
  const data = squad.data as {
    title: string;
    paragraphs: {
      context: string;
      qas: { id: string; question: string; answers: { text: string }[] }[];
    }[];
  }[];
  const paragraphs = data.filter((a) => held.has(a.title)).flatMap((a) =>
    a.paragraphs.map((p, k) => ({
      id: `${a.title}_${k}`,
      context: p.context,
      questions: p.qas.map((q) => ({
        id: q.id,
        question: q.question,
        answers: q.answers.map((x) => x.text),
      })),
    }))
  );
  const t0 = performance.now();
  const grid = await scoreGrid(paragraphs, sparseModel, undefined, dense.manifest);
  const fit = grid.filter((g) => Number.isFinite(g.w));
  const best = fit.reduce((a, b) => (b.f1 > a.f1 || (b.f1 === a.f1 && b.em > a.em) ? b : a));
  for (const g of grid) {
    console.error(
      `w=${String(g.w).padStart(8)}  EM ${g.em.toFixed(2)}  F1 ${g.f1.toFixed(2)}${
        g === best ? "  <- chosen" : ""
      }`,
    );
  }
  const config = {
    format: "phraseval/hybrid",
    denseWeight: best.w,
    provenance: {
      command: "deno run -A baselines/piqa_lstm/hybrid_weight.ts" +
        (denseName === "piqa-lstm" ? "" : ` --dense ${denseName}`),
      heldoutArticles: [...held],
      questions: paragraphs.reduce((n, p) => n + p.questions.length, 0),
      sparseModel: sparseModel.replace(ROOT, ""),
      grid: grid.map((g) => ({
        w: Number.isFinite(g.w) ? g.w : "dense only",
        em: +g.em.toFixed(3),
        f1: +g.f1.toFixed(3),
      })),
      seconds: +((performance.now() - t0) / 1000).toFixed(1),
      note: "weight chosen with sparse-pi refitted without the held-out articles; the encoder " +
        "uses it with the bundled sparse-pi model",
    },
  };
  await Deno.writeTextFile(out, JSON.stringify(config, null, 2) + "\n");
  console.error(`wrote ${out}: denseWeight ${best.w}`);
}
