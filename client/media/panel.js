// The result panel: an accelerator search, or a *Verify and measure* table. Builds the page from the state with DOM calls only (textContent, never
// innerHTML), so no value from a report or a model name is ever parsed as HTML. Runs in the webview, in
// a saved HTML report (no VS Code API: the buttons are hidden) and in the headless-Chromium test.
(function () {
  "use strict";
  const vscode = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : undefined;
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      node.setAttribute(k, String(v));
    }
    for (const c of children || []) {
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      node.setAttribute(k, String(v));
    }
    if (text !== undefined) {
      node.textContent = String(text);
    }
    return node;
  }

  function num(v, digits) {
    const x = Number(v);
    if (v === null || v === undefined || !Number.isFinite(x)) {
      return "–";
    }
    // trailing zeros of the fraction only: 100 stays 100 (the old pattern made it 1)
    return x.toPrecision(digits || 4).replace(/(\.\d*?)0+(e|$)/, "$1$2").replace(/\.(e|$)/, "$1");
  }
  const pct = (v) => (Number.isFinite(Number(v)) ? `${Math.round(Number(v) * 100)}%` : "–");
  const ms = (s) => num(Number(s) * 1000, 4);

  function table(headers, rows, cls) {
    return el("table", { class: cls || "" }, [
      el("thead", {}, [el("tr", {}, headers.map((h) => el("th", {}, [h])))]),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, [c]))))),
    ]);
  }

  function section(title, ...children) {
    return el("section", {}, [el("h3", {}, [title]), ...children]);
  }

  const METRICS = [
    ["samples/s", (e) => num(e.throughput)],
    ["step ms", (e) => ms(e.step_s)],
    ["Perf/TDP", (e) => num(e.perf_per_tdp)],
    ["area mm²", (e) => num(e.area_mm2)],
    ["TDP W", (e) => num(e.tdp_w)],
    ["TC util", (e) => pct(e.tensor_util)],
    ["VC util", (e) => pct(e.vector_util)],
  ];

  function best(report) {
    const b = report.best;
    const d = b.design || {};
    const cards = el("div", { class: "cards" }, METRICS.map(([name, f]) =>
      el("div", { class: "card" }, [el("div", { class: "value" }, [f(b)]), el("div", { class: "name" }, [name])])));
    const design = table(["tensor cores", "PE array", "vector cores", "lanes", "SRAM MiB", "GB/s", "MHz"],
      [[d.n_tc, `${d.pe_x}×${d.pe_y}`, d.n_vc, d.lanes, d.sram_mib, d.bandwidth_gbs, d.clock_mhz].map((v) => String(v ?? "–"))]);
    return section("Chosen design", el("p", { class: "label" }, [b.label || ""]), cards, design);
  }

  function references(report) {
    const rows = [["found", report.best], ...(report.references || []).map((r) => [r.name, r])];
    return section("Against the reference designs",
      table(["design", ...METRICS.map((m) => m[0])], rows.map(([name, e]) => [name, ...METRICS.map((m) => m[1](e))]), "refs"));
  }

  function plot(title, xLabel, yLabel, series, opts) {
    const W = 440, H = 250, L = 56, R = 12, T = 22, B = 36;
    const pts = series.flatMap((s) => s.points);
    if (!pts.length) {
      return el("p", {}, ["no points"]);
    }
    const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
    let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
    const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title, class: "plot" });
    root.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
    root.append(svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    root.append(svg("text", { x: (L + W) / 2, y: H - 6, "text-anchor": "middle", class: "tick" }, xLabel));
    root.append(svg("text", { x: L, y: 10, "text-anchor": "middle", class: "tick" }, yLabel));
    root.append(svg("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "tick" }, num(y0, 3)));
    root.append(svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "tick" }, num(y1, 3)));
    root.append(svg("text", { x: L, y: H - B + 14, class: "tick" }, num(x0, 3)));
    root.append(svg("text", { x: W - R, y: H - B + 14, "text-anchor": "end", class: "tick" }, num(x1, 3)));
    series.forEach((s, i) => {
      const cls = `series s${i % 4}`;
      if (opts && opts.lines) {
        const d = s.points.map((p, j) => `${j ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join("");
        root.append(svg("path", { d, class: `${cls} line` }));
      } else {
        for (const p of s.points) {
          root.append(svg("circle", { cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: 3.5, class: `${cls} dot` }));
        }
      }
    });
    const legend = el("div", { class: "legend" }, series.map((s, i) =>
      el("span", { class: `key s${i % 4}` }, [s.name])));
    return el("figure", {}, [root, legend]);
  }

  function pareto(report) {
    const front = (report.pareto || []).map((p) => [Number(p.tdp_w), Number(p.throughput)]);
    const refs = (report.references || []).map((p) => [Number(p.tdp_w), Number(p.throughput)]);
    const chosen = report.best ? [[Number(report.best.tdp_w), Number(report.best.throughput)]] : [];
    return section("Pareto front: throughput against TDP", plot("Pareto front", "TDP (W)", "samples/s", [
      { name: "Pareto designs", points: front }, { name: "references", points: refs }, { name: "chosen", points: chosen },
    ]));
  }

  function convergence(report) {
    const runs = [report.search, ...(report.comparisons || [])].filter((r) => r && (r.trace || []).length);
    if (runs.length < 2) {
      return null;
    }
    return section("Convergence against the baselines", plot("Convergence", "designs evaluated", "best objective",
      runs.map((r) => ({ name: r.strategy, points: r.trace.filter((t) => t.best !== null).map((t) => [t.n, Number(t.best)]) })),
      { lines: true }));
  }

  function stages(report) {
    const p = report.pipeline;
    if (!p) {
      return null;
    }
    const g = p.global || {};
    const fb = g.stage_fb_s || [];
    const slowest = Math.max(...fb, 1e-30);
    const rows = (p.partition || []).map((segs, i) => {
      const bar = el("div", { class: "bar" }, []);
      bar.style.width = `${Math.max(2, (100 * (fb[i] || 0)) / slowest).toFixed(1)}%`;
      const stageBest = ((p.per_stage || [])[i] || {}).best || {};
      return [`stage ${i + 1}`, segs.join(", "), stageBest.label || "–", ms(fb[i]), el("div", { class: "track" }, [bar])];
    });
    const summary = el("p", {}, [
      `${p.stages} stages × ${p.microbatches} micro-batches. Replicated design ${g.label || ""}: ${num(g.throughput)} samples/s, `
      + `Perf/TDP ${num(g.perf_per_tdp)}; heterogeneous bound ${num((p.heterogeneous || {}).throughput)} samples/s.`
      + (p.reference ? ` ${p.reference.name} replicated: ${num(p.reference.throughput)} samples/s.` : ""),
    ]);
    return section("Pipeline stages", summary, table(["stage", "segments", "stage's best design", "fwd+bwd ms", ""], rows, "stages"));
  }

  function critical(report) {
    const b = report.best;
    const parts = Object.entries(b.critical || {});
    const total = parts.reduce((a, [, t]) => a + Number(t), 0) || 1;
    const split = el("div", { class: "split" }, parts.map(([name, t]) => {
      const seg = el("div", { class: `part ${name}`, title: `${name} ${pct(Number(t) / total)}` }, [`${name} ${pct(Number(t) / total)}`]);
      seg.style.flexGrow = String(Number(t) / total);
      return seg;
    }));
    const ops = (b.critical_ops || []).slice(0, 10).map((c) => [c.segment, c.op, ms(c.seconds)]);
    return section("Critical path", split, table(["where", "operators", "ms"], ops, "ops"));
  }

  function errorView(state) {
    const help = el("div", { class: "help" }, [
      el("p", {}, ["To say how to build the model, either add a factory to pyproject.toml:"]),
      el("pre", {}, ["[tool.adopter.search]\nfactories = { MyModel = \"mypkg.models:make_model\" }\n"
        + "# def make_model(batch, seq): return model, example_inputs  # inputs: a tuple or a dict of tensors"]),
      el("p", {}, ["or run the search again and choose module:factory… in the quick pick."]),
    ]);
    const kids = [el("h2", {}, [state.status === "cancelled" ? `Search cancelled: ${state.title}` : `The search for ${state.title} could not run`]),
      el("p", { class: "error" }, [state.error || ""])];
    if (state.status !== "cancelled" && state.help) {
      kids.push(help);
    }
    return kids;
  }

  function header(state) {
    const w = (state.report && state.report.workload) || {};
    const sub = state.report && state.report.workload
      ? `batch ${w.batch}, sequence ${w.seq}, ${num(Number(w.params) / 1e6, 3)} M parameters, ${num(Number(w.flops) / 1e12, 3)} TFLOP per step, ${w.ops} operators`
      : "";
    const s = state.report && state.report.search;
    const run = s ? `${s.strategy}: ${s.evaluations} designs evaluated, best after ${s.evals_to_best} (${num(s.seconds, 3)} s, ${s.stopped})` : "";
    return [el("h2", {}, [`Accelerator search: ${state.title}`]), el("p", { class: "sub" }, [sub]), el("p", { class: "sub" }, [run])];
  }

  function toolbar(state) {
    const bar = el("div", { class: "toolbar" }, []);
    if (!vscode) {
      return bar;
    }
    const button = (id, label, enabled) => {
      const b = el("button", { id, type: "button" }, [label]);
      b.disabled = !enabled;
      b.addEventListener("click", () => vscode.postMessage({ type: id }));
      return b;
    };
    const done = state.status === "done";
    bar.append(button("copy", "Copy as JSON", done), button("save", "Save HTML report", done),
      button("rerun", "Run again", state.status !== "running"));
    return bar;
  }

  // *Verify and measure*: one row per fix (and class it changed), under a line naming it, so that the table
  // fits a side panel; failures shown as such.
  const VERIFY_HEADERS = ["equivalent (largest error)", "checkpoint loads", "speedup (median, IQR)", "fwd+bwd ms (original → fix)",
    "peak memory"];

  function cell(children, attrs) {
    return el("td", attrs || {}, children);
  }

  function sci(v) {
    const x = Number(v);
    return Number.isFinite(x) ? (x === 0 ? "0" : x.toExponential(1)) : "–";
  }

  const fixed2 = (v) => (Number.isFinite(Number(v)) ? Number(v).toFixed(2) : "–"); // a speedup: 1.00×, not 1×
  const msText = (v) => (Number(v) >= 100 ? String(Math.round(Number(v))) : num(v, 3));

  function memoryChange(r) {
    const a = Number(r.original_peak), b = Number(r.rewritten_peak);
    if (!Number.isFinite(a) || !Number.isFinite(b) || a <= 0) {
      return "n/a";
    }
    const change = (100 * (b - a)) / a;
    return `${change >= 0 ? "+" : "−"}${Math.abs(change).toFixed(1)} %`;
  }

  /** The line above a fix's measures: its rule, and the line and class it is in. */
  function fixRow(rule, line, cls) {
    return el("tr", { class: "fix" }, [cell([el("span", { class: "rule" }, [rule || ""]), ` line ${line ?? "–"}, ${cls || ""}`],
      { colspan: VERIFY_HEADERS.length })]);
  }

  function whyRow(kind, label, text) {
    return el("tr", { class: kind }, [cell([el("strong", {}, [label]), text], { colspan: VERIFY_HEADERS.length, class: "why" })]);
  }

  function verifyRows(r) {
    const head = fixRow(r.rule, r.line, r.class || r.scope);
    if (r.not_built !== undefined) {
      return [head, whyRow("failed", "not constructed: ", r.not_built)];
    }
    if (r.error !== undefined) {
      const loads = r.checkpoint_loads === false ? "checkpoint does not load (strict): " : "";
      return [head, whyRow("failed", "NOT equivalent: ", `${loads}${r.error}`)];
    }
    const equivalent = el("span", { class: r.equivalent ? "ok" : "bad" }, [r.equivalent ? "✓ equivalent" : "✗ NOT equivalent"]);
    const speed = r.speedup === undefined ? ["not timed"] : [
      el("strong", {}, [`${fixed2(r.speedup)}×`]), ` [${fixed2(r.speedup_q1)}–${fixed2(r.speedup_q3)}]`,
      el("div", { class: "detail" }, [`${r.pairs} pairs`])];
    return [head, el("tr", { class: "measures" }, [
      cell([equivalent, el("div", { class: "detail" }, [`max |diff| ${sci(r.max_abs)} over ${r.compared} tensors`]),
        el("div", { class: "detail" }, [`worst: ${r.worst || "–"}`])], { class: "left" }),
      cell([r.checkpoint_loads ? "✓ loads" : "✗ does not load"], { class: r.checkpoint_loads ? "ok" : "bad" }),
      cell(speed),
      cell([r.original_ms === undefined ? "–" : `${msText(r.original_ms)} → ${msText(r.rewritten_ms)}`]),
      cell([r.speedup === undefined ? "–" : memoryChange(r)]),
    ])];
  }

  function unfixedRows(u) {
    return [fixRow(u.rule, u.line, u.scope), whyRow("unfixed", "no fix to verify: ", u.reason || "")];
  }

  function verifyHelp() {
    return el("div", { class: "help" }, [
      el("p", {}, ["A class that could not be constructed, or whose inputs could not be inferred, needs a factory. "
        + "In the editor, name it per class in the settings (the command line's --factory and --inputs):"]),
      el("pre", {}, ["\"adopter.verify.factories\": { \"MyBlock\": \"my_factories:make_block\" },\n"
        + "\"adopter.verify.inputs\": { \"MyBlock\": \"my_factories:block_inputs\" }\n\n"
        + "# my_factories.py, beside your file:\n"
        + "def make_block(cls): return cls(dim=64), (torch.randn(2, 16, 64),)  # the model, or (model, inputs)\n"
        + "def block_inputs(model): return (torch.randn(2, 16, 64),)  # a tensor, a tuple or a dict of inputs"]),
    ]);
  }

  function verifyView(state) {
    const r = state.report || {};
    const rows = r.rows || [];
    const unfixed = r.unfixed || [];
    const request = state.request || {};
    const sub = `${rows.length} result${rows.length === 1 ? "" : "s"} on ${r.device || request.device || "?"}, ${r.dtype || "fp32"}, `
      + `torch ${r.torch || "?"}, with ${request.python || "the server's Python"}`;
    const kids = [el("h2", {}, [`Verify and measure: ${state.title}`]), el("p", { class: "sub" }, [sub])];
    if (!rows.length && !unfixed.length) {
      kids.push(el("p", {}, ["This class has no fix to verify."]));
      return kids;
    }
    const body = [...rows.flatMap(verifyRows), ...unfixed.flatMap(unfixedRows)];
    kids.push(el("table", { class: "verify" }, [
      el("thead", {}, [el("tr", {}, VERIFY_HEADERS.map((h) => el("th", {}, [h])))]), el("tbody", {}, body)]));
    kids.push(el("p", { class: "note" }, ["Equivalent: outputs, input gradients and parameter gradients within the dtype's tolerance. "
      + "Speedup: the median of original time / fix time over alternating forward+backward pairs, with its interquartile range; "
      + "on a busy machine read the range."]));
    if (rows.some((row) => row.not_built !== undefined)) {
      kids.push(verifyHelp());
    }
    return kids;
  }

  function verifyError(state) {
    const cancelled = state.status === "cancelled";
    const kids = [el("h2", {}, [cancelled ? `Verification cancelled: ${state.title}` : `The verification of ${state.title} could not run`]),
      el("p", { class: "error" }, [state.error || ""])];
    if (!cancelled && /factory|--inputs/.test(state.error || "")) {
      kids.push(verifyHelp());
    }
    return kids;
  }

  function renderVerify(root, state) {
    if (state.status === "running") {
      root.append(el("h2", {}, [`Verifying the fixes of ${state.title}…`]),
        el("p", {}, ["Each fix runs against the original in a subprocess. Progress, with Cancel, is in the notification area."]));
    } else if (state.status === "done") {
      root.append(...verifyView(state));
    } else {
      root.append(...verifyError(state));
    }
  }

  function render(state) {
    const root = document.getElementById("root");
    root.replaceChildren();
    root.append(toolbar(state));
    if (state.kind === "verify") {
      renderVerify(root, state);
      return;
    }
    if (state.status === "running") {
      root.append(el("h2", {}, [`Searching accelerator designs for ${state.title}…`]),
        el("p", {}, ["Progress, with Cancel, is in the notification area."]));
      return;
    }
    if (state.status !== "done" || !state.report || !state.report.best) {
      root.append(...errorView(state.status === "done" ? { ...state, status: "error", error: "no feasible design found: raise the budget, the area or the TDP limit" } : state));
      return;
    }
    const r = state.report;
    root.append(...header(state), best(r), references(r));
    for (const part of [stages(r), critical(r), pareto(r), convergence(r)]) {
      if (part) {
        root.append(part);
      }
    }
    for (const note of r.notes || []) {
      root.append(el("p", { class: "note" }, [`note: ${note}`]));
    }
  }

  function readState() {
    const saved = vscode && vscode.getState();
    if (saved && saved.title !== undefined) {
      return saved;
    }
    const tag = document.getElementById("adopter-state");
    return JSON.parse(tag ? tag.textContent : "{}");
  }

  let state = readState();
  render(state);
  if (vscode) {
    vscode.setState(state);
    window.addEventListener("message", (event) => {
      const msg = event.data || {};
      if (msg.type === "state" && msg.state) {
        state = msg.state;
        vscode.setState(state);
        render(state);
      }
    });
  }
})();
