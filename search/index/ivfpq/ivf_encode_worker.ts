/**
 * The entry module of an IVF-PQ encode worker (`ivf_encode.ts`,
 * `encodeBlocks` and `trainCodebooks` with threads): given the trained
 * quantizers once, it answers each block `{id, x, n}` with its list ids and
 * row-major codes (`encodeRows`, the arithmetic of the build's own thread);
 * a sub-quantizer's `{id, kmeans}` with its centroids (`kmeans`),
 * transferred back; and `{id, nearest}` (a share of the coarse k-means's
 * rows, in shared memory) with each row's nearest centroid (`nearestAll`);
 * `{id, bounded}` the same by Elkan's bounds (`boundedAssign`, its distance
 * kernel kept by share until `{id, release}`), `{id, sum}` a share of the
 * columns of the k-means's update (`sumRows`), and `{id, model}` (a build's
 * one pool of workers) the quantizers to encode with. Loading it anywhere
 * else would take over that thread's `onmessage`.
 *
 * @module
 */
import {
  type EncodeReply,
  type EncodeRequest,
  encodeRows,
  halfRows,
  type PreparedModel,
  prepareModel,
} from "./ivf_encode.ts";
import { allFinite, boundedAssign, halfDistances, kmeans, nearestAll, sumRows } from "./kmeans.ts";
import { nearestKernel, PairDistances } from "../../kernels/nearest.ts";
import { simdKernels } from "../../kernels/simd.ts";

let model: PreparedModel | undefined;
/** The float32 rows of a block sent as float16 bits (grown as needed). */
let wide = new Float32Array(0);
/** This worker's distance kernels of the bounded k-means, by the first row of their share. */
const sessions = new Map<number, PairDistances>();

const scope = self as unknown as {
  onmessage: ((ev: MessageEvent<EncodeRequest>) => void) | null;
  postMessage(m: EncodeReply, transfer?: Transferable[]): void;
};

scope.onmessage = (ev: MessageEvent<EncodeRequest>) => {
  const m = ev.data;
  if ("init" in m) {
    model = prepareModel(m.init);
    return;
  }
  try {
    if ("model" in m) {
      model = prepareModel(m.model);
      scope.postMessage({ id: m.id, ready: true });
      return;
    }
    if ("warm" in m) {
      nearestKernel();
      simdKernels();
      scope.postMessage({ id: m.id, ready: true });
      return;
    }
    if ("release" in m) {
      sessions.clear();
      scope.postMessage({ id: m.id, ready: true });
      return;
    }
    if ("bounded" in m) {
      const q = m.bounded;
      if (q.moves === undefined && !allFinite(q.x)) {
        // Rows that are not all finite: nearestAll's answers, without bounds.
        const out = new Uint32Array(q.n);
        nearestAll(q.x, q.n, q.d, q.c, q.cn, q.k, out);
        scope.postMessage({ id: m.id, nearest: out, unbounded: true }, [out.buffer]);
        return;
      }
      let pairs = sessions.get(q.from);
      if (pairs === undefined) {
        pairs = PairDistances.create(q.x, q.n, q.d, q.k);
        if (pairs === undefined) throw new Error("the k-means's distance kernel cannot run here");
        sessions.set(q.from, pairs);
      }
      boundedAssign(q.x, q.n, q.d, q.c, q.cn, q.k, q.rows, q.moves, pairs);
      const out = q.rows.assign.slice();
      scope.postMessage({ id: m.id, nearest: out }, [out.buffer]);
      return;
    }
    if ("halves" in m) {
      const q = m.halves;
      halfDistances(q.c, q.k, q.d, q.half, q.near, q.a0, q.a1);
      scope.postMessage({ id: m.id, summed: true });
      return;
    }
    if ("sum" in m) {
      const q = m.sum;
      sumRows(q.x, q.n, q.d, q.assign, q.sums, q.k, q.t0, q.t1);
      scope.postMessage({ id: m.id, summed: true });
      return;
    }
    if ("nearest" in m) {
      const q = m.nearest, out = new Uint32Array(q.n);
      nearestAll(q.x, q.n, q.d, q.c, q.cn, q.k, out);
      scope.postMessage({ id: m.id, nearest: out }, [out.buffer]);
      return;
    }
    if ("kmeans" in m) {
      const k = m.kmeans;
      const centroids = kmeans(k.x, k.n, k.d, k.k, { iterations: k.iterations, seed: k.seed });
      scope.postMessage({ id: m.id, centroids }, [centroids.buffer as ArrayBuffer]);
      return;
    }
    const lists = new Uint32Array(m.n), codes = new Uint8Array(m.n * model!.bpv);
    let x = m.x;
    if (x instanceof Uint16Array) {
      // Widened into one buffer, reused block after block (a new one a block grows the heap).
      if (wide.length < x.length) wide = new Float32Array(x.length);
      x = halfRows(x, wide);
    }
    encodeRows(x, m.n, model!, lists, codes);
    scope.postMessage({ id: m.id, lists, codes }, [lists.buffer, codes.buffer]);
  } catch (e) {
    scope.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
};
