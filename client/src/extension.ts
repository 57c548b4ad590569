// Adopter's VS Code client: starts the Python language server from what the extension carries, and adds
// the commands, code lenses' targets, status-bar item and the result panel (accelerator search, verify) around it.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  ClientCapabilities,
  ExecuteCommandRequest,
  FeatureState,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  StaticFeature,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { DependencyProbe, MissingPackage, decideStart, installSteps, probeDependencies, run, venvPython } from "./dependencies";
import { CLIENT, FIX_ALL_KIND, SERVER } from "./ids";
import { Candidate, Choice, candidates, chooseInterpreter, expandPath, probeInterpreter } from "./interpreter";
import { SearchPanel, VIEW_TYPE } from "./panel";
import { PanelState } from "./panelHtml";
import { SearchUI, Target, askSearch, classAt, runsUserCode, searchRequest, targetLabel } from "./search";
import { serverSettings } from "./settings";
import { StatusBar } from "./statusBar";
import { VerifyTarget, probeTorch, torchProblem, verifyInterpreter, verifyLabel, verifyRequest, verifySettings } from "./verify";

export const ARCHITECTURE_SCHEME = "adopter-architecture";

let client: LanguageClient | undefined;
let log: vscode.LogOutputChannel;
let status: StatusBar;
let extensionUri: vscode.Uri;
let storageUri: vscode.Uri | undefined; // the extension's global storage: the private environment lives there
let interpreterSource: Candidate["source"] | undefined;
let serverBasePython: string | undefined; // the interpreter chosen for the server (before any private environment)
const withTorch = new Map<string, string>(); // interpreters whose torch imported: their torch version

/** Declares the client's own commands, so the server offers code lenses that run them. */
class ClientCommandsFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), adopterClientCommands: true };
  }
  getState(): FeatureState {
    return { kind: "static" };
  }
  initialize(): void {}
  clear(): void {}
}

interface PythonEnvironmentsApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(path: string | { path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonEnvironmentsApi>("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch (err) {
    log.warn(`the Python extension did not activate: ${err}`);
    return undefined;
  }
}

/** The Python extension's active interpreter for the first workspace folder, through its public API. */
async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const api = await pythonExtensionApi();
  if (!api?.environments) {
    return undefined;
  }
  try {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(folder));
    return env?.executable.uri?.fsPath;
  } catch (err) {
    log.warn(`the Python extension could not say its interpreter: ${err}`);
    return undefined;
  }
}

async function pickInterpreter(): Promise<Choice> {
  const configured = vscode.workspace.getConfiguration("adopter").get<string>("interpreter", "");
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const list = candidates(configured ? expandPath(configured, folder, os.homedir()) : undefined, await pythonExtensionInterpreter());
  const choice = await chooseInterpreter(list, probeInterpreter);
  for (const attempt of choice.attempts) {
    const line = `interpreter from ${attempt.candidate.source}: ${attempt.candidate.command}: ${attempt.outcome}`;
    if (attempt.usable) {
      log.info(line);
    } else {
      log.warn(line);
    }
  }
  interpreterSource = choice.attempts.find((a) => a.usable)?.candidate.source;
  return choice;
}

async function selectInterpreter(): Promise<void> {
  if (vscode.extensions.getExtension("ms-python.python")) {
    await vscode.commands.executeCommand("python.setInterpreter");
    return;
  }
  const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: "Use this Python for Adopter", title: "Python 3.10 or newer" });
  if (picked?.[0]) {
    await vscode.workspace.getConfiguration("adopter").update("interpreter", picked[0].fsPath, vscode.ConfigurationTarget.Global);
  }
}

function notifyInterpreterProblem(problem: string): void {
  void vscode.window.showErrorMessage(`Adopter: ${problem}`, "Select Interpreter", "Show Output").then((button) => {
    if (button === "Select Interpreter") {
      void vscode.commands.executeCommand(CLIENT.selectInterpreter);
    } else if (button === "Show Output") {
      log.show();
    }
  });
}

