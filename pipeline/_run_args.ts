/**
 * The part of `run`'s command line (`pipeline/run.ts`) the shared parser
 * cannot read as it stands: `-r` with or without its run folder's name.
 * `--help` loads this module, so it imports nothing.
 *
 * @module
 */
/**
 * Rewrites `-r [TS]` into `--reuse=TS` (`--reuse=latest` without a value).
 *
 * @example
 * ```ts
 * import { expandReuseFlag } from "./_run_args.ts";
 * if (expandReuseFlag(["c.ts", "-r"]).join(" ") !== "c.ts --reuse=latest") throw new Error();
 * const named = expandReuseFlag(["-r", "20250101_000000", "c.ts"]).join(" ");
 * if (named !== "--reuse=20250101_000000 c.ts") throw new Error(named);
 * ```
 */
export function expandReuseFlag(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-r" || a === "--reuse") {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith("-") && !/\.(m?[jt]sx?)$/.test(next)) {
        out.push(`--reuse=${next}`);
        i++;
      } else out.push("--reuse=latest");
    } else out.push(a);
  }
  return out;
}
