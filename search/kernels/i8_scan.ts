/**
 * A screening pass for exact dense open search on 8-bit integers
 * ({@linkcode I8Rows}): it finds, for each question, a small superset of
 * the rows that can be in its exact top k, so that only those are scored
 * exactly (`score.ts`: merge's `fsum` scores and tie rule). Results are
 * therefore identical to scoring every row exactly; the pass only decides
 * which rows need it.
 *
 * **Quantization.** Row `p` (its float32 values, or the float16 values
 * widened) is `p = s·a + e` with `s = max|pₖ| / 127`, `aₖ = round(pₖ / s)`
 * in [−127, 127] and the residual `e`; question `q = t·b + f` with
 * `t = max|qₖ| / 63`, `bₖ = round(qₖ / t)` in [−63, 63]. The integer dot
 * product `a·b` is exact, and the exact score obeys
 * `|q·p − s·t·(a·b)| ≤ ‖q‖·‖e‖ + ‖f‖·‖s·a‖` (as `q·p − q̃·p̃ = q·e + f·p̃`,
 * Cauchy–Schwarz twice). Every norm is computed in float64 and inflated by
 * a relative 2⁻⁴⁰, far above its rounding error, and the float64 product
 * `s·t·(a·b)` gets a relative 2⁻⁴⁰ too.
 *
 * **Screening.** Scanning rows in index order, a question keeps the k
 * largest lower bounds `approx − bound` seen so far; the smallest of them,
 * `L`, is at most the k-th best exact score of the rows seen, hence of all
 * rows. A row whose upper bound `approx + bound` is below `L` cannot reach
 * the top k (its exact score is below the final k-th best, ties included);
 * every other row is a candidate. Candidates are re-checked against the
 * final `L` and scored exactly in row order. The kernel tests four rows at
 * a time against a per-block threshold that uses the block's largest
 * `‖e‖` and `‖s·a‖` (a weaker test, so a superset), and this module then
 * applies the per-row test.
 *
 * **Two stages** (d ≥ {@linkcode I8_HEAD_MIN_D}). Most of the scan is the
 * 8-bit dot products, d bytes per row and question. Real phrase vectors
 * have most of their energy in a few directions, so a first stage looks at
 * `h` = {@linkcode I8_HEAD} projected columns only, and the full 8-bit dot
 * is taken only for the 4-row groups and questions that pass it:
 *
 * - *Basis.* `H` (d × h, float32): the leading eigenvectors of the
 *   second-moment matrix `Σ ppᵀ` of {@linkcode BASIS_SAMPLE} evenly spaced
 *   rows, by subspace iteration from a fixed start, orthonormalized in
 *   float64 (the same `H` for the same rows). Nothing below needs `H` to be
 *   those eigenvectors or exactly orthonormal: `‖E‖ ≥ ‖HᵀH − I‖₂` and
 *   `‖H‖_F` are bounded from the stored float32 values.
 * - *Rows.* `y = Hᵀp` in float32 (the `project` kernel: error at most
 *   `η = γ_d·‖H‖_F·‖p‖`), quantized as the rows are (`y = s·aₕ + eₕ`, 127
 *   levels); per row `ρ ≥ ‖eₕ‖ + η ≥ ‖Hᵀp − s·aₕ‖`, `σ ≥ ‖s·aₕ‖`, and the
 *   tail bound `τ ≥ ‖(I − HHᵀ)p‖`, from `‖(I−HHᵀ)p‖² ≤ ‖p‖² − (1 −
 *   ‖E‖)·‖Hᵀp‖²` with `‖Hᵀp‖ ≥ σ − ρ`.
 * - *Questions.* `Hᵀq` in float64 (error at most `γ_d·‖H‖_F·‖q‖` with
 *   γ of float64), quantized to `tₕ·bₕ` (63 levels), and `ρ_q`, `ν_q ≥
 *   ‖Hᵀq‖`, `τ_q` as for the rows.
 * - *Bound.* `q·p = (Hᵀq)·(Hᵀp) + q·(I − HHᵀ)p`, and
 *   `|q·(I−HHᵀ)p| ≤ τ_q·τ + ‖E‖·ν_q·ν` (as `(I−HHᵀ)ᵀ(I−HHᵀ) = (I − HHᵀ) +
 *   H(HᵀH − I)Hᵀ`), `(Hᵀq)·(Hᵀp) ≤ tₕ·s·(aₕ·bₕ) + ‖tₕbₕ‖·ρ + ρ_q·σ +
 *   ρ_q·ρ`. So `q·p ≤ tₕ·[s·hd + τ·τ_q/tₕ] + ρ·(‖tₕbₕ‖ + ρ_q + ‖E‖ν_q) +
 *   σ·(ρ_q + ‖E‖ν_q)` with `hd = aₕ·bₕ`; for `l2`, `α = 2` and `−‖p‖²`
 *   bounded by the row's own `π ≤ ‖p‖²`.
 * - *Gate.* Per block, with the block's largest ρ and σ, a question's
 *   threshold `uh` follows from its current `L`; the kernel
 *   (`filter_head_list`) computes a group's four head dots and goes on to
 *   the full 8-bit dot, and the test of `filter`, only where some row has
 *   `f32(hd)·s + τ·tq (− π·pq) ≥ uh` (the questions that pass listed
 *   first, then their full dots two at a time). Every float32 and float64 rounding is
 *   paid for in `uh` (a relative 2⁻²⁰ of the largest sizes of the terms,
 *   2⁻⁴⁰ of the float64 ones), and the stored factors are rounded the
 *   safe way, so a row that can reach the top k always passes.
 *
 * The gate only decides which dot products are taken; the candidates, and
 * so the results, are a superset of the exact top k either way. On the
 * piqa-lstm dev index, with the question batch's running `L`, about a
 * quarter of the groups and questions (`ip`; `l2` a sixth) go on to the
 * full pass ({@linkcode I8Screen.stats}).
 *
 * **Files.** The rows' 8-bit copy is {@linkcode I8Rows} (`i8_rows.ts`); the
 * kernels are two hand-assembled WebAssembly modules, the scan
 * (`wasm_i8.ts`, whose notes tell how it computes the 8-bit dot products)
 * and the head stage (`wasm_i8_head.ts`); this file holds the screen
 * ({@linkcode I8Screen}) and the exact score ({@linkcode exactScore}).
 *
 * @module
 */
