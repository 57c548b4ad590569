// The result panel's page (client/media/panel.js under the panel's CSP) in headless Chromium with a stubbed
// acquireVsCodeApi: content, escaping, the three themes, buttons and state restore. Screenshots go to
// tests/client/out/artifacts/ (not committed). Needs Chromium: `make client-test` installs Debian's.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { PanelState, makeNonce, panelHtml, standaloneHtml } from "../../client/src/panelHtml";

const ROOT = join(__dirname, "..", "..", "..");
const MEDIA = join(ROOT, "client", "media");
const OUT = join(ROOT, "tests", "client", "out");
const ARTIFACTS = join(OUT, "artifacts");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const fixture = (name: string) => JSON.parse(readFileSync(join(ROOT, "tests", "client", "fixtures", name), "utf8"));

// VS Code's variables for each theme kind (a subset, with the real default values).
const THEMES: Record<string, { body: string; vars: Record<string, string> }> = {
  light: { body: "vscode-light", vars: { "--vscode-foreground": "#3b3b3b", "--vscode-editor-background": "#ffffff", "--vscode-button-background": "#005fb8", "--vscode-button-foreground": "#ffffff", "--vscode-charts-blue": "#1a85ff", "--vscode-charts-orange": "#d18616", "--vscode-charts-green": "#388a34", "--vscode-descriptionForeground": "#3b3b3b", "--vscode-panel-border": "#e5e5e5", "--vscode-editorWidget-background": "#f8f8f8", "--vscode-errorForeground": "#f85149" } },
  dark: { body: "vscode-dark", vars: { "--vscode-foreground": "#cccccc", "--vscode-editor-background": "#1f1f1f", "--vscode-button-background": "#0078d4", "--vscode-button-foreground": "#ffffff", "--vscode-charts-blue": "#3794ff", "--vscode-charts-orange": "#d18616", "--vscode-charts-green": "#89d185", "--vscode-descriptionForeground": "#9d9d9d", "--vscode-panel-border": "#2b2b2b", "--vscode-editorWidget-background": "#202020", "--vscode-errorForeground": "#f85149" } },
  "high-contrast": { body: "vscode-high-contrast", vars: { "--vscode-foreground": "#ffffff", "--vscode-editor-background": "#000000", "--vscode-button-background": "#000000", "--vscode-button-foreground": "#ffffff", "--vscode-button-border": "#6fc3df", "--vscode-contrastBorder": "#6fc3df", "--vscode-charts-blue": "#3794ff", "--vscode-charts-orange": "#d18616", "--vscode-charts-green": "#89d185", "--vscode-descriptionForeground": "#ffffff", "--vscode-editorWidget-background": "#0c141f", "--vscode-errorForeground": "#f48771" } },
};

let browser: Browser | undefined;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: run \`make client-test\` (it installs Debian's chromium) or set CHROMIUM`);
  }
  const { chromium } = await import("playwright-core");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--allow-file-access-from-files"],
  });
});

after(async () => {
  await browser?.close();
});

interface Loaded {
  page: Page;
  posted: unknown[];
  saved: () => Promise<PanelState | undefined>;
  problems: string[];
}

/** Open the panel page for `state` as the webview would, with `restored` as what getState() returns. */
async function open(state: PanelState, theme = "dark", restored?: PanelState): Promise<Loaded> {
  const nonce = makeNonce();
  const html = panelHtml(state, {
    cspSource: "file:", nonce,
    scriptUri: pathToFileURL(join(MEDIA, "panel.js")).href,
    styleUri: pathToFileURL(join(MEDIA, "panel.css")).href,
  });
  const file = join(OUT, `panel-${nonce}.html`);
  writeFileSync(file, html);
  const page = await browser!.newPage({ viewport: { width: 900, height: 1400 } });
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || /Content.Security.Policy|Refused/i.test(m.text())) {
      problems.push(m.text());
    }
  });
  page.on("pageerror", (e) => problems.push(String(e)));
  const { body, vars } = THEMES[theme];
  await page.addInitScript(({ restoredState, themeVars, bodyClass }) => {
    const w = window as unknown as Record<string, unknown>;
    w.__posted = [];
    w.__state = restoredState;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => (w.__posted as unknown[]).push(m),
      getState: () => w.__state,
      setState: (s: unknown) => { w.__state = s; },
    });
    // What VS Code does for a webview: the theme's variables on <html>, its kind as a class on <body>.
    document.addEventListener("DOMContentLoaded", () => {
      for (const [k, v] of Object.entries(themeVars)) {
        document.documentElement.style.setProperty(k, v);
      }
      document.body.classList.add(bodyClass);
    });
  }, { restoredState: restored, themeVars: vars, bodyClass: body });
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector("#root > *");
  return {
    page, problems,
    posted: [],
    saved: () => page.evaluate(() => (window as unknown as { __state?: PanelState }).__state),
  };
}

