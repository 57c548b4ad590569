// Adopter's VS Code client: starts the Python language server and hosts the accelerator-search panel.
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";
import { SearchPanel } from "./searchPanel";

let client: LanguageClient | undefined;

function settings(): Record<string, unknown> {
  const c = vscode.workspace.getConfiguration("adopter");
  return {
    select: c.get<string[]>("select", []),
    ignore: c.get<string[]>("ignore", []),
    severity: c.get<Record<string, string>>("severity", {}),
    target: c.get<string>("target", "auto"),
    rule_paths: c.get<string[]>("rulePaths", []),
    debounce_ms: c.get<number>("debounceMs", 150),
    trusted: vscode.workspace.isTrusted,
  };
}

function serverOptions(): ServerOptions {
  const interpreter = vscode.workspace.getConfiguration("adopter").get<string>("interpreter", "") || "python3";
  return { command: interpreter, args: ["-m", "adopter", "lsp"], transport: TransportKind.stdio };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      { scheme: "file", language: "adopter" },
    ],
    initializationOptions: settings(),
    synchronize: { configurationSection: "adopter" },
    outputChannelName: "Adopter",
  };
  client = new LanguageClient("adopter", "Adopter", serverOptions(), clientOptions);
  context.subscriptions.push(client);
  await client.start();
}

async function executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
  if (!client) {
    throw new Error("The Adopter server is not running.");
  }
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
}

async function searchAccelerator(context: vscode.ExtensionContext): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    vscode.window.showErrorMessage("Adopter: the accelerator search runs model code; trust this workspace first.");
    return;
  }
  const zoo = ["bert-base", "bert-large", "gpt2", "gpt2-xl", "t5-base", "resnet50", "vit-b16", "llama-1b"];
  const picked = await vscode.window.showQuickPick(
    [...zoo.map((m) => ({ label: m, description: "built-in model" })),
     { label: "module:factory…", description: "your model: a function returning (model, example inputs)" }],
    { placeHolder: "Which model's training step should the accelerator be designed for?" },
  );
  if (!picked) {
    return;
  }
  let model = picked.label;
  if (model.startsWith("module:")) {
    const entered = await vscode.window.showInputBox({ prompt: "module:function, e.g. mypkg.models:make_model" });
    if (!entered) {
      return;
    }
    model = entered;
  }
  const objective = await vscode.window.showQuickPick(["throughput", "perf-per-tdp"], { placeHolder: "Objective" });
  if (!objective) {
    return;
  }
  const request = { model, objective, strategy: "wham" };
  const panel = SearchPanel.show(context.extensionUri, model);
  try {
    const report = await executeServerCommand("adopter.searchAccelerator", [request]);
    panel.showReport(report);
  } catch (err) {
    panel.showError(String(err instanceof Error ? err.message : err));
  }
}

async function showArchitecture(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return;
  }
  const uri = editor.document.uri.toString();
  const line = editor.selection.active.line;
  const text = (await executeServerCommand("adopter.showArchitecture", [{ uri, line }])) as string | null;
  if (!text) {
    vscode.window.showInformationMessage("Adopter: no nn.Module found here.");
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ language: "adopter", content: text });
  await vscode.window.showTextDocument(doc, vscode.ViewColumn.Beside);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(
    // Client-side ids differ from the server's command ids: the language client registers those itself.
    vscode.commands.registerCommand("adopter.client.searchAccelerator", () => searchAccelerator(context)),
    vscode.commands.registerCommand("adopter.client.showArchitecture", showArchitecture),
    vscode.commands.registerCommand("adopter.client.restartServer", async () => {
      await client?.restart();
    }),
  );
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
