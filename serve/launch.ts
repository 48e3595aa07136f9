/**
 * What `deno task serve` does before the server runs: the grants of the
 * server process ({@linkcode serveGrants}), and, when it is given a context
 * dump instead of an index (PIQA's `--context_emb_dir` with `--nlist
 * --bpv`), building the index or reusing the one built before
 * ({@linkcode ensureIndex}).
 *
 * **Reuse.** The index of a dump goes to `--index-dir`, by default
 * `<dump>.index` beside the dump (`out/dumps/context_emb` →
 * `out/dumps/context_emb.index`; a `.zip` loses its extension). After a
 * build, {@linkcode SOURCE_FILE} in the index folder records the dump's
 * fingerprint ({@linkcode dumpFingerprint}: every file's name, size,
 * modification time and the sha256 of its bytes, hashed), the context
 * file's, and the parameters. The
 * next start reuses the folder when its header has the asked kind, metric,
 * nlist, bpv and code bits (`pqBits`) and the fingerprints are equal; else it is rebuilt (it was
 * built here, so it may be replaced). A folder there that was not built
 * here (no {@linkcode SOURCE_FILE}) is refused.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { FileError, InputError } from "../io/errors.ts";
import { contentFingerprint } from "../io/dump/fingerprint.ts";
import { writeTextFileAtomic } from "../io/fs.ts";
import { buildIndex, type BuildIndexError } from "../search/index/build.ts";
import { INDEX_HEADER, type IndexHeader } from "../search/index/format.ts";
import { readIndexHeader } from "../search/index/read.ts";
import type { Grants } from "../runs/sandbox/sandbox.ts";

/** The side file of an index built by `serve` from a dump. */
export const SOURCE_FILE = ".phraseval-serve-source.json";

const osMessage = (e: unknown) => e instanceof Error ? e.message : String(e);
const abs = (p: string) => p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;
const trim = (p: string) => p.replace(/\/+$/, "") || "/";

/** Whether `path` is an index folder (a folder with `index.json`). */
export function isIndexFolder(path: string): boolean {
  try {
    return Deno.statSync(`${path}/${INDEX_HEADER}`).isFile;
  } catch {
    return false;
  }
}

/**
 * A fingerprint of a dump (a folder or a `.zip`) or a file: sha256 over
 * each file's name, size, modification time and content's sha256 (sorted
 * names; `contentFingerprint` of `io/dump/fingerprint.ts`): a byte changed
 * with the modification time put back is a changed dump.
 *
 * @example
 * ```ts
 * import { dumpFingerprint } from "./launch.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a.json`, "[]");
 * const a = dumpFingerprint(dir);
 * Deno.writeTextFileSync(`${dir}/b.json`, "[]");
 * if (a === dumpFingerprint(dir)) throw new Error("a new file went unnoticed");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function dumpFingerprint(path: string): string {
  return contentFingerprint(path);
}

/** Options of {@linkcode ensureIndex}. */
export interface EnsureIndexOptions {
  /** The context dump (a folder or a `.zip`). */
  readonly dump: string;
  /** Where the index goes (default `<dump>.index`). */
  readonly indexDir?: string;
  /** The dump is sparse (CSR). */
  readonly sparse: boolean;
  /** A context (or SQuAD) file: paragraph order, titles, texts and offsets. */
  readonly context?: string;
  /** IVF partitions (with `bpv`; else an exact index). */
  readonly nlist?: number;
  /** PQ bytes per vector (with `nlist`). */
  readonly bpv?: number;
  /** PQ code bits (default 8; 4: the fast-scan index, `index --pq-bits 4`). */
  readonly pqBits?: 4 | 8;
  /** Ranking metric (default `ip`). */
  readonly metric?: "ip" | "l2";
  /** Told what happens (`building ...`, `reusing ...`). */
  readonly onStatus?: (line: string) => void;
}

