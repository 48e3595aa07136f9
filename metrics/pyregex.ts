/**
 * Python regular expressions (CPython 3.11 `re`) run on JavaScript's engine,
 * for the answer patterns of CuratedTREC-style datasets: a pattern compiled
 * as DPR's `regex_match` and DrQA's `regex_match_score` compile it,
 * `re.compile(p, flags=re.IGNORECASE + re.UNICODE + re.MULTILINE)`, then
 * `search` (DPR's `has_answer`) or `match` (DrQA, DensePhrases). A pattern
 * is translated only where the translation matches exactly the strings
 * Python's matches; anything else is refused by name
 * ({@linkcode PyRegexError}), never silently changed.
 *
 * What is translated, against Python's definitions (Unicode 14.0 data):
 *
 * - literals and escapes (`\a \f \n \r \t \v \\`, `\xhh`, `\uhhhh`,
 *   `\Uhhhhhhhh`, octal `\0`, `\012`, `\123`, escaped punctuation);
 * - IGNORECASE as `re` does it (not JavaScript's `i`): a cased character `c`
 *   matches every `t` whose simple lower case (`_sre.unicode_tolower`) is
 *   `c`'s or one of `re._casefix`'s equivalents of it (so `İ` matches `i`,
 *   `ı` matches `I`, `K` (Kelvin) matches `k`, `ẞ` matches `ß` but `ß`, which
 *   `re` does not count as cased, matches only itself); a class with a cased
 *   member tests the lower case of the character; these sets are expanded
 *   into explicit classes;
 * - `.` (any character but `\n`), MULTILINE `^` (start or after `\n`) and
 *   `$` (end or before `\n`), `\A`, `\Z`;
 * - `\d` (category Nd), `\w` (`str.isalnum()` or `_`), `\s` (`str.isspace()`),
 *   their negations, `\b` and `\B` on that `\w` (`\B` never matches in an
 *   empty string, as in CPython), inside and outside classes;
 * - classes with ranges and negation (`]` first is a literal, `\b` is a
 *   backspace), groups `( )`, `(?: )`, `(?P<name> )`, comments `(?# )`,
 *   look-ahead, fixed-width look-behind, alternation, greedy and lazy
 *   quantifiers `* + ? {m} {m,} {,n} {m,n}` (a `{` that is no quantifier is a
 *   literal, as in Python).
 *
 * Refused: back-references (`\1`, `(?P=name)`: `re` compares them
 * case-insensitively), inline flags (`(?i)`, `(?x)`, `(?s)`, `(?a:...)`,
 * ...), atomic groups `(?>...)`, possessive quantifiers (`*+`, ...),
 * conditional groups `(?(1)...)`, `\N{...}`, a quantified look-around, class
 * ranges reaching above U+FFFF (`re` matches them case-insensitively by upper
 * case as well), group names that are not ASCII identifiers, and every
 * pattern CPython itself rejects (DPR and DrQA count such a pattern as no
 * match; here it is refused, naming Python's error).
 *
 * Matching: the translation's classes test each character, and the pattern
 * runs on phraseval's own backtracking matcher (`pyregex_match.ts`) over code points (as
 * CPython's positions are), in CPython's order, asking only whether a match
 * exists. Its work is bounded: a `search` or `match` that takes more than
 * {@linkcode PY_REGEX_STEP_BUDGET} steps (catastrophic backtracking, such as
 * `(a+)+$` against forty `a`s and a `!`, on which CPython runs for ages), or
 * nests deeper than the stack allows (a repeated group over thousands of
 * characters), is cut off with {@linkcode PyRegexBudgetError}. The scorers
 * count a cut-off match as not matched and name its question on stderr.
 *
 * DPR's and DrQA's scripts import the third-party `regex` module as `re`; its
 * version-0 behaviour agrees with `re` on the constructs above except that its
 * `\w` (and so `\b`) also counts marks and a few other characters as word
 * characters. This module follows CPython's `re` (as DensePhrases does); the
 * reference `bench/reference/dpr_eval.py` does the same.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compilePyRegex } from "./pyregex.ts";
 * const r = compilePyRegex("\\bKelvin\\b|Stra(ss|ß)e");
 * assert.deepEqual(r.search("the \u212aelvin scale"), true);
 * assert.deepEqual(r.match("Straße 5"), true);
 * assert.throws(() => compilePyRegex("(a)\\1"), /back-reference/);
 * ```
 *
 * @module
 */
