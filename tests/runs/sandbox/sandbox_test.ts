/**
 * The encoder sandbox holds (issue 11, items 1–4): every route by which an
 * encoder (or a config module) could read what it must not, or reach the
 * network, is refused with one line and exit 2 before anything runs.
 *
 * 1. a comma (or NUL, line break) in a granted path: Deno's `--allow-read=a,b`
 *    cannot express it, so it is refused, never split;
 * 2. files named by a model (ONNX manifest entries, the model itself) are
 *    checked after `realpath` against the datasets, the run folder and the
 *    other half's files; a manifest may only name files beside or below it;
 * 3. an encoder's output folder holds only plain files an encoder writes (no
 *    symbolic link, folder, pipe, hard link or other name);
 * 4. every sandboxed child runs with remote imports off; a config module is
 *    loaded with reads limited to its own folder tree and the repository,
 *    under a timeout.
 *
 * @module
 */
import * as Effect from "effect/Effect";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../../_assert.ts";
import { ROOT, RUN_PERMS, runArgv, runStage } from "../../_util.ts";
import { InputError } from "../../../io/errors.ts";
import * as sandbox from "../../../runs/sandbox/sandbox.ts";
import * as load from "../../../runs/config/load.ts";

const ONNX_TINY = `${ROOT}/tests/fixtures/onnx_tiny`;

/** A one-article SQuAD file (one paragraph, two questions) in `dir`. */
function tinyData(dir: string, name = "data.json"): string {
  const context = "Paris is the capital and largest city of France.";
  const path = `${dir}/${name}`;
  Deno.writeTextFileSync(
    path,
    JSON.stringify({
      version: "1.1",
      data: [{
        title: "Paris",
        paragraphs: [{
          context,
          qas: [
            {
              id: "q1",
              question: "What is the capital of France?",
              answers: [{ text: "Paris", answer_start: 0 }],
            },
            {
              id: "q2",
              question: "Paris is the largest city of which country?",
              answers: [{ text: "France", answer_start: 41 }],
            },
          ],
        }],
      }],
    }),
  );
  return path;
}

const listing = (dir: string): string[] => {
  const out: string[] = [];
  const walk = (d: string, pre: string) => {
    for (const e of Deno.readDirSync(d)) {
      out.push(`${pre}${e.name}${e.isDirectory ? "/" : ""}`);
      if (e.isDirectory) walk(`${d}/${e.name}`, `${pre}${e.name}/`);
    }
  };
  walk(dir, "");
  return out.sort();
};

async function runCli(
  script: string,
  args: readonly string[],
  perms: readonly string[] = RUN_PERMS,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return await runArgv([Deno.execPath(), "run", ...perms, `${ROOT}/${script}`, ...args], {
    cwd: ROOT,
  });
}

const oneLine = (stderr: string): string => {
  const lines = stderr.trim().split("\n");
  assertEquals(lines.length, 1, `one stderr line, got: ${stderr}`);
  return lines[0];
};

// ---------------------------------------------------------------- item 1

Deno.test("sandbox 1: permissionFlags refuses a granted path with a comma, NUL or line break instead of splitting it", () => {
  for (const bad of ["/tmp/x,/,/q", "/tmp/a\0b", "/tmp/a\nb", ""]) {
    for (const kind of ["read", "write", "run", "ffi"] as const) {
      let thrown: unknown = undefined;
      try {
        sandbox.permissionFlags({ [kind]: ["/ok", bad] });
      } catch (e) {
        thrown = e;
      }
      assert(thrown instanceof InputError, `${kind} ${JSON.stringify(bad)}: ${thrown}`);
      assertEquals((thrown as InputError).file, bad);
    }
  }
  let thrown: unknown;
  try {
    sandbox.encoderPermissions({ input: "/r/q.json", out: "/r/a,b", files: [] });
  } catch (e) {
    thrown = e;
  }
  assert(thrown instanceof InputError, String(thrown));
  assertEquals(
    String(thrown),
    "/r/a,b: a path with a comma cannot be granted to a sandboxed process (Deno's --allow-read=a,b list splits at every comma and has no escape); rename or move it",
  );
  // A verbatim flag naming one existing path that holds a comma is refused too.
  const dir = Deno.makeTempDirSync({ prefix: "pv-sbx-flag-" });
  Deno.writeTextFileSync(`${dir}/a,b.node`, "");
  thrown = undefined;
  try {
    sandbox.permissionFlags({ flags: [`--allow-ffi=${dir}/a,b.node`] });
  } catch (e) {
    thrown = e;
  }
  assert(thrown instanceof InputError, String(thrown));
  Deno.removeSync(dir, { recursive: true });
  // Plain paths are unchanged.
  assertEquals(sandbox.permissionFlags({ read: ["/a", "/b"], write: ["/b"] }), [
    "--allow-read=/a,/b",
    "--allow-write=/b",
  ]);
});

