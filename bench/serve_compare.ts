/**
 * Asks two running demo servers the same questions and compares their
 * answers: `N` questions of a SQuAD file, spread evenly over it, each sent
 * to `GET /v1/search?q=Q&k=K` of both; an answer is the same when its JSON
 * is equal field for field, `took_ms` aside. Prints the counts and the
 * first differing questions; exits 1 when one differs or fails, 2 on bad
 * usage (one line). Loopback only; each request is bounded by 60 s.
 *
 * Used to check that `serve` over a folder of shards answers as `serve`
 * over the unsharded index (docs/scale.md, "Serving the shards"):
 *
 * ```sh
 * ./phraseval serve IX --encoder sparse-pi --port 18501 &      # the unsharded index
 * ./phraseval serve IX4 --encoder sparse-pi --port 18502 &     # its 4 shards
 * deno run -A bench/serve_compare.ts http://127.0.0.1:18501 http://127.0.0.1:18502 \
 *   data/dev-v1.1.json.gz 300 10
 * ```
 *
 * @module
 */
import { readQuestions } from "./serve_load.ts";

/** Bad usage (exit 2). */
class Usage extends Error {}

const USAGE = "usage: deno run -A bench/serve_compare.ts URL_A URL_B QUESTIONS.json[.gz] N K";

/** The answer's JSON without its timings. */
export function withoutTimings(body: string): string {
  return JSON.stringify(JSON.parse(body, (k, v) => k === "took_ms" ? undefined : v));
}

async function main(): Promise<number> {
  const [a, b, data, n, k] = Deno.args;
  if (Deno.args.length !== 5) throw new Usage(USAGE);
  for (const u of [a, b]) {
    const url = new URL(u);
    if (url.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) {
      throw new Usage(`${u}: loopback http only`);
    }
  }
  const count = Number(n), top = Number(k);
  if (!Number.isInteger(count) || count < 1) throw new Usage(`N ${n}: a positive integer`);
  if (!Number.isInteger(top) || top < 1 || top > 100) throw new Usage(`K ${k}: 1..100`);
  const qs = await readQuestions(data);
  let same = 0, differ = 0;
  for (let i = 0; i < count; i++) {
    const q = qs[Math.floor(i * qs.length / count)];
    const ask = async (base: string) => {
      const r = await fetch(
        `${base.replace(/\/+$/, "")}/v1/search?q=${encodeURIComponent(q)}&k=${top}`,
        { signal: AbortSignal.timeout(60_000) },
      );
      const text = await r.text();
      if (r.status !== 200) throw new Error(`${base}: ${r.status} ${text.slice(0, 200)}`);
      return withoutTimings(text);
    };
    const [x, y] = await Promise.all([ask(a), ask(b)]);
    if (x === y) same++;
    else if (++differ <= 5) console.error(`differs: ${JSON.stringify(q)}`);
  }
  console.log(`${same} of ${count} answers the same (k ${top}), ${differ} differ`);
  return differ === 0 ? 0 : 1;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    console.error(`serve_compare: ${e instanceof Error ? e.message : e}`);
    Deno.exit(e instanceof Usage ? 2 : 1);
  }
}
