// The universal .vsix with a Python that lacks the compiled packages: the launcher's probe is read, the
// server is not started (no crash loop), one notification offers Install / Select Interpreter, and Install
// makes a private environment, then starts the server with it.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, test } from "node:test";
import { DependencyProbe, decideStart, installSteps, listText, parseProbe, venvPython } from "../../client/src/dependencies";
import { activate, deactivate } from "../../client/src/extension";
import { clients } from "./mock/languageclient";
import { Uri, mock } from "./mock/vscode";

const MISSING_LINE = JSON.stringify({
  adopter: "missing", python: [3, 11, 7], executable: "/usr/bin/python3",
  missing: [
    { module: "tree_sitter", package: "tree-sitter", error: "ModuleNotFoundError: No module named 'tree_sitter'" },
    { module: "pygls", package: "pygls", error: "ModuleNotFoundError: No module named 'pygls'" },
  ],
});

test("the probe's report: ready, missing (from the last JSON line), or unknown with stderr's last line", () => {
  assert.deepEqual(parseProbe('{"adopter": "ready", "missing": [], "python": [3, 12, 1], "executable": "/p"}\n', 0),
    { state: "ready", python: [3, 12, 1], executable: "/p" });
  const missing = parseProbe(`some noise\n${MISSING_LINE}\n`, 4);
  assert.equal(missing.state, "missing");
  assert.deepEqual(missing.state === "missing" && missing.missing.map((m) => m.package), ["tree-sitter", "pygls"]);
  assert.deepEqual(parseProbe("", 2, "python3: can't open file '/x/launch.py'\n"), { state: "unknown", error: "python3: can't open file '/x/launch.py'" });
  assert.deepEqual(parseProbe('{"adopter": "ready"}', 4), { state: "unknown", error: "exit status 4" }); // ready must exit 0
  assert.equal(parseProbe("{not json", 1).state, "unknown");
  assert.equal(parseProbe(MISSING_LINE, 1).state, "unknown"); // "missing" comes with the launcher's status 4
});

test("start with the chosen Python when it has the packages, or when the probe itself failed", () => {
  assert.deepEqual(decideStart("/py", { state: "ready" }), { action: "start", command: "/py", privateEnvironment: false });
  assert.deepEqual(decideStart("/py", { state: "unknown", error: "x" }), { action: "start", command: "/py", privateEnvironment: false });
});

test("missing packages: the private environment of an earlier Install when it is ready, else ask once", () => {
  const missing = parseProbe(MISSING_LINE, 4);
  const ready: DependencyProbe = { state: "ready" };
  assert.deepEqual(decideStart("/py", missing, "/env/bin/python", ready), { action: "start", command: "/env/bin/python", privateEnvironment: true });
  for (const env of [undefined, missing, { state: "unknown", error: "broken" } as DependencyProbe]) {
    const decision = decideStart("/py", missing, env ? "/env/bin/python" : undefined, env);
    assert.equal(decision.action, "ask");
    assert.match(decision.action === "ask" ? decision.message : "",
      /^Python 3\.11\.7 at \/usr\/bin\/python3 lacks tree-sitter and pygls, which the Adopter server needs .*Install/);
  }
});