import * as Data from "effect/Data";
import {
  cpAtom,
  pyExtraCases,
  pyIsCased,
  pyLower,
  pyLowerKeys,
  rangesBody,
} from "./_py311_unicode.ts";
import {
  type At,
  categoryOperand,
  firstTest,
  matcher,
  type Node,
  oneChar,
  PY_REGEX_STEP_BUDGET,
  runMatcher,
} from "./pyregex_match.ts";

/**
 * A pattern refused: CPython rejects it, or the translation could not match
 * exactly what CPython matches.
 *
 * @example
 * ```ts
 * import { PyRegexError } from "./pyregex.ts";
 * const e = new PyRegexError({ pattern: "a*+", construct: "possessive quantifier" });
 * if (e.message !== 'Python regular expression "a*+" refused: possessive quantifier') throw e;
 * ```
 */
export class PyRegexError extends Data.TaggedError("PyRegexError")<{
  /** The pattern as given. */
  readonly pattern: string;
  /** What was refused, and why. */
  readonly construct: string;
}> {
  /** One line naming the pattern and the construct. */
  override get message(): string {
    return `Python regular expression ${JSON.stringify(this.pattern)} refused: ${this.construct}`;
  }
}

/** A compiled pattern: Python's `search` and `match` as booleans. */
export interface PyRegex {
  /** The Python pattern. */
  readonly pattern: string;
  /** Its translation to a JavaScript pattern (flag `v`), whose classes the matcher tests. */
  readonly source: string;
  /**
   * `pattern.search(text) is not None`; a search that needs more than
   * `budget` steps (default {@linkcode PY_REGEX_STEP_BUDGET}) throws
   * {@linkcode PyRegexBudgetError}.
   */
  search(text: string, budget?: number): boolean;
  /** `pattern.match(text) is not None` (anchored at the start only); bounded as `search`. */
  match(text: string, budget?: number): boolean;
}

// ---------------------------------------------------------------------------
// Sets of code points as sorted inclusive ranges [lo0, hi0, lo1, hi1, ...]
// ---------------------------------------------------------------------------

type Ranges = number[];

function normalizeRanges(pairs: [number, number][]): Ranges {
  pairs.sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of pairs) {
    const n = out.length;
    if (n > 0 && lo <= out[n - 1] + 1) out[n - 1] = Math.max(out[n - 1], hi);
    else out.push(lo, hi);
  }
  return out;
}

function hasPoint(r: Ranges, cp: number): boolean {
  let lo = 0;
  let hi = r.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < r[2 * mid]) hi = mid - 1;
    else if (cp > r[2 * mid + 1]) lo = mid + 1;
    else return true;
  }
  return false;
}

let inverseLower: Map<number, number[]> | undefined;

/** The code points `t` with `pyLower(t) === lower`, `lower` itself excluded. */
function upperOf(lower: number): readonly number[] {
  if (inverseLower === undefined) {
    inverseLower = new Map();
    for (const t of pyLowerKeys()) {
      const l = pyLower(t);
      const list = inverseLower.get(l);
      if (list) list.push(t);
      else inverseLower.set(l, [t]);
    }
  }
  return inverseLower.get(lower) ?? [];
}

/** `{t : pyLower(t) ∈ targets}` for a set of targets that are their own lower case. */
function lowerPreimage(targets: Ranges): Ranges {
  const pairs: [number, number][] = [];
  for (let i = 0; i < targets.length; i += 2) pairs.push([targets[i], targets[i + 1]]);
  // members whose lower case is elsewhere leave; upper cases of members join
  const keys = pyLowerKeys();
  const out = normalizeRanges(pairs);
  const remove = keys.filter((t) => hasPoint(out, t) && !hasPoint(out, pyLower(t)));
  const add = keys.filter((t) => !hasPoint(out, t) && hasPoint(out, pyLower(t)));
  return subtractPoints(
    normalizeRanges([...rangePairs(out), ...add.map((t) => [t, t] as [number, number])]),
    remove,
  );
}

