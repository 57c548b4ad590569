// The extension against a mocked `vscode` and language client: activation, command ids, the settings
// the server gets, trust, the search from a code lens, and the one notification for a bad interpreter.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, test } from "node:test";
import { activate, deactivate } from "../../client/src/extension";
import { CLIENT, SERVER } from "../../client/src/ids";
import { answers, clients } from "./mock/languageclient";
import { Uri, mock } from "./mock/vscode";

const ROOT = join(__dirname, "..", "..", "..");
const PACKAGE = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
// The commands the server registers (adopter.lsp.commands); the language client registers these itself.
const SERVER_COMMANDS = ["adopter.searchAccelerator", "adopter.showArchitecture", "adopter.verifyFixes", "adopter.debugInfo"];

function context(): any {
  return { subscriptions: [] as { dispose(): void }[], extensionUri: Uri.file("/ext") };
}

async function activated(): Promise<any> {
  const ctx = context();
  await activate(ctx);
  return ctx;
}

beforeEach(async () => {
  await deactivate();
  mock.reset();
  clients.length = 0;
  answers.respond = async () => null;
});

test("every client command is registered, contributed, and never a server command id", async () => {
  await activated();
  const registered = [...mock.commands.keys()].sort();
  assert.deepEqual(registered, Object.values(CLIENT).sort());
  const contributed = PACKAGE.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(contributed, registered);
  for (const id of [...registered, ...contributed]) {
    assert.ok(!SERVER_COMMANDS.includes(id), id);
    assert.ok(id.startsWith("adopter.client."), id);
  }
  assert.deepEqual(Object.values(SERVER).sort(), SERVER_COMMANDS.filter((c) => c !== "adopter.debugInfo").sort());
});

test("the server starts from the launcher the extension carries, with python3 when nothing is configured", async () => {
  await activated();
  assert.equal(clients.length, 1);
  const server = clients[0].serverOptions;
  assert.match(server.command, /python/);
  assert.deepEqual(server.args, ["/ext/client/python/launch.py", "lsp"]);
  assert.ok(mock.log.some((l) => l.startsWith("info interpreter from python3: python3: Python 3.")), mock.log.join("\n"));
  assert.match(mock.statusItems[0].text, /Adopter/);
  assert.equal(mock.statusItems[0].command, "workbench.actions.view.problems");
});

test("the client declares its commands, so the server offers code lenses", async () => {
  await activated();
  const capabilities: any = {};
  clients[0].features[0].fillClientCapabilities(capabilities);
  assert.deepEqual(capabilities.experimental, { adopterClientCommands: true });
});

test("a missing configured interpreter and a missing Python-extension one: logged, python3 used, one notification", async () => {
  mock.config["adopter.interpreter"] = "/nowhere/python";
  mock.pythonExtension = { interpreter: "/also/nowhere/python" };
  await activated();
  assert.match(clients[0].serverOptions.command, /python/);
  assert.ok(mock.log.some((l) => l === "warn interpreter from adopter.interpreter: /nowhere/python: cannot run: not found"));
  assert.ok(mock.log.some((l) => l === "warn interpreter from Python extension: /also/nowhere/python: cannot run: not found"));
  const errors = mock.messages.filter((m) => m.level === "error");
  assert.equal(errors.length, 1);
  assert.deepEqual(errors[0].buttons, ["Select Interpreter", "Show Output"]);
});

test("no usable interpreter: no server, a failed status and one notification with a pick button", async () => {
  mock.config["adopter.interpreter"] = "/nowhere/python";
  const path = process.env.PATH;
  process.env.PATH = "/nonexistent";
  try {
    await activated();
  } finally {
    process.env.PATH = path;
  }
  assert.equal(clients.length, 0);
  const errors = mock.messages.filter((m) => m.level === "error");
  assert.equal(errors.length, 1);
  assert.match(errors[0].text, /needs Python 3.10 or newer/);
  assert.ok(errors[0].buttons.includes("Select Interpreter"));
  assert.match(mock.statusItems[0].text, /failed/);
});

