/**
 * `io/provenance.ts`: a folder's sha256 equals the one computed
 * independently (Python's hashlib over the files in byte order of their
 * relative paths, and coreutils' `sha256sum` piped into itself), with
 * subfolders, non-ASCII names and hidden files; the git commit read from a
 * hand-made `.git` (a folder, a worktree's `gitdir:` file with
 * `commondir`, a packed ref, a detached HEAD) and from this repository
 * (= `git rev-parse HEAD` where git is installed); `flattenJson`;
 * `readProvenance`'s refusals.
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertStringIncludes } from "../_assert.ts";
import { python, ROOT, runArgv, type RunResult } from "../_util.ts";
import {
  filesSha256,
  flattenJson,
  gitCommit,
  PROVENANCE_FORMAT,
  readProvenance,
  sha256Folder,
  toolInfo,
} from "../../io/provenance.ts";

/** Python's answer: sha256 of `<sha256(file)>  <path>\n` over the files sorted by UTF-8 path. */
const PY_FOLDER = `
import hashlib, os, sys
root = sys.argv[1]
files = []
for d, _, names in os.walk(root):
    for n in names:
        if n.startswith("."):
            continue
        rel = os.path.relpath(os.path.join(d, n), root)
        if any(p.startswith(".") for p in rel.split(os.sep)):
            continue
        files.append(rel)
files.sort(key=lambda p: p.encode("utf-8"))
h = hashlib.sha256()
total = 0
for rel in files:
    b = open(os.path.join(root, rel), "rb").read()
    total += len(b)
    h.update(f"{hashlib.sha256(b).hexdigest()}  {rel}\\n".encode("utf-8"))
print(h.hexdigest(), len(files), total)
`;

