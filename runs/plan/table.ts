/**
 * Aligned text tables: the generic renderer and the plan table of
 * `--dry-run`.
 *
 * @module
 */
import { firstMissing } from "./complete.ts";
import type { Plan } from "./task.ts";

/**
 * Renders rows as an aligned text table.
 *
 * @example
 * ```ts
 * import { textTable } from "./table.ts";
 * const t = textTable(["a", "b"], [["1", "22"]]);
 * if (t.join("|") !== "a  b|-  --|1  22") throw new Error(t.join("|"));
 * ```
 */
export function textTable(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) =>
    r.map((c, i) => (c ?? "").padEnd(w[i])).join("  ").trimEnd();
  return [line(head), line(w.map((n) => "-".repeat(n))), ...rows.map(line)];
}

/**
 * The `--dry-run` table of a plan (with each task's `complete`/`todo`
 * status when `showComplete`).
 */
export function planTable(plan: Plan, showComplete: boolean): string[] {
  const rows = plan.tasks.map((t, i) => [
    String(i),
    t.stage,
    t.model ?? "-",
    t.dataset,
    t.part ? `${t.part.index + 1}/${t.part.count}` : "-",
    t.range ? `${t.range[0]}:${t.range[1]}` : "-",
    String(t.items),
    t.unit,
    ...(showComplete ? [firstMissing(t) === undefined ? "complete" : "todo"] : []),
  ]);
  return textTable(
    [
      "#",
      "stage",
      "model",
      "dataset",
      "part",
      "range",
      "items",
      "unit",
      ...(showComplete ? ["status"] : []),
    ],
    rows,
  );
}