import { halfTable } from "../dense_f64.ts";
import { fsum } from "../fsum.ts";
import { down32, gamma, REL, up, up32 } from "./_i8.ts";
import { I8_BLOCK, type I8Head, type I8Metric, type I8Rows } from "./i8_rows.ts";
import { kernelModule } from "./wasm_i8.ts";
import { headModule } from "./wasm_i8_head.ts";

const TINY = 2 ** -1000;

/** A min-heap of the k largest values offered (its root: the k-th largest). */
class LowerBounds {
  readonly #h: Float64Array;
  #n = 0;
  constructor(readonly k: number) {
    this.#h = new Float64Array(k);
  }
  /** The k-th largest value offered, or −∞ while fewer than k. */
  get floor(): number {
    return this.#n < this.k ? -Infinity : this.#h[0];
  }
  offer(v: number): void {
    const h = this.#h;
    if (this.#n < this.k) {
      let i = this.#n++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
      }
      h[i] = v;
      return;
    }
    if (!(v > h[0])) return;
    let i = 0;
    const n = this.#n;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && h[c + 1] < h[c]) c++;
      if (h[c] >= v) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = v;
  }
}

/**
 * Whether the 8-bit screening takes question `q`: finite and not all
 * zero (others are scored by the float kernels).
 */
export function i8Takes(q: Float32Array): boolean {
  let max = 0;
  for (let c = 0; c < q.length; c++) {
    const m = Math.abs(q[c]);
    if (!Number.isFinite(m)) return false;
    if (m > max) max = m;
  }
  return max > 0;
}

/**
 * One thread's screening kernel over an {@linkcode I8Rows} (its own
 * instance over the shared memory, its own scratch slot).
 */
export class I8Screen {
  readonly #filter: (...args: number[]) => number;
  readonly #filterHead?: (...args: number[]) => number;
  readonly #qPtr: number;
  readonly #uPtr: number;
  readonly #outPtr: number;
  readonly #qhPtr: number;
  readonly #qvPtr: number;
  readonly #uhPtr: number;
  readonly #statsPtr: number;
  readonly #listPtr: number;
  #stats = { pairs: 0, full: 0 };
  #upper: Float64Array[] = [];

