/**
 * What a run shows while it runs: on a terminal a live table of the tasks
 * (pending / running / done / failed, with elapsed time) redrawn in place on
 * stderr; otherwise one plain line per state change (the tasks a stopped
 * run cancels at once: one line for all of them). A failed attempt always
 * prints its last log lines.
 *
 * @module
 */
import { logTail } from "./logs.ts";
import type { TaskEvent, TaskStatus } from "./status.ts";
import { textTable } from "../plan/table.ts";
import type { Task } from "../plan/task.ts";

/** Seconds as `12.3s` / `4m05s` / `1h02m`. */
export function formatElapsed(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** A task in one short phrase: `encode_context sparse-pi/squad-dev-mini 2/4 [64:96)`. */
export function describeTask(t: Task): string {
  const who = t.model === null ? t.dataset : `${t.model}/${t.dataset}`;
  const part = t.part ? ` ${t.part.index + 1}/${t.part.count}` : "";
  const range = t.part && t.range ? ` [${t.range[0]}:${t.range[1]})` : "";
  return `${t.stage} ${who}${part}${range}`;
}

const STATE_ORDER = ["running", "failed", "pending", "blocked", "cancelled", "done", "skipped"];

/**
 * The live table's lines for the given statuses at time `now`: a count line,
 * then one row per task (running and failed first when there are more than
 * `maxRows`).
 */
export function renderStatusTable(
  statuses: readonly TaskStatus[],
  now: number,
  t0: number,
  maxRows = 30,
): string[] {
  const counts = new Map<string, number>();
  for (const s of statuses) counts.set(s.state, (counts.get(s.state) ?? 0) + 1);
  const summary = STATE_ORDER.filter((k) => counts.has(k)).map((k) => `${counts.get(k)} ${k}`)
    .join(", ");
  let shown = [...statuses];
  let hidden = 0;
  if (shown.length > maxRows) {
    shown.sort((a, b) => STATE_ORDER.indexOf(a.state) - STATE_ORDER.indexOf(b.state));
    hidden = shown.length - maxRows;
    shown = shown.slice(0, maxRows);
  }
  const rows = shown.map((s) => {
    const t = s.task;
    const elapsed = s.started === null ? "" : formatElapsed((s.ended ?? now) - s.started);
    return [
      t.stage,
      t.model ?? "-",
      t.dataset,
      t.part ? `${t.part.index + 1}/${t.part.count}` : "-",
      String(t.items),
      s.state,
      elapsed,
      s.attempts > 1 ? String(s.attempts) : "",
      s.state === "running" ? (s.where ?? "") : s.error ?? "",
    ];
  });
  return [
    `run: ${formatElapsed(now - t0)}  ${summary}`,
    ...textTable(
      ["stage", "model", "dataset", "part", "items", "state", "elapsed", "try", "where / why"],
      rows,
    ),
    ...(hidden ? [`(${hidden} more)`] : []),
  ];
}

/** Where the view writes (stderr by default). */
export interface ViewSink {
  /** Writes text as is. */
  write(text: string): void;
  /** Whether it is a terminal. */
  readonly tty: boolean;
}

/** stderr as a {@linkcode ViewSink}. */
export function stderrSink(): ViewSink {
  const enc = new TextEncoder();
  let tty = false;
  try {
    tty = Deno.stderr.isTerminal();
  } catch { /* not a terminal */ }
  return {
    write: (text) => {
      const b = enc.encode(text);
      let off = 0;
      while (off < b.byteLength) off += Deno.stderr.writeSync(b.subarray(off));
    },
    tty,
  };
}

/**
 * The progress display. On a terminal: the table of
 * {@linkcode renderStatusTable}, redrawn in place four times a second;
 * messages scroll above it. Otherwise: one line per event.
 */
export class ProgressView {
  #statuses: TaskStatus[] = [];
  #drawn = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #skipped = 0;
  #cancelled: TaskStatus[] = [];
  readonly #t0 = Date.now();

  /**
   * A view that writes to `sink` (standard error by default).
   *
   * @param sink where to write
   */
  constructor(readonly sink: ViewSink = stderrSink()) {}

  /** Starts showing `statuses` (the same objects the runners update). */
  start(statuses: TaskStatus[]): void {
    this.#statuses = statuses;
    if (this.sink.tty) {
      this.#redraw();
      this.#timer = setInterval(() => this.#redraw(), 250);
    }
  }

  /** Prints a message line (above the live table on a terminal). */
  message(text: string): void {
    this.#flushCancelled();
    if (this.sink.tty) {
      this.#clear();
      this.sink.write(text.endsWith("\n") ? text : text + "\n");
      this.#redraw();
    } else this.sink.write(text.endsWith("\n") ? text : text + "\n");
  }

  /** Reports an event of a task. */
  event(st: TaskStatus, ev: TaskEvent): void {
    const t = st.task;
    if (ev === "skipped") {
      this.#skipped++;
      return;
    }
    this.#flushSkipped();
    if (ev === "cancelled" && !this.sink.tty) {
      // A stopped run cancels its tasks together: said in one line.
      this.#cancelled.push(st);
      return;
    }
    this.#flushCancelled();
    if (ev === "failed" || ev === "retry" || ev === "stalled" || ev === "blocked") {
      const tail = ev === "failed" || ev === "retry" ? logTail(t.log, 5) : [];
      const head = ev === "stalled"
        ? `run: stalled  ${t.id}: no progress (log, outputs) for the task timeout: stopping it`
        : ev === "blocked"
        ? `run: blocked  ${t.id}: ${st.error}`
        : `run: ${
          ev === "retry" ? "retrying" : "FAILED  "
        } ${t.id} (attempt ${st.attempts}): ${st.error}${
          st.badInput ? " (bad input: not retried)" : ""
        }; log ${t.log}`;
      this.message([head, ...tail.map((l) => `run:   | ${l}`)].join("\n"));
      return;
    }
    if (this.sink.tty || ev === "queued") return;
    const el = formatElapsed(Date.now() - this.#t0).padStart(7);
    const took = ev === "done" && st.started !== null
      ? ` (${formatElapsed((st.ended ?? Date.now()) - st.started)})`
      : "";
    const where = ev === "start" && st.where ? ` ${st.where}` : "";
    this.sink.write(
      `run: [${el}] ${ev.padEnd(9)} ${describeTask(t)} ${t.items} ${t.unit}${took}${where}\n`,
    );
  }

  #flushCancelled(): void {
    const c = this.#cancelled;
    if (c.length === 0) return;
    this.#cancelled = [];
    const el = formatElapsed(Date.now() - this.#t0).padStart(7);
    const what = c.length === 1
      ? `${describeTask(c[0].task)} ${c[0].task.items} ${c[0].task.unit}`
      : `${c.length} tasks (${describeTask(c[0].task)} ... ${describeTask(c[c.length - 1].task)})`;
    this.sink.write(`run: [${el}] ${"cancelled".padEnd(9)} ${what}\n`);
  }

  #flushSkipped(): void {
    if (this.#skipped === 0) return;
    const n = this.#skipped;
    this.#skipped = 0;
    this.message(`run: ${n} task${n > 1 ? "s" : ""} already complete (outputs present): skipped`);
  }

  /** Stops redrawing (the last table stays on screen). */
  stop(): void {
    this.#flushSkipped();
    this.#flushCancelled();
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.sink.tty) this.#redraw();
  }

  #clear(): void {
    if (this.#drawn > 0) this.sink.write(`\x1b[${this.#drawn}A\r\x1b[J`);
    this.#drawn = 0;
  }

  #redraw(): void {
    if (this.#statuses.length === 0) return;
    let cols = 120, height = 40;
    try {
      ({ columns: cols, rows: height } = Deno.consoleSize());
    } catch { /* not a terminal: keep the defaults */ }
    const maxRows = Math.max(3, Math.min(30, height - 8));
    const lines = renderStatusTable(this.#statuses, Date.now(), this.#t0, maxRows).map((l) =>
      l.length > cols - 1 ? l.slice(0, cols - 1) : l
    );
    this.#clear();
    this.sink.write(lines.join("\n") + "\n");
    this.#drawn = lines.length;
  }
}
