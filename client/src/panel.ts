// The result panel of the accelerator search and of *Verify and measure*: one webview per kind and target,
// restored when VS Code reloads.
import * as vscode from "vscode";
import { PanelState, makeNonce, panelHtml, panelTitle, standaloneHtml } from "./panelHtml";

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
    panel.onDidDispose(() => SearchPanel.open.delete(SearchPanel.key(this.state)));
    panel.webview.onDidReceiveMessage((msg: { type?: string }) => this.onMessage(msg?.type));
    this.panel.webview.html = this.html();
  }

  /** One panel per kind and title: a class's search and its verification are two panels. */
  static key(state: PanelState): string {
    return `${state.kind ?? "search"}:${state.title}`;
  }

  static webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
    return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, "client", "media")] };
  }

  /** The panel for `state.title` (reused), showing `state`. */
  static show(extensionUri: vscode.Uri, actions: PanelActions, state: PanelState): SearchPanel {
    const existing = SearchPanel.open.get(SearchPanel.key(state));
    if (existing) {
      existing.update(state);
      existing.panel.reveal(undefined, true);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(VIEW_TYPE, panelTitle(state),
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, { ...SearchPanel.webviewOptions(extensionUri), retainContextWhenHidden: false });
    const made = new SearchPanel(panel, extensionUri, actions, state);
    SearchPanel.open.set(SearchPanel.key(state), made);
    return made;
  }

  /** Re-attach a panel VS Code restored after a reload (its state came from the page's setState). */
  static revive(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, actions: PanelActions, state: PanelState | undefined): void {
    const restored: PanelState = state && typeof state.title === "string" ? state
      : { title: "(unknown model)", request: {}, status: "error", error: "The panel's state could not be restored; run the search again." };
    if (restored.status === "running") { // the run died with the window
      restored.status = "cancelled";
      restored.error = `VS Code was reloaded while the ${restored.kind === "verify" ? "verification" : "search"} ran. Run again to restart it.`;
    }
    SearchPanel.open.set(SearchPanel.key(restored), new SearchPanel(panel, extensionUri, actions, restored));
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
      void vscode.window.showInformationMessage(`Adopter: the ${this.state.kind === "verify" ? "verification" : "search"} report is on the clipboard as JSON.`);
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
        ? vscode.Uri.joinPath(vscode.workspace.workspaceFolders[0].uri, `${this.state.kind === "verify" ? "verify" : "wham"}-${name}.html`) : undefined,
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
