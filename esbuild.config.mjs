// Bundles the extension client (and, with `--tests`, the client tests against a mocked `vscode`).
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const tests = process.argv.includes("--tests");
const common = { bundle: true, platform: "node", format: "cjs", target: "node20", sourcemap: true, logLevel: "warning" };

if (process.argv.includes("--e2e")) {
  await esbuild.build({
    ...common,
    entryPoints: ["tests/e2e/vscode.test.ts", "tests/e2e/universal.test.ts"],
    outdir: "tests/e2e/out",
    external: ["playwright-core"],
  });
} else if (tests) {
  const entries = readdirSync("tests/client").filter((f) => f.endsWith(".test.ts")).map((f) => `tests/client/${f}`);
  await esbuild.build({
    ...common,
    entryPoints: entries,
    outdir: "tests/client/out",
    external: ["playwright-core"],
    alias: { vscode: "./tests/client/mock/vscode.ts", "vscode-languageclient/node": "./tests/client/mock/languageclient.ts" },
  });
} else {
  await esbuild.build({
    ...common,
    entryPoints: { extension: "client/src/extension.ts" },
    outdir: "client/out",
    external: ["vscode"],
    minify: process.argv.includes("--production"),
  });
}