test("the server gets its own settings only: mirrored from VS Code's, trust included, interpreter left out", async () => {
  mock.config["adopter.select"] = ["f01"];
  mock.config["adopter.target"] = "cpu";
  mock.config["adopter.rulePaths"] = [".rules"];
  mock.config["adopter.interpreter"] = "python3";
  mock.config["adopter.trace.server"] = "verbose";
  await activated();
  const options = clients[0].clientOptions;
  const expected = { select: ["f01"], ignore: [], severity: {}, target: "cpu", rule_paths: [".rules"], debounce_ms: 150, trusted: true };
  assert.deepEqual(options.initializationOptions, expected);
  const pulled = options.middleware.workspace.configuration({ items: [{ section: "adopter" }, { section: "python" }] });
  assert.deepEqual(pulled, [expected, null]);
  mock.trusted = false;
  const untrusted = options.middleware.workspace.configuration({ items: [{ section: "adopter" }] });
  assert.deepEqual(untrusted[0].rule_paths, []);
  assert.equal(untrusted[0].trusted, false);
  assert.ok(options.documentSelector.some((s: any) => s.scheme === "vscode-notebook-cell" && s.language === "python"));
});

function answerPicks(...labels: string[]): void {
  for (const label of labels) {
    mock.quickPickAnswers.push((items) => items.find((i: any) => i.label === label || i.label.endsWith(` ${label}`)));
  }
}

