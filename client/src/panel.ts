// The accelerator-search result panel: one webview per search target, restored when VS Code reloads.
import * as vscode from "vscode";
import { PanelState, makeNonce, panelHtml, standaloneHtml } from "./panelHtml";

export const VIEW_TYPE = "adopter.searchResult";

export interface PanelActions {
  rerun(state: PanelState): void;
}

export class SearchPanel {
  private static readonly open = new Map<string, SearchPanel>();

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly actions: PanelActions,
    private state: PanelState,
  ) {
    panel.webview.options = SearchPanel.webviewOptions(extensionUri);
    panel.onDidDispose(() => SearchPanel.open.delete(this.state.title));
    panel.webview.onDidReceiveMessage((msg: { type?: string }) => this.onMessage(msg?.type));
    this.panel.webview.html = this.html();
  }

  static webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
    return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, "client", "media")] };
  }

  /** The panel for `state.title` (reused), showing `state`. */
  static show(extensionUri: vscode.Uri, actions: PanelActions, state: PanelState): SearchPanel {
    const existing = SearchPanel.open.get(state.title);
    if (existing) {
      existing.update(state);
      existing.panel.reveal(undefined, true);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(VIEW_TYPE, `Accelerator search: ${state.title}`,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, { ...SearchPanel.webviewOptions(extensionUri), retainContextWhenHidden: false });
    const made = new SearchPanel(panel, extensionUri, actions, state);
    SearchPanel.open.set(state.title, made);
    return made;
  }

  /** Re-attach a panel VS Code restored after a reload (its state came from the page's setState). */
  static revive(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, actions: PanelActions, state: PanelState | undefined): void {
    const restored: PanelState = state && typeof state.title === "string" ? state
      : { title: "(unknown model)", request: {}, status: "error", error: "The panel's state could not be restored; run the search again." };
    if (restored.status === "running") { // the search died with the window
      restored.status = "cancelled";
      restored.error = "VS Code was reloaded while the search ran. Run again to restart it.";
    }
    SearchPanel.open.set(restored.title, new SearchPanel(panel, extensionUri, actions, restored));
  }

  update(state: PanelState): void {
    this.state = state;
    void this.panel.webview.postMessage({ type: "state", state });
  }

  private html(): string {
    const webview = this.panel.webview;
    const media = vscode.Uri.joinPath(this.extensionUri, "client", "media");
    return panelHtml(this.state, {
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(media, "panel.js")).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, "panel.css")).toString(),
    });
  }

  private async onMessage(type: string | undefined): Promise<void> {
    if (type === "copy" && this.state.report) {
      await vscode.env.clipboard.writeText(JSON.stringify(this.state.report, null, 2));
      void vscode.window.showInformationMessage("Adopter: the search report is on the clipboard as JSON.");
    } else if (type === "save" && this.state.report) {
      await this.save();
    } else if (type === "rerun") {
      this.actions.rerun(this.state);
    }
  }

  private async save(): Promise<void> {
    const name = this.state.title.replace(/[^\w.-]+/g, "_");
    const target = await vscode.window.showSaveDialog({
      filters: { HTML: ["html"] },
      defaultUri: vscode.workspace.workspaceFolders?.length
        ? vscode.Uri.joinPath(vscode.workspace.workspaceFolders[0].uri, `wham-${name}.html`) : undefined,
    });
    if (!target) {
      return;
    }
    const media = vscode.Uri.joinPath(this.extensionUri, "client", "media");
    const read = async (file: string) => new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.joinPath(media, file)));
    const html = standaloneHtml(this.state, await read("panel.css"), await read("panel.js"));
    await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(html));
    void vscode.window.showInformationMessage(`Adopter: report saved to ${target.fsPath}`);
  }
}