  /** The kernel of scratch slot `slot` (0 … threads − 1 of {@linkcode I8Rows.create}). */
  constructor(readonly rows: I8Rows, slot = 0) {
    const inst = new WebAssembly.Instance(kernelModule()!, { env: { memory: rows.memory } });
    this.#filter = inst.exports.filter as (...args: number[]) => number;
    if (rows.head !== undefined) {
      const hi = new WebAssembly.Instance(headModule()!, { env: { memory: rows.memory } });
      this.#filterHead =
        (rows.metric === "l2" ? hi.exports.filter_head_list_l2 : hi.exports.filter_head_list) as (
          ...args: number[]
        ) => number;
    }
    const nq = up(rows.shared.maxQ, 2);
    this.#qPtr = rows.scratchBase + slot * rows.scratchSize;
    this.#uPtr = this.#qPtr + up(nq * rows.stride, 64);
    this.#outPtr = this.#uPtr + up(nq * 4, 64);
    this.#qhPtr = this.#outPtr + up((I8_BLOCK / 4) * nq * 24, 64);
    this.#qvPtr = this.#qhPtr + up(nq * (rows.head?.h ?? 0), 64);
    this.#uhPtr = this.#qvPtr + up(nq * 16, 64);
    this.#statsPtr = this.#uhPtr + up(nq * 4, 64);
    this.#listPtr = this.#statsPtr + up(nq * 4, 64);
  }

  /**
   * Of the (4-row group, question) pairs the last {@linkcode candidates}
   * call screened, how many went on to the full 8-bit pass (all of them
   * without a head; see the module notes, "Two stages").
   */
  get stats(): { readonly pairs: number; readonly full: number } {
    return this.#stats;
  }

