/**
 * `report --diff RUN_A RUN_B`: why two runs differ. Each RUN is a run
 * folder with a provenance block (`provenance.json`, `runs/summary/provenance.ts`):
 * a `full` output folder, or a `run` folder (one system per model ×
 * dataset). The systems of the two are paired: when each folder has one,
 * those two; else by model and dataset name (the systems without a partner
 * are listed). Per pair the diff gives
 *
 * - what differs in provenance: the run blocks (flags, tool, normalizer,
 *   machine, seeds, config after inheritance) and the pair's system
 *   entries (dataset, corpus, encoder and its model files, dumps,
 *   prediction and rows files), flattened to keys (`flags.dtype`,
 *   `config.models[0].dtype`, `system.dumps.context.sha256`; see
 *   `flattenJson` in `io/provenance.ts`), each `A → B`. The run folder's
 *   own path is written `<run>` and this repository's folder `<repo>` in
 *   both before they are compared (a run moved, or made in another
 *   checkout, differs only where its contents do), and the
 *   flags that only say where a run was written (`--out`, `--work-dir`,
 *   `-r`) are listed apart (`location`);
 * - how many questions changed answer (the predictions differ as strings,
 *   or one has none), and EM and F1 of each, scored as `report` scores them
 *   (`systems.ts`: the official fold of the dataset's kind, the rows
 *   checked);
 * - the questions that changed answer or score, each with both answers and
 *   both EM and F1, the largest |ΔF1| (then |ΔEM|) first, then in dataset
 *   order; EM gained (0 → 1) and lost (1 → 0), F1 up and down;
 * - the paired tests of B − A on EM and F1 with `metrics/stats/`: the
 *   paired bootstrap interval of the difference ({@linkcode pairedBootstrapSteps},
 *   B resamples, the seed), the approximate-randomization p
 *   ({@linkcode pairedRandomizationSteps}, R shuffles, the seed), McNemar's
 *   exact p on EM ({@linkcode mcnemarPaired}), and the same two resamplings
 *   over clusters of questions (paragraphs by default, `--cluster`), as
 *   `report` computes them.
 *
 * Refused (bad input, {@linkcode InputError}, before anything is written):
 * a RUN that is not a run folder (`inputs.ts`), a RUN without
 * `provenance.json` (a folder from before provenance blocks: the message
 * names the missing file), a block without an entry for a paired system,
 * two folders without a system in common, and two systems on different
 * question sets (`systems.ts`: different questions, gold answers or
 * answered questions).
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { InputError, type UsageError } from "../io/errors.ts";
import { flattenJson, PROVENANCE_FILE, readProvenance } from "../io/provenance.ts";
import {
  mcnemarPaired,
  pairedBootstrapSteps,
  pairedClusterBootstrapSteps,
  pairedClusterRandomizationSteps,
  pairedRandomizationSteps,
  type Steps,
} from "../metrics/stats/mod.ts";
import { clusterIds, type ClusterLevel, clusterLevel } from "./clustering.ts";
import { resolveInputs, type SystemSpec } from "./inputs.ts";
import type { ScoredDataset } from "./systems.ts";
import { realOr, trimSlash } from "../io/fs.ts";
import { REPO_ROOT } from "../io/repo.ts";
import { readTextStrict } from "../io/text.ts";

/** One provenance key that differs: its value in A and in B (absent: the key is not there). */
export interface ProvenanceChange {
  /** The flattened key. */
  readonly key: string;
  /** A's value (absent when A has no such key). */
  readonly a?: unknown;
  /** B's value (absent when B has no such key). */
  readonly b?: unknown;
}

/** What differs between two blocks: the keys that matter, and where the runs were written. */
export interface ProvenanceDiff {
  /** Keys whose values differ, in A's key order, then B's keys that A lacks. */
  readonly changed: readonly ProvenanceChange[];
  /** The flags that only say where each run was written (`--out`, `--work-dir`, `-r`). */
  readonly location: readonly ProvenanceChange[];
}

