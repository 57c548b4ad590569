// Which Python starts the server: the order of the candidates, version checks, what the log and the
// one notification say.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Probe, candidates, chooseInterpreter, expandPath, probeInterpreter } from "../../client/src/interpreter";

const fake = (table: Record<string, [number, number, number] | string>): Probe => async (command) => {
  const v = table[command];
  return v === undefined ? { error: "not found" } : typeof v === "string" ? { error: v } : { executable: `/abs/${command}`, version: v };
};

test("candidates: adopter.interpreter, then the Python extension's, then python3, without duplicates", () => {
  assert.deepEqual(candidates("/opt/py/bin/python", "/venv/bin/python").map((c) => [c.source, c.command]), [
    ["adopter.interpreter", "/opt/py/bin/python"], ["Python extension", "/venv/bin/python"], ["python3", "python3"],
  ]);
  assert.deepEqual(candidates(undefined, undefined).map((c) => c.command), ["python3"]);
  assert.deepEqual(candidates("python3", "python3").map((c) => c.source), ["adopter.interpreter"]);
});

test("the configured interpreter wins when it is usable", async () => {
  const choice = await chooseInterpreter(candidates("mine", "ext"), fake({ mine: [3, 12, 1], ext: [3, 11, 0], python3: [3, 11, 0] }));
  assert.equal(choice.command, "/abs/mine");
  assert.equal(choice.problem, undefined);
  assert.equal(choice.attempts.length, 1);
});

test("a too-old configured interpreter falls back and says so once", async () => {
  const choice = await chooseInterpreter(candidates("old", "ext"), fake({ old: [3, 8, 10], ext: [3, 11, 4] }));
  assert.equal(choice.command, "/abs/ext");
  assert.match(choice.problem ?? "", /adopter.interpreter \(old\): Python 3.8.10 is too old \(needs 3.10 or newer\); using ext instead/);
  assert.deepEqual(choice.attempts.map((a) => a.usable), [false, true]);
});

test("the Python extension's interpreter is used before python3, silently", async () => {
  const choice = await chooseInterpreter(candidates(undefined, "/venv/bin/python"), fake({ "/venv/bin/python": [3, 10, 0], python3: [3, 12, 0] }));
  assert.equal(choice.command, "/abs//venv/bin/python");
  assert.equal(choice.problem, undefined);
});

test("nothing usable: no command, and the problem lists every attempt", async () => {
  const choice = await chooseInterpreter(candidates("gone", undefined), fake({ python3: [3, 9, 2] }));
  assert.equal(choice.command, undefined);
  assert.match(choice.problem ?? "", /needs Python 3.10 or newer/);
  assert.match(choice.problem ?? "", /gone: cannot run: not found/);
  assert.match(choice.problem ?? "", /python3: Python 3.9.2 is too old/);
});

test("expandPath substitutes the workspace folder and the home folder", () => {
  assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", "/w", "/home/u"), "/w/.venv/bin/python");
  assert.equal(expandPath("~/py/bin/python", undefined, "/home/u"), "/home/u/py/bin/python");
  assert.equal(expandPath(" ${userHome}/x ", "/w", "/home/u"), "/home/u/x");
});

test("probeInterpreter runs the interpreter and reads its version", async () => {
  const dir = mkdtempSync(join(tmpdir(), "adopter-probe-"));
  const old = join(dir, "python-old");
  writeFileSync(old, "#!/bin/sh\necho '[\"/usr/bin/python3.8\", [3, 8, 10]]'\n");
  chmodSync(old, 0o755);
  assert.deepEqual(await probeInterpreter(old), { executable: "/usr/bin/python3.8", version: [3, 8, 10] });
  const broken = join(dir, "python-broken");
  writeFileSync(broken, "#!/bin/sh\necho hello\n");
  chmodSync(broken, 0o755);
  assert.match((await probeInterpreter(broken)).error ?? "", /unexpected output/);
  assert.deepEqual(await probeInterpreter(join(dir, "missing")), { error: "not found" });
  const real = await probeInterpreter("python3");
  assert.ok(real.version && real.version[0] === 3, JSON.stringify(real));
});