const pipelineState = (): PanelState => ({
  title: "TinyTransformer", request: { model: "tiny-transformer", pipeline: 2 }, status: "done", report: fixture("report-pipeline.json"),
});

test("content: the chosen design, references, pipeline stages, critical path, Pareto and convergence", async () => {
  const report = fixture("report-single.json");
  const { page, problems } = await open({ title: "tiny-transformer", request: {}, status: "done", report });
  const text = await page.innerText("body");
  for (const heading of ["Chosen design", "Against the reference designs", "Critical path", "Pareto front: throughput against TDP", "Convergence against the baselines"]) {
    assert.ok(text.includes(heading), heading);
  }
  assert.ok(text.includes(report.best.label));
  const cards = await page.$$eval(".card .name", (els) => els.map((e) => e.textContent));
  assert.deepEqual(cards, ["samples/s", "step ms", "Perf/TDP", "area mm²", "TDP W", "TC util", "VC util"]);
  const refRows = await page.$$eval("table.refs tbody tr td:first-child", (els) => els.map((e) => e.textContent));
  assert.deepEqual(refRows, ["found", ...report.references.map((r: { name: string }) => r.name)]);
  assert.equal(await page.locator("svg.plot").count(), 2);
  assert.equal(await page.locator("svg.plot circle").count(), report.pareto.length + report.references.length + 1);
  assert.equal(await page.locator("svg.plot path.line").count(), 1 + report.comparisons.length);
  assert.deepEqual(problems, []);
  await page.close();
});

