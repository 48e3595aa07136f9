/**
 * The bounded matcher of `pyregex.ts`'s patterns: a parsed pattern
 * ({@linkcode Node}) run by backtracking over code points, as CPython's
 * positions are, in CPython's order, asking only whether a match exists.
 * Each piece is tested with the `v`-mode class `pyregex.ts` translated it
 * to. Its work is bounded: a `search` or `match` that takes more than
 * {@linkcode PY_REGEX_STEP_BUDGET} steps, or nests deeper than the stack
 * allows, is cut off with {@linkcode PyRegexBudgetError}.
 *
 * @module
 */
import * as Data from "effect/Data";
import { pyCategoryClass, rangesBody } from "./_py311_unicode.ts";

// ---------------------------------------------------------------------------
// Python's categories `\d \D \w \W \s \S` (the matcher's `\b` tests `\w`)
// ---------------------------------------------------------------------------

/** `str.isspace()`'s code points, as sorted inclusive ranges. */
const SPACES: number[] = [
  0x9,
  0xd,
  0x1c,
  0x20,
  0x85,
  0x85,
  0xa0,
  0xa0,
  0x1680,
  0x1680,
  0x2000,
  0x200a,
  0x2028,
  0x2029,
  0x202f,
  0x202f,
  0x205f,
  0x205f,
  0x3000,
  0x3000,
];

let catCache: Map<string, string> | undefined;

/** A nested `v`-mode class for `\d \D \w \W \s \S`. */
export function categoryOperand(name: string): string {
  catCache ??= new Map();
  let src = catCache.get(name);
  if (src === undefined) {
    const lower = name.toLowerCase();
    const pos = lower === "d"
      ? pyCategoryClass((c) => c === "Nd")
      : lower === "w"
      ? pyCategoryClass((c) => c[0] === "L" || c[0] === "N", [0x5f])
      : `[${rangesBody(SPACES)}]`;
    src = lower === name ? pos : `[^${pos}]`;
    catCache.set(name, src);
  }
  return src;
}

// ---------------------------------------------------------------------------
// The bounded matcher
// ---------------------------------------------------------------------------

/** A zero-width assertion: MULTILINE `^` and `$`, `\A`, `\Z`, `\b`, `\B`. */
export type At = "bol" | "eol" | "A" | "Z" | "b" | "B";

/** A parsed pattern, as the matcher runs it (on code points, as CPython does). */
export type Node =
  | { readonly t: "char"; readonly src: string }
  | { readonly t: "at"; readonly at: At }
  | { readonly t: "seq"; readonly items: readonly Node[] }
  | { readonly t: "alt"; readonly items: readonly Node[] }
  | {
    readonly t: "rep";
    readonly x: Node;
    readonly min: number;
    readonly max: number;
    readonly lazy: boolean;
  }
  | {
    readonly t: "look";
    readonly x: Node;
    readonly neg: boolean;
    readonly behind: boolean;
    readonly width: number;
  };

/** A one-character piece: its `v`-mode class (or atom) and its node. */
export function oneChar(src: string): { src: string; node: Node } {
  return { src, node: { t: "char", src } };
}

/**
 * The work one `search` or `match` may do before it is cut off
 * ({@linkcode PyRegexBudgetError}): steps of the matcher (each a piece
 * tried at one position). A CuratedTREC pattern matched against a passage
 * takes a few thousand; 10,000,000 take about half a second.
 */
export const PY_REGEX_STEP_BUDGET = 10_000_000;

/**
 * A match cut off: the pattern needed more than its step budget on one
 * text (catastrophic backtracking, such as `(a+)+$` against `aaa…a!`, on
 * which Python's `re` would run for ages too), or nested deeper than the
 * stack allows.
 *
 * @example
 * ```ts
 * import { compilePyRegex } from "./pyregex.ts";
 * import { PyRegexBudgetError } from "./pyregex_match.ts";
 * let e: unknown;
 * try {
 *   compilePyRegex("(a+)+$").match("a".repeat(40) + "!");
 * } catch (u) {
 *   e = u;
 * }
 * if (!(e instanceof PyRegexBudgetError) || e.steps !== 10_000_000) throw new Error(String(e));
 * ```
 */
