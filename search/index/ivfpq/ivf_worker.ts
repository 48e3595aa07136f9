/**
 * The entry module of an IVF-PQ search worker (`ivf_search.ts`, `threads` > 1):
 * given the index's header and its IVF-PQ data (shared memory), it answers
 * messages `{id, q, nprobe, cap, kernel}` (`q`: the questions one after
 * another, d values each) with each question's approximate
 * candidates (`ivfCandidatesBatch`), and those with `top` (`{k, refine, simd}`)
 * with each question's top rows, re-scored from the index's vectors (shared
 * memory, given with the data; with `rows`, the `WebAssembly.Memory` they
 * lie in, read in place: `search/kernels/wasm_gather.ts`) as `scoreIvfSync`
 * does (`ivfTopsPacked`);
 * a row with a NaN or infinite value is answered `{id, nonFinite}` (the
 * `NonFiniteError`'s message).
 * Loading it anywhere else would take over that thread's `onmessage`.
 *
 * @module
 */
import { ivfCandidatesBatch, type IvfData, type IvfIndexView, setIvfData } from "./ivfpq.ts";
import type { Probe } from "./fastscan.ts";
import { ivfTopsPacked } from "./ivf_search.ts";
import { NonFiniteError } from "../exact/score.ts";
import { rowsView } from "../../kernels/wasm_gather.ts";

let view: IvfIndexView | undefined;

const scope = self as unknown as {
  onmessage: ((ev: MessageEvent) => void) | null;
  postMessage(m: unknown, transfer?: Transferable[]): void;
};

scope.onmessage = (
  ev: MessageEvent<
    | {
      init: {
        dir: string;
        header: IvfIndexView["header"];
        data: IvfData;
        dense?: Float32Array | Uint16Array;
        rows?: WebAssembly.Memory;
      };
    }
    | {
      id: number;
      q: Float32Array;
      nprobe: Probe;
      cap: number;
      kernel: boolean;
      top?: { k: number; refine: number; simd?: boolean };
    }
  >,
) => {
  const m = ev.data;
  if ("init" in m) {
    const { dir, header, rows } = m.init;
    // Over the vectors' WebAssembly.Memory where they lie in one (re-scored in place).
    const dense = m.init.dense !== undefined && rows !== undefined
      ? rowsView(rows, m.init.dense)
      : m.init.dense;
    view = { dir, header, ...(dense !== undefined ? { dense } : {}) };
    setIvfData(view, m.init.data);
    return;
  }
  try {
    const d = view!.header.d, qs: Float32Array[] = [];
    for (let j = 0; j * d < m.q.length; j++) qs.push(m.q.subarray(j * d, (j + 1) * d));
    if (m.top !== undefined) {
      const { k, refine, simd } = m.top;
      const tops = ivfTopsPacked(view!, qs, m.nprobe, m.cap, m.kernel, k, refine, simd);
      scope.postMessage({ id: m.id, tops }, [
        tops.at.buffer,
        tops.rows.buffer,
        tops.scores.buffer,
      ]);
      return;
    }
    const cands = ivfCandidatesBatch(view!, qs, m.nprobe, m.cap, m.kernel);
    scope.postMessage({ id: m.id, cands });
  } catch (e) {
    // A NaN or infinite value among the rows re-scored: told as such, so that the search
    // throws the `NonFiniteError` this thread would have (the caller names the index file).
    if (e instanceof NonFiniteError) scope.postMessage({ id: m.id, nonFinite: e.message });
    else scope.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
};