Deno.test("sha256Folder = Python hashlib and sha256sum over the files in byte order", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-prov-folder-" });
  try {
    await Deno.mkdir(`${dir}/sub/deeper`, { recursive: true });
    await Deno.mkdir(`${dir}/.hidden_dir`);
    const files: Record<string, Uint8Array | string> = {
      "b.npz": new Uint8Array([0, 1, 2, 255, 254]),
      "a.json": '["x"]',
      "Zürich_0.json": "ü",
      "Z_0.json": "z",
      // UTF-16 order puts the emoji (a surrogate pair) before U+FF46; UTF-8 bytes after it.
      "\u{1F600}_0.json": "smile",
      "\uFF46_0.json": "fullwidth f",
      "sub/c.npz": new Uint8Array(3 << 20).map((_, i) => i * 7), // more than one read
      "sub/deeper/d": "",
      ".phraseval-dump.json": "left out",
      ".hidden_dir/e": "left out too",
    };
    for (const [name, v] of Object.entries(files)) {
      if (typeof v === "string") await Deno.writeTextFile(`${dir}/${name}`, v);
      else await Deno.writeFile(`${dir}/${name}`, v);
    }
    const h = await sha256Folder(dir);
    const [pySha, pyFiles, pyBytes] = (await python(["-c", PY_FOLDER, dir])).stdout.trim().split(
      " ",
    );
    assertEquals([h.sha256, h.files, h.bytes], [pySha, Number(pyFiles), Number(pyBytes)]);
    assertEquals(h.files, 8);
    // coreutils, as the module notes say (no name here has a backslash or a line break).
    const sh = await runArgv([
      "bash",
      "-c",
      "cd \"$1\" && find . -type f ! -path '*/.*' | sed 's|^\\./||' | LC_ALL=C sort | " +
      "xargs -d '\\n' sha256sum | sha256sum",
      "_",
      dir,
    ]);
    assert(sh.code === 0, sh.stderr);
    assertEquals(sh.stdout.split(" ")[0], h.sha256);
    // Any change to a file changes it.
    await Deno.writeTextFile(`${dir}/sub/deeper/d`, "x");
    assert((await sha256Folder(dir)).sha256 !== h.sha256);
    // An empty folder: the sha256 of nothing.
    await Deno.mkdir(`${dir}/empty`);
    assertEquals(
      (await sha256Folder(`${dir}/empty`)).sha256,
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("filesSha256: each file by base name = hashlib; missing and folders named", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-prov-files-" });
  try {
    await Deno.writeFile(`${dir}/model.onnx`, new Uint8Array([1, 2, 3]));
    await Deno.writeTextFile(`${dir}/vocab.txt`, "[PAD]\n[UNK]\n");
    const h = await filesSha256([`${dir}/model.onnx`, `${dir}/vocab.txt`, `${dir}/gone`, dir]);
    const py = (await python([
      "-c",
      "import hashlib,sys\nfor f in sys.argv[1:]: print(hashlib.sha256(open(f,'rb').read()).hexdigest())",
      `${dir}/model.onnx`,
      `${dir}/vocab.txt`,
    ])).stdout.trim().split("\n");
    const base = dir.slice(dir.lastIndexOf("/") + 1);
    assertEquals(h, {
      "model.onnx": py[0],
      "vocab.txt": py[1],
      gone: "missing",
      [base]: "folder",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const A = "1".repeat(40), B = "2".repeat(40), C = "3".repeat(40);

Deno.test("gitCommit: a .git folder (loose and packed refs, detached HEAD) and a worktree's gitdir file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-prov-git-" });
  try {
    // A plain repository: HEAD → refs/heads/main, loose.
    const repo = `${dir}/repo`;
    await Deno.mkdir(`${repo}/.git/refs/heads`, { recursive: true });
    await Deno.writeTextFile(`${repo}/.git/HEAD`, "ref: refs/heads/main\n");
    await Deno.writeTextFile(`${repo}/.git/refs/heads/main`, `${A}\n`);
    assertEquals(gitCommit(repo), A);
    // Packed: no loose ref.
    await Deno.remove(`${repo}/.git/refs/heads/main`);
    await Deno.writeTextFile(
      `${repo}/.git/packed-refs`,
      `# pack-refs with: peeled fully-peeled sorted\n${C} refs/heads/other\n${B} refs/heads/main\n`,
    );
    assertEquals(gitCommit(repo), B);
    // Detached.
    await Deno.writeTextFile(`${repo}/.git/HEAD`, `${C}\n`);
    assertEquals(gitCommit(repo), C);
    // A worktree: .git is a file naming its git dir, whose commondir is the main one's.
    await Deno.writeTextFile(`${repo}/.git/HEAD`, "ref: refs/heads/main\n");
    const wt = `${dir}/wt`;
    await Deno.mkdir(`${repo}/.git/worktrees/wt`, { recursive: true });
    await Deno.mkdir(wt);
    await Deno.writeTextFile(`${wt}/.git`, `gitdir: ${repo}/.git/worktrees/wt\n`);
    await Deno.writeTextFile(`${repo}/.git/worktrees/wt/HEAD`, "ref: refs/heads/feature\n");
    await Deno.writeTextFile(`${repo}/.git/worktrees/wt/commondir`, "../..\n");
    await Deno.mkdir(`${repo}/.git/refs/heads`, { recursive: true });
    await Deno.writeTextFile(`${repo}/.git/refs/heads/feature`, `${A}\n`);
    assertEquals(gitCommit(wt), A);
    // A ref that is nowhere, and no .git at all: unknown.
    await Deno.writeTextFile(`${repo}/.git/worktrees/wt/HEAD`, "ref: refs/heads/none\n");
    assertEquals(gitCommit(wt), undefined);
    assertEquals(gitCommit(`${dir}/nothing`), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("toolInfo: deno.json's version, and this checkout's commit = git rev-parse HEAD", async () => {
  const t = toolInfo();
  assertEquals(t.version, JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)).version);
  let git: RunResult | null = null;
  try {
    git = await runArgv(["git", "-C", ROOT, "rev-parse", "HEAD"]);
  } catch { /* no git: nothing to compare with */ }
  if (git?.code === 0) assertEquals(t.commit, git.stdout.trim());
  else assert(t.commit === undefined || /^[0-9a-f]{40}$/.test(t.commit), String(t.commit));
});

Deno.test("flattenJson: dotted members, indexed items, empty containers as values", () => {
  assertEquals(
    flattenJson({
      flags: { dtype: "f16", out: undefined },
      config: { models: [{ dtype: null, files: [] }] },
      seeds: {},
    }),
    {
      "flags.dtype": "f16",
      "config.models[0].dtype": null,
      "config.models[0].files": [],
      seeds: {},
    },
  );
  assertEquals(flattenJson({ a: 1 }, "system"), { "system.a": 1 });
});

Deno.test("readProvenance: a missing, unreadable or foreign provenance.json is refused by name", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-prov-read-" });
  try {
    const err = async () => await Effect.runPromise(Effect.flip(readProvenance(dir)));
    let e = await err();
    assertEquals(e.file, `${dir}/provenance.json`);
    assertStringIncludes(
      e.message,
      "no provenance.json: a run folder from before provenance blocks",
    );
    await Deno.writeTextFile(`${dir}/provenance.json`, "{");
    e = await err();
    assertStringIncludes(e.message, "invalid JSON");
    await Deno.writeTextFile(`${dir}/provenance.json`, '{"format": "other"}');
    e = await err();
    assertStringIncludes(e.message, `not a provenance block (no "format": "${PROVENANCE_FORMAT}")`);
    await Deno.writeTextFile(`${dir}/provenance.json`, `{"format": "${PROVENANCE_FORMAT}"}`);
    assertEquals(await Effect.runPromise(readProvenance(`${dir}/`)), { format: PROVENANCE_FORMAT });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