test("Install: python -m venv under the given folder, then pip install of the bundled pins with the venv's Python", () => {
  const missing = parseProbe(MISSING_LINE, 4);
  const packages = missing.state === "missing" ? missing.missing : [];
  const steps = installSteps("/usr/bin/python3", "/store/python-env", "linux", "/ext/bundled/requirements.txt", packages);
  assert.deepEqual(steps.map((s) => [s.command, ...s.args]), [
    ["/usr/bin/python3", "-m", "venv", "--clear", "/store/python-env"],
    ["/store/python-env/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-r", "/ext/bundled/requirements.txt"],
  ]);
  assert.deepEqual(installSteps("py", "/e", "linux", undefined, packages)[1].args.slice(-2), ["tree-sitter", "pygls"]);
  assert.equal(venvPython("C:\\e", "win32").replace(/\//g, "\\"), "C:\\e\\Scripts\\python.exe");
  assert.equal(listText(["a", "b", "c"]), "a, b and c");
});

// A fake interpreter and extension: the fake python answers the interpreter probe with its own path, makes
// a "venv" whose python has the packages (ADOPTER_FAKE_READY), and runs the fake launcher otherwise.
function fakeWorld(): { ext: string; storage: string; python: string } {
  const root = mkdtempSync(join(tmpdir(), "adopter-deps-"));
  const ext = join(root, "ext");
  mkdirSync(join(ext, "client", "python"), { recursive: true });
  mkdirSync(join(ext, "bundled"), { recursive: true });
  writeFileSync(join(ext, "bundled", "requirements.txt"), "tree-sitter==0.26.1\n");
  writeFileSync(join(ext, "client", "python", "launch.py"), [
    "import json, os, sys",
    "ready = os.environ.get('ADOPTER_FAKE_READY') == '1'",
    `print('{"adopter": "ready", "missing": []}' if ready else ${JSON.stringify(MISSING_LINE)})`,
    "sys.exit(0 if ready else 4)",
  ].join("\n"));
  const python = join(root, "fakepython");
  const envPython = [
    "#!/bin/sh",
    'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "pip $*" >> "$(dirname "$0")/../pip.log"; exit 0; fi',
    'ADOPTER_FAKE_READY=1 exec python3 "$@"',
  ].join("\n");
  writeFileSync(python, [
    "#!/bin/sh",
    'if [ "$1" = "-c" ]; then echo "[\\"$0\\", [3, 11, 7]]"; exit 0; fi',
    `if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$4/bin"; cat > "$4/bin/python" <<'EOF'\n${envPython}\nEOF\nchmod +x "$4/bin/python"; exit 0; fi`,
    'exec python3 "$@"',
  ].join("\n"));
  chmodSync(python, 0o755);
  return { ext, storage: join(root, "storage"), python };
}

function context(world: { ext: string; storage: string }): any {
  return { subscriptions: [], extensionUri: Uri.file(world.ext), globalStorageUri: Uri.file(world.storage) };
}

async function waitFor(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !done(); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(done(), `timed out waiting for ${what}`);
}

beforeEach(async () => {
  await deactivate();
  mock.reset();
  clients.length = 0;
});

test("a Python without the packages: no server, one notification with Install and Select Interpreter, the output says the same", async () => {
  const world = fakeWorld();
  mock.config["adopter.interpreter"] = world.python;
  await activate(context(world));
  assert.equal(clients.length, 0); // no language client: nothing to crash-loop
  const errors = mock.messages.filter((m) => m.level === "error");
  assert.equal(errors.length, 1, JSON.stringify(mock.messages));
  assert.deepEqual(errors[0].buttons, ["Install", "Select Interpreter"]);
  assert.match(errors[0].text, /lacks tree-sitter and pygls/);
  assert.ok(mock.log.includes(`error ${errors[0].text}`), mock.log.join("\n")); // Show Output says the same
  assert.ok(mock.log.some((l) => l.startsWith("warn") && l.includes("tree-sitter does not import (tree_sitter: ModuleNotFoundError")));
  assert.match(mock.statusItems[0].text, /failed/);
});

test("Install: a progress notification, the private environment under global storage, then the server starts with it", async () => {
  const world = fakeWorld();
  mock.config["adopter.interpreter"] = world.python;
  mock.messageAnswers.push((_text, buttons) => (buttons.includes("Install") ? "Install" : undefined));
  await activate(context(world));
  await waitFor("the restarted server", () => clients.length === 1);
  const env = join(world.storage, "python-env");
  assert.equal(clients[0].serverOptions.command, join(env, "bin", "python"));
  assert.equal(mock.progress.length, 1);
  assert.equal(mock.progress[0].options.location, 15); // ProgressLocation.Notification
  assert.match(readFileSync(join(env, "pip.log"), "utf8"), /install .* -r .*bundled\/requirements\.txt/);
  assert.equal(mock.messages.filter((m) => m.level === "error").length, 1); // only the first notification
  // The next start (a reload) goes straight to the private environment, without asking.
  await deactivate();
  mock.reset();
  clients.length = 0;
  mock.config["adopter.interpreter"] = world.python;
  await activate(context(world));
  assert.equal(clients.length, 1);
  assert.equal(clients[0].serverOptions.command, join(env, "bin", "python"));
  assert.equal(mock.messages.length, 0);
});