function rangePairs(r: Ranges): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < r.length; i += 2) out.push([r[i], r[i + 1]]);
  return out;
}

function subtractPoints(r: Ranges, points: readonly number[]): Ranges {
  if (points.length === 0) return r;
  const sorted = [...points].sort((a, b) => a - b);
  const out: [number, number][] = [];
  let p = 0;
  for (const [lo0, hi] of rangePairs(r)) {
    let lo = lo0;
    while (p < sorted.length && sorted[p] < lo) p++;
    while (p < sorted.length && sorted[p] <= hi) {
      if (sorted[p] > lo) out.push([lo, sorted[p] - 1]);
      lo = sorted[p] + 1;
      p++;
    }
    if (lo <= hi) out.push([lo, hi]);
  }
  return normalizeRanges(out);
}

/** `re`'s lowered targets of a case-insensitive member: its lower case and equivalents. */
function caseTargets(cp: number, into: [number, number][]): void {
  const lo = pyLower(cp);
  into.push([lo, lo]);
  for (const k of pyExtraCases(lo) ?? []) into.push([k, k]);
}

// ---------------------------------------------------------------------------
// Pieces of the translation
// ---------------------------------------------------------------------------

const ANY_CHAR = "[\\s\\S]";
const NOT_NL = `[^${cpAtom(0xa)}]`;

function boundary(negated: boolean): string {
  const w = categoryOperand("w");
  if (!negated) return `(?:(?<=${w})(?!${w})|(?<!${w})(?=${w}))`;
  return `(?:(?<=${ANY_CHAR})|(?=${ANY_CHAR}))(?:(?<=${w})(?=${w})|(?<!${w})(?!${w}))`;
}

/** A literal under IGNORECASE. */
function literal(cp: number): string {
  if (!pyIsCased(cp)) return cpAtom(cp);
  const targets: [number, number][] = [];
  caseTargets(cp, targets);
  const set: [number, number][] = [];
  for (const [t] of targets) {
    set.push([t, t]);
    for (const u of upperOf(t)) set.push([u, u]);
  }
  return `[${rangesBody(normalizeRanges(set))}]`;
}

type ClassItem =
  | { readonly kind: "lit"; readonly cp: number }
  | { readonly kind: "range"; readonly lo: number; readonly hi: number }
  | { readonly kind: "cat"; readonly name: string };

