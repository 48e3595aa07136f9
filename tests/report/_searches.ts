/**
 * Hand-made searches for the `report --search-error` tests: eight
 * questions of one paragraph, an exact search and approximate ones whose
 * every number is known (see {@linkcode APPROX}), each written as `search`
 * writes it (predictions, top-k records, record).
 *
 * @module
 */
import { SEARCH_RECORD_FORMAT, type SearchRecord } from "../../search/open/record.ts";

/** The gold answers, one word a question. */
export const GOLDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];
/** The question ids, q1 to q8. */
export const IDS = GOLDS.map((_, i) => `q${i + 1}`);
/** The sha256 of the exact files every record gives (one set of vectors). */
export const CONTENT = { "vectors.f32": "ab".repeat(32), "paragraphs.ndjson": "cd".repeat(32) };

/** A phrase at (paragraph T_0, phrase index), its text. */
export type At = [number, string];

/** A search: per question its ranked phrases (rank 1 is the prediction). */
export type Ranked = Record<string, At[]>;

/** The exact search: right on q1..q5 (its gold word), wrong on q6..q8. */
export const EXACT: Ranked = Object.fromEntries(IDS.map((id, i) => [
  id,
  [i < 5 ? [10 + i, GOLDS[i]] : [50 + i, `wrong${i + 1}`]],
]));

const right = (i: number): At => [10 + i, GOLDS[i]];

/**
 * The approximate search: right in both q1, q2 (its rank 1 the exact
 * one); lost q3 (exact top-1 at rank 2), q4 (rank 3), q5 (absent); wrong in
 * both q6 (the exact's wrong phrase at rank 1), q7 (absent); saved q8
 * (exact top-1 at rank 2). Recall@1 3/8, recall@3 6/8.
 */
export const APPROX: Ranked = {
  q1: [right(0), [70, "x"]],
  q2: [right(1)],
  q3: [[60, "sixty"], right(2), [61, "y"]],
  q4: [[62, "sixtytwo"], [63, "z"], right(3)],
  q5: [[64, "sixtyfour"]],
  q6: [[55, "wrong6"], [65, "w"]],
  q7: [[67, "sixtyseven"]],
  q8: [right(7), [57, "wrong8"]],
};

/** The same answers as the exact search, three ranks each. */
export const SAME: Ranked = Object.fromEntries(
  IDS.map((id) => [id, [...EXACT[id], [90, "p"], [91, "q"]]]),
);

/** A SQuAD v1.1 file of the eight questions. */
export function dataJson(): string {
  const context = GOLDS.join(" ") + ".";
  return JSON.stringify({
    version: "1.1",
    data: [{
      title: "T",
      paragraphs: [{
        context,
        qas: GOLDS.map((g, i) => ({
          id: IDS[i],
          question: `Which word ${i + 1}?`,
          answers: [{ text: g, answer_start: context.indexOf(g) }],
        })),
      }],
    }],
  });
}

/** Writes a search (`<dir>/<stem>.json`, `.topk.ndjson`, `.search.json`). */
export function writeSearch(
  dir: string,
  stem: string,
  ranked: Ranked,
  opts: {
    mode?: SearchRecord["mode"];
    nprobe?: number;
    /** The record's `probe_tau` (`null` as `search` writes it without a tau; absent: no field). */
    probeTau?: number | null;
    candidates?: number;
    topK?: number;
    content?: Record<string, string>;
    topk?: boolean;
    qps?: number;
  } = {},
): string {
  const mode = opts.mode ?? "approximate";
  const approx = mode === "approximate";
  const pred = Object.fromEntries(Object.entries(ranked).map(([id, r]) => [id, r[0][1]]));
  Deno.writeTextFileSync(`${dir}/${stem}.json`, JSON.stringify(pred));
  Deno.writeTextFileSync(
    `${dir}/${stem}.topk.ndjson`,
    Object.entries(ranked).flatMap(([id, r]) =>
      r.map(([ix, phrase], k) =>
        JSON.stringify({ id, rank: k + 1, paragraph: "T_0", phrase_index: ix, phrase, score: -k }) +
        "\n"
      )
    ).join(""),
  );
  const record: SearchRecord = {
    format: SEARCH_RECORD_FORMAT,
    mode,
    data: `${dir}/data.json`,
    index_dir: `${dir}/ix`,
    question_emb: `${dir}/q`,
    files: {
      predictions: `${stem}.json`,
      topk: opts.topk === false ? null : `${stem}.topk.ndjson`,
      rows: null,
    },
    index: {
      kind: approx ? "ivf-pq" : "exact",
      vectors: "dense",
      dtype: "f32",
      metric: "ip",
      d: 4,
      phrases: 100,
      paragraphs: 1,
      nlist: approx ? 4 : null,
      bpv: approx ? 2 : null,
      dense_dims: null,
      bytes: 3_000_000,
      ivf_bytes: approx ? 1_500_000 : null,
      content: opts.content ?? CONTENT,
    },
    nprobe: approx ? opts.nprobe ?? 1 : null,
    ...(opts.probeTau !== undefined ? { probe_tau: opts.probeTau } : {}),
    candidates: approx ? opts.candidates ?? 0 : null,
    top_k: opts.topK ?? 3,
    threads: 1,
    memory_budget: null,
    questions: IDS.length,
    answered: Object.keys(ranked).length,
    missing: IDS.length - Object.keys(ranked).length,
    seconds: { load: 0.5, search: 2, total: 3, search_cpu: 1.6 },
    questions_per_second: opts.qps ?? 4,
    peak_rss_bytes: 200_000_000,
    cpu_seconds: 2.5,
  };
  Deno.writeTextFileSync(`${dir}/${stem}.search.json`, JSON.stringify(record));
  return `${dir}/${stem}.json`;
}

/** A folder with the data, the exact search and the approximate one. */
export function fixture(): string {
  const dir = Deno.makeTempDirSync({ prefix: "phraseval-search-error-" });
  Deno.writeTextFileSync(`${dir}/data.json`, dataJson());
  writeSearch(dir, "exact", EXACT, { mode: "exact", topK: 1 });
  writeSearch(dir, "np1", APPROX);
  return dir;
}