/** The default index folder of a dump: `<dump>.index` beside it. */
export function defaultIndexDir(dump: string): string {
  return `${trim(dump).replace(/\.zip$/i, "")}.index`;
}

interface Source {
  readonly dump: string;
  readonly dump_fingerprint: string;
  readonly context: string | null;
  readonly context_fingerprint: string | null;
  readonly kind: string;
  readonly metric: string;
  readonly nlist: number | null;
  readonly bpv: number | null;
  /** 4 for a 4-bit index (absent: 8 bits, or exact). */
  readonly pq_bits?: 4;
}

function readSource(dir: string): Source | undefined {
  try {
    return JSON.parse(Deno.readTextFileSync(`${dir}/${SOURCE_FILE}`));
  } catch {
    return undefined;
  }
}

/** Why the index in `dir` is not the one asked for, or `undefined` (reuse it). */
function staleness(dir: string, want: Source): string | undefined {
  const src = readSource(dir);
  if (src === undefined) return "no record of what it was built from";
  let h: IndexHeader;
  try {
    h = readIndexHeader(dir);
  } catch (e) {
    return osMessage(e);
  }
  const p = h.parameters as { nlist?: number; bpv?: number; bits?: number };
  if (h.kind !== want.kind) return `it is ${h.kind}, ${want.kind} asked`;
  if (h.metric !== want.metric) return `its metric is ${h.metric}`;
  if ((p.nlist ?? null) !== want.nlist || (p.bpv ?? null) !== want.bpv) {
    return `it has nlist ${p.nlist ?? "-"}, bpv ${p.bpv ?? "-"}`;
  }
  if (h.kind === "ivf-pq" && (p.bits ?? 8) !== (want.pq_bits ?? 8)) {
    return `its codes are ${p.bits ?? 8}-bit, ${want.pq_bits ?? 8}-bit asked`;
  }
  if (src.dump !== want.dump || src.dump_fingerprint !== want.dump_fingerprint) {
    return "the dump changed";
  }
  if (src.context !== want.context || src.context_fingerprint !== want.context_fingerprint) {
    return "the context file changed";
  }
  return undefined;
}

/**
 * The index of a dump, built now or reused (see the module notes): its
 * folder and whether it was built.
 */
export const ensureIndex = (
  o: EnsureIndexOptions,
): Effect.Effect<{ dir: string; built: boolean }, BuildIndexError> =>
  Effect.gen(function* () {
    const dir = trim(o.indexDir ?? defaultIndexDir(o.dump));
    const want = yield* Effect.try({
      try: (): Source => ({
        dump: Deno.realPathSync(o.dump),
        dump_fingerprint: dumpFingerprint(o.dump),
        context: o.context === undefined ? null : Deno.realPathSync(o.context),
        context_fingerprint: o.context === undefined ? null : dumpFingerprint(o.context),
        kind: o.nlist !== undefined ? "ivf-pq" : "exact",
        metric: o.metric ?? "ip",
        nlist: o.nlist ?? null,
        bpv: o.bpv ?? null,
        ...(o.nlist !== undefined && o.pqBits === 4 ? { pq_bits: 4 as const } : {}),
      }),
      catch: (e) =>
        e instanceof InputError || e instanceof FileError
          ? e
          : new FileError({ file: o.dump, message: osMessage(e) }),
    });
    let exists = false;
    try {
      Deno.lstatSync(dir);
      exists = true;
    } catch { /* absent */ }
    if (exists) {
      if (!isIndexFolder(dir) || readSource(dir) === undefined) {
        return yield* Effect.fail(
          new InputError({
            file: dir,
            where: "",
            message: "exists and is not an index serve built from a dump; remove it or choose " +
              "another --index-dir",
          }),
        );
      }
      const why = staleness(dir, want);
      if (why === undefined) {
        o.onStatus?.(`reusing the index ${dir} (built from this dump with these parameters)`);
        return { dir, built: false };
      }
      o.onStatus?.(`rebuilding the index ${dir}: ${why}`);
    } else o.onStatus?.(`building the index ${dir} from ${o.dump}`);
    yield* buildIndex({
      contextEmb: o.dump,
      out: dir,
      sparse: o.sparse,
      context: o.context,
      metric: o.metric,
      nlist: o.nlist,
      bpv: o.bpv,
      ...(o.pqBits === 4 ? { pqBits: 4 as const } : {}),
      overwrite: exists,
    });
    const source = `${dir}/${SOURCE_FILE}`;
    yield* writeTextFileAtomic(
      source,
      JSON.stringify(want, null, 2) + "\n",
      (reason) => new FileError({ file: source, message: reason }),
    );
    return { dir, built: true };
  });