Deno.test("sandbox 1: full --out with a comma exits 2 with one line and creates nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-comma-" });
  try {
    const data = tinyData(dir);
    for (const out of [`${dir}/x,/,/q`, `${dir}/runs/a,b`]) {
      const r = await runCli("pipeline/full.ts", ["--data", data, "--out", out]);
      assertEquals(r.code, 2, r.stderr);
      assertEquals(
        oneLine(r.stderr),
        `full: ${out}: a path with a comma cannot be granted to a sandboxed process (Deno's --allow-read=a,b list splits at every comma and has no escape); rename or move it`,
      );
      assertEquals(listing(dir), ["data.json"], "nothing was created");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sandbox 1: run with a comma in the work folder or the dataset path exits 2 and creates nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-run-comma-" });
  try {
    Deno.mkdirSync(`${dir}/d,x`);
    const data = tinyData(`${dir}/d,x`);
    const cfg = `${dir}/cfg.ts`;
    Deno.writeTextFileSync(
      cfg,
      `export const config = {
  datasets: [{ abbr: "tiny", path: ${JSON.stringify(data)} }],
  models: [{ abbr: "sp", encoder: "sparse-pi" }],
};
`,
    );
    const r1 = await runCli("pipeline/run.ts", [cfg, "--work-dir", `${dir}/w`]);
    assertEquals(r1.code, 2, r1.stderr);
    assertMatch(
      oneLine(r1.stderr),
      /^run: .*\/d,x\/data\.json: a path with a comma cannot be granted to a sandboxed process/,
    );
    Deno.writeTextFileSync(
      cfg,
      `export const config = {
  datasets: [{ abbr: "tiny", path: ${JSON.stringify(tinyData(dir))} }],
  models: [{ abbr: "sp", encoder: "sparse-pi" }],
};
`,
    );
    const r2 = await runCli("pipeline/run.ts", [cfg, "--work-dir", `${dir}/w,x`]);
    assertEquals(r2.code, 2, r2.stderr);
    assertMatch(
      oneLine(r2.stderr),
      /^run: .*\/w,x\/\d{8}_\d{6}[^:]*: a path with a comma cannot be granted to a sandboxed process/,
    );
    assertEquals(listing(dir), ["cfg.ts", "d,x/", "d,x/data.json", "data.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------- item 2

/** A copy of the tiny ONNX encoder in `dir/model/`, its manifest edited. */
function onnxCopy(dir: string, edit: (m: Record<string, Record<string, unknown>>) => void): string {
  const m = JSON.parse(Deno.readTextFileSync(`${ONNX_TINY}/manifest.json`));
  Deno.mkdirSync(`${dir}/model`, { recursive: true });
  for (const f of ["context.onnx", "question.onnx", "vocab.txt"]) {
    Deno.copyFileSync(`${ONNX_TINY}/${f}`, `${dir}/model/${f}`);
  }
  edit(m);
  Deno.writeTextFileSync(`${dir}/model/manifest.json`, JSON.stringify(m));
  return `${dir}/model/manifest.json`;
}

function onnxConfig(dir: string, data: string, manifest: string): string {
  const cfg = `${dir}/cfg.ts`;
  Deno.writeTextFileSync(
    cfg,
    `export const config = {
  datasets: [{ abbr: "tiny", path: ${JSON.stringify(data)} }],
  models: [{ abbr: "tiny-onnx", onnx: ${JSON.stringify(manifest)} }],
};
`,
  );
  return cfg;
}

Deno.test("sandbox 2: a manifest that names the dataset (or a file outside its folder) is refused before anything runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-manifest-" });
  try {
    const data = tinyData(dir);
    const work = `${dir}/work`;
    // The question side's vocabulary is the dataset, through a path beside the manifest.
    Deno.mkdirSync(`${dir}/model`);
    Deno.symlinkSync(data, `${dir}/model/vocab_link.txt`);
    const cases: [(m: Record<string, Record<string, unknown>>) => void, RegExp][] = [
      [
        (m) => m.tokenizer.vocab = "vocab_link.txt",
        /^run: .*cfg\.ts: models\[0\] "tiny-onnx", context encoder, manifest tokenizer\.vocab: .*\/model\/vocab_link\.txt is the dataset "tiny" \(.*\/data\.json\); an encoder may not be granted it$/,
      ],
      [
        (m) => m.tokenizer.vocab = "../data.json",
        /^run: .*cfg\.ts: models\[0\] "tiny-onnx", context encoder, manifest tokenizer\.vocab: "\.\.\/data\.json" lies outside the manifest's folder .*\/model; a manifest may only name files beside or below it$/,
      ],
      [
        (m) => m.question.model = "/etc/passwd",
        /^run: .*cfg\.ts: models\[0\] "tiny-onnx", question encoder, manifest question\.model: "\/etc\/passwd" lies outside the manifest's folder .*\/model; a manifest may only name files beside or below it$/,
      ],
    ];
    for (const [edit, re] of cases) {
      const cfg = onnxConfig(dir, data, onnxCopy(dir, edit));
      const r = await runCli("pipeline/run.ts", [cfg, "--work-dir", work]);
      assertEquals(r.code, 2, r.stderr);
      assertMatch(oneLine(r.stderr), re);
      assertEquals(r.stdout, "");
      assert(!listing(dir).some((f) => f.startsWith("work")), "nothing ran: no run folder");
    }
    // A model file inside the run folder (where the split and the dumps go) is refused.
    const inWork = `${work}/model.json.gz`;
    Deno.mkdirSync(work);
    Deno.copyFileSync(`${ROOT}/data/sparse-pi/model.json.gz`, inWork);
    Deno.writeTextFileSync(
      `${dir}/cfg.ts`,
      `export const config = {
  datasets: [{ abbr: "tiny", path: ${JSON.stringify(data)} }],
  models: [{ abbr: "sp", encoder: "sparse-pi", model: ${JSON.stringify(inWork)} }],
};
`,
    );
    const r = await runCli("pipeline/run.ts", [`${dir}/cfg.ts`, "--work-dir", work]);
    assertEquals(r.code, 2, r.stderr);
    assertMatch(
      oneLine(r.stderr),
      /^run: .*cfg\.ts: models\[0\] "sp", context encoder, model: .*\/work\/model\.json\.gz lies inside the work folder \(.*\/work\); an encoder may not be granted it$/,
    );
    assertEquals(listing(work), ["model.json.gz"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sandbox 2: grantedFileProblem resolves links and checks folders both ways", () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-sbx-grant-" });
  try {
    const data = tinyData(dir);
    Deno.mkdirSync(`${dir}/m`);
    Deno.writeTextFileSync(`${dir}/m/ok.bin`, "x");
    Deno.symlinkSync(data, `${dir}/m/link`);
    const guarded = [{ path: data, what: 'the dataset "d"' }, {
      path: `${dir}/run`,
      what: "the run folder",
    }];
    assertEquals(sandbox.grantedFileProblem(`${dir}/m/ok.bin`, guarded), undefined);
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/m/link`, guarded),
      `${dir}/m/link is the dataset "d" (${data})`,
    );
    assertEquals(
      sandbox.grantedFileProblem(dir, guarded),
      `${dir} is a folder that holds the dataset "d" (${data})`,
    );
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/run/x`, guarded),
      `${dir}/run/x does not exist`,
    );
    Deno.mkdirSync(`${dir}/run`);
    Deno.writeTextFileSync(`${dir}/run/x`, "");
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/run/x`, guarded),
      `${dir}/run/x lies inside the run folder (${dir}/run)`,
    );
    assertEquals(
      sandbox.grantedFileProblem("/dev/zero", guarded),
      "/dev/zero is not a regular file, folder or named pipe",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("sandbox 2 (issue 22 item 1): a manifest file or model that is a hard link to the dataset, or has a second name, is refused before anything runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-hardlink-" });
  try {
    const data = tinyData(dir);
    const work = `${dir}/work`;
    // `ln data.json model/vocab.txt`: the manifest names vocab.txt, which is the dataset.
    const manifest = onnxCopy(dir, () => {});
    Deno.removeSync(`${dir}/model/vocab.txt`);
    Deno.linkSync(data, `${dir}/model/vocab.txt`);
    const r = await runCli("pipeline/run.ts", [
      onnxConfig(dir, data, manifest),
      "--work-dir",
      work,
    ]);
    assertEquals(r.code, 2, r.stderr);
    assertMatch(
      oneLine(r.stderr),
      /^run: .*cfg\.ts: models\[0\] "tiny-onnx", context encoder, manifest tokenizer\.vocab: .*\/model\/vocab\.txt is a hard link to the dataset "tiny" \(.*\/data\.json\); an encoder may not be granted it$/,
    );
    assertEquals(r.stdout, "");
    assert(!listing(dir).some((f) => f.startsWith("work")), "nothing ran: no run folder");

    // A model file with a second name somewhere else (what it is cannot be told) is refused.
    Deno.removeSync(`${dir}/model/vocab.txt`);
    Deno.copyFileSync(`${ONNX_TINY}/vocab.txt`, `${dir}/model/vocab.txt`);
    Deno.linkSync(`${dir}/model/question.onnx`, `${dir}/elsewhere.onnx`);
    const r2 = await runCli("pipeline/run.ts", [`${dir}/cfg.ts`, "--work-dir", work]);
    assertEquals(r2.code, 2, r2.stderr);
    assertMatch(
      oneLine(r2.stderr),
      /^run: .*cfg\.ts: models\[0\] "tiny-onnx", question encoder, manifest question\.model: .*\/model\/question\.onnx has 2 hard links \(a second name could be any file; a granted file must have one, or be a bundled model\); an encoder may not be granted it$/,
    );
    assert(!listing(dir).some((f) => f.startsWith("work")), "nothing ran: no run folder");

    // A sparse-pi model that is a hard link to the dataset.
    const linked = `${dir}/model.json.gz`;
    Deno.linkSync(data, linked);
    Deno.writeTextFileSync(
      `${dir}/cfg.ts`,
      `export const config = {
  datasets: [{ abbr: "tiny", path: ${JSON.stringify(data)} }],
  models: [{ abbr: "sp", encoder: "sparse-pi", model: ${JSON.stringify(linked)} }],
};
`,
    );
    const r3 = await runCli("pipeline/run.ts", [`${dir}/cfg.ts`, "--work-dir", work]);
    assertEquals(r3.code, 2, r3.stderr);
    assertMatch(
      oneLine(r3.stderr),
      /^run: .*cfg\.ts: models\[0\] "sp", context encoder, model: .*\/model\.json\.gz is a hard link to the dataset "tiny" \(.*\/data\.json\); an encoder may not be granted it$/,
    );
    assert(!listing(dir).some((f) => f.startsWith("work")), "nothing ran: no run folder");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sandbox 2 (issue 22 item 1): grantedFileProblem compares device and inode, counts links, and walks granted folders", () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-sbx-links-" });
  try {
    const data = tinyData(dir);
    const guarded = [{ path: data, what: 'the dataset "d"' }];
    Deno.mkdirSync(`${dir}/m/sub`, { recursive: true });
    Deno.writeTextFileSync(`${dir}/m/ok.bin`, "x");
    assertEquals(sandbox.grantedFileProblem(`${dir}/m`, guarded), undefined);
    // A hard link to the dataset, as a file and deep inside a granted folder.
    Deno.linkSync(data, `${dir}/m/sub/vocab.txt`);
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/m/sub/vocab.txt`, guarded),
      `${dir}/m/sub/vocab.txt is a hard link to the dataset "d" (${data})`,
    );
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/m`, guarded),
      `${dir}/m/sub/vocab.txt is a hard link to the dataset "d" (${data})`,
    );
    // With nothing guarded, a second name alone is refused.
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/m/sub/vocab.txt`, []),
      `${dir}/m/sub/vocab.txt has 2 hard links (a second name could be any file; a granted file must have one, or be a bundled model)`,
    );
    Deno.removeSync(`${dir}/m/sub/vocab.txt`);
    // A symbolic link inside a granted folder (Deno would follow it through the grant).
    Deno.symlinkSync("/etc/hostname", `${dir}/m/sub/l`);
    assertEquals(
      sandbox.grantedFileProblem(`${dir}/m`, []),
      `${dir}/m/sub/l is a symbolic link in the granted folder ${dir}/m (a sandboxed process could read through it)`,
    );
    Deno.removeSync(`${dir}/m/sub/l`);
    assertEquals(sandbox.grantedFileProblem(`${dir}/m`, guarded), undefined);
    // A hard link to a bundled model grants nothing new: accepted.
    const bundled = `${ROOT}/data/sparse-pi/model.json.gz`;
    try {
      Deno.linkSync(bundled, `${dir}/m/model.json.gz`);
    } catch {
      return; // another file system: no hard link to make
    }
    assertEquals(sandbox.grantedFileProblem(`${dir}/m/model.json.gz`, guarded), undefined);
    assertEquals(sandbox.grantedFileProblem(`${dir}/m`, guarded), undefined);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------- item 3

