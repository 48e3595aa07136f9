/**
 * One IVF-PQ search, timed and ready to profile: the questions of a raw
 * float32 file (`queries.f32`, as `bench/index_bench.ts` writes it) against
 * an `ivf-pq` index folder, in blocks of `--block` questions (default 256, the
 * `search` stage's; with `--threads` N > 1, N blocks under way and the last N
 * cut into smaller pieces, as the stage), `--reps` passes; prints the
 * questions a second of each pass. Under Deno's
 * `--cpu-prof`, `bench/cpuprofile_split.py` turns the profile into where
 * the time goes per question.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A [--cpu-prof --cpu-prof-dir P] bench/ivf_search_speed.ts \
 *   --index OUT/ivf4 --queries OUT/queries.f32 [--nprobe 10] [--candidates 100] \
 *   [--probe-tau T] [--threads 1] [--top-k 10] [--reps 3] [--block 256]
 * ```
 *
 * @module
 */
import process from "node:process";
import { type IvfIndexView, type IvfQueryOptions, loadIvf } from "../search/index/ivfpq/ivfpq.ts";
import { closeIvfWorkers, scoreIvf } from "../search/index/ivfpq/ivf_search.ts";
import { openIndexSync } from "../search/index/read.ts";
import { inOrder, inTail } from "../search/in_order.ts";
import type { TopK } from "../search/index/exact/score.ts";

/**
 * Questions `qs` answered as the `search` stage answers them: in blocks of
 * `block` through `scoreIvf` with `options`; on `options.threads` N > 1, N
 * blocks under way while one is taken and the last N cut into smaller
 * pieces (`search/in_order.ts`). Each block's answers go to `onBlock`, in
 * order. (Also `bench/index_bench.ts`'s search loop.)
 */
export async function scoreInBlocks(
  ix: IvfIndexView,
  qs: readonly Float32Array[],
  block: number,
  options: Omit<IvfQueryOptions, "tail">,
  onBlock: (i: number, tops: TopK[]) => void = () => {},
): Promise<void> {
  const threads = options.threads ?? 1;
  const count = Math.ceil(qs.length / block), ahead = threads > 1 ? threads : 0;
  await inOrder(
    count,
    ahead,
    (i) =>
      scoreIvf(ix, qs.slice(i * block, (i + 1) * block), {
        ...options,
        tail: inTail(i, count, ahead),
      }),
    onBlock,
  );
}

const arg = (name: string, fallback: string): string => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};

if (import.meta.main) {
  const dir = arg("index", ""), file = arg("queries", "");
  if (dir === "" || file === "") {
    console.error("usage: ivf_search_speed.ts --index DIR --queries FILE.f32 [...]");
    Deno.exit(2);
  }
  const nprobe = Number(arg("nprobe", "10")), refine = Number(arg("candidates", "100"));
  const threads = Number(arg("threads", "1")), topK = Number(arg("top-k", "10"));
  const reps = Number(arg("reps", "3")), block = Number(arg("block", "256"));
  // (`search --probe-tau`: of the nprobe best lists, those within T of the best.)
  const tau = arg("probe-tau", ""), probe = tau === "" ? {} : { probeTau: Number(tau) };
  const ix = openIndexSync(dir, { verify: false });
  loadIvf(ix);
  const d = ix.header.d;
  const raw = new Float32Array(Deno.readFileSync(file).buffer);
  const qs: Float32Array[] = [];
  for (let i = 0; i + d <= raw.length; i += d) qs.push(raw.slice(i, i + d));
  for (let rep = 0; rep < reps; rep++) {
    const t0 = performance.now(), c0 = process.cpuUsage();
    await scoreInBlocks(ix, qs, block, { topK, nprobe, refine, ...probe, threads });
    const s = (performance.now() - t0) / 1000, c = process.cpuUsage(c0);
    // (The process's CPU time, all its threads: user + system.)
    const cpu = (c.user + c.system) / 1000 / qs.length;
    console.log(
      `${dir}: ${qs.length} questions, nprobe ${nprobe}${tau === "" ? "" : `, tau ${tau}`}, ` +
        `${refine} candidates, ${threads} thread(s): ` +
        `${(qs.length / s).toFixed(0)} q/s, ${cpu.toFixed(4)} ms of CPU a question`,
    );
  }
  closeIvfWorkers(ix);
}
