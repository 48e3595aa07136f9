/**
 * Every command's `--help` comes from one generator (`helpText` in
 * `pipeline/_args.ts`) and speaks one vocabulary: the usage line names the
 * command as a user types it (`./phraseval <task>`, the deno.json task), the
 * exit-status line lists 130 and 143, every example is a whole command line
 * that uses only the command's own options, and a flag name has the same
 * value placeholder in every command (`--top-k K`).
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { ROOT, runStage } from "../_util.ts";
import { EXIT_STATUS_LINE, LAUNCHER } from "../../pipeline/_args.ts";

/** The deno.json tasks that run a pipeline/ script, with that script. */
function commands(): [string, string][] {
  const tasks = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks as Record<
    string,
    string | { command: string }
  >;
  const out: [string, string][] = [];
  for (const [name, t] of Object.entries(tasks)) {
    const command = typeof t === "string" ? t : t.command;
    // A task that chains several steps (`a && b`) is a script of its own, not one command.
    if (command.includes("&&")) continue;
    const m = /(pipeline\/[a-z_]+\.ts)/.exec(command);
    if (m) out.push([name, m[1]]);
  }
  return out;
}

Deno.test("help: one generator, one vocabulary, examples that use the command's own options", async () => {
  const cmds = commands();
  assert(cmds.length >= 15, `only ${cmds.length} commands found in deno.json`);
  const metavars = new Map<string, Map<string, string>>(); // flag -> metavar -> command
  await Promise.all(cmds.map(async ([task, script]) => {
    const r = await runStage(script, ["--help"]);
    assertEquals(r.code, 0, `${task}: ${r.stderr}`);
    const lines = r.stdout.split("\n");
    const usage = lines[0];
    assert(usage.startsWith(`Usage: ${LAUNCHER} ${task} `), `${task}: ${usage}`);
    assert(!/ {2}|\s$/.test(usage), `${task}: spacing in ${JSON.stringify(usage)}`);
    assert(lines.includes(EXIT_STATUS_LINE), `${task}: no exit-status line`);
    const options = new Set<string>();
    let section = "";
    for (const line of lines) {
      if (/^[A-Z][a-z]+( status)?:/.test(line)) section = line.split(":")[0];
      const m = /^ {2}(?:-[a-z], )?--([a-z0-9-]+)(?: \[?([^\s\]]+)\]?)?(?:\s|$)/.exec(line);
      if (section === "Options" && m) {
        options.add(m[1]);
        // A value placeholder is upper case or a choice list; a description starts lower case.
        const mv = m[2] !== undefined && /^[A-Z]|\|/.test(m[2]) ? m[2] : "";
        const seen = metavars.get(m[1]) ?? new Map<string, string>();
        seen.set(mv, task);
        metavars.set(m[1], seen);
      }
    }
    assert(options.has("help") && options.has("debug"), `${task}: no --help/--debug`);
    const examples = lines.filter((l) => l.startsWith(`  ${LAUNCHER} `));
    for (const e of examples) {
      assert(e.startsWith(`  ${LAUNCHER} ${task}`), `${task}: example of another command: ${e}`);
      const own = e.split("|")[0].split("#")[0];
      for (const [, flag] of own.matchAll(/ --([a-z0-9-]+)/g)) {
        assert(options.has(flag), `${task}: example uses --${flag}, not an option: ${e}`);
      }
    }
  }));
  for (const [flag, seen] of metavars) {
    // `--out` names a file for records and a folder for the commands that write several files.
    if (flag === "out") continue;
    assert(
      seen.size === 1,
      `--${flag} has placeholders ${[...seen].map(([m, t]) => `${m || "(none)"} in ${t}`)}`,
    );
  }
  assertEquals([...(metavars.get("top-k")?.keys() ?? [])], ["K"]);
});