/** A question whose answer or score changed. */
export interface ChangedQuestion {
  /** Question id. */
  readonly id: string;
  /** Its index in the dataset (from 0). */
  readonly index: number;
  /** Article title (`""` when the set has none). */
  readonly title: string;
  /** The question. */
  readonly question: string;
  /** Its gold answers. */
  readonly golds: readonly string[];
  /** A's answer (`null`: none). */
  readonly a: string | null;
  /** B's answer. */
  readonly b: string | null;
  /** A's EM (0 or 1). */
  readonly em_a: number;
  /** B's EM. */
  readonly em_b: number;
  /** A's F1 (0..1; `null` without F1). */
  readonly f1_a: number | null;
  /** B's F1. */
  readonly f1_b: number | null;
}

/** The paired test of B − A on one metric (points). */
export interface DiffTest {
  /** A's score (percent, the official total). */
  readonly a: number;
  /** B's score. */
  readonly b: number;
  /** B − A, in points. */
  readonly difference: number;
  /** Lower end of the paired bootstrap 95 % interval of B − A (points). */
  readonly low: number;
  /** Upper end. */
  readonly high: number;
  /** Paired approximate-randomization p (two-sided). */
  readonly randomization_p: number;
  /** The same over clusters of questions. */
  readonly cluster: {
    readonly by: ClusterLevel;
    readonly clusters: number;
    readonly low: number;
    readonly high: number;
    readonly randomization_p: number;
  };
  /** Questions whose score went up (EM: 0 → 1, gained). */
  readonly up: number;
  /** Questions whose score went down (EM: 1 → 0, lost). */
  readonly down: number;
  /** EM: McNemar's exact p. */
  readonly mcnemar_p?: number;
}

/** One pair of systems compared. */
export interface PairDiff {
  /** A's system (model) name. */
  readonly system_a: string;
  /** B's system name. */
  readonly system_b: string;
  /** The dataset's name (A's). */
  readonly dataset: string;
  /** The data file the two were scored against (A's). */
  readonly data: string;
  /** Its sha256. */
  readonly data_sha256: string;
  /** Questions scored. */
  readonly questions: number;
  /** What differs in the two systems' provenance entries (keys `system.*`). */
  readonly provenance: ProvenanceDiff;
  /** Questions whose answer changed. */
  readonly answers_changed: number;
  /** EM: B − A with its tests; `up` = gained, `down` = lost. */
  readonly em: DiffTest;
  /** F1 (`null`: the kind has none). */
  readonly f1: DiffTest | null;
  /** Every question whose answer or score changed (see the module notes for the order). */
  readonly changed: readonly ChangedQuestion[];
}

/** The whole of a diff's `report.json`. */
export interface DiffJson {
  /** Format tag. */
  readonly format: "phraseval-diff/1";
  /** RUN_A as given. */
  readonly a: string;
  /** RUN_B as given. */
  readonly b: string;
  /** The options the numbers were made with. */
  readonly options: {
    readonly resamples: number;
    readonly seed: number;
    readonly shuffles: number;
    readonly top: number;
    readonly confidence: 95;
    readonly cluster: ClusterLevel | null;
  };
  /** What differs in the run blocks (everything but their systems). */
  readonly provenance_diff: ProvenanceDiff;
  /** The pairs, in A's system order. */
  readonly pairs: readonly PairDiff[];
  /** Systems without a partner (`model/dataset`). */
  readonly unpaired: { readonly a: readonly string[]; readonly b: readonly string[] };
}