function clientOptions(): LanguageClientOptions {
  return {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      { scheme: "vscode-notebook-cell", language: "python" },
      { scheme: "file", language: "adopter" },
    ],
    initializationOptions: serverSettings(vscode.workspace.getConfiguration("adopter"), vscode.workspace.isTrusted),
    synchronize: { configurationSection: "adopter" },
    outputChannel: log,
    // The hover's "Show architecture" link runs this command (and only this one).
    markdown: { isTrusted: { enabledCommands: [CLIENT.showArchitecture] } },
    middleware: {
      workspace: {
        // The server gets its own settings only (not the interpreter or the trace level).
        configuration: (params) => params.items.map((item) =>
          item.section === "adopter" ? serverSettings(vscode.workspace.getConfiguration("adopter"), vscode.workspace.isTrusted) : null),
      },
    },
  };
}

/** The private environment an Install makes (under the extension's global storage). */
function privateEnvironment(): string | undefined {
  return storageUri ? vscode.Uri.joinPath(storageUri, "python-env").fsPath : undefined;
}

function launcherPath(): string {
  return vscode.Uri.joinPath(extensionUri, "client", "python", "launch.py").fsPath;
}

function logProbe(command: string, probe: DependencyProbe): void {
  if (probe.state === "ready") {
    log.info(`${command}: the server's packages import`);
  } else if (probe.state === "missing") {
    for (const m of probe.missing) {
      log.warn(`${command}: ${m.package} does not import (${m.module}: ${m.error})`);
    }
  } else {
    log.warn(`${command}: the launcher's probe failed (${probe.error}); starting the server anyway`);
  }
}

/**
 * The interpreter to start the server with, after the launcher's probe: the chosen one, the private
 * environment of an earlier Install, or none (then one notification offers Install / Select Interpreter).
 */
async function serverInterpreter(command: string): Promise<string | undefined> {
  const launcher = launcherPath();
  const probe = await probeDependencies(command, launcher);
  logProbe(command, probe);
  const envDir = privateEnvironment();
  const envPython = envDir ? venvPython(envDir, process.platform) : undefined;
  let envProbe: DependencyProbe | undefined;
  if (probe.state === "missing" && envPython && existsSync(envPython)) {
    envProbe = await probeDependencies(envPython, launcher);
    logProbe(envPython, envProbe);
  }
  const decision = decideStart(command, probe, envPython, envProbe);
  if (decision.action === "start") {
    if (decision.privateEnvironment) {
      log.info(`using Adopter's private environment ${envDir}`);
    }
    return decision.command;
  }
  log.error(`Adopter: ${decision.message}`);
  status.setState("failed", decision.message);
  notifyMissing(decision.message, command, decision.missing);
  return undefined;
}

function notifyMissing(message: string, basePython: string, missing: MissingPackage[]): void {
  void vscode.window.showErrorMessage(`Adopter: ${message}`, "Install", "Select Interpreter").then((button) => {
    if (button === "Install") {
      void installPrivateEnvironment(basePython, missing);
    } else if (button === "Select Interpreter") {
      void vscode.commands.executeCommand(CLIENT.selectInterpreter);
    }
  });
}

/** `python -m venv` under the global storage, `pip install` of the bundled requirements, then restart. */
async function installPrivateEnvironment(basePython: string, missing: MissingPackage[]): Promise<void> {
  const dir = privateEnvironment();
  if (!dir || !storageUri) {
    log.error("no global storage folder to make a private environment in");
    return;
  }
  await mkdir(storageUri.fsPath, { recursive: true });
  const requirements = vscode.Uri.joinPath(extensionUri, "bundled", "requirements.txt").fsPath;
  const steps = installSteps(basePython, dir, process.platform, existsSync(requirements) ? requirements : undefined, missing);
  const failed = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "Adopter", cancellable: false },
    async (progress) => {
      for (const step of steps) {
        progress.report({ message: `${step.title}…` });
        log.info(`${step.title}: ${step.command} ${step.args.join(" ")}`);
        const result = await run(step.command, step.args, 15 * 60 * 1000);
        for (const line of `${result.stdout}\n${result.stderr}`.split(/\r?\n/).filter((l) => l.trim())) {
          log.info(`  ${line}`);
        }
        if (result.code !== 0) {
          return `${step.title} failed (${result.error ?? `exit status ${result.code}`})`;
        }
      }
      return undefined;
    });
  if (failed) {
    log.error(`Adopter: ${failed}`);
    void vscode.window.showErrorMessage(`Adopter: ${failed}; the output says why.`, "Show Output", "Select Interpreter")
      .then((b) => b === "Show Output" ? log.show() : b && vscode.commands.executeCommand(CLIENT.selectInterpreter));
    return;
  }
  log.info(`installed the server's packages into ${dir}; restarting the server with it`);
  await restartServer();
}

