/**
 * Deterministic prediction files for checking SQuAD scorers against each
 * other: each file maps question ids to a perturbed gold answer (dropped and
 * added tokens, casing, punctuation, articles glued to odd neighbours, odd
 * Unicode spaces, non-ASCII case mappings, unanswered questions, empty
 * strings). A seeded PRNG (mulberry32) makes every run write the same bytes.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A bench/perturb.ts data/dev-v1.1.json out/
 * python3 bench/reference/evaluate_v1.py data/dev-v1.1.json out/04_articles.json
 * ```
 *
 * @module
 */

import { pyDumps, type PyObject, setKey } from "../io/pyjson.ts";

/** The parts of a SQuAD dataset the generator reads. */
export interface SquadDatasetLike {
  /** Articles, with paragraphs, with questions and their answers. */
  readonly data: readonly {
    readonly paragraphs: readonly {
      readonly qas: readonly {
        readonly id: string;
        readonly answers: readonly { readonly text: string }[];
      }[];
    }[];
  }[];
}

/** One generated prediction file. */
export interface PerturbationFile {
  /** File name, e.g. `04_articles.json`. */
  readonly name: string;
  /** What the file exercises. */
  readonly description: string;
  /** Question id to predicted answer, in dataset order (then extra ids). */
  readonly predictions: ReadonlyMap<string, string>;
}

/**
 * mulberry32: a small seeded PRNG returning floats in [0, 1).
 *
 * @example
 * ```ts
 * import { mulberry32 } from "./perturb.ts";
 * const r = mulberry32(1);
 * r() === mulberry32(1)(); // true
 * ```
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
type Perturb = (answer: string, rng: Rng) => string;

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
const chance = (rng: Rng, p: number): boolean => rng() < p;

const tokensOf = (s: string): string[] => s.split(" ").filter((t) => t !== "");

function insertAt(tokens: string[], rng: Rng, word: string): string[] {
  const i = Math.floor(rng() * (tokens.length + 1));
  return [...tokens.slice(0, i), word, ...tokens.slice(i)];
}

const FILLER = [
  "extra",
  "words",
  "in",
  "of",
  "1",
  "2016",
  "and",
  "Denver",
  "The",
  "an",
  "a",
  "–",
  "'s",
];

/** Dropped, added, duplicated and swapped tokens. */
const tokenEdits: Perturb = (answer, rng) => {
  let toks = tokensOf(answer);
  const kind = Math.floor(rng() * 5);
  if (kind === 0 && toks.length > 1) {
    toks.splice(Math.floor(rng() * toks.length), 1);
  } else if (kind === 1) {
    toks = insertAt(toks, rng, pick(rng, FILLER));
  } else if (kind === 2 && toks.length > 0) {
    const i = Math.floor(rng() * toks.length);
    toks.splice(i, 0, toks[i]);
  } else if (kind === 3 && toks.length > 1) {
    const i = Math.floor(rng() * (toks.length - 1));
    [toks[i], toks[i + 1]] = [toks[i + 1], toks[i]];
  } else {
    toks = [...toks, pick(rng, FILLER), pick(rng, FILLER)];
    if (toks.length > 2) toks.shift();
  }
  return toks.join(" ");
};