test("code lens → quick picks → the server's search with the class in the file → the panel shows the report", async () => {
  mock.workspaceFolders = [{ uri: Uri.file("/w"), name: "w" }];
  await activated();
  let sent: any;
  answers.respond = async (_method, params) => {
    sent = params;
    return { best: { label: "found design" }, workload: { model: "m" } };
  };
  answerPicks("Throughput", "Pipeline, 2 stages", "Quick");
  await mock.commands.get(CLIENT.searchAccelerator)!({ uri: "file:///w/modeling_tiny.py", class: "TinyModel", line: 3 });
  assert.deepEqual(sent, {
    command: "adopter.searchAccelerator",
    arguments: [{ model: "/w/modeling_tiny.py:TinyModel", objective: "throughput", strategy: "wham", budget: 50, pipeline: 2 }],
  });
  const panel = mock.panels[0];
  assert.equal(panel.title, "Accelerator search: TinyModel");
  assert.match(panel.webview.html, /Content-Security-Policy" content="default-src 'none'; style-src vscode-webview:\/\/test; img-src vscode-webview:\/\/test data:; script-src 'nonce-[A-Za-z0-9]{32}'"/);
  assert.deepEqual(panel.webview.options.localResourceRoots.map((u: Uri) => u.path), ["/ext/client/media"]);
  const last = panel.posted.at(-1);
  assert.equal(last.state.status, "done");
  assert.equal(last.state.report.best.label, "found design");
});

test("the panel's Run again sends the same request; a failure shows the server's message with how to give a factory", async () => {
  await activated();
  let calls = 0;
  answers.respond = async () => {
    calls += 1;
    throw new Error("The search could not build Net from m.py: Net.__init__ needs `dim`");
  };
  answerPicks("Throughput", "Single device", "Default");
  await mock.commands.get(CLIENT.searchAccelerator)!({ uri: "file:///w/m.py", class: "Net" });
  const panel = mock.panels[0];
  const failed = panel.posted.at(-1).state;
  assert.deepEqual([failed.status, failed.help], ["error", true]);
  assert.match(failed.error, /needs `dim`/);
  panel.receive({ type: "rerun" });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(calls, 2);
  assert.deepEqual(clients[0].requests[1].params, clients[0].requests[0].params);
});

test("the search shows a notification with Cancel; cancelling cancels the request and the panel says so", async () => {
  await activated();
  answers.respond = (_method, _params) => new Promise((_resolve, reject) => {
    const token = clients[0].requests.at(-1)!.token;
    token.onCancellationRequested(() => reject(Object.assign(new Error("Canceled"), { code: -32800 })));
  });
  answerPicks("gpt2", "Throughput", "Single device", "Quick");
  const running = mock.commands.get(CLIENT.searchAccelerator)!();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(mock.progress.length, 1);
  assert.deepEqual([mock.progress[0].options.title, mock.progress[0].options.cancellable], ["Accelerator search: gpt2", true]);
  assert.equal(mock.panels[0].posted.length, 0); // still running
  mock.progress[0].cancel();
  await running;
  assert.equal(clients[0].requests[0].token.isCancellationRequested, true);
  assert.equal(mock.panels[0].posted.at(-1).state.status, "cancelled");
});

test("untrusted workspace: a lens's search is refused before anything runs; zoo models still run", async () => {
  mock.trusted = false;
  await activated();
  await mock.commands.get(CLIENT.searchAccelerator)!({ uri: "file:///w/m.py", class: "Net" });
  assert.equal(clients[0].requests.length, 0);
  assert.match(mock.messages.at(-1)!.text, /not trusted/);
  answerPicks("bert-base", "Throughput", "Single device", "Quick");
  await mock.commands.get(CLIENT.searchAccelerator)!();
  assert.equal(clients[0].requests[0].params.arguments[0].model, "bert-base");
});

test("the search at the cursor uses the class around it", async () => {
  await activated();
  const text = "from torch import nn\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n";
  const document = { uri: Uri.file("/w/net.py"), languageId: "python", isDirty: false, getText: () => text };
  mock.activeTextEditor = { document, selection: { active: { line: 4 } } };
  answerPicks("Net", "Throughput", "Single device", "Quick");
  await mock.commands.get(CLIENT.searchAccelerator)!();
  assert.equal(clients[0].requests[0].params.arguments[0].model, "/w/net.py:Net");
});

test("fix all runs the source.fixAll.adopter action; restart makes a new client", async () => {
  await activated();
  mock.activeTextEditor = { document: { uri: Uri.file("/w/a.py"), languageId: "python" } };
  await mock.commands.get(CLIENT.fixAll)!();
  assert.deepEqual(mock.executed.at(-1), { command: "editor.action.sourceAction", args: [{ kind: "source.fixAll.adopter", apply: "first" }] });
  await mock.commands.get(CLIENT.restartServer)!();
  assert.equal(clients.length, 2);
  assert.equal(clients[0].running, false);
  assert.equal(clients[1].running, true);
});

/** An executable standing in for a Python: it answers the server's version probe, and the torch probe
 * with `torch` (a version) or, when undefined, with torch missing. */
function fakePython(torch: string | undefined): string {
  const path = join(mkdtempSync(join(tmpdir(), "adopter-fake-python-")), "python");
  const answer = torch ? `{"executable": "$0", "torch": "${torch}"}` : `{"executable": "$0", "error": "ModuleNotFoundError: No module named 'torch'"}`;
  writeFileSync(path, ["#!/bin/sh", 'case "$2" in', '  *"import torch"*) cat <<EOF', answer, "EOF", "  ;;",
    '  *version_info*) echo "[\\"$0\\", [3, 11, 4]]" ;;', "  *) exit 0 ;;", "esac", ""].join("\n"));
  chmodSync(path, 0o755);
  return path;
}

async function until(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(ok(), what);
}

const VERIFY_REPORT = JSON.parse(readFileSync(join(ROOT, "tests", "client", "fixtures", "verify-report.json"), "utf8"));

test("Verify and measure from a code action: the project's Python (adopter.interpreter), one finding, progress, the table in the panel", async () => {
  const python = fakePython("2.13.0");
  mock.config["adopter.interpreter"] = python;
  mock.config["adopter.verify.factories"] = { TinyBertSelfOutput: "verify_factories:self_output" };
  await activated();
  answers.respond = async () => VERIFY_REPORT;
  await mock.commands.get(CLIENT.verifyFixes)!({ uri: "file:///w/m.py", class: "TinyBertSelfOutput", rule: "f05-dropout-add-layernorm", line: 18 });
  const verify = clients[0].requests.find((r) => r.params.command === SERVER.verifyFixes)!;
  assert.deepEqual(verify.params.arguments, [{ uri: "file:///w/m.py", class: "TinyBertSelfOutput", rule: "f05-dropout-add-layernorm", line: 18,
    python, factory: "verify_factories:self_output", device: "cpu", repeats: 10, timeout: 300 }]);
  assert.deepEqual([mock.progress[0].options.title, mock.progress[0].options.cancellable],
    ["Verify and measure: TinyBertSelfOutput (f05-dropout-add-layernorm, line 18)", true]);
  const panel = mock.panels[0];
  assert.equal(panel.title, "Verify and measure: TinyBertSelfOutput (f05-dropout-add-layernorm, line 18)");
  const last = panel.posted.at(-1).state;
  assert.deepEqual([last.kind, last.status, last.report.rows.length], ["verify", "done", 3]);
  // Run again sends the same request
  panel.receive({ type: "rerun" });
  await new Promise((r) => setTimeout(r, 10));
  const again = clients[0].requests.filter((r) => r.params.command === SERVER.verifyFixes);
  assert.equal(again.length, 2);
  assert.deepEqual(again[1].params, again[0].params);
});

test("Verify and measure: the Python extension's interpreter is the one, when that extension is installed", async () => {
  const ext = fakePython("2.13.0");
  mock.config["adopter.interpreter"] = fakePython("2.12.0");
  mock.pythonExtension = { interpreter: ext };
  await activated();
  answers.respond = async () => VERIFY_REPORT;
  await mock.commands.get(CLIENT.verifyFixes)!({ uri: "file:///w/m.py", class: "Block" });
  const verify = clients[0].requests.find((r) => r.params.command === SERVER.verifyFixes)!;
  assert.equal(verify.params.arguments[0].python, ext);
  assert.equal(mock.panels[0].title, "Verify and measure: Block");
  assert.ok(mock.log.some((l) => l === `info verify: torch 2.13.0 in ${ext} (Python extension)`), mock.log.join("\n"));
});

test("Verify and measure without torch in the project's Python: nothing runs, one notification with a pick button", async () => {
  mock.config["adopter.interpreter"] = fakePython(undefined);
  await activated();
  mock.messageAnswers.push((_text, buttons) => buttons[0]);
  await mock.commands.get(CLIENT.verifyFixes)!({ uri: "file:///w/m.py", class: "Block" });
  assert.equal(clients[0].requests.length, 0);
  assert.equal(mock.panels.length, 0);
  const errors = mock.messages.filter((m) => m.level === "error");
  assert.equal(errors.length, 1);
  assert.match(errors[0].text, /has no torch\. Verifying a fix runs your model/);
  assert.deepEqual(errors[0].buttons, ["Select Interpreter", "Show Output"]);
  await new Promise((r) => setTimeout(r, 10));
  assert.ok(mock.executed.some((e) => e.command === CLIENT.selectInterpreter));
});

test("Verify and measure: Cancel in the notification cancels the request, and the panel says the run was stopped", async () => {
  mock.config["adopter.interpreter"] = fakePython("2.13.0");
  await activated();
  answers.respond = (_method, _params) => new Promise((_resolve, reject) => {
    const token = clients[0].requests.at(-1)!.token;
    token.onCancellationRequested(() => reject(Object.assign(new Error("Adopter: verification cancelled"), { code: -32800 })));
  });
  // (a class no other test uses: panels are kept per title for the whole file)
  const running = mock.commands.get(CLIENT.verifyFixes)!({ uri: "file:///w/m.py", class: "SlowBlock" });
  await until(() => mock.panels.length === 1 && clients[0].requests.length === 1, "the run started");
  assert.equal(mock.panels[0].posted.length, 0); // still running
  mock.progress[0].cancel();
  await running;
  assert.equal(clients[0].requests[0].token.isCancellationRequested, true);
  const last = mock.panels[0].posted.at(-1).state;
  assert.deepEqual([last.status, last.error], ["cancelled", "You cancelled the run; its process was stopped. Run again to start it anew."]);
});

test("Verify and measure in an untrusted workspace is refused before anything runs", async () => {
  mock.trusted = false;
  await activated();
  await mock.commands.get(CLIENT.verifyFixes)!({ uri: "file:///w/m.py", class: "Block" });
  assert.equal(clients[0].requests.length, 0);
  assert.match(mock.messages.at(-1)!.text, /not trusted/);
});
