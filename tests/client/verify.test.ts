// *Verify and measure*, the pure parts: which Python runs the model, the torch probe (against small fake
// interpreters), what the notification says, the settings and the server request.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { probeTorch, torchProblem, verifyInterpreter, verifyLabel, verifyRequest, verifySettings } from "../../client/src/verify";

/** An executable that answers like a Python whose `-c` script prints `line`. */
export function fakePython(line: string): string {
  const dir = mkdtempSync(join(tmpdir(), "adopter-fake-python-"));
  const path = join(dir, "python");
  writeFileSync(path, `#!/bin/sh\ncat <<'EOF'\n${line}\nEOF\n`);
  chmodSync(path, 0o755);
  return path;
}

test("the Python extension's interpreter first, then adopter.interpreter, then the server's", () => {
  assert.deepEqual(verifyInterpreter("/venv/bin/python", "/opt/py", "python3"), { command: "/venv/bin/python", source: "Python extension" });
  assert.deepEqual(verifyInterpreter(undefined, "/opt/py", "python3"), { command: "/opt/py", source: "adopter.interpreter" });
  assert.deepEqual(verifyInterpreter(undefined, undefined, "/usr/bin/python3"), { command: "/usr/bin/python3", source: "the server's interpreter" });
  assert.equal(verifyInterpreter(undefined, undefined, undefined), undefined);
});

test("the torch probe: torch's version, torch missing, an interpreter that does not run", async () => {
  const good = await probeTorch(fakePython('{"executable": "/p/python", "torch": "2.13.0+cpu"}'));
  assert.deepEqual(good, { executable: "/p/python", torch: "2.13.0+cpu" });
  const missing = await probeTorch(fakePython(`{"executable": "/p/python", "error": "ModuleNotFoundError: No module named 'torch'"}`));
  const interpreter = { command: "/p/python", source: "adopter.interpreter" } as const;
  assert.equal(torchProblem(interpreter, good), undefined);
  assert.equal(torchProblem(interpreter, missing),
    "/p/python (adopter.interpreter) has no torch. Verifying a fix runs your model, so it needs your project's Python: pick one that has torch.");
  const absent = await probeTorch("/nowhere/python");
  assert.deepEqual(absent, { error: "not found" });
  assert.match(torchProblem(interpreter, absent)!, /cannot run your model: not found/);
});

test("the real torch probe, on this machine's python3, says yes or names the missing module", async () => {
  const probe = await probeTorch("python3");
  assert.ok(probe.torch !== undefined || /torch/.test(probe.error ?? ""), JSON.stringify(probe));
  assert.ok(probe.executable?.includes("python"), JSON.stringify(probe));
});

const config = (values: Record<string, unknown>) => ({
  get<T>(key: string, fallback: T): T {
    return key in values ? (values[key] as T) : fallback;
  },
});

test("settings: defaults, and bad values give the defaults", () => {
  assert.deepEqual(verifySettings(config({})), { factories: {}, inputs: {}, device: "cpu", repeats: 10, timeout: 300 });
  const bad = verifySettings(config({ "verify.factories": ["x"], "verify.inputs": { A: 3, B: "m:f" }, "verify.repeats": -2, "verify.timeout": "soon" }));
  assert.deepEqual(bad, { factories: {}, inputs: { B: "m:f" }, device: "cpu", repeats: 10, timeout: 300 });
});

test("the request: the lens's class, or the action's finding; the class's factory and inputs from the settings", () => {
  const settings = verifySettings(config({ "verify.factories": { Block: "facts:make_block" }, "verify.inputs": { Other: "facts:other" },
    "verify.device": "auto", "verify.repeats": 5 }));
  assert.deepEqual(verifyRequest({ uri: "file:///w/m.py", class: "Block" }, "/venv/bin/python", settings), {
    uri: "file:///w/m.py", class: "Block", python: "/venv/bin/python", factory: "facts:make_block", device: "auto", repeats: 5, timeout: 300,
  });
  const one = { uri: "file:///w/m.py", class: "Other", rule: "f13-gelu-tanh-pow", line: 13 };
  assert.deepEqual(verifyRequest(one, "py", settings), {
    uri: "file:///w/m.py", class: "Other", rule: "f13-gelu-tanh-pow", line: 13, python: "py", inputs: "facts:other", device: "auto", repeats: 5, timeout: 300,
  });
  assert.equal(verifyLabel(one), "Other (f13-gelu-tanh-pow, line 13)");
  assert.equal(verifyLabel({ uri: "u", class: "Block" }), "Block");
});
