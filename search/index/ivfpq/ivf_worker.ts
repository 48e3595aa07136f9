/**
 * The entry module of an IVF-PQ search worker (`ivfpq.ts`, `threads` > 1):
 * given the index's header and its IVF-PQ data (shared memory), it answers
 * messages `{id, qs, nprobe, cap, kernel}` with each question's approximate
 * candidates (`ivfCandidatesBatch`). Loading it anywhere else would take over
 * that thread's `onmessage`.
 *
 * @module
 */
import { ivfCandidatesBatch, type IvfData, type IvfIndexView, setIvfData } from "./ivfpq.ts";

let view: IvfIndexView | undefined;

const scope = self as unknown as {
  onmessage: ((ev: MessageEvent) => void) | null;
  postMessage(m: unknown): void;
};

scope.onmessage = (
  ev: MessageEvent<
    | { init: { dir: string; header: IvfIndexView["header"]; data: IvfData } }
    | { id: number; qs: Float32Array[]; nprobe: number; cap: number; kernel: boolean }
  >,
) => {
  const m = ev.data;
  if ("init" in m) {
    view = { dir: m.init.dir, header: m.init.header };
    setIvfData(view, m.init.data);
    return;
  }
  try {
    const cands = ivfCandidatesBatch(view!, m.qs, m.nprobe, m.cap, m.kernel);
    scope.postMessage({ id: m.id, cands });
  } catch (e) {
    scope.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
};
