/**
 * NDJSON record streams, the format stages exchange through pipes: one JSON
 * object a line, with a `kind` field first (`paragraph`, `question`,
 * `prediction`, ...). A stage given `-` looks at the first bytes of stdin:
 * `{"kind": ...` means NDJSON records, anything else a SQuAD JSON document.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import { type FileError, InputError } from "./errors.ts";
import { type ByteSource, openSource, peekBytes } from "./source.ts";
import { firstInvalidUtf8 } from "./json_events.ts";

/** A paragraph record (what a context encoder needs). */
export interface ParagraphRecord {
  /** Record kind. */
  readonly kind: "paragraph";
  /** PI-SQuAD paragraph id. */
  readonly id: string;
  /** The context. */
  readonly context: string;
  /** Article title, when known. */
  readonly title?: string;
  /** Paragraph index in its article, when known. */
  readonly index?: number;
}

/** A question record (what a question encoder needs; never a context). */
export interface QuestionRecord {
  /** Record kind. */
  readonly kind: "question";
  /** The SQuAD question id. */
  readonly id: string;
  /** The question text. */
  readonly question: string;
  /** Its paragraph's id, when known. */
  readonly paragraphId?: string;
}

/** The record types, by kind. */
export interface RecordTypes {
  /** A paragraph record. */
  readonly paragraph: ParagraphRecord;
  /** A question record. */
  readonly question: QuestionRecord;
}

/**
 * The fields of each record kind after `kind`, in order: name, type, required. The same shapes as
 * `RecordSchemas` (`io/ndjson_schema.ts`), checked in plain JavaScript so that a stage reading
 * records loads no Effect Schema (`tests/io/ndjson_test.ts` checks that both agree).
 */
const FIELDS: {
  readonly [K in keyof RecordTypes]: readonly (readonly [string, "string" | "number", boolean])[];
} = {
  paragraph: [
    ["id", "string", true],
    ["context", "string", true],
    ["title", "string", false],
    ["index", "number", false],
  ],
  question: [
    ["id", "string", true],
    ["question", "string", true],
    ["paragraphId", "string", false],
  ],
};

/**
 * Decodes `v` as a record of `kind` (a value whose `kind` is `kind`, or not an object): the
 * record with its known fields only, in their order, or what is wrong, worded as the schema's
 * decoder words it (`Missing key at ["id"]`, `Expected string at ["context"]`).
 *
 * @example
 * ```ts
 * import { decodeRecord } from "./ndjson.ts";
 * const r = decodeRecord("question", { id: "q1", kind: "question", question: "Who?", x: 1 });
 * if (JSON.stringify(r) !== '{"record":{"kind":"question","id":"q1","question":"Who?"}}') {
 *   throw new Error(JSON.stringify(r));
 * }
 * const bad = decodeRecord("paragraph", { kind: "paragraph", id: 7, context: "c" });
 * if (JSON.stringify(bad) !== '{"issue":"Expected string at [\\"id\\"]"}') throw new Error();
 * ```
 */
export function decodeRecord<K extends keyof RecordTypes>(
  kind: K,
  v: unknown,
): { readonly record: RecordTypes[K] } | { readonly issue: string } {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { issue: "Expected object" };
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = { kind };
  for (const [key, type, required] of FIELDS[kind]) {
    if (!(key in o)) {
      if (required) return { issue: `Missing key at ["${key}"]` };
      continue;
    }
    const ok = type === "string" ? typeof o[key] === "string" : typeof o[key] === "number";
    if (!ok) return { issue: `Expected ${type} at ["${key}"]` };
    out[key] = o[key];
  }
  return { record: out as unknown as RecordTypes[K] };
}