  /**
   * The candidate rows of each question (float32, length d, accepted by
   * {@linkcode i8Takes}; at most `maxQ` of them): increasing rows, a
   * superset of the rows that can be in the question's exact top `k` (see
   * the module notes).
   */
  candidates(qs: readonly Float32Array[], k: number): Int32Array[] {
    const R = this.rows, { d, stride, n } = R;
    const nq = qs.length, nq2 = up(nq, 2);
    if (nq > R.shared.maxQ) throw new Error(`at most ${R.shared.maxQ} questions a call`);
    const l2 = R.metric === "l2", alpha = l2 ? 2 : 1;
    const buf = R.memory.buffer;
    const qb = new Uint8Array(buf, this.#qPtr, nq2 * stride);
    qb.fill(64);
    const t = new Float64Array(nq), qn = new Float64Array(nq), fq = new Float64Array(nq);
    const qPen = new Float64Array(nq), qPenErr = new Float64Array(nq);
    for (let j = 0; j < nq; j++) {
      const q = qs[j];
      let max = 0, n2 = 0;
      for (let c = 0; c < d; c++) {
        const m = Math.abs(q[c]);
        if (m > max) max = m;
        n2 += q[c] * q[c];
      }
      const s = max / 63, inv = 63 / max;
      let e2 = 0;
      for (let c = 0; c < d; c++) {
        const b = Math.round(q[c] * inv);
        qb[j * stride + c] = b + 64;
        const r = q[c] - s * b;
        e2 += r * r;
      }
      t[j] = s;
      qn[j] = Math.sqrt(n2) * (1 + REL);
      fq[j] = Math.sqrt(e2) * (1 + REL);
      if (l2) {
        qPen[j] = n2;
        qPenErr[j] = n2 * (d + 2) * 2 ** -52;
      }
    }
    const u = new Float32Array(buf, this.#uPtr, nq2);
    u.fill(Infinity);
    const heads = R.head !== undefined ? this.#questionHeads(qs, alpha) : undefined;
    const uh = heads !== undefined ? new Float32Array(buf, this.#uhPtr, nq2) : undefined;
    uh?.fill(Infinity);
    const out = new Int32Array(buf, this.#outPtr, (I8_BLOCK / 4) * nq2 * 6);
    const lows = qs.map(() => new LowerBounds(k));
    const cand: number[][] = qs.map(() => []);
    const upper: number[][] = qs.map(() => []);
    const { scale, resid, qnorm, pen, penErr } = R;
    const stats = new Int32Array(buf, this.#statsPtr, 1);
    stats[0] = 0;
    let pairs = 0;
    for (let b0 = 0, blk = 0; b0 < n; b0 += I8_BLOCK, blk++) {
      const rowsHere = Math.min(I8_BLOCK, n - b0);
      const eMax = R.blockResid[blk], pMax = R.blockNorm[blk], penLo = R.blockPen[blk];
      for (let j = 0; j < nq; j++) {
        const L = lows[j].floor;
        if (L === -Infinity) {
          u[j] = -Infinity;
          if (uh !== undefined) uh[j] = -Infinity;
          continue;
        }
        // A row can matter only if α·s·t·dot ≥ L + pen + qPen − α·bound − errors.
        const slack = alpha * (qn[j] * eMax + fq[j] * pMax) * (1 + REL) + qPenErr[j];
        const U = (L + penLo + qPen[j] - slack) / (alpha * t[j]);
        u[j] = Math.fround(U - Math.abs(U) * 2 ** -20 - 2 ** -100);
        if (u[j] > U) u[j] = -Infinity;
        if (uh !== undefined) {
          uh[j] = headThreshold(R.head!, heads!, j, blk, L, qPen[j], qPenErr[j], alpha);
        }
      }
      const recs = heads !== undefined
        ? this.#filterHead!(
          b0 * stride,
          R.head!.codesPtr + b0 * R.head!.h,
          Math.ceil(rowsHere / 4),
          stride,
          this.#qPtr,
          this.#qhPtr,
          nq2,
          R.corrPtr + b0 * 4,
          R.spPtr + b0 * 4,
          R.head!.corrPtr + b0 * 4,
          R.head!.spPtr + b0 * 4,
          R.head!.rowvPtr + b0 * 8,
          this.#qvPtr,
          this.#uPtr,
          this.#uhPtr,
          this.#outPtr,
          this.#statsPtr,
          this.#listPtr,
        )
        : this.#filter(
          b0 * stride,
          Math.ceil(rowsHere / 4),
          stride,
          this.#qPtr,
          nq2,
          R.corrPtr + b0 * 4,
          R.spPtr + b0 * 4,
          this.#uPtr,
          this.#outPtr,
        );
      pairs += Math.ceil(rowsHere / 4) * nq;
      for (let r = 0; r < recs; r++) {
        const g = out[6 * r], j = out[6 * r + 1];
        if (j >= nq) continue;
        const tj = t[j], qj = qn[j], fj = fq[j], lb = lows[j], qp = qPen[j], qe = qPenErr[j];
        for (let l = 0; l < 4; l++) {
          const i = b0 + 4 * g + l;
          if (i >= n) break;
          const ip = scale[i] * tj * out[6 * r + 2 + l];
          const approx = alpha * ip - pen[i] - qp;
          const bound = alpha * (qj * resid[i] + fj * qnorm[i]) * (1 + REL) + penErr[i] + qe +
            (alpha * Math.abs(ip) + pen[i] + qp) * REL + TINY;
          const hi = approx + bound;
          if (!(hi >= lb.floor)) continue;
          cand[j].push(i);
          upper[j].push(hi);
          lb.offer(approx - bound);
        }
      }
    }
    this.#stats = { pairs, full: heads !== undefined ? stats[0] : pairs };
    const uppers: Float64Array[] = [];
    const rows = cand.map((c, j) => {
      const L = lows[j].floor, hi = upper[j];
      const keep: number[] = [], keepHi: number[] = [];
      for (let x = 0; x < c.length; x++) {
        if (hi[x] >= L) {
          keep.push(c[x]);
          keepHi.push(hi[x]);
        }
      }
      uppers.push(Float64Array.from(keepHi));
      return Int32Array.from(keep);
    });
    this.#upper = uppers;
    return rows;
  }

  /**
   * For each candidate of the last {@linkcode candidates} call, in the
   * same order, the screen's upper bound on its exact score (`approx +
   * bound`, see the module notes, "Screening"): the bound the screen keeps
   * it by.
   */
  get upper(): readonly Float64Array[] {
    return this.#upper;
  }

  /**
   * The head gate's slack (for tests; see the module notes, "Two stages"):
   * for each question `j` and row `i`, the float32 value the kernel
   * compares (`f32(hd)·spH + τ·tq`, `− π·pq` for `l2`, in the kernel's
   * order) less the threshold that `L = score(j, i)`, the row's own exact
   * score, would set. It must never be negative: the gate skips a row only
   * when the question's k-th lower bound is above the row's exact score.
   * `undefined` without a head stage.
   */
  headSlack(
    qs: readonly Float32Array[],
    score: (j: number, i: number) => number,
  ): Float64Array[] | undefined {
    const R = this.rows, hd = R.head;
    if (hd === undefined) return undefined;
    const { n, d } = R, h = hd.h, l2 = R.metric === "l2", alpha = l2 ? 2 : 1;
    const hq = this.#questionHeads(qs, alpha);
    const buf = R.memory.buffer;
    const codes = new Int8Array(buf, hd.codesPtr, R.nPad * h);
    const qh = new Uint8Array(buf, this.#qhPtr, up(qs.length, 2) * h);
    const sp = new Float32Array(buf, hd.spPtr, R.nPad);
    const rowv = new Float32Array(buf, hd.rowvPtr, R.nPad * 2);
    const f = Math.fround;
    return qs.map((q, j) => {
      let n2 = 0;
      for (let c = 0; c < d; c++) n2 += q[c] * q[c];
      const qPen = l2 ? n2 : 0, qPenErr = l2 ? n2 * (d + 2) * 2 ** -52 : 0;
      const tq = hq.qv[4 * j], pq = hq.qv[4 * j + 1];
      const out = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        let dot = 0;
        for (let c = 0; c < h; c++) dot += codes[i * h + c] * (qh[j * h + c] - 64);
        const o = (i >> 2) * 8 + (i & 3);
        let g = f(f(f(dot) * sp[i]) + f(rowv[o] * tq));
        if (l2) g = f(g - f(rowv[o + 4] * pq));
        const blk = (i / I8_BLOCK) | 0;
        out[i] = g - headThreshold(hd, hq, j, blk, score(j, i), qPen, qPenErr, alpha);
      }
      return out;
    });
  }

  /**
   * The questions' heads (see the module notes, "Two stages"): `Hᵀq` in
   * float64, quantized to `bₕ` in [−63, 63] (written as `bₕ + 64` for the
   * kernel), the gate's factors `tq = τ_q/tₕ` (rounded up) and
   * `pq = 1/(α·tₕ)` (rounded down) for the kernel, and the threshold's.
   */
  #questionHeads(qs: readonly Float32Array[], alpha: number): HeadQuestions {
    const R = this.rows, hd = R.head!, h = hd.h, d = R.d, H = hd.basis;
    const nq = qs.length, nq2 = up(nq, 2), buf = R.memory.buffer;
    const qh = new Uint8Array(buf, this.#qhPtr, nq2 * h);
    qh.fill(64);
    const qv = new Float32Array(buf, this.#qvPtr, nq2 * 4);
    qv.fill(0);
    const ts = new Float64Array(nq);
    const hq: HeadQuestions = {
      t: ts,
      ce: new Float64Array(nq),
      cs: new Float64Array(nq),
      bn: new Float64Array(nq),
      qv,
    };
    const g64 = gamma(d, 2 ** -53), keep = 1 - hd.eNorm, y = new Float64Array(h);
    for (let j = 0; j < nq; j++) {
      const q = qs[j];
      y.fill(0);
      let n2 = 0;
      for (let k = 0; k < d; k++) {
        const v = q[k];
        n2 += v * v;
        const o = k * h;
        for (let c = 0; c < h; c++) y[c] += v * H[o + c];
      }
      let max = 0;
      for (let c = 0; c < h; c++) max = Math.max(max, Math.abs(y[c]));
      const t = max / 63, inv = max > 0 ? 63 / max : 0;
      let b2 = 0, f2 = 0;
      for (let c = 0; c < h; c++) {
        const b = Math.round(y[c] * inv);
        qh[j * h + c] = b + 64;
        b2 += b * b;
        const f = y[c] - t * b;
        f2 += f * f;
      }
      ts[j] = t;
      if (!(t > 0)) continue;
      const n2up = n2 * (1 + (d + 2) * 2 ** -52);
      // ρ_q ≥ ‖Hᵀq − tₕ·bₕ‖ (quantization and the float64 projection's error), ν_q ≥ ‖Hᵀq‖,
      // τ_q ≥ ‖(I − HHᵀ)q‖.
      const eta = g64 * hd.hF * Math.sqrt(n2up) * (1 + REL);
      const rho = (Math.sqrt(f2) * (1 + REL) + eta) * (1 + REL);
      const tb = t * Math.sqrt(b2) * (1 + REL), tbLo = t * Math.sqrt(b2) * (1 - REL);
      const nu = (tb + rho) * (1 + REL);
      const lo = Math.max(0, (tbLo - rho) * (1 - REL));
      const tau = Math.sqrt(Math.max(0, n2up - keep * lo * lo) + (n2up + lo * lo) * REL) *
        (1 + REL);
      const e = hd.eNorm * nu;
      qv[4 * j] = up32((tau / t) * (1 + REL));
      qv[4 * j + 1] = R.metric === "l2" ? down32((1 / (alpha * t)) * (1 - REL)) : 0;
      // The block terms of the threshold (headThreshold), and the size of ‖bₕ‖.
      hq.ce[j] = (tb + rho + e) * (1 + REL);
      hq.cs[j] = (rho + e) * (1 + REL);
      hq.bn[j] = Math.sqrt(b2) * (1 + REL);
    }
    return hq;
  }
}

/** The questions' head factors ({@linkcode I8Screen} `#questionHeads`). */
interface HeadQuestions {
  /** `tₕ`, the scale of the head's codes (0: an all-zero head). */
  readonly t: Float64Array;
  /** `tb + ρ_q + ‖E‖·ν_q`, rounded up: the factor of a row's ρ. */
  readonly ce: Float64Array;
  /** `ρ_q + ‖E‖·ν_q`, rounded up: the factor of a row's σ. */
  readonly cs: Float64Array;
  /** `‖bₕ‖`, rounded up. */
  readonly bn: Float64Array;
  /** The kernel's `[tq, pq, 0, 0]` per question. */
  readonly qv: Float32Array;
}

/**
 * The head gate's threshold of question `j` over block `blk` (see the
 * module notes, "Two stages"): a row of the block can reach `L` only if
 * `s·hd + τ·tq − π·pq ≥ (L + ‖q‖² − err)/(α·tₕ) − (ρmax·ce + σmax·cs)/tₕ`
 * (in exact arithmetic), and then the kernel's float32 value is at least
 * the value returned (that bound less its float64 and float32 rounding);
 * −∞ where no threshold can be given (every group goes on to the full
 * pass).
 */
function headThreshold(
  hd: I8Head,
  hq: HeadQuestions,
  j: number,
  blk: number,
  L: number,
  qPen: number,
  qPenErr: number,
  alpha: number,
): number {
  const t = hq.t[j];
  if (!(t > 0) || L === -Infinity) return -Infinity;
  const cb = (hd.blockRho[blk] * hq.ce[j] + hd.blockSa[blk] * hq.cs[j]) * (1 + REL);
  const UH = (L + qPen - qPenErr) / (alpha * t) - cb / t;
  // float64: a relative 2⁻⁴⁰ of every magnitude; float32 (the kernel's products and sums, the
  // scale and the hd conversion): a relative 2⁻²⁰ of the largest sizes its terms can have.
  const f64 = ((Math.abs(L) + qPen + qPenErr) / (alpha * t) + cb / t) * REL;
  const f32 = (hd.blockSa[blk] * hq.bn[j] + hd.blockTau[blk] * hq.qv[4 * j] +
    hd.blockPi[blk] * hq.qv[4 * j + 1] + Math.abs(UH)) * 2 ** -20;
  const lo = UH - f64 - f32 - 2 ** -100;
  const uh = Math.fround(lo - Math.abs(lo) * 2 ** -22);
  return uh > lo || !Number.isFinite(uh) ? -Infinity : uh;
}

let prods = new Float64Array(1024);

/**
 * The exact score of row `row` of `a` (f32 values or f16 bits, `d`
 * columns) against `q`, merge's: for `ip` the correctly rounded sum of the
 * float64 products (`fsum`); for `l2` that of the terms `2·qₖpₖ`, `−pₖ²`,
 * `−qₖ²`.
 *
 * @example
 * ```ts
 * import { exactScore } from "./i8_scan.ts";
 * const a = new Float32Array([1, 2, 3, 4]);
 * if (exactScore(a, 1, 2, new Float32Array([1, 1]), "ip") !== 7) throw new Error();
 * if (exactScore(a, 0, 2, new Float32Array([1, 1]), "l2") !== -1) throw new Error();
 * ```
 */
export function exactScore(
  a: Float32Array | Uint16Array,
  row: number,
  d: number,
  q: Float32Array,
  metric: I8Metric,
): number {
  const o = row * d, h = a instanceof Uint16Array ? halfTable() : undefined;
  if (metric === "ip") {
    if (prods.length < d) prods = new Float64Array(d);
    const p = prods;
    if (h !== undefined) { for (let c = 0; c < d; c++) p[c] = h[a[o + c]] * q[c]; }
    else for (let c = 0; c < d; c++) p[c] = a[o + c] * q[c];
    return fsum(p, d);
  }
  if (prods.length < 3 * d) prods = new Float64Array(3 * d);
  const p = prods;
  for (let c = 0; c < d; c++) {
    const x = h !== undefined ? h[a[o + c]] : a[o + c], y = q[c];
    p[3 * c] = 2 * x * y;
    p[3 * c + 1] = -(x * x);
    p[3 * c + 2] = -(y * y);
  }
  return fsum(p, 3 * d);
}