async function startServer(): Promise<void> {
  status.setState("starting");
  const choice = await pickInterpreter();
  if (!choice.command) {
    status.setState("failed", choice.problem);
    notifyInterpreterProblem(choice.problem ?? "no Python interpreter found");
    return;
  }
  if (choice.problem) {
    notifyInterpreterProblem(choice.problem);
  }
  serverBasePython = choice.command;
  const command = await serverInterpreter(choice.command);
  if (!command) {
    return; // the packages are missing: one notification asked what to do
  }
  const launcher = launcherPath();
  const server: ServerOptions = { command, args: [launcher, "lsp"], transport: TransportKind.stdio };
  client = new LanguageClient("adopter", "Adopter", server, clientOptions());
  client.registerFeature(new ClientCommandsFeature());
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      status.setState("running", `Python ${choice.version?.join(".")} at ${command}`);
    } else if (e.newState === State.Stopped) {
      status.setState("stopped");
    }
  });
  try {
    await client.start();
    log.info(`server started with ${command} ${launcher}`);
  } catch (err) {
    status.setState("failed", String(err));
    log.error(`the server did not start: ${err}`);
    void vscode.window.showErrorMessage("Adopter: the language server did not start; the output says why.", "Show Output")
      .then((b) => b && log.show());
  }
}

async function stopServer(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch (err) {
      log.warn(`stopping the server: ${err}`);
    }
    await old.dispose();
  }
}

async function restartServer(): Promise<void> {
  log.info("restarting the server");
  await stopServer();
  await startServer();
}

async function executeServerCommand(command: string, args: unknown[], token?: vscode.CancellationToken): Promise<unknown> {
  if (!client || !client.isRunning()) {
    throw new Error("The Adopter server is not running (see Adopter: Show Output).");
  }
  return token
    ? client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token)
    : client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
}

interface ClassArgument {
  uri?: string;
  class?: string;
  line?: number;
}

/** The class the command is about: the code lens's argument, else the class at the cursor. */
function classTarget(arg: ClassArgument | undefined): { target?: Target; document?: vscode.TextDocument } {
  const editor = vscode.window.activeTextEditor;
  if (arg?.uri && arg.class) {
    const uri = vscode.Uri.parse(arg.uri);
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    return uri.scheme === "file" ? { target: { kind: "class", path: uri.fsPath, className: arg.class }, document } : {};
  }
  if (!editor || editor.document.languageId !== "python" || editor.document.uri.scheme !== "file") {
    return {};
  }
  const lines = editor.document.getText().split(/\r?\n/);
  const className = classAt(lines, editor.selection.active.line);
  return className ? { target: { kind: "class", path: editor.document.uri.fsPath, className }, document: editor.document } : {};
}

const quickPickUI: SearchUI = {
  async pick(items, placeHolder) {
    const picked = await vscode.window.showQuickPick(items, { placeHolder, ignoreFocusOut: true });
    return picked?.value;
  },
  async input(prompt, validate) {
    return vscode.window.showInputBox({ prompt, validateInput: validate, ignoreFocusOut: true });
  },
};

function untrustedMessage(): void {
  void vscode.window.showWarningMessage(
    "Adopter: searching for your own model runs its code, and this workspace is not trusted. The built-in models work everywhere.",
    "Manage Workspace Trust").then((b) => b && vscode.commands.executeCommand("workbench.trust.manage"));
}

async function searchAccelerator(arg?: ClassArgument): Promise<void> {
  const fromLens = Boolean(arg?.class);
  const { target: inEditor, document } = classTarget(arg);
  if (fromLens && !vscode.workspace.isTrusted) {
    untrustedMessage();
    return;
  }
  const asked = await askSearch(quickPickUI, fromLens ? inEditor : undefined, inEditor, vscode.workspace.isTrusted);
  if (!asked) {
    return;
  }
  if (runsUserCode(asked.target) && !vscode.workspace.isTrusted) {
    untrustedMessage();
    return;
  }
  if (asked.target.kind === "class" && document?.isDirty) {
    await document.save(); // the worker builds the class from the file on disk
  }
  const state: PanelState = {
    title: targetLabel(asked.target), request: searchRequest(asked.target, asked.options), status: "running",
    help: asked.target.kind === "class",
  };
  await runSearch(state);
}