/** What the server process is granted (see {@linkcode serveGrants}). */
export interface ServeGrantsInput {
  /** The index folder. */
  readonly index: string;
  /** The encoder's question-half files (its model). */
  readonly modelFiles: readonly string[];
  /** The static files' folder. */
  readonly staticDir: string;
  /** The address and port it binds. */
  readonly host: string;
  /** The port. */
  readonly port: number;
  /** The encoder's own permission flags (e.g. `--allow-ffi=<onnxruntime addon>`). */
  readonly encoderFlags?: readonly string[];
}

/**
 * The grants of the server process: read the index folder, the encoder's
 * model files and the static folder only; listen on its own address and
 * port only; the encoder's own flags (ONNX: load onnxruntime); nothing
 * else (both index kinds are plain TypeScript: no native code).
 *
 * @example
 * ```ts
 * import { serveGrants } from "./launch.ts";
 * const g = serveGrants({
 *   index: "/r/ix", modelFiles: ["/m/model.json.gz"], staticDir: "/r/serve/static",
 *   host: "127.0.0.1", port: 8080,
 * });
 * if (JSON.stringify(g.read) !== '["/r/ix","/m/model.json.gz","/r/serve/static"]') throw new Error();
 * if (JSON.stringify(g.flags) !== '["--allow-net=127.0.0.1:8080"]') throw new Error();
 * ```
 */
export function serveGrants(p: ServeGrantsInput): Grants {
  const host = p.host.includes(":") ? `[${p.host}]` : p.host;
  return {
    read: [abs(p.index), ...p.modelFiles.map(abs), abs(p.staticDir)],
    flags: [`--allow-net=${host}:${p.port}`, ...(p.encoderFlags ?? [])],
  };
}

/** What the front process of a sharded server is granted (see {@linkcode frontGrants}). */
export interface FrontGrantsInput {
  /** The static files' folder. */
  readonly staticDir: string;
  /** The address it binds. */
  readonly host: string;
  /** Its port. */
  readonly port: number;
  /** The shards' server processes' loopback ports. */
  readonly shardPorts: readonly number[];
}

/**
 * The grants of the front process of a server over a folder of shards
 * (`pipeline/_serve_front.ts`): read the static folder only; listen on its
 * own address and port and reach the shards' loopback ports only; no
 * index, no model, no native code (the shards' processes have those, each
 * with {@linkcode serveGrants} on its own shard).
 *
 * @example
 * ```ts
 * import { frontGrants } from "./launch.ts";
 * const g = frontGrants({ staticDir: "/r/serve/static", host: "127.0.0.1", port: 8080, shardPorts: [9001, 9002] });
 * if (JSON.stringify(g.read) !== '["/r/serve/static"]') throw new Error();
 * if (g.flags?.[0] !== "--allow-net=127.0.0.1:8080,127.0.0.1:9001,127.0.0.1:9002") throw new Error();
 * ```
 */
export function frontGrants(p: FrontGrantsInput): Grants {
  const host = p.host.includes(":") ? `[${p.host}]` : p.host;
  const net = [`${host}:${p.port}`, ...p.shardPorts.map((q) => `127.0.0.1:${q}`)];
  return { read: [abs(p.staticDir)], flags: [`--allow-net=${net.join(",")}`] };
}
