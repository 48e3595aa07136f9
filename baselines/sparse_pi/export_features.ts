/**
 * Writes the training problem of the `sparse-pi` encoder: runs the encoder's
 * own feature code (`encoders/sparse_pi/features.ts`) over the SQuAD v1.1
 * training subset and stores, for `baselines/sparse_pi/fit.py`:
 *
 * - per paragraph: its candidate spans, each with its word keys
 *   (`termId * nGroups + group`) and shape columns;
 * - per question: its paragraph and article, content terms with their idf,
 *   head term, question-class ids and the gold spans (local span indices of
 *   every candidate whose normalised text equals a gold answer and that
 *   overlaps the annotated answer; failing that, any candidate with that
 *   normalised text). Questions without a gold candidate are dropped and
 *   counted.
 *
 * Layout of the output folder: `meta.json` (counts, vocabularies, idf, the
 * list of arrays) and one raw little-endian file per array (`<name>.i32`,
 * `<name>.f32`), CSR-style `*_ptr` arrays giving row offsets.
 *
 * Usage: `deno run -A baselines/sparse_pi/export_features.ts [train.json] [out_dir]`
 *
 * @module
 */
import {
  contextFeatures,
  contextResources,
  FEATURE_VERSION,
  GROUPS,
  MAX_SPAN_TOKENS,
  N_GROUPS,
  questionFeatures,
  SENT_REACH,
  shapeVocabulary,
  WINDOW,
} from "../../encoders/sparse_pi/features.ts";
import { stem, STOP_WORDS, tokenize, WORD } from "../../encoders/sparse_pi/text.ts";
import { normalizeAnswer } from "../../metrics/mod.ts";
import { readTextMaybeGzip } from "../../io/source.ts";

/** Default training file (the bundled SQuAD v1.1 training subset, `data/README.md`). */
export const DEFAULT_TRAIN: string = new URL(
  "../../data/train-subset-v1.1.json.gz",
  import.meta.url,
).pathname;
/** Default output folder (ignored by git). */
export const DEFAULT_EXPORT_DIR: string = new URL(
  "../../outputs/sparse_pi_fit/export",
  import.meta.url,
).pathname;

/** Number of lower-case words the lexical shape families keep. */
export const LEX_SIZE = 300;
/** Number of three-letter suffixes of the `suf` family. */
export const SUFFIX_SIZE = 80;
/** A question class must occur this often in the training questions. */
export const MIN_CLASS_COUNT = 10;

/** What {@linkcode exportFeatures} reports. */
export interface ExportSummary {
  /** Articles read. */
  readonly articles: number;
  /** Paragraphs read. */
  readonly paragraphs: number;
  /** Candidate spans over all paragraphs. */
  readonly spans: number;
  /** Questions read. */
  readonly questions: number;
  /** Questions kept (a gold answer is among the candidates). */
  readonly kept: number;
  /** Questions kept only through a same-text candidate elsewhere. */
  readonly keptElsewhere: number;
  /** Questions dropped (no candidate matches a gold answer). */
  readonly dropped: number;
  /** Distinct question classes kept. */
  readonly classes: number;
  /** Shape vocabulary size. */
  readonly shapeDim: number;
  /** Distinct terms (content stems of the training contexts). */
  readonly terms: number;
}

interface RawArticle {
  title: string;
  paragraphs: {
    context: string;
    qas: { id: string; question: string; answers: { text: string; answer_start: number }[] }[];
  }[];
}

/** The smoothed idf used by the model: `ln((N + 1) / (df + 1)) + 1`, 4 decimals. */
export function smoothIdf(paragraphs: number, df: number): number {
  return Math.round((Math.log((paragraphs + 1) / (df + 1)) + 1) * 1e4) / 1e4;
}

class Growable {
  chunks: number[] = [];
  push(v: number): void {
    this.chunks.push(v);
  }
}

/**
 * Runs the export: reads `trainPath`, writes the arrays and `meta.json`
 * under `outDir`.
 *
 * @example
 * ```ts ignore
 * import { exportFeatures } from "./export_features.ts";
 * const summary = await exportFeatures("train-subset-v1.1.json", "outputs/sparse_pi_fit/export");
 * ```
 */
