// The side panel that shows an accelerator-search report: best design, reference comparison, Pareto front.
import * as vscode from "vscode";

type Json = Record<string, unknown>;

function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function table(rows: Json[]): string {
  if (!rows.length) {
    return "<p>none</p>";
  }
  const keys = Object.keys(rows[0]);
  const head = keys.map((k) => `<th>${esc(k)}</th>`).join("");
  const body = rows
    .map((r) => `<tr>${keys.map((k) => `<td>${esc(typeof r[k] === "number" ? Number(r[k]).toPrecision(4) : r[k])}</td>`).join("")}</tr>`)
    .join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function pareto(points: Json[]): string {
  const xs = points.map((p) => Number(p["tdp_w"] ?? p["x"] ?? 0));
  const ys = points.map((p) => Number(p["throughput"] ?? p["y"] ?? 0));
  if (!xs.length) {
    return "";
  }
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs) || 1, Math.min(...ys), Math.max(...ys) || 1];
  const sx = (x: number) => 40 + ((x - x0) / (x1 - x0 || 1)) * 340;
  const sy = (y: number) => 190 - ((y - y0) / (y1 - y0 || 1)) * 170;
  const dots = xs.map((x, i) => `<circle cx="${sx(x).toFixed(1)}" cy="${sy(ys[i]).toFixed(1)}" r="3"/>`).join("");
  return `<svg width="400" height="220" role="img" aria-label="Pareto front: throughput vs TDP">
    <line x1="40" y1="190" x2="390" y2="190" stroke="currentColor"/><line x1="40" y1="10" x2="40" y2="190" stroke="currentColor"/>
    <text x="200" y="215" font-size="11">TDP (W)</text><text x="0" y="10" font-size="11">samples/s</text>${dots}</svg>`;
}

export class SearchPanel {
  private static current: SearchPanel | undefined;

  private constructor(private readonly panel: vscode.WebviewPanel) {
    panel.onDidDispose(() => (SearchPanel.current = undefined));
  }

  static show(_extensionUri: vscode.Uri, model: string): SearchPanel {
    if (!SearchPanel.current) {
      const panel = vscode.window.createWebviewPanel("adopterSearch", "Accelerator search", vscode.ViewColumn.Beside, {
        enableScripts: false,
      });
      SearchPanel.current = new SearchPanel(panel);
    }
    const self = SearchPanel.current;
    self.panel.title = `Accelerator search: ${model}`;
    self.render(`<h2>Searching accelerator designs for ${esc(model)}…</h2><p>Progress is shown in the notification area.</p>`);
    self.panel.reveal();
    return self;
  }

  showError(message: string): void {
    this.render(`<h2>The search failed</h2><pre>${esc(message)}</pre>`);
  }

  showReport(report: unknown): void {
    const r = (report ?? {}) as Json;
    if (r["error"]) {
      this.showError(String(r["error"]));
      return;
    }
    const workload = (r["workload"] ?? {}) as Json;
    const best = (r["best"] ?? {}) as Json;
    const search = (r["search"] ?? {}) as Json;
    const summary = (p: Json, name: string): Json => ({
      design: name,
      "samples/s": p["throughput"],
      "step ms": Number(p["step_s"]) * 1000,
      "Perf/TDP": p["perf_per_tdp"],
      "area mm²": p["area_mm2"],
      "TDP W": p["tdp_w"],
      "TC util": p["tensor_util"],
      "VC util": p["vector_util"],
    });
    const refs = ((r["references"] ?? []) as Json[]).map((p) => summary(p, String(p["name"] ?? p["label"])));
    const pipeline = (r["pipeline"] ?? null) as Json | null;
    const stages = (pipeline?.["stages"] ?? []) as Json[];
    const critical = ((best["critical_ops"] ?? []) as Json[]).map((c) => ({
      where: c["segment"], op: c["op"], "ms": Number(c["seconds"]) * 1000,
    }));
    this.render(`
      <h2>Best design for ${esc(workload["model"] ?? "")} (batch ${esc(workload["batch"] ?? "")})</h2>
      ${table([(best["design"] ?? {}) as Json])}
      <h3>Against the reference designs</h3>${table([summary(best, "found"), ...refs])}
      <p>Search: ${esc(search["strategy"])}, ${esc(search["evaluations"])} designs evaluated, best after
        ${esc(search["evals_to_best"])} (${esc(Number(search["seconds"]).toFixed(1))} s; ${esc(search["stopped"])}).</p>
      <h3>Critical path: top operators</h3>${table(critical)}
      ${stages.length ? `<h3>Pipeline stages</h3>${table(stages.map((st) => Object.fromEntries(Object.entries(st).filter(([, v]) => typeof v !== "object"))))}` : ""}
      <h3>Pareto front (throughput vs TDP)</h3>${pareto((r["pareto"] ?? []) as Json[])}
      <details><summary>Raw report (JSON)</summary><pre>${esc(JSON.stringify(r, null, 2))}</pre></details>`);
  }

  private render(body: string): void {
    this.panel.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
      <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:;">
      <style>body{font-family:var(--vscode-font-family);color:var(--vscode-foreground)}
      table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid var(--vscode-panel-border);padding:2px 8px;text-align:right}
      circle{fill:var(--vscode-charts-blue,#3794ff)}</style></head><body>${body}</body></html>`;
  }
}