/** Errors the server returns: its message, without the JSON-RPC wrapping. */
function errorMessage(err: unknown): string {
  return String(err instanceof Error ? err.message : err);
}

export function isCancellation(err: unknown): boolean {
  const code = (err as { code?: number } | undefined)?.code;
  return code === -32800 || /cancel/i.test(errorMessage(err));
}

async function runSearch(state: PanelState): Promise<void> {
  const running: PanelState = { ...state, status: "running", report: undefined, error: undefined };
  const panel = SearchPanel.show(extensionUri, panelActions, running);
  log.info(`search: ${JSON.stringify(state.request)}`);
  try {
    // A notification with Cancel (cancelling the request stops the server's search); the server's own
    // work-done progress, with percentages, shows in the status bar.
    const report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Accelerator search: ${state.title}`, cancellable: true },
      (progress, token) => {
        progress.report({ message: "tracing the training step, then searching designs…" });
        return executeServerCommand(SERVER.searchAccelerator, [state.request], token);
      });
    panel.update({ ...running, status: "done", report });
  } catch (err) {
    const cancelled = isCancellation(err);
    log.info(`search ${cancelled ? "cancelled" : "failed"}: ${errorMessage(err)}`);
    const error = cancelled ? "You cancelled the search. Run again to start it anew." : errorMessage(err);
    panel.update({ ...running, status: cancelled ? "cancelled" : "error", error });
  }
}

const panelActions = { rerun: (s: PanelState) => void (s.kind === "verify" ? runVerify(s) : runSearch(s)) };

/** The class at the cursor, as the code lens would name it. */
function verifyTargetAtCursor(): VerifyTarget | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    return undefined;
  }
  const className = classAt(editor.document.getText().split(/\r?\n/), editor.selection.active.line);
  return className ? { uri: editor.document.uri.toString(), class: className } : undefined;
}

/** The project's Python for verify, if torch imports in it; otherwise one notification with a pick button. */
async function verifyPython(): Promise<string | undefined> {
  const installed = Boolean(vscode.extensions.getExtension("ms-python.python"));
  const configured = vscode.workspace.getConfiguration("adopter").get<string>("interpreter", "");
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const interpreter = verifyInterpreter(installed ? await pythonExtensionInterpreter() : undefined,
    configured ? expandPath(configured, folder, os.homedir()) : undefined, serverBasePython);
  if (!interpreter) {
    notifyInterpreterProblem("no Python interpreter to run your model: select your project's Python (with torch).");
    return undefined;
  }
  if (withTorch.has(interpreter.command)) {
    return interpreter.command;
  }
  const probe = await probeTorch(interpreter.command);
  const problem = torchProblem(interpreter, probe);
  if (problem) {
    log.warn(`verify: ${problem}`);
    notifyInterpreterProblem(problem);
    return undefined;
  }
  log.info(`verify: torch ${probe.torch} in ${interpreter.command} (${interpreter.source})`);
  withTorch.set(interpreter.command, probe.torch!);
  return interpreter.command;
}

/** *Verify and measure*: from a code lens (a class), a code action (one finding), or the class at the cursor. */
async function verifyFixes(arg?: VerifyTarget): Promise<void> {
  const target = arg?.uri && arg.class ? arg : verifyTargetAtCursor();
  if (!target) {
    void vscode.window.showInformationMessage("Adopter: put the cursor inside an nn.Module class to verify its fixes.");
    return;
  }
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage("Adopter: verifying a fix runs your model's code, and this workspace is not trusted.",
      "Manage Workspace Trust").then((b) => b && vscode.commands.executeCommand("workbench.trust.manage"));
    return;
  }
  const python = await verifyPython();
  if (!python) {
    return;
  }
  const request = verifyRequest(target, python, verifySettings(vscode.workspace.getConfiguration("adopter")));
  await runVerify({ kind: "verify", title: verifyLabel(target), request, status: "running" });
}

async function runVerify(state: PanelState): Promise<void> {
  const running: PanelState = { ...state, status: "running", report: undefined, error: undefined };
  const panel = SearchPanel.show(extensionUri, panelActions, running);
  log.info(`verify: ${JSON.stringify(state.request)}`);
  try {
    // A notification with Cancel: cancelling the request makes the server kill the run.
    const report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Verify and measure: ${state.title}`, cancellable: true },
      (progress, token) => {
        progress.report({ message: `running each fix against the original with ${String(state.request.python ?? "python")}…` });
        return executeServerCommand(SERVER.verifyFixes, [state.request], token);
      });
    panel.update({ ...running, status: "done", report });
  } catch (err) {
    const cancelled = isCancellation(err);
    log.info(`verify ${cancelled ? "cancelled" : "failed"}: ${errorMessage(err)}`);
    const error = cancelled ? "You cancelled the run; its process was stopped. Run again to start it anew." : errorMessage(err);
    panel.update({ ...running, status: cancelled ? "cancelled" : "error", error });
  }
}

