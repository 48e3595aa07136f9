/**
 * Seeded text generators for the MRQA/MLQA/DPR parity tests: answers and
 * passages drawn from pieces that exercise the official scripts' rules
 * (articles of every MLQA language, CJK, Arabic, combining marks, the
 * punctuation and whitespace sets, case-folding specials, code points newer
 * than Unicode 14.0).
 *
 * @module
 */
import { Xoshiro128StarStar } from "../../metrics/mod.ts";

/** Pieces a generated text is made of. */
export const PIECES: readonly string[] = [
  // articles and words of the MLQA languages
  "the",
  "The",
  "a",
  "an",
  "An",
  "THE",
  "Denver",
  "Broncos",
  "broncos",
  "1984",
  "un",
  "una",
  "unos",
  "unas",
  "el",
  "El",
  "la",
  "los",
  "las",
  "niño",
  "casa",
  "ein",
  "eine",
  "einen",
  "einem",
  "eines",
  "einer",
  "der",
  "die",
  "Das",
  "den",
  "dem",
  "des",
  "Hund",
  "Straße",
  "STRASSE",
  "của",
  "là",
  "cái",
  "chiếc",
  "những",
  "Của",
  "Là",
  "nhà",
  "cu\u0309a",
  "ال",
  "الكتاب",
  "كتاب",
  "والبيت",
  "٣",
  "١٩٨٤",
  "北京",
  "大学",
  "中国",
  "人",
  "𠀀",
  "龥",
  "龦",
  "हिन्दी",
  "भारत",
  "१९८४",
  "ΟΔΟΣ",
  "Σ",
  "ς",
  "İstanbul",
  "ı",
  "I",
  "ß",
  "ẞ",
  "\u212a",
  "k",
  "ſ",
  "µ",
  "ǅ",
  "e\u0301",
  "é",
  "A\u030a",
  "\u212b",
  "\u0301",
  "\u0345",
  "Москва",
  "ไทย",
  "Türkçe",
  "Ελλάδα",
  "România",
  // punctuation (ASCII symbols, Unicode P*, symbols that are not P*)
  ",",
  ".",
  "!",
  "?",
  "¿",
  "¡",
  "«",
  "»",
  "—",
  "–",
  "、",
  "。",
  "「",
  "」",
  "·",
  "'",
  '"',
  "$",
  "^",
  "`",
  "|",
  "~",
  "+",
  "<",
  "=",
  ">",
  "_",
  "-",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  "\\",
  "€",
  "©",
  "°",
  "±",
  "\u2028",
  // whitespace of every kind str.split() knows, and some it does not
  " ",
  " ",
  " ",
  "  ",
  "\u00a0",
  "\u2009",
  "\u3000",
  "\n",
  "\t",
  "\r",
  "\x1c",
  "\x1f",
  "\u0085",
  "\u200b",
  "\ufeff",
  "\u180e",
  // newer than Unicode 14.0 (unassigned for CPython 3.11)
  "\u{1e4d0}",
  "\u{11f00}",
  "\u0897",
  "\u{105c9}",
  "\ua7dc",
  "ƛ",
];

/** A seeded text generator. */
export class TextGen {
  readonly g: Xoshiro128StarStar;
  constructor(seed: number) {
    this.g = new Xoshiro128StarStar(seed);
  }
  /** An integer in [0, n). */
  below(n: number): number {
    return this.g.below(n);
  }
  /** One of `xs`. */
  pick<T>(xs: readonly T[]): T {
    return xs[this.g.below(xs.length)];
  }
  /** A text of up to `max` pieces, usually separated by spaces. */
  text(max: number): string {
    const n = this.below(max + 1);
    let s = "";
    for (let i = 0; i < n; i++) {
      if (i > 0 && this.below(4) !== 0) s += " ";
      s += this.pick(PIECES);
    }
    return s;
  }
  /** A prediction derived from an answer (often overlapping it) or fresh. */
  near(answer: string): string {
    const words = answer.split(" ");
    switch (this.below(5)) {
      case 0:
        return answer;
      case 1:
        return words.slice(this.below(words.length + 1)).join(" ");
      case 2:
        return `${this.pick(PIECES)} ${answer}${this.pick(PIECES)}`;
      case 3:
        return answer.toUpperCase();
      default:
        return this.text(5);
    }
  }
}