/** Casing and punctuation, ASCII and not. */
const casePunct: Perturb = (answer, rng) => {
  const kind = Math.floor(rng() * 9);
  switch (kind) {
    case 0:
      return answer.toUpperCase();
    case 1:
      return answer.toLowerCase();
    case 2:
      return Array.from(answer, (c) => chance(rng, 0.5) ? c.toUpperCase() : c)
        .join("");
    case 3: {
      const punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
      const cs = Array.from(answer);
      const i = Math.floor(rng() * (cs.length + 1));
      cs.splice(i, 0, pick(rng, Array.from(punct)));
      return cs.join("");
    }
    case 4:
      return answer.replace(/[!-\/:-@\[-`{-~]/g, "");
    case 5:
      return `"${answer}."`;
    case 6:
      return answer.replaceAll(" ", pick(rng, ["-", "_", "/", ".", "’"]));
    case 7:
      return `${pick(rng, ["“", "«", "¿", "—", "(", "'"])}${answer}${
        pick(rng, ["”", "»", "?", "—", ")", "'"])
      }`;
    default:
      return answer.replace(/\w/, (c) => c.toUpperCase()) + pick(rng, [".", ",", "…", "!"]);
  }
};

/** Articles alone and glued to non-ASCII letters, digits, `_` and marks. */
const ARTICLE_FORMS = [
  "the",
  "The",
  "THE",
  "a",
  "A",
  "an",
  "An",
  "AN",
  "éthe",
  "theé",
  "aß",
  "Ωan",
  "3the",
  "the3",
  "_the",
  "the_",
  "the\u0301",
  "\u0301the",
  "a\u0308",
  "an\u0903",
  "thé",
  "ｔｈｅ",
  "theʼ",
  "aª",
  "an²",
  "the٣",
  "the\u200b",
  "\u00adthe",
  "the·",
  "İthe",
  "\u212Athe",
  "the\u00a0a",
  "a-the",
  "the's",
  "\u{1C89}the",
  "the\u{10D50}",
  "an\u{1E4D0}",
  "\u{1171E}a",
  "a\u{11F04}",
  "the\u{2EBF0}",
  "\ud800the",
  "the\udc00",
];

const articleEdits: Perturb = (answer, rng) => {
  let toks = tokensOf(answer);
  const kind = Math.floor(rng() * 4);
  if (kind === 0) {
    toks = toks.filter((t) => !/^(?:a|an|the)$/i.test(t));
    if (toks.length === 0) toks = [pick(rng, ARTICLE_FORMS)];
  } else if (kind === 1) {
    toks = [pick(rng, ARTICLE_FORMS), ...toks];
  } else if (kind === 2) {
    toks = insertAt(toks, rng, pick(rng, ARTICLE_FORMS));
  } else {
    const glue = pick(rng, ARTICLE_FORMS);
    if (toks.length === 0) return glue;
    const i = Math.floor(rng() * toks.length);
    toks[i] = chance(rng, 0.5) ? glue + toks[i] : toks[i] + glue;
  }
  return toks.join(" ");
};

const ODD_SPACES = [
  "\u00a0",
  "\u2009",
  "\u3000",
  "\u0085",
  "\u001c",
  "\u001d",
  "\u001e",
  "\u001f",
  "\ufeff",
  "\u200b",
  "\u180e",
  "\t",
  "\n",
  "\r\n",
  "\u000b",
  "\u000c",
  "\u2028",
  "\u2029",
  "\u1680",
  "\u202f",
  "\u205f",
  "  ",
];

/** Spaces replaced by, and answers padded with, odd Unicode spaces. */
const spaceEdits: Perturb = (answer, rng) => {
  const cs = Array.from(answer, (c) => c === " " ? pick(rng, ODD_SPACES) : c);
  let out = cs.join("");
  if (chance(rng, 0.4)) out = pick(rng, ODD_SPACES) + out;
  if (chance(rng, 0.4)) out += pick(rng, ODD_SPACES);
  if (chance(rng, 0.3)) {
    const toks = tokensOf(answer);
    if (toks.length > 1) {
      const i = 1 + Math.floor(rng() * (toks.length - 1));
      out = [toks.slice(0, i).join(" "), toks.slice(i).join(" ")].join(
        pick(rng, ["\ufeff", "\u200b", "\u180e", "\u0085", "\u001f", "\u3000"]),
      );
    }
  }
  if (chance(rng, 0.2)) out += pick(rng, ODD_SPACES) + "the";
  return out;
};

const CASE_WORDS = [
  "İstanbul",
  "İ",
  "STRAẞE",
  "ẞ",
  "ΟΔΟΣ",
  "ΟΔΟΣ.",
  "Σ",
  "AΣ",
  "ΣΑΣ",
  "ΌΣΟΣ",
  "A\u0301Σ",
  "AΣ\u0301",
  "AΣ\u0301B",
  "AΣ\u{1171E}",
  "A\u{1171E}Σ",
  "Σ\u{1171E}",
  "A\u{10D50}Σ",
  "AΣ\u{10D50}",
  "ıi",
  "DİYARBAKIR",
  "ﬁnal",
  "ﬃ",
  "ǅ",
  "Ǆ",
  "\u212B",
  "\u212A",
  "ϴ",
  "\u1E9E",
  "Ω",
  "\u{1C89}",
  "\u{A7CB}",
  "\u{10D50}\u{10D51}",
  "\u{10400}",
];

/** Non-ASCII case mappings in and around the answer. */
const caseEdits: Perturb = (answer, rng) => {
  const kind = Math.floor(rng() * 5);
  if (kind === 0) return answer.toUpperCase();
  if (kind === 1) return `${answer} ${pick(rng, CASE_WORDS)}`;
  if (kind === 2) return `${pick(rng, CASE_WORDS)} ${answer}`;
  if (kind === 3) {
    return answer.replace(/i/g, () => pick(rng, ["İ", "ı", "I", "i"]))
      .replace(/s\b/g, () => pick(rng, ["Σ", "s", "ς"]));
  }
  const toks = tokensOf(answer);
  return insertAt(toks, rng, pick(rng, CASE_WORDS)).join(" ");
};

const EMPTYISH = [
  "",
  " ",
  "the",
  "a an the",
  "...",
  "\u00a0",
  "\ufeff",
  "\u200b",
  "\u0085",
  "The.",
  "''",
];

/** Empty, whitespace-only, punctuation-only and article-only answers. */
const emptyEdits: Perturb = (answer, rng) =>
  chance(rng, 0.7) ? pick(rng, EMPTYISH) : `${pick(rng, EMPTYISH)}${answer}`;

const FAMILIES: readonly Perturb[] = [
  tokenEdits,
  casePunct,
  articleEdits,
  spaceEdits,
  caseEdits,
  emptyEdits,
];

interface Spec {
  readonly name: string;
  readonly description: string;
  /** Probability that a question gets no prediction at all. */
  readonly unanswered: number;
  /** Probability that a question's answer is perturbed (else kept). */
  readonly rate: number;
  /** Use a random gold answer instead of the first. */
  readonly randomGold: boolean;
  readonly perturb: Perturb;
  /** Ids that are not in the dataset, added at the end. */
  readonly extraIds: number;
}

const SPECS: readonly Spec[] = [
  {
    name: "01_first_gold.json",
    description: "the first gold answer, unchanged (100/100)",
    unanswered: 0,
    rate: 0,
    randomGold: false,
    perturb: (a) => a,
    extraIds: 0,
  },
  {
    name: "02_tokens.json",
    description: "dropped, added, duplicated and swapped tokens",
    unanswered: 0.01,
    rate: 0.7,
    randomGold: false,
    perturb: tokenEdits,
    extraIds: 0,
  },
  {
    name: "03_case_punct.json",
    description: "casing changes and ASCII / non-ASCII punctuation",
    unanswered: 0.01,
    rate: 0.8,
    randomGold: false,
    perturb: casePunct,
    extraIds: 2,
  },
  {
    name: "04_articles.json",
    description: "articles removed, inserted and glued to odd neighbours",
    unanswered: 0.01,
    rate: 0.9,
    randomGold: false,
    perturb: articleEdits,
    extraIds: 0,
  },
  {
    name: "05_spaces.json",
    description: "odd Unicode spaces (isspace and not) between and around tokens",
    unanswered: 0.01,
    rate: 0.9,
    randomGold: false,
    perturb: spaceEdits,
    extraIds: 0,
  },
  {
    name: "06_unicode_case.json",
    description: "non-ASCII case: dotted/dotless i, sharp s, final sigma, ligatures",
    unanswered: 0.01,
    rate: 0.9,
    randomGold: false,
    perturb: caseEdits,
    extraIds: 0,
  },
  {
    name: "07_unanswered_empty.json",
    description: "many unanswered questions, empty and article-only answers",
    unanswered: 0.2,
    rate: 0.5,
    randomGold: false,
    perturb: emptyEdits,
    extraIds: 3,
  },
  {
    name: "08_mixed_random_gold.json",
    description: "a random gold answer through one to three random perturbations",
    unanswered: 0.03,
    rate: 0.95,
    randomGold: true,
    perturb: (answer, rng) => {
      let out = answer;
      const n = 1 + Math.floor(rng() * 3);
      for (let i = 0; i < n; i++) out = pick(rng, FAMILIES)(out, rng);
      return out;
    },
    extraIds: 1,
  },
];

/** Default seed of {@linkcode makePerturbations}. */
export const DEFAULT_SEED = 20180611;

/**
 * Builds the prediction files from a dataset (pure and deterministic).
 *
 * @example
 * ```ts
 * import { makePerturbations } from "./perturb.ts";
 * const dev = { data: [{ paragraphs: [{ qas: [{ id: "q1", answers: [{ text: "the Broncos" }] }] }] }] };
 * const files = makePerturbations(dev);
 * files[0].predictions.get("q1"); // "the Broncos"
 * ```
 */
export function makePerturbations(
  dataset: SquadDatasetLike,
  seed: number = DEFAULT_SEED,
): PerturbationFile[] {
  return SPECS.map((spec, fileIndex) => {
    const rng = mulberry32((seed + 0x9e3779b9 * (fileIndex + 1)) >>> 0);
    const predictions = new Map<string, string>();
    for (const article of dataset.data) {
      for (const paragraph of article.paragraphs) {
        for (const qa of paragraph.qas) {
          if (chance(rng, spec.unanswered)) continue;
          const golds = qa.answers;
          const gold = golds.length === 0
            ? ""
            : spec.randomGold
            ? pick(rng, golds).text
            : golds[0].text;
          predictions.set(
            qa.id,
            chance(rng, spec.rate) ? spec.perturb(gold, rng) : gold,
          );
        }
      }
    }
    for (let i = 0; i < spec.extraIds; i++) {
      predictions.set(`not-in-dataset-${fileIndex}-${i}`, "the answer");
    }
    return { name: spec.name, description: spec.description, predictions };
  });
}

/**
 * A prediction file's text: `json.dumps` style (ASCII only, `\uXXXX` escapes),
 * keys in map order.
 *
 * @example
 * ```ts
 * import { predictionsJson } from "./perturb.ts";
 * predictionsJson(new Map([["q1", "ΟΔΟΣ"]]));
 * // '{"q1": "\\u039f\\u0394\\u039f\\u03a3"}'
 * ```
 */
export function predictionsJson(predictions: ReadonlyMap<string, string>): string {
  const obj: PyObject = {};
  for (const [k, v] of predictions) setKey(obj, k, v);
  return pyDumps(obj);
}

/**
 * Reads a SQuAD dataset and writes the prediction files into `outDir`;
 * returns their paths.
 */
export async function writePerturbations(
  datasetPath: string,
  outDir: string,
  seed: number = DEFAULT_SEED,
): Promise<string[]> {
  const dataset = JSON.parse(await Deno.readTextFile(datasetPath));
  await Deno.mkdir(outDir, { recursive: true });
  const paths: string[] = [];
  for (const file of makePerturbations(dataset, seed)) {
    const path = `${outDir.replace(/\/+$/, "")}/${file.name}`;
    await Deno.writeTextFile(path, predictionsJson(file.predictions));
    paths.push(path);
  }
  return paths;
}

if (import.meta.main) {
  const [dev, out] = Deno.args;
  if (dev === undefined || out === undefined || Deno.args.length !== 2) {
    console.error("usage: deno run -A bench/perturb.ts <dev.json> <out_dir>");
    Deno.exit(2);
  }
  for (const path of await writePerturbations(dev, out)) console.log(path);
}
