// The status-bar item: the server's state and the active file's findings; a click shows Problems.
import * as vscode from "vscode";
import { DIAGNOSTIC_SOURCE } from "./ids";

export type ServerState = "starting" | "running" | "stopped" | "failed";

/** The item's text for a state and a findings count (undefined: no Python file is active). */
export function statusText(state: ServerState, findings: number | undefined): string {
  const icon = state === "running" ? "$(check)" : state === "starting" ? "$(sync~spin)" : "$(error)";
  if (state !== "running") {
    return `${icon} Adopter: ${state}`;
  }
  if (findings === undefined) {
    return `${icon} Adopter`;
  }
  return `${findings ? "$(lightbulb)" : icon} Adopter: ${findings} finding${findings === 1 ? "" : "s"}`;
}

export function countFindings(diagnostics: readonly vscode.Diagnostic[]): number {
  return diagnostics.filter((d) => d.source === DIAGNOSTIC_SOURCE).length;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("adopter.status", vscode.StatusBarAlignment.Right, 100);
  private readonly subscriptions: vscode.Disposable[] = [];
  private state: ServerState = "starting";

  constructor() {
    this.item.name = "Adopter";
    this.item.command = "workbench.actions.view.problems";
    this.subscriptions.push(
      vscode.languages.onDidChangeDiagnostics(() => this.refresh()),
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
    );
    this.refresh();
    this.item.show();
  }

  setState(state: ServerState, detail?: string): void {
    this.state = state;
    this.item.tooltip = detail ? `Adopter server: ${state}. ${detail}` : `Adopter server: ${state}. Click to show Problems.`;
    this.item.accessibilityInformation = { label: `Adopter server ${state}${detail ? `: ${detail}` : ""}` };
    this.refresh();
  }

  refresh(): void {
    const doc = vscode.window.activeTextEditor?.document;
    const counted = doc && (doc.languageId === "python" || doc.languageId === "adopter");
    this.item.text = statusText(this.state, counted ? countFindings(vscode.languages.getDiagnostics(doc.uri)) : undefined);
    this.item.backgroundColor = this.state === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
    this.subscriptions.forEach((s) => s.dispose());
  }
}