export class PyRegexBudgetError extends Data.TaggedError("PyRegexBudgetError")<{
  /** The pattern as given. */
  readonly pattern: string;
  /** The steps it was allowed. */
  readonly steps: number;
  /** The length of the text, in code points. */
  readonly length: number;
  /** What ran out: the steps, or the stack (a match nested too deep). */
  readonly why: "steps" | "stack";
}> {
  /** One line naming the pattern and what ran out. */
  override get message(): string {
    const what = this.why === "steps"
      ? `after ${this.steps} steps (catastrophic backtracking)`
      : "(nested deeper than the stack allows)";
    return `Python regular expression ${
      JSON.stringify(this.pattern)
    } cut off ${what} on a text of ${this.length} characters`;
  }
}

/** What follows a piece: the rest of the match from position `j`. */
export type Cont = (j: number) => boolean;
/** A compiled piece: does it match at position `i`, followed by `k`? */
export type Matcher = (i: number, k: Cont) => boolean;

/** The matcher's state for one call: the text's code points and the steps left. */
const run = { cps: [] as number[], n: 0, left: 0 };

const CUT = Symbol("cut");

function tick(): void {
  if (--run.left < 0) throw CUT;
}

let wordTest: ((cp: number) => boolean) | undefined;

/** A code point test for a `v`-mode class (memoised per code point). */
function charTest(src: string): (cp: number) => boolean {
  const re = new RegExp(`^(?:${src})$`, "v");
  // Latin-1 answers from a table (0: not known yet, 1: no, 2: yes), others from a map.
  const low = new Uint8Array(256);
  const memo = new Map<number, boolean>();
  return (cp) => {
    if (cp < 256) {
      const k = low[cp];
      if (k !== 0) return k === 2;
      const r = re.test(String.fromCodePoint(cp));
      low[cp] = r ? 2 : 1;
      return r;
    }
    let r = memo.get(cp);
    if (r === undefined) {
      r = re.test(String.fromCodePoint(cp));
      if (memo.size < 65536) memo.set(cp, r);
    }
    return r;
  };
}

function isWordAt(i: number): boolean {
  wordTest ??= charTest(categoryOperand("w"));
  return i >= 0 && i < run.n && wordTest(run.cps[i]);
}

function assertion(at: At, i: number): boolean {
  const { cps, n } = run;
  switch (at) {
    case "bol":
      return i === 0 || cps[i - 1] === 0x0a;
    case "eol":
      return i === n || cps[i] === 0x0a;
    case "A":
      return i === 0;
    case "Z":
      return i === n;
    case "b":
      return isWordAt(i - 1) !== isWordAt(i);
    case "B":
      return n > 0 && isWordAt(i - 1) === isWordAt(i);
  }
}

/**
 * The node as a continuation-passing backtracking matcher: `m(i, k)` is
 * true when the node matches from `i` to some `j` with `k(j)` true, tried in
 * the order of CPython's `re` and of JavaScript's engine (greedy, lazy,
 * left alternative first; a repetition past its minimum stops at an empty
 * iteration; look-arounds are atomic). Only whether a match exists is
 * asked, so captures are not kept.
 */
