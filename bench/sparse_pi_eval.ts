/**
 * In-process check of the `sparse-pi` encoder on a SQuAD v1.1 file: encodes
 * every question and every paragraph, takes the first maximum of the inner
 * products per question, scores with the official v1.1 rules and prints
 * EM/F1 with the size and speed numbers (phrases, phrases per word,
 * non-zeros, encode times, hash collisions).
 *
 * Usage: `deno run -A bench/sparse_pi_eval.ts [data.json|data.json.gz] [--model FILE]
 * [--dim N] [--pred OUT.json]` (default: the bundled dev set and model).
 * `--dim` re-hashes word keys into N columns (the weights do not depend on
 * d), e.g. `--dim 2147483000` for a practically collision-free reference.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import {
  contextModelFromArtifact,
  encodeContext,
  encodeQuestion,
  keyColumn,
  questionModelFromArtifact,
  readArtifact,
  SPARSE_PI_MODEL,
} from "../encoders/sparse_pi/encoder.ts";
import { GROUPS } from "../encoders/sparse_pi/features.ts";
import { stem, STOP_WORDS, tokenize, WORD } from "../encoders/sparse_pi/text.ts";
import type { CsrMatrix } from "../encoders/types.ts";
import { evaluateV1 } from "../metrics/squad.ts";

/** A SQuAD v1.1 file as parsed. */
export interface SquadFile {
  /** Articles. */
  readonly data: readonly {
    readonly title: string;
    readonly paragraphs: readonly {
      readonly context: string;
      readonly qas: readonly {
        readonly id: string;
        readonly question: string;
        readonly answers: readonly { readonly text: string }[];
      }[];
    }[];
  }[];
}

/** Reads a SQuAD JSON file (`.json` or `.json.gz`). */
export async function readSquad(path: string): Promise<SquadFile> {
  if (!path.endsWith(".gz")) return JSON.parse(await Deno.readTextFile(path));
  const file = await Deno.open(path);
  const text = await new Response(file.readable.pipeThrough(new DecompressionStream("gzip")))
    .text();
  return JSON.parse(text);
}

/**
 * Index of the first maximum of `matrix · q` over rows (-1 for no rows).
 * `scratch` is a zeroed Float32Array of length `q.cols`, left zeroed.
 */
export function firstMaxRow(matrix: CsrMatrix, q: CsrMatrix, scratch: Float32Array): number {
  for (let k = q.indptr[0]; k < q.indptr[1]; k++) scratch[q.indices[k]] = q.data[k];
  let best = -1;
  let bestScore = -Infinity;
  for (let r = 0; r < matrix.rows; r++) {
    let s = 0;
    for (let k = matrix.indptr[r]; k < matrix.indptr[r + 1]; k++) {
      s += matrix.data[k] * scratch[matrix.indices[k]];
    }
    if (s > bestScore) {
      bestScore = s;
      best = r;
    }
  }
  for (let k = q.indptr[0]; k < q.indptr[1]; k++) scratch[q.indices[k]] = 0;
  return best;
}

/** What {@linkcode evaluateSparsePi} measures. */
export interface SparsePiEvalResult {
  /** Official v1.1 exact match (0..100). */
  readonly exact_match: number;
  /** Official v1.1 F1 (0..100). */
  readonly f1: number;
  /** Paragraphs. */
  readonly paragraphs: number;
  /** Questions. */
  readonly questions: number;
  /** Word tokens over all contexts. */
  readonly words: number;
  /** Phrases over all contexts. */
  readonly phrases: number;
  /** Non-zeros over all phrase matrices. */
  readonly nnz: number;
  /** Non-zeros over all question vectors. */
  readonly questionNnz: number;
  /** Seconds spent encoding contexts. */
  readonly contextSeconds: number;
  /** Seconds spent encoding questions. */
  readonly questionSeconds: number;
  /** Predictions by question id. */
  readonly predictions: Map<string, string>;
}