/** Options of {@linkcode diffInputs} and the statistics. */
export interface DiffOptions {
  /** RUN_A: a run folder. */
  readonly a: string;
  /** RUN_B. */
  readonly b: string;
  /** The dataset of a `full` folder whose dataset is gone. */
  readonly data?: string;
  /** Bootstrap resamples (default 1000). */
  readonly resamples?: number;
  /** Seed of the bootstrap and the randomization test (default 0). */
  readonly seed?: number;
  /** Randomization shuffles (default 10,000). */
  readonly shuffles?: number;
  /** Changed questions in `report.md`/`.html` and on stdout (default 20; `report.json` has all). */
  readonly top?: number;
  /** Cluster level of the clustered numbers (default: `clusterLevel`'s). */
  readonly cluster?: ClusterLevel;
}

/** A run folder: its systems and its provenance block. */
export interface DiffSide {
  /** As given. */
  readonly input: string;
  /** Its systems (`inputs.ts`). */
  readonly specs: readonly SystemSpec[];
  /** Its block. */
  readonly block: Readonly<Record<string, unknown>>;
}

/** The flags that say where a run was written. */
const LOCATION_FLAGS = ["flags.out", "flags.work-dir", "flags.reuse"];

/**
 * `value` with every string that is one of the folders of `dirs` or inside
 * it written from that folder's name (`<run>`, `<repo>`), in order: the
 * first folder that matches wins.
 */
function underRun(value: unknown, dirs: readonly [string, string][]): unknown {
  if (typeof value === "string") {
    for (const [d, name] of dirs) {
      if (value === d) return name;
      if (value.startsWith(`${d}/`)) return `${name}${value.slice(d.length)}`;
    }
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => underRun(v, dirs));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, underRun(v, dirs)]));
  }
  return value;
}

const absolute = (p: string) => trimSlash(p.startsWith("/") ? p : `${Deno.cwd()}/${p}`);

/**
 * The prefixes written apart before two blocks are compared: the run
 * folder's own path (as given, absolute, and its real path) as `<run>`,
 * and this repository's folder (where the bundled models are) as `<repo>`.
 */
const prefixes = (input: string): [string, string][] => [
  ...[...new Set([absolute(input), realOr(absolute(input))])].map((d): [string, string] => [
    d,
    "<run>",
  ]),
  ...[...new Set([REPO_ROOT, realOr(REPO_ROOT)])].map((d): [string, string] => [d, "<repo>"]),
];

/**
 * What differs between two JSON values, key by key ({@linkcode flattenJson}
 * under `prefix`), with the location flags apart.
 *
 * @example
 * ```ts
 * import { provenanceDiff } from "./diff.ts";
 * const d = provenanceDiff(
 *   { flags: { out: "a", dtype: undefined }, tool: { version: "1" } },
 *   { flags: { out: "b", dtype: "f16" }, tool: { version: "1" } },
 * );
 * if (JSON.stringify(d) !== '{"changed":[{"key":"flags.dtype","b":"f16"}],"location":[{"key":"flags.out","a":"a","b":"b"}]}') {
 *   throw new Error(JSON.stringify(d));
 * }
 * ```
 */
export function provenanceDiff(a: unknown, b: unknown, prefix = ""): ProvenanceDiff {
  const fa = flattenJson(a, prefix), fb = flattenJson(b, prefix);
  const keys = [...new Set([...Object.keys(fa), ...Object.keys(fb)])];
  const changed: ProvenanceChange[] = [];
  const location: ProvenanceChange[] = [];
  for (const key of keys) {
    const inA = key in fa, inB = key in fb;
    if (inA && inB && JSON.stringify(fa[key]) === JSON.stringify(fb[key])) continue;
    const c: ProvenanceChange = {
      key,
      ...(inA ? { a: fa[key] } : {}),
      ...(inB ? { b: fb[key] } : {}),
    };
    (LOCATION_FLAGS.includes(key) ? location : changed).push(c);
  }
  return { changed, location };
}

const bad = (file: string, message: string) => new InputError({ file, where: "", message });

/** The {@linkcode InputError} of a file that is not UTF-8 (`text.ts`), else `undefined`. */
function utf8Problem(file: string): InputError | undefined {
  try {
    readTextStrict(file);
  } catch (e) {
    if (e instanceof InputError) return e;
  }
  return undefined;
}