/** A class under IGNORECASE, as `re`'s compiler treats it. */
function charClass(items: readonly ClassItem[], negate: boolean, refuse: (c: string) => never) {
  // `_uniq`, then a single literal is compiled as a literal
  const seen = new Set<string>();
  const uniq = items.filter((it) => {
    const k = JSON.stringify(it);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  if (uniq.length === 1 && uniq[0].kind === "lit") {
    const lit = literal(uniq[0].cp);
    return negate ? `[^${lit.startsWith("[") ? lit : `[${lit}]`}]` : lit;
  }
  let hascased = false;
  const cats: string[] = [];
  for (const it of uniq) {
    if (it.kind === "cat") cats.push(categoryOperand(it.name));
    else if (it.kind === "lit") {
      if (it.cp > 0xffff || pyIsCased(it.cp)) hascased = true;
    } else {
      if (it.hi > 0xffff) {
        refuse(
          "a class range reaching above U+FFFF (re matches it case-insensitively by upper case too)",
        );
      }
      for (let c = it.lo; c <= it.hi && !hascased; c++) if (pyIsCased(c)) hascased = true;
    }
  }
  let set: Ranges;
  if (!hascased) {
    set = normalizeRanges(
      uniq.filter((it) => it.kind !== "cat").map((it) =>
        it.kind === "lit" ? [it.cp, it.cp] : [(it as { lo: number }).lo, (it as { hi: number }).hi]
      ),
    );
  } else {
    const targets: [number, number][] = [];
    const raw: number[] = [];
    for (const it of uniq) {
      if (it.kind === "lit") {
        if (it.cp > 0xffff) raw.push(it.cp); // re keeps it as is, tested against lower(t)
        else caseTargets(it.cp, targets);
      } else if (it.kind === "range") {
        // lower-case every member; the members that are their own lower case stay as a range
        targets.push([it.lo, it.hi]);
        for (const t of pyLowerKeys()) if (t >= it.lo && t <= it.hi) caseTargets(t, targets);
      }
    }
    let lowered = normalizeRanges(targets);
    // members of a range whose lower case differs are not targets themselves
    const single = new Set(targets.filter(([a, b]) => a === b && a !== undefined).map(([a]) => a));
    const ranges = uniq.filter((it) => it.kind === "range");
    const drop = pyLowerKeys().filter((t) =>
      hasPoint(lowered, t) && !single.has(t) &&
      ranges.some((it) => t >= it.lo && t <= it.hi)
    );
    lowered = subtractPoints(lowered, drop);
    // equivalents of every lowered member
    const extra: [number, number][] = [];
    for (const k of EXTRA_KEYS()) {
      if (hasPoint(lowered, k)) { for (const e of pyExtraCases(k)!) extra.push([e, e]); }
    }
    lowered = normalizeRanges([...rangePairs(lowered), ...extra]);
    set = lowerPreimage(lowered);
    // raw (non-BMP) members: t with lower(t) equal to them
    const rawSet: [number, number][] = [];
    for (const r of raw) {
      if (pyLower(r) === r) rawSet.push([r, r]);
      for (const u of upperOf(r)) rawSet.push([u, u]);
    }
    set = normalizeRanges([...rangePairs(set), ...rawSet]);
  }
  return `[${negate ? "^" : ""}${rangesBody(set)}${cats.join("")}]`;
}

let extraKeys: number[] | undefined;
function EXTRA_KEYS(): number[] {
  if (extraKeys === undefined) {
    extraKeys = [];
    for (let cp = 0; cp < 0x10000; cp++) if (pyExtraCases(cp) !== undefined) extraKeys.push(cp);
  }
  return extraKeys;
}

// ---------------------------------------------------------------------------
// The parser (CPython's `re._parser`, for str patterns)
// ---------------------------------------------------------------------------

const MAXREPEAT = 4294967295;

interface Piece {
  readonly src: string;
  /** The same piece for the bounded matcher (`Node`). */
  readonly node: Node;
  /** Python's item kind, for the quantifier rules. */
  readonly kind: "atom" | "at" | "look" | "repeat" | "group";
  readonly min: number;
  readonly max: number;
}

const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";
const isOct = (c: string | undefined) => c !== undefined && c >= "0" && c <= "7";
const isHex = (c: string | undefined) => c !== undefined && /^[0-9a-fA-F]$/.test(c);
const isAsciiLetter = (c: string) => /^[A-Za-z]$/.test(c);

const ESCAPES: Record<string, number> = {
  a: 7,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  "\\": 92,
};

class Parser {
  readonly cs: string[];
  i = 0;
  readonly names = new Set<string>();

  constructor(readonly pattern: string) {
    this.cs = Array.from(pattern);
  }

  refuse(construct: string): never {
    throw new PyRegexError({ pattern: this.pattern, construct });
  }

  invalid(what: string): never {
    this.refuse(`CPython cannot compile it (re.error: ${what})`);
  }

  peek(): string | undefined {
    return this.cs[this.i];
  }

  parseAlt(inGroup: boolean): Piece {
    const branches: Piece[] = [this.parseSeq()];
    while (this.peek() === "|") {
      this.i++;
      branches.push(this.parseSeq());
    }
    if (!inGroup && this.peek() === ")") this.invalid("unbalanced parenthesis");
    if (branches.length === 1) return branches[0];
    return {
      src: branches.map((b) => b.src).join("|"),
      node: { t: "alt", items: branches.map((b) => b.node) },
      kind: "group",
      min: Math.min(...branches.map((b) => b.min)),
      max: Math.max(...branches.map((b) => b.max)),
    };
  }

  parseSeq(): Piece {
    const items: Piece[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === "|" || c === ")") break;
      this.i++;
      if (c === "(") {
        const g = this.parseGroup();
        if (g !== undefined) items.push(g);
        continue;
      }
      if (c === "?" || c === "*" || c === "+" || c === "{") {
        const q = this.quantifier(c);
        if (q === undefined) {
          items.push({ ...oneChar(cpAtom(0x7b)), kind: "atom", min: 1, max: 1 }); // literal '{'
          continue;
        }
        const last = items[items.length - 1];
        if (last === undefined || last.kind === "at") this.invalid("nothing to repeat");
        if (last.kind === "repeat") this.invalid("multiple repeat");
        if (last.kind === "look") this.refuse("a quantified look-around");
        let lazy = "";
        if (this.peek() === "?") {
          this.i++;
          lazy = "?";
        } else if (this.peek() === "+") this.refuse("possessive quantifier");
        const [m, n] = q;
        const qs = m === 0 && n === Infinity
          ? "*"
          : m === 1 && n === Infinity
          ? "+"
          : m === 0 && n === 1
          ? "?"
          : n === Infinity
          ? `{${m},}`
          : `{${m},${n}}`;
        items[items.length - 1] = {
          src: `(?:${last.src})${qs}${lazy}`,
          node: { t: "rep", x: last.node, min: m, max: n, lazy: lazy === "?" },
          kind: "repeat",
          min: Math.min(last.min * m, MAXREPEAT - 1),
          max: n === 0 ? 0 : Math.min(last.max * n, Infinity),
        };
        continue;
      }
      items.push(this.atom(c));
    }
    return {
      src: items.map((p) => p.src).join(""),
      node: items.length === 1 ? items[0].node : { t: "seq", items: items.map((p) => p.node) },
      kind: items.length === 1 ? items[0].kind : "group",
      min: items.reduce((s, p) => s + p.min, 0),
      max: items.reduce((s, p) => s + p.max, 0),
    };
  }

  /** `[min, max]` of a quantifier whose first character was read, or undefined for a literal `{`. */
  quantifier(c: string): [number, number] | undefined {
    if (c === "?") return [0, 1];
    if (c === "*") return [0, Infinity];
    if (c === "+") return [1, Infinity];
    const here = this.i;
    if (this.peek() === "}") return undefined;
    let lo = "";
    let hi = "";
    while (isDigit(this.peek())) lo += this.cs[this.i++];
    if (this.peek() === ",") {
      this.i++;
      while (isDigit(this.peek())) hi += this.cs[this.i++];
    } else hi = lo;
    if (this.peek() !== "}") {
      this.i = here;
      return undefined;
    }
    this.i++;
    const min = lo ? Number(lo) : 0;
    const max = hi ? Number(hi) : Infinity;
    if (min >= MAXREPEAT || (hi && max >= MAXREPEAT)) {
      this.invalid("the repetition number is too large");
    }
    if (max < min) this.invalid("min repeat greater than max repeat");
    return [min, max];
  }

  parseGroup(): Piece | undefined {
    let kind: "group" | "look" = "group";
    let open = "(?:";
    let behind = false;
    if (this.peek() === "?") {
      this.i++;
      const c = this.cs[this.i++];
      if (c === ":") { /* non-capturing */ }
      else if (c === "P") {
        const d = this.cs[this.i++];
        if (d === "<") {
          let name = "";
          while (this.peek() !== undefined && this.peek() !== ">") name += this.cs[this.i++];
          if (this.peek() !== ">") this.invalid("missing >, unterminated name");
          this.i++;
          if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
            if (name === "") this.invalid("missing group name");
            this.refuse(
              `group name ${JSON.stringify(name)} (only ASCII identifiers are translated)`,
            );
          }
          if (this.names.has(name)) this.invalid(`redefinition of group name '${name}'`);
          this.names.add(name);
        } else if (d === "=") this.refuse("back-reference (?P=name)");
        else this.invalid("unknown extension ?P");
      } else if (c === "=" || c === "!") {
        kind = "look";
        open = `(?${c}`;
      } else if (c === "<") {
        const d = this.cs[this.i++];
        if (d !== "=" && d !== "!") this.invalid("unknown extension ?<");
        kind = "look";
        behind = true;
        open = `(?<${d}`;
      } else if (c === "#") {
        for (;;) {
          const e = this.cs[this.i++];
          if (e === undefined) this.invalid("missing ), unterminated comment");
          if (e === ")") return undefined;
        }
      } else if (c === ">") this.refuse("atomic group (?>...)");
      else if (c === "(") this.refuse("conditional group (?(...)...)");
      else if (c !== undefined && /^[aiLmsux-]$/.test(c)) this.refuse("inline flags (?...)");
      else this.invalid(`unknown extension ?${c ?? ""}`);
    }
    const inner = this.parseAlt(true);
    if (this.peek() !== ")") this.invalid("missing ), unterminated subpattern");
    this.i++;
    if (behind && inner.min !== inner.max) {
      this.invalid("look-behind requires fixed-width pattern");
    }
    if (kind === "look") {
      const node: Node = {
        t: "look",
        x: inner.node,
        neg: open.endsWith("!"),
        behind,
        width: inner.min,
      };
      return { src: `${open}${inner.src})`, node, kind, min: 0, max: 0 };
    }
    return {
      src: `(?:${inner.src})`,
      node: inner.node,
      kind: "group",
      min: inner.min,
      max: inner.max,
    };
  }

  atom(c: string): Piece {
    const one = (src: string): Piece => ({ ...oneChar(src), kind: "atom", min: 1, max: 1 });
    const at = (src: string, at: At): Piece => ({
      src,
      node: { t: "at", at },
      kind: "at",
      min: 0,
      max: 0,
    });
    if (c === ".") return one(NOT_NL);
    if (c === "^") return at(`(?<!${NOT_NL})`, "bol");
    if (c === "$") return at(`(?!${NOT_NL})`, "eol");
    if (c === "[") return one(this.parseClass());
    if (c !== "\\") return one(literal(c.codePointAt(0)!));
    const e = this.cs[this.i++];
    if (e === undefined) this.invalid("bad escape (end of pattern)");
    if (e === "A") return at(`(?<!${ANY_CHAR})`, "A");
    if (e === "Z") return at(`(?!${ANY_CHAR})`, "Z");
    if (e === "b") return at(boundary(false), "b");
    if (e === "B") return at(boundary(true), "B");
    if ("dDsSwW".includes(e)) return one(`[${categoryOperand(e)}]`);
    if (Object.hasOwn(ESCAPES, e)) return one(literal(ESCAPES[e]));
    const cp = this.numericEscape(e, false);
    if (cp !== undefined) return one(literal(cp));
    if (e === "0") {
      let s = "0";
      for (let k = 0; k < 2 && isOct(this.peek()); k++) s += this.cs[this.i++];
      return one(literal(parseInt(s, 8)));
    }
    if (isDigit(e)) {
      if (isDigit(this.peek())) {
        const d = this.cs[this.i++];
        if (isOct(e) && isOct(d) && isOct(this.peek())) {
          const v = parseInt(e + d + this.cs[this.i++], 8);
          if (v > 0o377) this.invalid("octal escape value outside of range 0-0o377");
          return one(literal(v));
        }
      }
      this.refuse("back-reference \\N (re compares it case-insensitively)");
    }
    if (isAsciiLetter(e)) this.invalid(`bad escape \\${e}`);
    return one(literal(e.codePointAt(0)!));
  }

  /** `\x \u \U \N` (shared by both escape kinds); undefined for other escapes. */
  numericEscape(e: string, _inClass: boolean): number | undefined {
    const hex = (n: number) => {
      let s = "";
      while (s.length < n && isHex(this.peek())) s += this.cs[this.i++];
      if (s.length !== n) this.invalid(`incomplete escape \\${e}${s}`);
      return parseInt(s, 16);
    };
    if (e === "x") return hex(2);
    if (e === "u") return hex(4);
    if (e === "U") {
      const v = hex(8);
      if (v > 0x10ffff) this.invalid(`bad escape \\U${v.toString(16)}`);
      return v;
    }
    if (e === "N") this.refuse("named character escape \\N{...}");
    return undefined;
  }

  classEscape(): ClassItem {
    const e = this.cs[this.i++];
    if (e === undefined) this.invalid("unterminated character set");
    if (e === "b") return { kind: "lit", cp: 8 };
    if (Object.hasOwn(ESCAPES, e)) return { kind: "lit", cp: ESCAPES[e] };
    if ("dDsSwW".includes(e)) return { kind: "cat", name: e };
    const cp = this.numericEscape(e, true);
    if (cp !== undefined) return { kind: "lit", cp };
    if (isOct(e)) {
      let s = e;
      for (let k = 0; k < 2 && isOct(this.peek()); k++) s += this.cs[this.i++];
      const v = parseInt(s, 8);
      if (v > 0o377) this.invalid("octal escape value outside of range 0-0o377");
      return { kind: "lit", cp: v };
    }
    if (isDigit(e) || isAsciiLetter(e)) this.invalid(`bad escape \\${e}`);
    return { kind: "lit", cp: e.codePointAt(0)! };
  }

  parseClass(): string {
    const items: ClassItem[] = [];
    const negate = this.peek() === "^";
    if (negate) this.i++;
    for (;;) {
      const c = this.cs[this.i++];
      if (c === undefined) this.invalid("unterminated character set");
      if (c === "]" && items.length > 0) break;
      const code1: ClassItem = c === "\\"
        ? this.classEscape()
        : { kind: "lit", cp: c.codePointAt(0)! };
      if (this.peek() === "-") {
        this.i++;
        const that = this.cs[this.i++];
        if (that === undefined) this.invalid("unterminated character set");
        if (that === "]") {
          items.push(code1, { kind: "lit", cp: 0x2d });
          break;
        }
        const code2: ClassItem = that === "\\"
          ? this.classEscape()
          : { kind: "lit", cp: that.codePointAt(0)! };
        if (code1.kind !== "lit" || code2.kind !== "lit") this.invalid("bad character range");
        if (code2.cp < code1.cp) this.invalid("bad character range");
        items.push({ kind: "range", lo: code1.cp, hi: code2.cp });
      } else items.push(code1);
    }
    return charClass(items, negate, (m) => this.refuse(m));
  }
}

