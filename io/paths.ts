/**
 * "Same file" checks between a command's inputs and outputs, so no stage
 * replaces its own input, writes two outputs to one file, or writes two
 * documents to stdout. Paths are compared by what they name on disk: the
 * real path of an existing file (symbolic links resolved), the real path of
 * the folder plus the name for a file not written yet, and device + inode
 * for existing files (so a hard link to an input counts as that input).
 * `-` is stdin for an input and stdout for an output.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { UsageError } from "./errors.ts";

/** A path argument of a command: what the usage calls it, and its value. */
export interface PathArg {
  /** The argument's name in the usage (`data.json`, `--per-question`). */
  readonly name: string;
  /** Its value; `undefined` when the option was not given. */
  readonly path: string | undefined;
  /** A folder: nothing may be inside it on the other side (an output folder holds no input). */
  readonly folder?: boolean;
}

/** What a path names on disk. */
interface Identity {
  /** Absolute path with links resolved as far as the path exists. */
  readonly real: string;
  /** Device and inode of an existing file. */
  readonly dev?: number;
  readonly ino?: number | null;
}

/** `p` made absolute (against the working folder) with `.` and `..` segments folded. */
function absolute(p: string): string {
  const full = p.startsWith("/") ? p : `${Deno.cwd()}/${p}`;
  const out: string[] = [];
  for (const seg of full.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  return "/" + out.join("/");
}

/** Real path of `p` (resolving links through its longest existing prefix). */
function realOf(p: string): string {
  const abs = absolute(p);
  try {
    return Deno.realPathSync(abs);
  } catch {
    const i = abs.lastIndexOf("/");
    if (i <= 0) return abs;
    const parent = realOf(abs.slice(0, i));
    return `${parent === "/" ? "" : parent}/${abs.slice(i + 1)}`;
  }
}

function identify(p: string): Identity {
  const real = realOf(p);
  try {
    const st = Deno.statSync(real);
    return { real, dev: st.dev, ino: st.ino };
  } catch {
    return { real };
  }
}

const same = (a: Identity, b: Identity) =>
  a.real === b.real ||
  (a.dev !== undefined && a.ino !== undefined && a.ino !== null && a.dev === b.dev &&
    a.ino === b.ino);

const inside = (a: Identity, folder: Identity) =>
  a.real.startsWith(folder.real === "/" ? "/" : `${folder.real}/`) && a.real !== folder.real;

const q = (a: PathArg) => `${a.name} ${JSON.stringify(a.path)}`;

/**
 * Why the outputs of a command would overwrite one of its inputs, collide
 * with each other, or send two documents to stdout; `undefined` when none
 * does. `stdout` names a document the command itself prints on stdout
 * (then no output may be `-`).
 *
 * @example
 * ```ts
 * import { aliasProblem } from "./paths.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a.json`, "{}");
 * Deno.linkSync(`${dir}/a.json`, `${dir}/hard.json`);
 * const inp = [{ name: "data.json", path: `${dir}/a.json` }];
 * if (!aliasProblem(inp, [{ name: "out", path: `${dir}/./a.json` }])) throw new Error("same");
 * if (!aliasProblem(inp, [{ name: "out", path: `${dir}/hard.json` }])) throw new Error("link");
 * if (!aliasProblem([], [{ name: "a", path: "-" }, { name: "b", path: "-" }])) throw new Error();
 * if (aliasProblem(inp, [{ name: "out", path: `${dir}/b.json` }])) throw new Error("fine");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function aliasProblem(
  inputs: readonly PathArg[],
  outputs: readonly PathArg[],
  stdout?: string,
): string | undefined {
  const ins = inputs.filter((a) => a.path !== undefined && a.path !== "-");
  const outs = outputs.filter((a) => a.path !== undefined);
  const toStdout = outs.filter((a) => a.path === "-");
  if (stdout !== undefined && toStdout.length > 0) {
    return `${q(toStdout[0])}: stdout already carries ${stdout}; name a file`;
  }
  if (toStdout.length > 1) {
    return `${q(toStdout[0])} and ${q(toStdout[1])} would both write to stdout; name a file`;
  }
  const files = outs.filter((a) => a.path !== "-");
  const inIds = ins.map((a) => ({ a, id: identify(a.path!) }));
  const outIds = files.map((a) => ({ a, id: identify(a.path!) }));
  for (const o of outIds) {
    for (const i of inIds) {
      if (same(o.id, i.id)) {
        return `${q(o.a)} is the input ${
          q(i.a)
        } (${i.id.real}): an output may not overwrite an input`;
      }
      if (o.a.folder && inside(i.id, o.id)) {
        return `the input ${q(i.a)} lies inside the output folder ${q(o.a)} (${o.id.real})`;
      }
      if (i.a.folder && inside(o.id, i.id)) {
        return `${q(o.a)} would be written inside the input folder ${q(i.a)} (${i.id.real})`;
      }
    }
  }
  for (let x = 0; x < outIds.length; x++) {
    for (let y = x + 1; y < outIds.length; y++) {
      const [a, b] = [outIds[x], outIds[y]];
      if (same(a.id, b.id)) {
        return `${q(a.a)} and ${
          q(b.a)
        } are the same file (${a.id.real}): each output needs its own`;
      }
      if ((a.a.folder && inside(b.id, a.id)) || (b.a.folder && inside(a.id, b.id))) {
        const [f, o] = a.a.folder && inside(b.id, a.id) ? [a, b] : [b, a];
        return `${q(o.a)} lies inside the output folder ${q(f.a)} (${f.id.real})`;
      }
    }
  }
  return undefined;
}

/**
 * Fails with a {@linkcode UsageError} (exit 2, nothing written) when
 * {@linkcode aliasProblem} finds one; run it before a command opens any
 * output.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect";
 * import * as Exit from "effect/Exit";
 * import { refuseAliases } from "./paths.ts";
 * const exit = await Effect.runPromiseExit(
 *   refuseAliases([{ name: "in", path: "x.json" }], [{ name: "out", path: "./x.json" }]),
 * );
 * if (!Exit.isFailure(exit)) throw new Error("not refused");
 * ```
 */
export const refuseAliases = (
  inputs: readonly PathArg[],
  outputs: readonly PathArg[],
  stdout?: string,
): Effect.Effect<void, UsageError> =>
  Effect.suspend(() => {
    const why = aliasProblem(inputs, outputs, stdout);
    return why === undefined ? Effect.void : Effect.fail(new UsageError(why));
  });
