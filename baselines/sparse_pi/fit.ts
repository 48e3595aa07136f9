/**
 * Fits the `sparse-pi` encoder end to end and writes its artifact:
 *
 * 1. `export_features.ts`: the training problem of the SQuAD v1.1 training
 *    subset, from the encoder's own feature code;
 * 2. `fit.py` (numpy/scipy): L-BFGS-B on the softmax over each paragraph's
 *    candidate spans, L2 strength chosen on held-out training articles, then
 *    refitted on the whole subset;
 * 3. the artifact `data/sparse-pi/model.json.gz` (header, context section,
 *    question section, provenance).
 *
 * Usage: `deno run -A baselines/sparse_pi/fit.ts [--train FILE] [--work DIR] [--out FILE]`
 * (defaults: the shared training subset, `outputs/sparse_pi_fit`,
 * `data/sparse-pi/model.json.gz`). Nothing here reads the dev set.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { GROUPS, N_GROUPS, shapeVocabulary } from "../../encoders/sparse_pi/features.ts";
import {
  SPARSE_PI_FORMAT,
  SPARSE_PI_MODEL,
  SPARSE_PI_VERSION,
  type SparsePiArtifact,
} from "../../encoders/sparse_pi/encoder.ts";
import { DEFAULT_TRAIN, exportFeatures } from "./export_features.ts";
import { readTextMaybeGzip } from "../../io/source.ts";
import { runInherited } from "../../io/process.ts";

/** Vector dimension of the artifact: 2^22 columns. */
export const SPARSE_PI_DIM: number = 1 << 22;

const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);

function base64F32(values: Float32Array): string {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i], true);
  let bin = "";
  const CH = 0x8000;
  for (let i = 0; i < bytes.length; i += CH) {
    bin += String.fromCharCode(...bytes.subarray(i, i + CH));
  }
  return btoa(bin);
}

/** sha256 of a file's content (of the decompressed bytes for a `.gz`). */
async function sha256(path: string): Promise<string> {
  const bytes = new TextEncoder().encode(await readTextMaybeGzip(path));
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Writes an artifact as JSON, gzip-compressed when `path` ends in `.gz`.
 *
 * @example
 * ```ts ignore
 * import { buildArtifact, writeArtifact } from "./fit.ts";
 * await writeArtifact("model.json.gz", await buildArtifact("export", "fit", {}));
 * ```
 */
export async function writeArtifact(path: string, artifact: SparsePiArtifact): Promise<void> {
  const bytes = new TextEncoder().encode(JSON.stringify(artifact));
  if (!/\.gz(\.tmp)?$/.test(path)) {
    await Deno.writeFile(path, bytes);
    return;
  }
  const gz = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  await Deno.writeFile(path, new Uint8Array(await new Response(gz).arrayBuffer()));
}

/**
 * Builds the artifact from an export folder and a fit folder.
 *
 * @example
 * ```ts ignore
 * import { buildArtifact } from "./fit.ts";
 * const artifact = await buildArtifact("outputs/sparse_pi_fit/export", "outputs/sparse_pi_fit/fit", {});
 * ```
 */
export async function buildArtifact(
  exportDir: string,
  fitDir: string,
  provenance: Record<string, unknown>,
): Promise<SparsePiArtifact> {
  const meta = JSON.parse(await Deno.readTextFile(`${exportDir}/meta.json`));
  const fit = JSON.parse(await Deno.readTextFile(`${fitDir}/fit.json`));
  const raw = await Deno.readFile(`${fitDir}/params.f32`);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const params = new Float32Array(raw.byteLength / 4);
  for (let i = 0; i < params.length; i++) params[i] = view.getFloat32(i * 4, true);
  const C = meta.classes.length;
  const S = shapeVocabulary(meta.lex, meta.suffixes).length;
  const Z = 3 * N_GROUPS;
  if (params.length !== C * (Z + S)) {
    throw new Error(`params: ${params.length} values, expected ${C * (Z + S)}`);
  }
  if (JSON.stringify(meta.groups) !== JSON.stringify(GROUPS)) throw new Error("groups differ");
  return {
    format: SPARSE_PI_FORMAT,
    version: SPARSE_PI_VERSION,
    featureVersion: meta.featureVersion,
    dim: SPARSE_PI_DIM,
    shapeDim: S,
    groups: GROUPS,
    hash: "fnv1a32",
    context: { lex: meta.lex, suffixes: meta.suffixes },
    question: {
      classes: meta.classes,
      idf: meta.idf,
      idfUnknown: meta.idfUnknown,
      groupWeights: base64F32(params.subarray(0, C * Z)),
      shapeWeights: base64F32(params.subarray(C * Z)),
    },
    provenance: {
      ...provenance,
      config: meta.config,
      export: meta.summary,
      fit: {
        seed: fit.seed,
        lambda: fit.lambda,
        maxiter: fit.maxiter,
        grid: fit.grid,
        heldoutArticles: fit.heldout_articles,
      },
    },
  };
}

if (import.meta.main) {
  const args = [...Deno.args];
  const opt = (name: string, def: string): string => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
  };
  const train = opt("--train", DEFAULT_TRAIN);
  const work = opt("--work", `${ROOT}outputs/sparse_pi_fit`);
  const out = opt("--out", SPARSE_PI_MODEL);
  const t0 = performance.now();
  console.error(`sparse-pi fit: export features of ${train}`);
  const summary = await exportFeatures(train, `${work}/export`);
  console.error(JSON.stringify(summary));
  console.error("sparse-pi fit: python3 baselines/sparse_pi/fit.py");
  const code = await Effect.runPromise(
    runInherited(["python3", `${ROOT}baselines/sparse_pi/fit.py`, `${work}/export`, `${work}/fit`]),
  );
  if (code !== 0) {
    console.error(`fit.py failed (exit ${code})`);
    Deno.exit(1);
  }
  const artifact = await buildArtifact(`${work}/export`, `${work}/fit`, {
    made: "deno run -A baselines/sparse_pi/fit.ts",
    train: {
      file: train.split("/").pop()?.replace(/\.gz$/, ""),
      sha256: await sha256(train),
      licence: "CC BY-SA 4.0 (SQuAD v1.1, Rajpurkar et al. 2016)",
    },
  });
  await Deno.mkdir(out.replace(/\/[^/]*$/, ""), { recursive: true });
  const tmp = `${out}.tmp`;
  await writeArtifact(tmp, artifact);
  await Deno.rename(tmp, out);
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  console.error(
    `sparse-pi fit: wrote ${out} (${(await Deno.stat(out)).size} bytes) in ${seconds} s`,
  );
}