test("the pipeline view lists each stage with its segments and time", async () => {
  const state = pipelineState();
  const { page, problems } = await open(state);
  const rows = await page.$$eval("table.stages tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent)));
  const report = state.report as { pipeline: { partition: string[][] } };
  assert.deepEqual(rows, report.pipeline.partition.map((segs, i) => [`stage ${i + 1}`, segs.join(", ")]));
  assert.equal(await page.locator(".track .bar").count(), report.pipeline.partition.length);
  await page.screenshot({ path: join(ARTIFACTS, "panel-pipeline-dark.png"), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test("escaping: a model named <img onerror=…> and markup in report values stay text", async () => {
  const evil = `<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>`;
  const report = fixture("report-single.json");
  report.best.label = `<b id="injected">${evil}</b>`;
  report.references[0].name = evil;
  report.notes = [evil];
  const { page, problems } = await open({ title: evil, request: { model: evil }, status: "done", report });
  await page.waitForTimeout(200);
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  assert.equal(await page.locator("img").count(), 0);
  assert.equal(await page.locator("#injected").count(), 0);
  assert.equal(await page.locator("script").count(), 2); // the state and panel.js, nothing injected
  assert.ok((await page.innerText("h2")).includes(evil));
  assert.ok((await page.innerText("table.refs")).includes(evil));
  assert.equal(await page.title(), `Accelerator search: ${evil}`);
  const error = await open({ title: evil, request: {}, status: "error", error: evil, help: true });
  assert.equal(await error.page.locator("img").count(), 0);
  assert.ok((await error.page.innerText(".error")).includes(evil));
  assert.deepEqual([...problems, ...error.problems], []);
  await page.close();
  await error.page.close();
});

test("themes: VS Code's colours in light, dark and high contrast", async () => {
  for (const theme of Object.keys(THEMES)) {
    const { page, problems } = await open(pipelineState(), theme);
    const colours = await page.evaluate(() => {
      const body = getComputedStyle(document.body);
      const button = getComputedStyle(document.querySelector("button")!);
      return { fg: body.color, bg: body.backgroundColor, button: button.backgroundColor };
    });
    const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(", ")})`;
    const vars = THEMES[theme].vars;
    assert.deepEqual(colours, { fg: rgb(vars["--vscode-foreground"]), bg: rgb(vars["--vscode-editor-background"]), button: rgb(vars["--vscode-button-background"]) }, theme);
    await page.screenshot({ path: join(ARTIFACTS, `panel-${theme}.png`) });
    assert.deepEqual(problems, []);
    await page.close();
  }
});

test("buttons post their messages; Run again works after a failure; state is saved and restored", async () => {
  const first = await open(pipelineState());
  for (const id of ["copy", "save", "rerun"]) {
    await first.page.click(`#${id}`);
  }
  assert.deepEqual(await first.page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted),
    [{ type: "copy" }, { type: "save" }, { type: "rerun" }]);
  // The extension pushes a new state (a running search): the page shows it and saves it.
  await first.page.evaluate(() => window.postMessage({ type: "state", state: { title: "TinyTransformer", request: {}, status: "running" } }, "*"));
  await first.page.waitForSelector("text=Searching accelerator designs for TinyTransformer");
  assert.equal(await first.page.isDisabled("#copy"), true);
  assert.equal((await first.saved())?.status, "running");
  await first.page.evaluate(() => window.postMessage({ type: "state", state: { title: "TinyTransformer", request: {}, status: "done", report: null } }, "*"));
  const saved = pipelineState();
  // A reload: VS Code gives the page what it saved, whatever the HTML was made with.
  const restored = await open({ title: "stale", request: {}, status: "running" }, "light", saved);
  const text = await restored.page.innerText("body");
  assert.ok(text.includes("Accelerator search: TinyTransformer"));
  assert.ok(text.includes("Pipeline stages"));
  assert.deepEqual([...first.problems, ...restored.problems], []);
  await first.page.close();
  await restored.page.close();
});

test("the saved HTML report renders the same content on its own, without VS Code", async () => {
  const state = pipelineState();
  const html = standaloneHtml(state, readFileSync(join(MEDIA, "panel.css"), "utf8"), readFileSync(join(MEDIA, "panel.js"), "utf8"));
  const file = join(OUT, "standalone-report.html");
  writeFileSync(file, html);
  const page = await browser!.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector("table.stages");
  assert.equal(await page.locator("button").count(), 0); // no VS Code: no buttons
  assert.ok((await page.innerText("body")).includes("Chosen design"));
  assert.deepEqual(problems, []);
  await page.close();
});

const verifyState = (): PanelState => ({
  kind: "verify", title: "TinyBertSelfOutput", status: "done", report: fixture("verify-report.json"),
  request: { uri: "file:///w/tinybert/modeling_tinybert.py", class: "TinyBertSelfOutput", python: "/venv/bin/python" },
});

test("verify: one row per fix with equivalence, checkpoint, speedup with IQR and memory; failures as such", async () => {
  const { page, problems } = await open(verifyState());
  assert.equal(await page.title(), "Verify and measure: TinyBertSelfOutput");
  const headers = await page.$$eval("table.verify th", (ths) => ths.map((th) => th.textContent));
  assert.deepEqual(headers, ["equivalent (largest error)", "checkpoint loads", "speedup (median, IQR)", "fwd+bwd ms (original → fix)", "peak memory"]);
  const rows = await page.$$eval("table.verify tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => (td as HTMLElement).innerText)));
  // each fix: a line naming it, then its measures (or why there are none)
  assert.equal(rows.length, 8);
  assert.deepEqual(rows.filter((_, i) => i % 2 === 0), [["f05-dropout-add-layernorm line 18, TinyBertSelfOutput"],
    ["f05-dropout-add-layernorm line 18, TinyBertSelfOutput"], ["f10-manual-attention-sdpa line 31, TinyBertLayer"], ["f04-softmax line 40, TinyBertModel"]]);
  // the measured row (figures from a real `adopter verify` run of the e2e workspace's tinybert)
  const measured = rows[1];
  assert.match(measured[0], /✓ equivalent\s+max \|diff\| 0 over 7 tensors\s+worst: gradient of LayerNorm\.bias/);
  assert.equal(measured[1], "✓ loads");
  assert.match(measured[2], /^1\.08× \[0\.93–25\.84\]\s+5 pairs$/);
  assert.equal(measured[3], "108 → 100");
  assert.equal(measured[4], "+0.0 %");
  // not constructed: the missing argument and how to pass it, in one cell across the measures
  assert.equal(rows[3].length, 1);
  assert.match(rows[3][0], /^not constructed: TinyBertSelfOutput: inputs \(missing `input_tensor`\)/);
  assert.match(rows[5][0], /^NOT equivalent: checkpoint does not load \(strict\): load_state_dict/);
  assert.match(rows[7][0], /^no fix to verify: no target is available/);
  assert.equal(await page.locator("tr.failed").count(), 2);
  const help = await page.innerText(".help");
  assert.match(help, /adopter\.verify\.factories/);
  assert.match(help, /adopter\.verify\.inputs/);
  assert.match(await page.innerText(".sub"), /3 results on cpu, fp32, torch 2\.13\.0\+cpu, with \/venv\/bin\/python/);
  await page.screenshot({ path: join(ARTIFACTS, "panel-verify-dark.png"), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test("verify: theme colours for the verdicts, a running and a cancelled run, and escaping", async () => {
  for (const theme of Object.keys(THEMES)) {
    const { page, problems } = await open(verifyState(), theme);
    await page.setViewportSize({ width: 460, height: 900 }); // a side panel's width: the table still fits
    const colours = await page.evaluate(() => ({
      ok: getComputedStyle(document.querySelector("span.ok")!).color,
      failed: getComputedStyle(document.querySelector("tr.failed td.why")!).color,
    }));
    const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(", ")})`;
    const vars = THEMES[theme].vars;
    assert.deepEqual(colours, { ok: rgb(vars["--vscode-charts-green"]), failed: rgb(vars["--vscode-errorForeground"]) }, theme);
    const fits = await page.evaluate(() => document.querySelector("table.verify")!.getBoundingClientRect().right <= window.innerWidth);
    assert.ok(fits, `${theme}: the table is wider than a 460 px panel`);
    await page.screenshot({ path: join(ARTIFACTS, `panel-verify-${theme}.png`), fullPage: true });
    assert.deepEqual(problems, []);
    await page.close();
  }
  const running = await open({ ...verifyState(), status: "running", report: undefined });
  assert.match(await running.page.innerText("h2"), /^Verifying the fixes of TinyBertSelfOutput…$/);
  assert.equal(await running.page.isDisabled("#rerun"), true);
  await running.page.close();
  const cancelled = await open({ ...verifyState(), status: "cancelled", report: undefined, error: "You cancelled the run." });
  assert.equal(await cancelled.page.innerText("h2"), "Verification cancelled: TinyBertSelfOutput");
  assert.equal(await cancelled.page.isDisabled("#rerun"), false);
  await cancelled.page.close();
  const evil = `<img src=x onerror="window.__pwned=1">`;
  const report = fixture("verify-report.json");
  report.rows[1].not_built = evil;
  report.rows[0].worst = evil;
  const escaped = await open({ ...verifyState(), title: evil, report });
  await escaped.page.waitForTimeout(100);
  assert.equal(await escaped.page.locator("img").count(), 0);
  assert.ok((await escaped.page.innerText("table.verify")).includes(evil));
  assert.deepEqual([...escaped.problems], []);
  await escaped.page.close();
});