/** Architecture documents: `adopter-architecture:/Class.adl?<document uri>#<class>`, read-only. */
class ArchitectureDocuments implements vscode.TextDocumentContentProvider {
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const text = await executeServerCommand(SERVER.showArchitecture, [{ uri: uri.query, class: decodeURIComponent(uri.fragment) }]);
    return typeof text === "string" ? text : `# no nn.Module ${uri.fragment} in ${uri.query}\n`;
  }
}

async function showArchitecture(arg?: ClassArgument): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  let uri = arg?.uri;
  let className = arg?.class;
  if (!uri && editor) {
    uri = editor.document.uri.toString();
    className = classAt(editor.document.getText().split(/\r?\n/), editor.selection.active.line);
  }
  if (!uri || !className) {
    void vscode.window.showInformationMessage("Adopter: put the cursor inside an nn.Module class to see its architecture.");
    return;
  }
  const doc = vscode.Uri.from({ scheme: ARCHITECTURE_SCHEME, path: `/${className}.adl`, query: uri, fragment: encodeURIComponent(className) });
  const opened = await vscode.workspace.openTextDocument(doc);
  await vscode.languages.setTextDocumentLanguage(opened, "adopter");
  await vscode.window.showTextDocument(opened, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
}

async function fixAll(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return;
  }
  await vscode.commands.executeCommand("editor.action.sourceAction", { kind: FIX_ALL_KIND, apply: "first" });
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionUri = context.extensionUri;
  storageUri = context.globalStorageUri;
  log = vscode.window.createOutputChannel("Adopter", { log: true });
  status = new StatusBar();
  context.subscriptions.push(
    log,
    status,
    vscode.commands.registerCommand(CLIENT.searchAccelerator, searchAccelerator),
    vscode.commands.registerCommand(CLIENT.showArchitecture, showArchitecture),
    vscode.commands.registerCommand(CLIENT.fixAll, fixAll),
    vscode.commands.registerCommand(CLIENT.restartServer, restartServer),
    vscode.commands.registerCommand(CLIENT.showOutput, () => log.show()),
    vscode.commands.registerCommand(CLIENT.selectInterpreter, selectInterpreter),
    vscode.commands.registerCommand(CLIENT.verifyFixes, verifyFixes),
    vscode.workspace.registerTextDocumentContentProvider(ARCHITECTURE_SCHEME, new ArchitectureDocuments()),
    vscode.window.registerWebviewPanelSerializer(VIEW_TYPE, {
      async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: PanelState | undefined) {
        SearchPanel.revive(panel, extensionUri, panelActions, state);
      },
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("adopter.interpreter")) {
        void restartServer();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restartServer()),
    { dispose: () => void stopServer() },
  );
  const api = await pythonExtensionApi();
  const changed = api?.environments?.onDidChangeActiveEnvironmentPath;
  if (changed) {
    context.subscriptions.push(changed(() => {
      if (interpreterSource !== "adopter.interpreter") {
        void restartServer();
      }
    }));
  }
  await startServer();
}

export async function deactivate(): Promise<void> {
  await stopServer();
}