Deno.test("sandbox 3: a symlink planted in question_emb is refused (full and embed_question); its target is never opened", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-link-" });
  try {
    const data = tinyData(dir);
    // full: a link to the dataset planted in the output folder of an earlier
    // run of the same job (a resume, which the run manifest allows).
    const out = `${dir}/out`;
    const first = await runCli("pipeline/full.ts", ["--data", data, "--out", out]);
    assertEquals(first.code, 0, first.stderr);
    Deno.symlinkSync(data, `${out}/dumps/question_emb/x.npz`);
    const r = await runCli("pipeline/full.ts", ["--data", data, "--out", out]);
    assertEquals(r.code, 2, r.stderr);
    assertEquals(
      oneLine(r.stderr),
      `full: ${out}/dumps/question_emb/x.npz: a symbolic link; an encoder's output folder may hold only the plain files an encoder writes`,
    );
    assert(Deno.lstatSync(`${out}/dumps/question_emb/x.npz`).isSymlink, "the link is left alone");
    // embed_question on its own: a link to a named pipe; opening the pipe
    // for reading would block, so a prompt exit shows it was never opened.
    const q = `${dir}/q`;
    Deno.mkdirSync(`${q}/emb`, { recursive: true });
    const mk = await runArgv(["mkfifo", `${q}/context.fifo`]);
    assertEquals(mk.code, 0);
    Deno.symlinkSync(`${q}/context.fifo`, `${q}/emb/q1.npz`);
    const perms = sandbox.encoderPermissions({
      input: data,
      out: `${q}/emb`,
      files: [`${ROOT}/data/sparse-pi/model.json.gz`],
    });
    const t0 = Date.now();
    const e = await runStage("pipeline/embed_question.ts", [data, `${q}/emb`, "--sparse"], {
      permissions: ["--no-prompt", ...perms],
    });
    assert(Date.now() - t0 < 60_000);
    assertEquals(e.code, 2, e.stderr);
    assertEquals(
      oneLine(e.stderr),
      `embed_question: ${q}/emb/q1.npz: a symbolic link; an encoder's output folder may hold only the plain files an encoder writes`,
    );
    assertEquals(listing(`${q}/emb`), ["q1.npz"], "nothing written");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sandbox 3: outputFolderProblem accepts only the plain files an encoder writes", () => {
  const dir = Deno.makeTempDirSync({ prefix: "pv-sbx-out-" });
  try {
    const out = `${dir}/emb`;
    assertEquals(sandbox.outputFolderProblem(out), undefined, "absent: made fresh");
    Deno.mkdirSync(out);
    for (
      const f of ["a.npz", "a.json", "a.meta.json", ".phraseval-dump.json", ".a.npz.0a1b2c3d.tmp"]
    ) {
      Deno.writeTextFileSync(`${out}/${f}`, "");
    }
    assertEquals(sandbox.outputFolderProblem(out), undefined);
    const secret = `${dir}/context.json`;
    Deno.writeTextFileSync(secret, "{}");
    const bad: [() => void, string, () => void][] = [
      [
        () => Deno.mkdirSync(`${out}/sub.npz`),
        `${out}/sub.npz: a folder; an encoder's output folder may hold only the plain files an encoder writes`,
        () => Deno.removeSync(`${out}/sub.npz`),
      ],
      [
        () => Deno.linkSync(secret, `${out}/h.npz`),
        `${out}/h.npz: a file with 2 hard links (an encoder writes fresh files); an encoder's output folder may hold only the plain files an encoder writes`,
        () => Deno.removeSync(`${out}/h.npz`),
      ],
      [
        () => Deno.writeTextFileSync(`${out}/notes.txt`, ""),
        `${out}/notes.txt: not a file an encoder writes (*.npz, *.json, .*.tmp); an encoder's output folder may hold only the plain files an encoder writes`,
        () => Deno.removeSync(`${out}/notes.txt`),
      ],
    ];
    for (const [make, want, undo] of bad) {
      make();
      assertEquals(sandbox.outputFolderProblem(out), want);
      undo();
    }
    Deno.symlinkSync(dir, `${dir}/emb2`);
    assertEquals(
      sandbox.outputFolderProblem(`${dir}/emb2`),
      `${dir}/emb2: a symbolic link; an encoder's output folder must be a real folder`,
    );
    Deno.renameSync(secret, `${out}/data.json`);
    assertEquals(
      sandbox.outputFolderProblem(out, [{ path: `${out}/data.json`, what: 'the dataset "d"' }]),
      `${out}: holds the dataset "d" (${out}/data.json); an encoder may not be granted it`,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------- item 4

Deno.test("sandbox 4: sandboxed children run with remote imports off (esm.sh and npm refused by flag, not by DNS)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-net-" });
  try {
    const probe = `${dir}/probe.ts`;
    Deno.writeTextFileSync(
      probe,
      `for (const s of ["https://esm.sh/x", "https://deno.land/x/y/mod.ts", "npm:phraseval-not-a-package-0"]) {
  try { await import(s + ""); console.log("IMPORTED", s); }
  catch (e) { console.log(String(e).split("\\n")[0]); }
}
`,
    );
    const argv = sandbox.denoRunArgv(probe, [], { read: [dir] }, { quiet: true });
    assert(argv.includes("--no-remote") && argv.includes("--cached-only"), argv.join(" "));
    const o = await runArgv(argv);
    assertEquals(o.stdout.trim().split("\n"), [
      'TypeError: A remote specifier was requested: "https://esm.sh/x", but --no-remote is specified.',
      'TypeError: A remote specifier was requested: "https://deno.land/x/y/mod.ts", but --no-remote is specified.',
      'TypeError: Failed loading https://registry.npmjs.org/phraseval-not-a-package-0 for package "phraseval-not-a-package-0"',
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function writeCfg(dir: string, name: string, body: string): string {
  const file = `${dir}/${name}`;
  Deno.writeTextFileSync(
    file,
    `import { squadDev } from "${ROOT}/configs/datasets/squad_dev.ts";
${body}
export const config = {
  datasets: [{ ...squadDev, abbr: "one", reader: { articles: [8, 9] } }],
  models: [{ abbr: "sp", encoder: "sparse-pi" }],
};
`,
  );
  return file;
}

Deno.test("sandbox 4: a config's remote import and a read outside its folder and the repository are refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-cfg-" });
  const outside = await Deno.makeTempDir({ prefix: "pv-sbx-outside-" });
  try {
    Deno.writeTextFileSync(`${outside}/secret.txt`, "secret");
    const remote = writeCfg(dir, "remote.ts", `await import("https://esm.sh/x" + "");`);
    const r1 = await runCli("pipeline/run.ts", [remote, "--dry-run"]);
    assertEquals(r1.code, 2, r1.stderr);
    assertEquals(
      oneLine(r1.stderr),
      `run: ${remote}: cannot load: TypeError: A remote specifier was requested: "https://esm.sh/x", but --no-remote is specified.`,
    );
    const reads = writeCfg(
      dir,
      "reads.ts",
      `export const leaked = Deno.readTextFileSync(${JSON.stringify(`${outside}/secret.txt`)});`,
    );
    const r2 = await runCli("pipeline/run.ts", [reads, "--dry-run"]);
    assertEquals(r2.code, 2, r2.stderr);
    assertEquals(
      oneLine(r2.stderr),
      // Where the read is (line 2 of the file writeCfg writes, the call's column).
      `run: ${reads}: line 2, column 28: cannot load: NotCapable: Requires read access to "${outside}/secret.txt", run again with the --allow-read flag`,
    );
    // Its own folder and the repository stay readable.
    const own = writeCfg(
      dir,
      "own.ts",
      `export const note = Deno.readTextFileSync(${JSON.stringify(`${dir}/remote.ts`)}).length;`,
    );
    const r3 = await runCli("pipeline/run.ts", [own, "--dry-run"]);
    assertEquals(r3.code, 0, r3.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("sandbox 4: a config that never finishes loading fails after the timeout and leaves no process", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pv-sbx-loop-" });
  const cfg = writeCfg(dir, "loop.ts", "while (true) { /* never returns */ }");
  const alive = async () => {
    const ps = await runArgv(["ps", "-eo", "pid=,args="]);
    return ps.stdout.split("\n").filter((l) => l.includes(cfg) && l.includes("config_loader"));
  };
  try {
    const t0 = Date.now();
    const load2 = load.loadRunConfig as unknown as (
      p: string,
      o: { timeoutS: number },
    ) => Effect.Effect<unknown, InputError>;
    const e = await Effect.runPromise(
      Effect.flip(load2(cfg, { timeoutS: 2 })).pipe(Effect.timeout(25_000)),
    );
    const secs = (Date.now() - t0) / 1000;
    assert(e instanceof InputError, String(e));
    assertEquals(String(e), `${cfg}: did not load within 2 s (stopped)`);
    assert(secs < 20, `${secs} s`);
    assertEquals(await alive(), [], "the loader process was killed and awaited");
  } finally {
    // Only if the check above failed: stop the loader this test started.
    for (const l of await alive()) {
      try {
        Deno.kill(Number(l.trim().split(/\s+/)[0]), "SIGKILL");
      } catch { /* gone */ }
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sandbox 4: the loader reads only the config's folder tree and the repository", () => {
  const argv = load.configLoaderArgv("/cfgs/a/run.ts");
  const read = argv.find((a: string) => a.startsWith("--allow-read"));
  assertEquals(read, `--allow-read=/cfgs/a,${ROOT}`);
  assertStringIncludes(argv.join(" "), "--no-remote --cached-only");
});

Deno.test("sandbox 2: a work folder that holds the repository still grants the built-in models", async () => {
  const { planRun } = await import("../../../runs/plan/plan.ts");
  const cfg = await Effect.runPromise(
    load.loadRunConfig(`${ROOT}/configs/eval_two_models_mini.ts`),
  );
  // The run folder's parent (the work folder) is the repository's parent.
  const parent = ROOT.slice(0, ROOT.lastIndexOf("/")) || "/";
  const runDir = `${parent}/pv-never-made-${crypto.randomUUID().slice(0, 8)}`;
  const plan = await Effect.runPromise(planRun(cfg, { runDir, maxPartitionSize: 32 }));
  assertEquals(plan.tasks.length, 41);
  assert(plan.tasks.some((t) => t.argv.some((a) => a.includes(`${ROOT}/data/sparse-pi`))));
  let made = true;
  try {
    Deno.statSync(runDir);
  } catch {
    made = false;
  }
  assertEquals(made, false, "planning creates nothing");
});
