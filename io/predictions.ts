/**
 * Prediction files (`pred.json`): a JSON object mapping question ids to
 * answer strings, as the official SQuAD scripts read and PI-SQuAD's merge
 * writes them.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError } from "./errors.ts";
import { type JsonEvent, JsonEventDecoder, JsonSyntaxError } from "./json_events.ts";
import { type PyJson, RawNumber } from "./pyjson.ts";
import { openSource } from "./source.ts";
import { FAST_PARSE_BYTES, parseWhole, parseWholeOf } from "./predictions_whole.ts";

/**
 * Reads a prediction file (`-` for stdin, `.gz` allowed) into a Map. Bad
 * input (invalid JSON with its byte offset, a non-object, a non-string
 * value with its question id) fails with {@linkcode InputError}. A repeated
 * id keeps its last value, as Python's `json.load` does. The file is
 * streamed, so its size is bounded by memory, not by JavaScript's 512 MiB
 * string limit (one answer over that limit is refused as such).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { readPredictions } from "./predictions.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, '{"56be4db0acb8001400a502ec": "Denver Broncos", "q2": "x", "q2": "y"}');
 * const preds = await Effect.runPromise(readPredictions(path));
 * if (preds.get("56be4db0acb8001400a502ec") !== "Denver Broncos") throw new Error();
 * if (preds.get("q2") !== "y") throw new Error("a repeated id keeps its last value");
 * await Deno.remove(path);
 * ```
 */
export const readPredictions = (
  path: string,
): Effect.Effect<Map<string, string>, InputError | FileError> =>
  readIdMap(path, PREDICTIONS, parseWhole);

/**
 * Reads a SQuAD v2.0 no-answer probability file (`evaluate --na-prob-file`:
 * a JSON object of question id → number, as the official v2.0 script's
 * `json.load` reads it) into a Map, streamed as {@linkcode readPredictions}
 * is: a file over JavaScript's 512 MiB string limit reads as any other, and
 * memory is the map's, not the file's text and a parsed copy of it. A value
 * that is not a number is refused naming its question, a string, object or
 * list at its first byte, unread (a wrong file, a SQuAD dataset's `"data"`,
 * is refused without parsing it); a repeated id keeps its last value.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import { readNaProbs } from "./predictions.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, '{"q1": 0.25, "q2": 1e-3}');
 * const p = await Effect.runPromise(readNaProbs(path));
 * if (p.get("q1") !== 0.25 || p.get("q2") !== 0.001) throw new Error();
 * await Deno.remove(path);
 * ```
 */
export const readNaProbs = (
  path: string,
): Effect.Effect<Map<string, number>, InputError | FileError> =>
  readIdMap(path, NA_PROBS, parseWholeNumbers);

/** What an id map file holds: its name in messages, and how a value is taken. */
interface IdMapKind<T> {
  /** What the top-level object maps ids to, as a refusal words it. */
  readonly shape: string;
  /** The value of `ev`, or `undefined` when it is not one (refused by {@linkcode notValue}). */
  readonly value: (v: PyJson) => T | undefined;
  /** The message of a value that is not one. */
  readonly notValue: (v: PyJson) => string;
  /**
   * The message of a value refused at its first byte, unread (one that
   * cannot be one whatever follows it), or `undefined` to read it (absent:
   * every value is read).
   */
  readonly notStart?: (first: number) => string | undefined;
}

const typeName = (v: PyJson) => v === null ? "null" : v instanceof RawNumber ? "number" : typeof v;

const PREDICTIONS: IdMapKind<string> = {
  shape: "question id → answer string",
  value: (v) => typeof v === "string" ? v : undefined,
  notValue: (v) => `prediction is ${typeName(v)}, not a string`,
};

const NA_PROBS: IdMapKind<number> = {
  shape: "question id → no-answer probability",
  value: (v) => v instanceof RawNumber ? Number(v.text) : typeof v === "number" ? v : undefined,
  notValue: () => "not a number",
  // A string, object or list is refused at its first byte: a wrong file (a SQuAD dataset's
  // "data") is not parsed whole first. true, false and null are read (a few bytes), and any
  // other byte is the JSON decoder's to name.
  notStart: (b) => b === 0x22 || b === 0x7b || b === 0x5b ? "not a number" : undefined,
};

/** An object of id → number read whole with `JSON.parse`, or `undefined` for the streaming path. */
const parseWholeNumbers = (chunks: readonly Uint8Array[], size: number) =>
  parseWholeOf(chunks, size, (v): v is number => typeof v === "number");

/**
 * A JSON object of question id → value at `path`, streamed (see
 * {@linkcode readPredictions}); a file of up to `FAST_PARSE_BYTES` first
 * tried whole with `fast`.
 */