/** Reads RUN (its systems and block), refusing what is not a run folder with a block. */
export const readSide = (
  input: string,
  data?: string,
): Effect.Effect<DiffSide, InputError | UsageError> =>
  Effect.gen(function* () {
    const specs = yield* resolveInputs([input], { data });
    if (specs.some((s) => s.kind === "pred")) {
      return yield* Effect.fail(bad(input, "--diff compares two run folders (full or run)"));
    }
    // A block that is not UTF-8 is refused by line and byte first (`text.ts`); the rest
    // (a missing block, invalid JSON) `readProvenance` words.
    const notUtf8 = utf8Problem(`${trimSlash(input)}/${PROVENANCE_FILE}`);
    if (notUtf8 !== undefined) return yield* Effect.fail(notUtf8);
    const block = yield* readProvenance(trimSlash(input));
    return { input, specs, block };
  });

/** The system entry of `spec` in a block (`full`: its one entry). */
function systemEntry(side: DiffSide, spec: SystemSpec): unknown {
  const systems = side.block.systems;
  const file = `${trimSlash(side.input)}/provenance.json`;
  if (!Array.isArray(systems)) throw bad(file, 'no "systems": not a block of full or run');
  const found = spec.kind === "full" && systems.length === 1 ? systems[0] : systems.find((
    x: { model?: unknown; dataset?: unknown },
  ) => x?.model === spec.name && x?.dataset === spec.dataset);
  if (found === undefined) {
    throw bad(file, `no entry for model "${spec.name}" on dataset "${spec.dataset}"`);
  }
  return found;
}

/** The pairs of systems of A and B (see the module notes) and the ones left over. */
export function pairSystems(a: DiffSide, b: DiffSide): {
  pairs: [SystemSpec, SystemSpec][];
  unpaired: { a: string[]; b: string[] };
} {
  const name = (s: SystemSpec) => `${s.name}/${s.dataset}`;
  if (a.specs.length === 1 && b.specs.length === 1) {
    return { pairs: [[a.specs[0], b.specs[0]]], unpaired: { a: [], b: [] } };
  }
  const pairs: [SystemSpec, SystemSpec][] = [];
  for (const s of a.specs) {
    const t = b.specs.find((x) => name(x) === name(s));
    if (t !== undefined) pairs.push([s, t]);
  }
  const used = new Set(pairs.flatMap(([s, t]) => [s, t]));
  return {
    pairs,
    unpaired: {
      a: a.specs.filter((s) => !used.has(s)).map(name),
      b: b.specs.filter((s) => !used.has(s)).map(name),
    },
  };
}

/**
 * The specs to score for a pair: renamed `A (<RUN_A>)` and `B (<RUN_B>)`
 * (for the messages) on one dataset name, so `scoreSystems` scores them
 * together and refuses two question sets.
 */
export function pairSpecs(s: SystemSpec, t: SystemSpec): SystemSpec[] {
  return [{ ...s, name: `A (${s.input})` }, { ...t, name: `B (${t.input})`, dataset: s.dataset }];
}

/**
 * The two sides and their pairs, checked: every RUN a run folder with a
 * block holding an entry for each paired system, and at least one pair.
 */
export const diffInputs = (
  opts: DiffOptions,
): Effect.Effect<
  {
    a: DiffSide;
    b: DiffSide;
    pairs: [SystemSpec, SystemSpec][];
    unpaired: { a: string[]; b: string[] };
  },
  InputError | UsageError
