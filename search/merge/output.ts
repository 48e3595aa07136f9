/**
 * Merge's predictions written in dataset order as outcomes come in, in any
 * order ({@linkcode OrderedOutput}): Python `json.dump` format, streaming,
 * `Missing <path>` lines reported in the same order.
 *
 * @module
 */
import { pyStringLiteral } from "../../io/pyjson.ts";
import type { AtomicWriter } from "../../io/fs.ts";
import type { MergeUnit } from "./plan.ts";
import type { MergeOutcome } from "./unit.ts";

/**
 * Writes outcomes in dataset order as they become known.
 *
 * @example
 * ```ts
 * import type { AtomicWriter } from "../../io/fs.ts";
 * import { OrderedOutput } from "./output.ts";
 * let text = "";
 * const writer: AtomicWriter = {
 *   write: (s: string) => Promise.resolve(void (text += s)),
 *   commit: () => Promise.resolve(),
 *   abort: () => Promise.resolve(),
 * };
 * const out = new OrderedOutput(writer, () => {});
 * await out.add({ cid: "T_1", slots: [1], qids: ["q2"] }, [{ qid: "q2", answer: "b" }]);
 * await out.add({ cid: "T_0", slots: [0], qids: ["q1"] }, [{ qid: "q1", answer: "a" }]);
 * await out.finish();
 * if (text !== `{"q1": "a", "q2": "b"}`) throw new Error(text);
 * ```
 */
export class OrderedOutput {
  #pending = new Map<number, MergeOutcome>();
  #next = 0;
  #first = true;
  /** Answers written. */
  answered = 0;
  /** `Missing` lines reported. */
  missing = 0;
  readonly #writer: AtomicWriter;
  readonly #onMissing: (line: string) => void;

  /** Writes to `writer`; each `Missing <path>` line goes to `onMissing`. */
  constructor(writer: AtomicWriter, onMissing: (line: string) => void) {
    this.#writer = writer;
    this.#onMissing = onMissing;
  }

  /** The outcomes of `unit`'s questions (in its order); writes all that are now in turn. */
  async add(unit: MergeUnit, outcomes: readonly MergeOutcome[]): Promise<void> {
    for (let t = 0; t < outcomes.length; t++) this.#pending.set(unit.slots[t], outcomes[t]);
    let text = "";
    for (;;) {
      const o = this.#pending.get(this.#next);
      if (o === undefined) break;
      this.#pending.delete(this.#next++);
      if (o.missing !== undefined) {
        this.missing++;
        this.#onMissing(`Missing ${o.missing}`);
      } else if (o.answer !== undefined) {
        this.answered++;
        text += `${this.#first ? "{" : ", "}${pyStringLiteral(o.qid)}: ${
          pyStringLiteral(o.answer)
        }`;
        this.#first = false;
      }
    }
    if (text !== "") await this.#writer.write(text);
  }

  /** Closes the object and commits the file. */
  async finish(): Promise<void> {
    await this.#writer.write(this.#first ? "{}" : "}");
    await this.#writer.commit();
  }
}