export async function exportFeatures(trainPath: string, outDir: string): Promise<ExportSummary> {
  const data = JSON.parse(await readTextMaybeGzip(trainPath)) as { data: RawArticle[] };
  const articles = data.data;

  // Pass 1: lexical list, suffixes, document frequencies.
  const wordCount = new Map<string, number>();
  const sufCount = new Map<string, number>();
  const df = new Map<string, number>();
  let nPara = 0;
  for (const a of articles) {
    for (const p of a.paragraphs) {
      nPara++;
      const toks = tokenize(p.context);
      const seen = new Set<string>();
      for (let i = 0; i < toks.text.length; i++) {
        if (toks.kind[i] !== WORD) continue;
        const lower = toks.text[i].toLowerCase();
        wordCount.set(lower, (wordCount.get(lower) ?? 0) + 1);
        if (/^[a-z]{5,}$/.test(toks.text[i])) {
          const suf = lower.slice(-3);
          sufCount.set(suf, (sufCount.get(suf) ?? 0) + 1);
        }
        if (!STOP_WORDS.has(lower)) seen.add(stem(lower));
      }
      for (const s of seen) df.set(s, (df.get(s) ?? 0) + 1);
    }
  }
  const top = (m: Map<string, number>, k: number): string[] =>
    [...m.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, k).map((e) =>
      e[0]
    );
  const lex = top(wordCount, LEX_SIZE);
  const suffixes = top(sufCount, SUFFIX_SIZE);
  const terms = [...df.keys()].sort();
  const termId = new Map(terms.map((t, i) => [t, i]));
  const idf: Record<string, number> = {};
  for (const t of terms) idf[t] = smoothIdf(nPara, df.get(t)!);
  const idfUnknown = smoothIdf(nPara, 0);
  const res = contextResources(lex, suffixes);
  const shapeDim = shapeVocabulary(lex, suffixes).length;

  // Question classes.
  const classCount = new Map<string, number>();
  for (const a of articles) {
    for (const p of a.paragraphs) {
      for (const q of p.qas) {
        for (const c of new Set(questionFeatures(q.question).classes)) {
          classCount.set(c, (classCount.get(c) ?? 0) + 1);
        }
      }
    }
  }
  const classes = [...classCount.entries()]
    .filter(([c, k]) => c === "*" || k >= MIN_CLASS_COUNT)
    .sort((x, y) => (x[0] === "*" ? -1 : y[0] === "*" ? 1 : y[1] - x[1] || (x[0] < y[0] ? -1 : 1)))
    .map((e) => e[0]);
  const classId = new Map(classes.map((c, i) => [c, i]));

  // Pass 2: spans and questions.
  const paraSpans = new Growable();
  const spanKeyPtr = new Growable();
  const spanKeys = new Growable();
  const spanShapePtr = new Growable();
  const spanShapes = new Growable();
  const qPara = new Growable();
  const qArticle = new Growable();
  const qTermPtr = new Growable();
  const qTerm = new Growable();
  const qTermIdf = new Growable();
  const qHead = new Growable();
  const qClassPtr = new Growable();
  const qClass = new Growable();
  const qGoldPtr = new Growable();
  const qGold = new Growable();
  spanKeyPtr.push(0);
  spanShapePtr.push(0);
  qTermPtr.push(0);
  qClassPtr.push(0);
  qGoldPtr.push(0);
  let nSpans = 0;
  let nKeys = 0;
  let nShapes = 0;
  let nQ = 0;
  let kept = 0;
  let keptElsewhere = 0;
  let pIndex = 0;
  for (let ai = 0; ai < articles.length; ai++) {
    for (const p of articles[ai].paragraphs) {
      const f = contextFeatures(p.context, res);
      const n = f.spanStart.length;
      const nS = f.stems.length;
      const globalOf = f.stems.map((s) => termId.get(s)!);
      for (let r = 0; r < n; r++) {
        for (let k = f.keyPtr[r]; k < f.keyPtr[r + 1]; k++) {
          const key = f.keys[k];
          const g = Math.floor(key / nS);
          spanKeys.push(globalOf[key - g * nS] * N_GROUPS + g);
        }
        nKeys += f.keyPtr[r + 1] - f.keyPtr[r];
        spanKeyPtr.push(nKeys);
        for (let k = f.shapePtr[r]; k < f.shapePtr[r + 1]; k++) spanShapes.push(f.shapes[k]);
        nShapes += f.shapePtr[r + 1] - f.shapePtr[r];
        spanShapePtr.push(nShapes);
      }
      paraSpans.push(n);
      nSpans += n;
      const cs = f.tokens.start;
      const ce = f.tokens.end;
      const normCache = new Map<number, string>();
      const norm = (r: number): string => {
        let s = normCache.get(r);
        if (s === undefined) {
          s = normalizeAnswer(p.context.slice(cs[f.spanStart[r]], ce[f.spanEnd[r]]));
          normCache.set(r, s);
        }
        return s;
      };
      for (const q of p.qas) {
        nQ++;
        const gold = new Set<number>();
        for (const ans of q.answers) {
          const a0 = ans.answer_start;
          const a1 = a0 + ans.text.length;
          const target = normalizeAnswer(ans.text);
          for (let r = 0; r < n; r++) {
            if (cs[f.spanStart[r]] < a1 && ce[f.spanEnd[r]] > a0 && norm(r) === target) gold.add(r);
          }
        }
        let elsewhere = false;
        if (gold.size === 0) {
          for (const ans of q.answers) {
            const target = normalizeAnswer(ans.text);
            for (let r = 0; r < n; r++) if (norm(r) === target) gold.add(r);
          }
          elsewhere = gold.size > 0;
        }
        if (gold.size === 0) continue;
        kept++;
        if (elsewhere) keptElsewhere++;
        const qf = questionFeatures(q.question);
        qPara.push(pIndex);
        qArticle.push(ai);
        for (const s of qf.stems) {
          qTerm.push(termId.get(s) ?? -1);
          qTermIdf.push(idf[s] ?? idfUnknown);
        }
        qTermPtr.push(qTerm.chunks.length);
        qHead.push(qf.head === null ? -1 : termId.get(qf.head) ?? -1);
        for (const c of new Set(qf.classes)) {
          const id = classId.get(c);
          if (id !== undefined) qClass.push(id);
        }
        qClassPtr.push(qClass.chunks.length);
        for (const r of [...gold].sort((x, y) => x - y)) qGold.push(r);
        qGoldPtr.push(qGold.chunks.length);
      }
      pIndex++;
    }
  }

  await Deno.mkdir(outDir, { recursive: true });
  const arrays: Record<string, [Growable, "i32" | "f32"]> = {
    para_spans: [paraSpans, "i32"],
    span_key_ptr: [spanKeyPtr, "i32"],
    span_keys: [spanKeys, "i32"],
    span_shape_ptr: [spanShapePtr, "i32"],
    span_shapes: [spanShapes, "i32"],
    q_para: [qPara, "i32"],
    q_article: [qArticle, "i32"],
    q_term_ptr: [qTermPtr, "i32"],
    q_term: [qTerm, "i32"],
    q_term_idf: [qTermIdf, "f32"],
    q_head: [qHead, "i32"],
    q_class_ptr: [qClassPtr, "i32"],
    q_class: [qClass, "i32"],
    q_gold_ptr: [qGoldPtr, "i32"],
    q_gold: [qGold, "i32"],
  };
  const listing: Record<string, { file: string; dtype: string; length: number }> = {};
  for (const [name, [g, dtype]] of Object.entries(arrays)) {
    const arr = dtype === "i32" ? Int32Array.from(g.chunks) : Float32Array.from(g.chunks);
    const file = `${name}.${dtype}`;
    await Deno.writeFile(`${outDir}/${file}`, new Uint8Array(arr.buffer));
    listing[name] = { file, dtype, length: arr.length };
  }
  const summary: ExportSummary = {
    articles: articles.length,
    paragraphs: nPara,
    spans: nSpans,
    questions: nQ,
    kept,
    keptElsewhere,
    dropped: nQ - kept,
    classes: classes.length,
    shapeDim,
    terms: termId.size,
  };
  const meta = {
    featureVersion: FEATURE_VERSION,
    config: { maxSpanTokens: MAX_SPAN_TOKENS, window: WINDOW, sentReach: SENT_REACH },
    groups: GROUPS,
    nGroups: N_GROUPS,
    summary,
    articleTitles: articles.map((a) => a.title),
    lex,
    suffixes,
    classes,
    idfParagraphs: nPara,
    idfUnknown,
    idf,
    arrays: listing,
  };
  await Deno.writeTextFile(`${outDir}/meta.json`, JSON.stringify(meta));
  return summary;
}

if (import.meta.main) {
  const [train = DEFAULT_TRAIN, out = DEFAULT_EXPORT_DIR] = Deno.args;
  const t0 = performance.now();
  const s = await exportFeatures(train, out);
  console.log(JSON.stringify({ ...s, seconds: +((performance.now() - t0) / 1000).toFixed(1) }));
}