const NDJSON_START = /^\s*\{\s*"kind"\s*:/;

/**
 * Reads the first bytes of a source and tells whether it is NDJSON records;
 * returns the source with those bytes put back.
 *
 * @example
 * ```ts
 * import { sniffNdjson } from "./ndjson.ts";
 * const text = '{"kind": "question", "id": "q1", "question": "Who?"}\n';
 * const [isNdjson, src] = await sniffNdjson({ name: "-", stream: new Blob([text]).stream() });
 * if (!isNdjson || (await new Response(src.stream).text()) !== text) throw new Error();
 * ```
 */
export async function sniffNdjson(src: ByteSource): Promise<[boolean, ByteSource]> {
  const [first, stream] = await peekBytes(src.stream.getReader(), 64);
  const text = new TextDecoder().decode(first.subarray(0, 64));
  return [NDJSON_START.test(text), { ...src, stream }];
}

/**
 * Parses NDJSON lines of one record kind from a byte source; a bad line
 * fails with {@linkcode InputError} naming the line number. Records of other
 * kinds and blank lines are passed over.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { ndjsonRecords } from "./ndjson.ts";
 * const text = [
 *   '{"kind": "paragraph", "id": "T_0", "context": "Paris."}',
 *   "",
 *   '{"kind": "question", "id": "q1", "question": "Where?", "paragraphId": "T_0"}',
 * ].join("\n");
 * const qs = await Effect.runPromise(
 *   Stream.runCollect(ndjsonRecords({ name: "in.ndjson", stream: new Blob([text]).stream() }, "question")),
 * );
 * if (qs.length !== 1 || qs[0].id !== "q1" || qs[0].paragraphId !== "T_0") throw new Error();
 * const bad = await Effect.runPromiseExit(
 *   Stream.runCollect(ndjsonRecords({ name: "in.ndjson", stream: new Blob(["{oops"]).stream() }, "question")),
 * );
 * if (bad._tag !== "Failure" || !String(bad.cause).includes("line 1")) throw new Error(String(bad));
 * ```
 */
export function ndjsonRecords<K extends keyof RecordTypes>(
  src: ByteSource,
  kind: K,
): Stream.Stream<RecordTypes[K], InputError> {
  let lineNo = 0;
  let carry = "";
  const dec = new TextDecoder("utf-8", { fatal: true });
  const parse = (line: string, out: unknown[]) => {
    lineNo++;
    if (line.trim() === "") return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new InputError({
        file: src.name,
        where: `line ${lineNo}`,
        message: `invalid JSON (${e instanceof Error ? e.message : e})`,
      });
    }
    if (typeof v === "object" && v !== null && (v as { kind?: unknown }).kind !== kind) {
      // Other kinds pass through a pipe untouched by this stage.
      return;
    }
    const r = decodeRecord(kind, v);
    if ("issue" in r) {
      throw new InputError({
        file: src.name,
        where: `line ${lineNo}`,
        message: `not a ${kind} record: ${r.issue}`,
      });
    }
    out.push(r.record);
  };
  const lines = src.stream.pipeThrough(
    new TransformStream<Uint8Array, unknown>({
      transform(chunk, controller) {
        let text: string;
        try {
          text = carry + dec.decode(chunk, { stream: true });
        } catch {
          // Name the line the bad byte is on: count the newlines before it.
          const bad = firstInvalidUtf8(chunk);
          let line = lineNo + 1;
          for (let i = 0; i < bad; i++) if (chunk[i] === 0x0a) line++;
          throw new InputError({ file: src.name, where: `line ${line}`, message: "invalid UTF-8" });
        }
        const parts = text.split("\n");
        carry = parts.pop()!;
        const out: unknown[] = [];
        for (const p of parts) parse(p, out);
        for (const r of out) controller.enqueue(r);
      },
      flush(controller) {
        const out: unknown[] = [];
        parse(carry + dec.decode(), out);
        for (const r of out) controller.enqueue(r);
      },
    }),
  );
  return Stream.fromReadableStream({
    evaluate: () => lines as ReadableStream<RecordTypes[K]>,
    onError: (e) =>
      e instanceof InputError
        ? e
        : new InputError({ file: src.name, where: "", message: String(e) }),
  });
}

/**
 * Opens `path` and streams its records of `kind` (NDJSON input only).
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Stream from "effect/Stream";
 * import { readNdjson } from "./ndjson.ts";
 * const path = await Deno.makeTempFile({ suffix: ".ndjson" });
 * await Deno.writeTextFile(path, '{"kind": "paragraph", "id": "T_0", "context": "Paris.", "index": 0}\n');
 * const [p] = await Effect.runPromise(Stream.runCollect(readNdjson(path, "paragraph")));
 * if (p.context !== "Paris." || p.index !== 0) throw new Error();
 * await Deno.remove(path);
 * ```
 */
export const readNdjson = <K extends keyof RecordTypes>(
  path: string,
  kind: K,
): Stream.Stream<RecordTypes[K], InputError | FileError> =>
  Stream.unwrap(Effect.map(openSource(path), (src) => ndjsonRecords(src, kind)));