const cache = new Map<string, PyRegex>();

/**
 * Compiles a Python pattern as `re.compile(p, re.IGNORECASE | re.UNICODE |
 * re.MULTILINE)` would (see the module notes); compiled patterns are cached.
 *
 * @throws {PyRegexError} for a pattern refused (naming the construct).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compilePyRegex } from "./pyregex.ts";
 * const r = compilePyRegex("(?P<y>\\d{4})s?");
 * assert.deepEqual(r.search("in the \u0661\u0669\u0668\u0660s"), true); // Arabic-Indic digits are \d
 * assert.deepEqual(r.match("in 1980"), false);
 * assert.throws(() => compilePyRegex("(?i)x"), /inline flags/);
 * ```
 */
export function compilePyRegex(pattern: string): PyRegex {
  const hit = cache.get(pattern);
  if (hit !== undefined) return hit;
  const p = new Parser(pattern);
  const root = p.parseAlt(false);
  const body = root.src;
  try {
    new RegExp(body, "v");
  } catch (e) {
    throw new PyRegexError({
      pattern,
      construct: `its translation does not compile here (${(e as Error).message})`,
    });
  }
  const m = matcher(root.node);
  const first = firstTest(root.node);
  const compiled: PyRegex = {
    pattern,
    source: body,
    search: (text, budget = PY_REGEX_STEP_BUDGET) =>
      runMatcher(m, pattern, text, false, budget, first),
    match: (text, budget = PY_REGEX_STEP_BUDGET) => runMatcher(m, pattern, text, true, budget),
  };
  if (cache.size >= 4096) cache.clear();
  cache.set(pattern, compiled);
  return compiled;
}