> =>
  Effect.gen(function* () {
    const a = yield* readSide(opts.a, opts.data);
    const b = yield* readSide(opts.b, opts.data);
    const { pairs, unpaired } = pairSystems(a, b);
    if (pairs.length === 0) {
      return yield* Effect.fail(
        bad(
          opts.b,
          `no system in common with ${opts.a} (A: ${unpaired.a.join(", ")}; B: ${
            unpaired.b.join(", ")
          })`,
        ),
      );
    }
    yield* Effect.try({
      try: () => {
        for (const [s, t] of pairs) {
          systemEntry(a, s);
          systemEntry(b, t);
        }
      },
      catch: (e) => e instanceof InputError ? e : bad(opts.a, String(e)),
    });
    return { a, b, pairs, unpaired };
  });

const pct = (x: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return (100.0 * s) / x.length;
};

/** The paired tests of B − A on one metric's per-question columns. */
function* diffTest(
  a: Float64Array,
  b: Float64Array,
  totals: { a: number; b: number },
  ids: readonly (string | number)[],
  by: ClusterLevel,
  o: { resamples: number; seed: number; shuffles: number },
  isBinary: boolean,
): Steps<DiffTest> {
  const d = (yield* pairedBootstrapSteps([b, a], { resamples: o.resamples, seed: o.seed }))
    .differences[0];
  const p = (yield* pairedRandomizationSteps(b, a, { shuffles: o.shuffles, seed: o.seed })).pValue;
  const cd = (yield* pairedClusterBootstrapSteps([b, a], ids, {
    resamples: o.resamples,
    seed: o.seed,
  })).differences[0];
  const cp = (yield* pairedClusterRandomizationSteps(b, a, ids, {
    shuffles: o.shuffles,
    seed: o.seed,
  })).pValue;
  let up = 0, down = 0;
  for (let i = 0; i < a.length; i++) {
    if (b[i] > a[i]) up++;
    else if (b[i] < a[i]) down++;
  }
  return {
    a: totals.a,
    b: totals.b,
    difference: pct(b) - pct(a),
    low: 100 * d.low,
    high: 100 * d.high,
    randomization_p: p,
    cluster: {
      by,
      clusters: new Set(ids).size,
      low: 100 * cd.low,
      high: 100 * cd.high,
      randomization_p: cp,
    },
    up,
    down,
    ...(isBinary ? { mcnemar_p: mcnemarPaired(b, a).pValue } : {}),
  };
}

/**
 * The diff of one pair, scored together (`ds`: its systems `A` and `B`),
 * with the provenance of their entries, in steps.
 */
export function* pairDiffSteps(
  ds: ScoredDataset,
  names: { a: string; b: string },
  entries: { a: unknown; b: unknown },
  opts: DiffOptions,
): Steps<PairDiff> {
  const o = {
    resamples: opts.resamples ?? 1000,
    seed: opts.seed ?? 0,
    shuffles: opts.shuffles ?? 10000,
  };
  const [A, B] = ds.systems;
  const qs = ds.questions;
  const by = clusterLevel(qs, opts.cluster);
  const ids = clusterIds(qs, by);
  const em = yield* diffTest(
    A.em,
    B.em,
    { a: A.result.exact_match, b: B.result.exact_match },
    ids,
    by,
    o,
    true,
  );
  const f1 = A.f1 !== null && B.f1 !== null && A.result.f1 !== null && B.result.f1 !== null
    ? yield* diffTest(A.f1, B.f1, { a: A.result.f1, b: B.result.f1 }, ids, by, o, false)
    : null;
  let answersChanged = 0;
  const changed: ChangedQuestion[] = [];
  for (let i = 0; i < qs.length; i++) {
    const answer = A.predictions[i] !== B.predictions[i];
    if (answer) answersChanged++;
    const f1a = A.f1 ? A.f1[i] : null, f1b = B.f1 ? B.f1[i] : null;
    if (!answer && A.em[i] === B.em[i] && f1a === f1b) continue;
    changed.push({
      id: qs[i].id,
      index: i,
      title: qs[i].title,
      question: qs[i].question,
      golds: qs[i].golds,
      a: A.predictions[i],
      b: B.predictions[i],
      em_a: A.em[i],
      em_b: B.em[i],
      f1_a: f1a,
      f1_b: f1b,
    });
  }
  const mag = (q: ChangedQuestion) => Math.abs((q.f1_b ?? 0) - (q.f1_a ?? 0));
  changed.sort((x, y) =>
    mag(y) - mag(x) || Math.abs(y.em_b - y.em_a) - Math.abs(x.em_b - x.em_a) || x.index - y.index
  );
  return {
    system_a: names.a,
    system_b: names.b,
    dataset: ds.name,
    data: ds.data,
    data_sha256: ds.sha256,
    questions: qs.length,
    provenance: provenanceDiff(entries.a, entries.b, "system"),
    answers_changed: answersChanged,
    em,
    f1,
    changed,
  };
}