const readIdMap = <T>(
  path: string,
  kind: IdMapKind<T>,
  fast: (chunks: readonly Uint8Array[], size: number) => Map<string, T> | undefined,
): Effect.Effect<Map<string, T>, InputError | FileError> =>
  Effect.flatMap(openSource(path), (src) =>
    Effect.tryPromise({
      try: async () => {
        // Streamed: no single string holds the file, so a file over
        // JavaScript's string limit (512 MiB) reads as any other.
        // A file of up to FAST_PARSE_BYTES is first tried with the native JSON.parse (whole);
        // anything it does not take as is (bad JSON, a value not a string, ...) goes through
        // the streaming decoder below, which names the problem.
        const head: Uint8Array[] = [];
        let headBytes = 0;
        const it = src.stream[Symbol.asyncIterator]();
        let rest = true;
        try {
          while (headBytes <= FAST_PARSE_BYTES) {
            const r = await it.next();
            if (r.done) {
              rest = false;
              break;
            }
            head.push(r.value);
            headBytes += r.value.byteLength;
          }
        } catch (e) {
          await it.return?.();
          throw e;
        }
        if (!rest) {
          const whole = fast(head, headBytes);
          if (whole !== undefined) return whole;
        }
        const notStart = kind.notStart;
        const d = new JsonEventDecoder("\0", {
          repeatedKeys: true,
          ...(notStart !== undefined
            ? { readField: (_: string, b: number) => notStart(b) === undefined }
            : {}),
        });
        const out = new Map<string, T>();
        let bytes = 0;
        try {
          for (const c of head) {
            take(d.push(c), out, path, kind);
            bytes += c.byteLength;
          }
          head.length = 0;
          while (rest) {
            const r = await it.next();
            if (r.done) break;
            take(d.push(r.value), out, path, kind);
            bytes += r.value.byteLength;
          }
          take(d.end(), out, path, kind);
        } catch (e) {
          await it.return?.();
          throw asInputError(e, path, bytes, kind.shape);
        }
        return out;
      },
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new InputError({ file: path, where: "", message: String(e) }),
    }));

/** The length above which JavaScript cannot hold a string (V8: 2^29 - 24 code units). */
const MAX_STRING = (1 << 29) - 24;

function asInputError(e: unknown, file: string, bytes: number, shape: string): unknown {
  if (e instanceof JsonSyntaxError) {
    const top = e.message.startsWith("the top-level value");
    return new InputError({
      file,
      where: top || e.offset < 0 ? "" : `byte ${e.offset}`,
      message: top ? `not a JSON object of ${shape}` : e.message,
    });
  }
  if (e instanceof RangeError && /string length/i.test(e.message)) {
    return new InputError({
      file,
      where: `near byte ${bytes}`,
      message:
        `a string longer than ${MAX_STRING} characters, JavaScript's limit: an answer or id this long cannot be read`,
    });
  }
  return e;
}

function take<T>(
  events: readonly JsonEvent[],
  out: Map<string, T>,
  file: string,
  kind: IdMapKind<T>,
): void {
  for (const ev of events) {
    if (ev.kind === "unread") {
      // A value refused at its first byte (`notStart`), as it would be once read.
      throw new InputError({
        file,
        where: `question "${ev.key}"`,
        message: kind.notStart?.(ev.first) ?? "not read",
      });
    }
    if (ev.kind !== "field") continue;
    const v = kind.value(ev.value);
    if (v === undefined) {
      throw new InputError({
        file,
        where: `question "${ev.key}"`,
        message: kind.notValue(ev.value),
      });
    }
    // A repeated id keeps its first place and its last value, as in Python's json.load.
    out.set(ev.key, v);
  }
}

/**
 * Parses the bytes of a prediction file; throws {@linkcode InputError}.
 *
 * @example
 * ```ts
 * import { InputError } from "./errors.ts";
 * import { parsePredictions } from "./predictions.ts";
 * const ok = parsePredictions(new TextEncoder().encode('{"q1": "Paris"}'), "pred.json");
 * if (ok.get("q1") !== "Paris") throw new Error();
 * try {
 *   parsePredictions(new TextEncoder().encode('{"q1": 5}'), "pred.json");
 *   throw new Error("not refused");
 * } catch (e) {
 *   if (!(e instanceof InputError)) throw e;
 *   if (e.toString() !== 'pred.json: question "q1": prediction is number, not a string') throw e;
 * }
 * ```
 */
export function parsePredictions(bytes: Uint8Array, file: string): Map<string, string> {
  const fail = (where: string, message: string): never => {
    throw new InputError({ file, where, message });
  };
  let text: string;
  let value: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    // Locate the problem with the streaming decoder, which knows byte offsets.
    try {
      const d = new JsonEventDecoder("\0");
      d.push(bytes);
      d.end();
    } catch (e) {
      if (e instanceof JsonSyntaxError) {
        const msg = e.message.startsWith("the top-level value")
          ? "not a JSON object of question id → answer string"
          : e.message;
        fail(e.offset >= 0 ? `byte ${e.offset}` : "", msg);
      }
    }
    return fail("", "invalid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail("", "not a JSON object of question id → answer string");
  }
  const out = new Map<string, string>();
  for (const [id, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== "string") {
      fail(`question "${id}"`, `prediction is ${v === null ? "null" : typeof v}, not a string`);
    }
    out.set(id, v as string);
  }
  return out;
}