/** Encodes and scores a SQuAD file in-process with the given model file. */
export async function evaluateSparsePi(
  squad: SquadFile,
  modelPath: string = SPARSE_PI_MODEL,
  dim?: number,
): Promise<SparsePiEvalResult> {
  const artifact = await readArtifact(modelPath);
  const a = dim === undefined ? artifact : { ...artifact, dim };
  const cm = contextModelFromArtifact(a);
  const qm = questionModelFromArtifact(a);
  const scratch = new Float32Array(cm.dim > 1 << 26 ? 0 : cm.dim);
  const sparseScratch = new Map<number, number>();
  let words = 0, phrases = 0, nnz = 0, qnnz = 0, tc = 0, tq = 0, paragraphs = 0, questions = 0;
  const predictions = new Map<string, string>();
  const gold: { id: string; answers: string[] }[] = [];
  for (const art of squad.data) {
    for (let pi = 0; pi < art.paragraphs.length; pi++) {
      const p = art.paragraphs[pi];
      paragraphs++;
      const t0 = performance.now();
      const enc = encodeContext(cm, { id: `${art.title}_${pi}`, context: p.context });
      tc += performance.now() - t0;
      const toks = tokenize(p.context);
      for (let i = 0; i < toks.kind.length; i++) if (toks.kind[i] === WORD) words++;
      phrases += enc.phrases.length;
      const m = enc.matrix as CsrMatrix;
      nnz += m.data.length;
      for (const q of p.qas) {
        questions++;
        const t1 = performance.now();
        const qv = encodeQuestion(qm, { id: q.id, question: q.question }).vector as CsrMatrix;
        tq += performance.now() - t1;
        qnnz += qv.data.length;
        let r: number;
        if (scratch.length > 0) {
          r = firstMaxRow(m, qv, scratch);
        } else {
          sparseScratch.clear();
          for (let k = 0; k < qv.data.length; k++) sparseScratch.set(qv.indices[k], qv.data[k]);
          r = -1;
          let best = -Infinity;
          for (let row = 0; row < m.rows; row++) {
            let s = 0;
            for (let k = m.indptr[row]; k < m.indptr[row + 1]; k++) {
              s += m.data[k] * (sparseScratch.get(m.indices[k]) ?? 0);
            }
            if (s > best) {
              best = s;
              r = row;
            }
          }
        }
        predictions.set(q.id, r >= 0 ? enc.phrases[r].text : "");
        gold.push({ id: q.id, answers: q.answers.map((x) => x.text) });
      }
    }
  }
  const score = await Effect.runPromise(evaluateV1(gold, predictions));
  return {
    exact_match: score.exact_match,
    f1: score.f1,
    paragraphs,
    questions,
    words,
    phrases,
    nnz,
    questionNnz: qnnz,
    contextSeconds: tc / 1000,
    questionSeconds: tq / 1000,
    predictions,
  };
}

/**
 * Hash collisions among the word keys of a dataset: every (group, stem) key
 * of its content words (contexts and questions), the distinct columns they
 * take, and how many keys share a column with another key.
 */
export function collisionStats(
  squad: SquadFile,
  dim: number,
  shapeDim: number,
): { keys: number; columns: number; keysInSharedColumns: number } {
  const stems = new Set<string>();
  const add = (text: string) => {
    const t = tokenize(text);
    for (let i = 0; i < t.text.length; i++) {
      const lower = t.text[i].toLowerCase();
      if (t.kind[i] === WORD && !STOP_WORDS.has(lower)) stems.add(stem(lower));
    }
  };
  for (const a of squad.data) {
    for (const p of a.paragraphs) {
      add(p.context);
      for (const q of p.qas) add(q.question);
    }
  }
  const perCol = new Map<number, number>();
  let keys = 0;
  for (const s of stems) {
    for (const g of GROUPS) {
      keys++;
      const c = keyColumn(g, s, dim, shapeDim);
      perCol.set(c, (perCol.get(c) ?? 0) + 1);
    }
  }
  let shared = 0;
  for (const k of perCol.values()) if (k > 1) shared += k;
  return { keys, columns: perCol.size, keysInSharedColumns: shared };
}

if (import.meta.main) {
  const args = [...Deno.args];
  const opt = (name: string): string | undefined => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const model = opt("--model") ?? SPARSE_PI_MODEL;
  const dimArg = opt("--dim");
  const predOut = opt("--pred");
  const path = args[0] ?? decodeURIComponent(
    new URL("../data/dev-v1.1.json.gz", import.meta.url).pathname,
  );
  const squad = await readSquad(path);
  const r = await evaluateSparsePi(squad, model, dimArg ? Number(dimArg) : undefined);
  const artifact = await readArtifact(model);
  const col = collisionStats(squad, dimArg ? Number(dimArg) : artifact.dim, artifact.shapeDim);
  if (predOut) await Deno.writeTextFile(predOut, JSON.stringify(Object.fromEntries(r.predictions)));
  console.log(JSON.stringify(
    {
      exact_match: +r.exact_match.toFixed(3),
      f1: +r.f1.toFixed(3),
      paragraphs: r.paragraphs,
      questions: r.questions,
      words: r.words,
      phrases: r.phrases,
      phrasesPerWord: +(r.phrases / r.words).toFixed(3),
      nnz: r.nnz,
      nnzPerPhrase: +(r.nnz / r.phrases).toFixed(2),
      questionNnzMean: +(r.questionNnz / r.questions).toFixed(1),
      contextSeconds: +r.contextSeconds.toFixed(2),
      questionSeconds: +r.questionSeconds.toFixed(2),
      collisions: col,
    },
    null,
    1,
  ));
}
