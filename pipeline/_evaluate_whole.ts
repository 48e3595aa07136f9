/**
 * `evaluate DATA PRED` with no option, on files: the whole-file path
 * (`metrics/evaluate_whole.ts`), which needs no Effect runtime. `true` when
 * it printed the scores; `false` when the full path (`pipeline/_evaluate.ts`)
 * must run: it then gives the same scores, or names what is wrong.
 *
 * @module
 */
import { HEAD_BYTES } from "../io/datasets/detect_json.ts";
import { FAST_PARSE_BYTES } from "../io/predictions_whole.ts";
import { evaluateWholeV1 } from "../metrics/evaluate_whole.ts";

const CHUNK = 1 << 20;

/**
 * The file's bytes, the first chunk at least {@linkcode HEAD_BYTES} long (or the whole file). Every
 * chunk is a view of one buffer, read again for the next chunk: the consumer (the JSON event
 * decoder, which copies what it keeps past a chunk) must be done with a chunk before asking for the
 * next. One buffer instead of one a chunk: no fresh memory to fault in for each megabyte.
 */
function* fileChunks(file: Deno.FsFile): Generator<Uint8Array> {
  const buf = new Uint8Array(CHUNK);
  let filled = 0;
  for (;;) {
    const n = file.readSync(buf.subarray(filled));
    if (n === null) break;
    filled += n;
    if (filled >= HEAD_BYTES) {
      yield buf.subarray(0, filled);
      filled = 0;
    }
  }
  if (filled > 0) yield buf.subarray(0, filled);
}

function writeAll(fd: { writeSync(p: Uint8Array): number }, text: string): void {
  const bytes = new TextEncoder().encode(text);
  let off = 0;
  while (off < bytes.length) off += fd.writeSync(bytes.subarray(off));
}

/**
 * Scores `data` against `predictions` (two file paths) and prints what the
 * official v1.1 script prints, or returns `false` having printed nothing.
 */
export function evaluateWhole(data: string, predictions: string): boolean {
  let result;
  try {
    // Only regular files: the streaming path refuses anything else by name.
    if (!Deno.statSync(data).isFile || !Deno.statSync(predictions).isFile) return false;
    if (Deno.statSync(predictions).size > FAST_PARSE_BYTES) return false;
    const preds = Deno.readFileSync(predictions);
    using file = Deno.openSync(data);
    result = evaluateWholeV1(fileChunks(file), data, preds);
  } catch {
    return false;
  }
  if (result === undefined) return false;
  if (result.messages.length > 0) writeAll(Deno.stderr, result.messages.join("\n") + "\n");
  writeAll(Deno.stdout, result.stdout + "\n");
  return true;
}
