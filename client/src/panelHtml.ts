// The HTML of the result panel (an accelerator search, or a *Verify and measure* run): a strict CSP with a nonce, no remote resources, and the state as JSON
// that the page's script (client/media/panel.js) renders with DOM calls.

export type PanelStatus = "running" | "done" | "error" | "cancelled";

export type PanelKind = "search" | "verify";

export interface PanelState {
  kind?: PanelKind; // what the panel shows: absent means an accelerator search (panels saved before verify)
  title: string; // the model's name as the user knows it (a class, a zoo name or a factory)
  request: Record<string, unknown>; // what `Run again` sends
  status: PanelStatus;
  report?: unknown;
  error?: string;
  help?: boolean; // show how to give a factory (the model in the editor could not be built)
}

/** The panel's title, as its tab and its page say it. */
export function panelTitle(state: PanelState): string {
  return state.kind === "verify" ? `Verify and measure: ${state.title}` : `Accelerator search: ${state.title}`;
}

/** JSON that is safe inside a <script> element: no `<`, `>`, `&` or line separators survive as such. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A double-quoted attribute's value: only `&` and `"` need escaping there. */
export function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;");
}

export function makeNonce(random: () => number = Math.random): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) {
    out += chars.charAt(Math.floor(random() * chars.length));
  }
  return out;
}

export interface PanelAssets {
  cspSource: string; // webview.cspSource
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

/** The webview's page. */
export function panelHtml(state: PanelState, assets: PanelAssets): string {
  const csp = [
    "default-src 'none'",
    `style-src ${assets.cspSource}`,
    `img-src ${assets.cspSource} data:`,
    `script-src 'nonce-${assets.nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(assets.styleUri)}">
<title>${escapeHtml(panelTitle(state))}</title>
</head><body><main id="root"></main>
<script nonce="${assets.nonce}" id="adopter-state" type="application/json">${scriptJson(state)}</script>
<script nonce="${assets.nonce}" src="${escapeHtml(assets.scriptUri)}"></script>
</body></html>`;
}

// Colours for a saved report opened outside VS Code (the webview gets the theme's).
const STANDALONE_THEME = `:root{--vscode-font-family:system-ui,sans-serif;--vscode-font-size:13px;--vscode-foreground:#1f1f1f;
--vscode-editor-background:#fff;--vscode-descriptionForeground:#616161;--vscode-errorForeground:#c72e0f;
--vscode-panel-border:#d4d4d4;--vscode-editorWidget-background:#f3f3f3;--vscode-textCodeBlock-background:#f0f0f0;
--vscode-editor-font-family:monospace;--vscode-charts-blue:#1a85ff;--vscode-charts-orange:#d18616;
--vscode-charts-green:#388a34;--vscode-charts-purple:#652d90}`;

/** A self-contained HTML report (the panel's page with its style and script inlined), for *Save HTML report*. */
export function standaloneHtml(state: PanelState, css: string, script: string): string {
  const nonce = makeNonce();
  const csp = `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src data:`;
  // A `</script` inside the inlined script would end it early; panel.js has none, but be sure.
  const safeScript = script.replace(/<\/script/gi, "<\\/script");
  const safeCss = css.replace(/<\/style/gi, "<\\/style");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(csp)}">
<title>${escapeHtml(panelTitle(state))}</title>
<style nonce="${nonce}">${STANDALONE_THEME}
${safeCss}</style>
</head><body><main id="root"></main>
<script nonce="${nonce}" id="adopter-state" type="application/json">${scriptJson(state)}</script>
<script nonce="${nonce}">${safeScript}</script>
</body></html>`;
}