/** The run block without its systems, its folder written `<run>`. */
const runPart = (side: DiffSide) => {
  const { systems: _, ...rest } = side.block;
  return underRun(rest, prefixes(side.input));
};

/**
 * The whole diff, in steps: the run blocks' differences, then each pair's
 * ({@linkcode pairDiffSteps}); `scored[i]` is pair i scored together.
 */
export function* diffSteps(
  sides: { a: DiffSide; b: DiffSide },
  pairs: readonly [SystemSpec, SystemSpec][],
  scored: readonly ScoredDataset[],
  unpaired: { a: string[]; b: string[] },
  opts: DiffOptions,
): Steps<DiffJson> {
  const out: PairDiff[] = [];
  for (let i = 0; i < pairs.length; i++) {
    const [s, t] = pairs[i];
    out.push(
      yield* pairDiffSteps(scored[i], { a: s.name, b: t.name }, {
        a: underRun(systemEntry(sides.a, s), prefixes(sides.a.input)),
        b: underRun(systemEntry(sides.b, t), prefixes(sides.b.input)),
      }, opts),
    );
  }
  return {
    format: "phraseval-diff/1",
    a: opts.a,
    b: opts.b,
    options: {
      resamples: opts.resamples ?? 1000,
      seed: opts.seed ?? 0,
      shuffles: opts.shuffles ?? 10000,
      top: opts.top ?? 20,
      confidence: 95,
      cluster: opts.cluster ?? null,
    },
    provenance_diff: provenanceDiff(runPart(sides.a), runPart(sides.b)),
    pairs: out,
    unpaired,
  };
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

/**
 * A provenance value in a line: JSON, a sha256 cut to 12 digits, a value
 * longer than 80 characters cut in the middle, `(absent)`.
 *
 * @example
 * ```ts
 * import { shortValue } from "./diff.ts";
 * if (shortValue("f16", true) !== '"f16"' || shortValue(1, false) !== "(absent)") throw new Error();
 * if (shortValue("0".repeat(64), true) !== "000000000000…") throw new Error();
 * ```
 */
export function shortValue(v: unknown, present: boolean): string {
  if (!present) return "(absent)";
  const s = JSON.stringify(v) ?? "null";
  if (/^"[0-9a-f]{64}"$/.test(s)) return `${s.slice(1, 13)}…`;
  return s.length > 80 ? `${s.slice(0, 30)}…${s.slice(-49)}` : s;
}

const signed = (x: number) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(2);
const fp = (p: number) => p >= 0.0001 ? p.toFixed(4) : p.toExponential(1);
const cut = (s: string | null, n: number) =>
  s === null ? "(none)" : JSON.stringify(s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The lines of a provenance diff: `key  A → B`, the location flags last;
 * a change that does not fit in 100 columns takes three lines (the key,
 * then `A value` and `B value`).
 */
export function provenanceLines(d: ProvenanceDiff, indent = "  "): string[] {
  const w = Math.min(40, Math.max(0, ...d.changed.map((c) => c.key.length)));
  const lines = (c: ProvenanceChange, key: string) => {
    const a = shortValue(c.a, "a" in c), b = shortValue(c.b, "b" in c);
    const one = `${indent}${key.padEnd(w)}  ${a} → ${b}`;
    return one.length <= 100
      ? [one]
      : [`${indent}${key}`, `${indent}  A ${a}`, `${indent}  B ${b}`];
  };
  return [
    ...d.changed.flatMap((c) => lines(c, c.key)),
    ...d.location.flatMap((c) => lines(c, `${c.key} (where written)`)),
  ];
}

/** The lines of one metric's test: scores, B − A with its intervals and p-values, up/down. */
function testLines(name: string, t: DiffTest, em: boolean): string[] {
  const counts = em ? `${t.up} gained, ${t.down} lost` : `${t.up} up, ${t.down} down`;
  return [
    `${name.padEnd(3)} ${t.a.toFixed(2)} → ${t.b.toFixed(2)}  B − A ${signed(t.difference)} [${
      signed(t.low)
    }, ${signed(t.high)}]  p ${fp(t.randomization_p)} (rand.)${
      t.mcnemar_p !== undefined ? `, ${fp(t.mcnemar_p)} (McNemar)` : ""
    }`,
    `    ${counts}; by ${t.cluster.by} (${t.cluster.clusters}): [${signed(t.cluster.low)}, ${
      signed(t.cluster.high)
    }]  p ${fp(t.cluster.randomization_p)}`,
  ];
}

/**
 * What `report --diff` prints: the provenance differences, then per pair
 * the answers changed, the EM and F1 tests and the first `top` changed
 * questions. Every line but a long key's fits in 100 columns.
 */
export function renderDiffText(d: DiffJson): string {
  const out: string[] = [`report --diff: A = ${d.a}, B = ${d.b}`];
  const o = d.options;
  out.push(
    `paired tests of B − A: bootstrap B = ${o.resamples}, seed ${o.seed}; randomization ${o.shuffles} shuffles`,
  );
  const n = d.provenance_diff.changed.length;
  out.push(`provenance: ${n} key${n === 1 ? "" : "s"} differ${n === 1 ? "s" : ""} (A → B)`);
  out.push(...provenanceLines(d.provenance_diff));
  for (const p of d.pairs) {
    out.push("");
    const who = p.system_a === p.system_b ? p.system_a : `${p.system_a} → ${p.system_b}`;
    out.push(`${who} on ${p.dataset} (${p.questions} questions)`);
    const m = p.provenance.changed.length;
    out.push(`  system provenance: ${m} key${m === 1 ? "" : "s"} differ${m === 1 ? "s" : ""}`);
    out.push(...provenanceLines(p.provenance, "    "));
    out.push(
      `  answers changed: ${p.answers_changed} of ${p.questions} (${
        (100 * p.answers_changed / p.questions).toFixed(2)
      }%)`,
    );
    out.push(...testLines("EM", p.em, true).map((l) => `  ${l}`));
    if (p.f1) out.push(...testLines("F1", p.f1, false).map((l) => `  ${l}`));
    const shown = p.changed.slice(0, o.top);
    if (shown.length > 0) {
      out.push(
        `  changed questions (${shown.length} of ${p.changed.length}, largest |ΔF1| first):`,
      );
      for (const q of shown) {
        const f1 = q.f1_a !== null && q.f1_b !== null
          ? ` F1 ${q.f1_a.toFixed(2)}→${q.f1_b.toFixed(2)}`
          : "";
        out.push(`    ${q.id}  EM ${q.em_a}→${q.em_b}${f1}  ${cut(q.a, 21)} → ${cut(q.b, 21)}`);
      }
    }
  }
  if (d.unpaired.a.length + d.unpaired.b.length > 0) {
    out.push(
      "",
      `without a partner: A ${d.unpaired.a.join(", ") || "-"}; B ${d.unpaired.b.join(", ") || "-"}`,
    );
  }
  return out.join("\n") + "\n";
}
