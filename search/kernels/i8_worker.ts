/**
 * The entry module of an exact-search screening worker (`i8_pool.ts`):
 * given the shared 8-bit rows and its scratch slot, it answers messages
 * `{id, qs, k}` with each question's candidate rows
 * (`I8Screen.candidates`) and their upper bounds (`I8Screen.upper`). Loading it anywhere else would take over that
 * thread's `onmessage`.
 *
 * @module
 */
import { I8Rows, type I8Shared } from "./i8_rows.ts";
import { I8Screen } from "./i8_scan.ts";

let screen: I8Screen | undefined;

const scope = self as unknown as {
  onmessage: ((ev: MessageEvent) => void) | null;
  postMessage(m: unknown, transfer?: Transferable[]): void;
};

scope.onmessage = (
  ev: MessageEvent<
    { init: { shared: I8Shared; slot: number } } | { id: number; qs: Float32Array[]; k: number }
  >,
) => {
  const m = ev.data;
  if ("init" in m) {
    screen = new I8Screen(I8Rows.attach(m.init.shared), m.init.slot);
    return;
  }
  try {
    const cands = screen!.candidates(m.qs, m.k), upper = screen!.upper;
    scope.postMessage({ id: m.id, cands, upper }, [
      ...cands.map((c) => c.buffer as ArrayBuffer),
      ...upper.map((u) => u.buffer as ArrayBuffer),
    ]);
  } catch (e) {
    scope.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
};