export function matcher(node: Node): Matcher {
  switch (node.t) {
    case "char": {
      const test = charTest(node.src);
      return (i, k) => {
        tick();
        return i < run.n && test(run.cps[i]) && k(i + 1);
      };
    }
    case "at": {
      const at = node.at;
      return (i, k) => {
        tick();
        return assertion(at, i) && k(i);
      };
    }
    case "seq": {
      const ms = node.items.map(matcher);
      if (ms.length === 0) return (i, k) => k(i);
      if (ms.length === 1) return ms[0];
      const chain: Matcher[] = [];
      for (let p = ms.length - 1; p >= 0; p--) {
        const next = chain[p + 1];
        const m = ms[p];
        chain[p] = next === undefined ? m : (i, k) => m(i, (j) => next(j, k));
      }
      return chain[0];
    }
    case "alt": {
      const ms = node.items.map(matcher);
      return (i, k) => {
        for (const m of ms) if (m(i, k)) return true;
        return false;
      };
    }
    case "rep": {
      const { min, max, lazy } = node;
      if (node.x.t === "char") {
        // One character repeated: the run is measured, then backed off, without recursion.
        const test = charTest(node.x.src);
        return (i, k) => {
          let len = 0;
          while (len < max && i + len < run.n) {
            tick();
            if (!test(run.cps[i + len])) break;
            len++;
          }
          if (len < min) return false;
          if (lazy) {
            for (let j = min; j <= len; j++) {
              tick();
              if (k(i + j)) return true;
            }
            return false;
          }
          for (let j = len; j >= min; j--) {
            tick();
            if (k(i + j)) return true;
          }
          return false;
        };
      }
      const x = matcher(node.x);
      const go = (c: number, i: number, k: Cont): boolean => {
        tick();
        if (c < min) return x(i, (j) => go(c + 1, j, k));
        if (lazy) return k(i) || (c < max && x(i, (j) => j !== i && go(c + 1, j, k)));
        return (c < max && x(i, (j) => j !== i && go(c + 1, j, k))) || k(i);
      };
      return (i, k) => go(0, i, k);
    }
    case "look": {
      const x = matcher(node.x);
      const { neg, behind, width } = node;
      return (i, k) => {
        tick();
        const found = behind ? i - width >= 0 && x(i - width, (j) => j === i) : x(i, () => true);
        return found !== neg && k(i);
      };
    }
  }
}

/**
 * A test every first character of a match passes, when the node must
 * consume one and tells which (`undefined`: it may match empty, or starts
 * otherwise): `search` tries only the positions whose character passes.
 */
export function firstTest(node: Node): ((cp: number) => boolean) | undefined {
  switch (node.t) {
    case "char":
      return charTest(node.src);
    case "seq":
      for (const item of node.items) {
        if (item.t === "at" || item.t === "look") continue; // zero width: the next consumes
        return firstTest(item);
      }
      return undefined;
    case "alt": {
      const tests = node.items.map(firstTest);
      if (tests.some((t) => t === undefined)) return undefined;
      return (cp) => tests.some((t) => t!(cp));
    }
    case "rep":
      return node.min >= 1 ? firstTest(node.x) : undefined;
    default:
      return undefined;
  }
}

/** `search` (from every position) or `match` (from 0) of a compiled node on `text`. */
export function runMatcher(
  m: Matcher,
  pattern: string,
  text: string,
  anchored: boolean,
  budget: number,
  first?: (cp: number) => boolean,
): boolean {
  const cps = codePoints(text);
  run.cps = cps;
  run.n = cps.length;
  run.left = budget;
  const done = () => true;
  try {
    if (anchored) return m(0, done);
    if (first !== undefined) {
      for (let s = 0; s < cps.length; s++) {
        tick();
        if (first(cps[s]) && m(s, done)) return true;
      }
      return false;
    }
    for (let s = 0; s <= cps.length; s++) if (m(s, done)) return true;
    return false;
  } catch (e) {
    if (e === CUT || e instanceof RangeError) {
      const why = e === CUT ? "steps" : "stack";
      throw new PyRegexBudgetError({ pattern, steps: budget, length: cps.length, why });
    }
    throw e;
  }
}

const HAS_SURROGATE = /[\ud800-\udfff]/;
let lastText = "";
let lastCps: number[] = [];

/** The code points of `text` (the last text's are kept: answers are tried on one text in turn). */
function codePoints(text: string): number[] {
  if (text === lastText) return lastCps;
  const cps: number[] = new Array(text.length);
  if (!HAS_SURROGATE.test(text)) {
    for (let i = 0; i < text.length; i++) cps[i] = text.charCodeAt(i);
  } else {
    cps.length = 0;
    for (const ch of text) cps.push(ch.codePointAt(0)!);
  }
  lastText = text;
  lastCps = cps;
  return cps;
}
