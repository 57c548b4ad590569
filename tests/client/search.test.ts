// The search as asked in the editor: the class at the cursor, the quick picks (trust decides what is
// offered) and the request sent to the server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_OPTIONS, Pick, SearchUI, Target, askSearch, classAt, factoryProblem, runsUserCode, searchRequest } from "../../client/src/search";

const FILE = `import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.q = nn.Linear(8, 8)

    def forward(self, x):
        return self.q(x)


def helper():
    return 1


class Outer(nn.Module):
    class Inner(nn.Module):
        pass

    def forward(self, x):

        return x
`.split("\n");

test("classAt finds the class around the cursor", () => {
  assert.equal(classAt(FILE, 4), "Attention"); // on the class line
  assert.equal(classAt(FILE, 10), "Attention"); // inside a method
  assert.equal(classAt(FILE, 8), "Attention"); // a blank line inside the class
  assert.equal(classAt(FILE, 14), undefined); // inside a top-level function
  assert.equal(classAt(FILE, 0), undefined);
  assert.equal(classAt(FILE, 19), "Inner");
  assert.equal(classAt(FILE, 23), "Outer"); // the method after the nested class
});

test("searchRequest: the class as file:Class, parallelism and budget", () => {
  const target: Target = { kind: "class", path: "/w/modeling_bert.py", className: "BertModel" };
  assert.deepEqual(searchRequest(target, { objective: "perf-per-tdp", parallel: "pipeline", stages: 4, budget: 50 }),
    { model: "/w/modeling_bert.py:BertModel", objective: "perf-per-tdp", strategy: "wham", budget: 50, pipeline: 4 });
  assert.deepEqual(searchRequest({ kind: "zoo", model: "gpt2" }, { ...DEFAULT_OPTIONS, parallel: "tensor", stages: 2 }),
    { model: "gpt2", objective: "throughput", strategy: "wham", budget: 200, tensor_parallel: 2 });
  assert.deepEqual(searchRequest({ kind: "factory", spec: "pkg.m:make" }, DEFAULT_OPTIONS),
    { model: "pkg.m:make", objective: "throughput", strategy: "wham", budget: 200 });
});

test("only zoo models run no user code", () => {
  assert.equal(runsUserCode({ kind: "zoo", model: "gpt2" }), false);
  assert.equal(runsUserCode({ kind: "factory", spec: "a:b" }), true);
  assert.equal(runsUserCode({ kind: "class", path: "/a.py", className: "A" }), true);
});

test("factoryProblem accepts module:function only", () => {
  assert.equal(factoryProblem("mypkg.models:make_model"), undefined);
  assert.match(factoryProblem("mypkg.models") ?? "", /module:function/);
  assert.match(factoryProblem("rm -rf /:x") ?? "", /module:function/);
});

/** A UI that answers each quick pick by label and records what was offered. */
function scripted(labels: (string | undefined)[], inputs: (string | undefined)[] = []): SearchUI & { offered: string[][] } {
  const offered: string[][] = [];
  return {
    offered,
    async pick<T>(items: Pick<T>[]): Promise<T | undefined> {
      offered.push(items.map((i) => i.label));
      const want = labels.shift();
      const item = items.find((i) => i.label === want || i.label.endsWith(` ${want}`));
      return want === undefined ? undefined : item?.value;
    },
    async input() {
      return inputs.shift();
    },
  };
}

const inEditor: Target = { kind: "class", path: "/w/m.py", className: "Attention" };

test("trusted: the class at the cursor comes first, then the zoo, then module:factory", async () => {
  const ui = scripted(["Attention", "Perf/TDP", "Tensor parallel, 4 ways", "Quick"]);
  const asked = await askSearch(ui, undefined, inEditor, true);
  assert.deepEqual(asked, { target: inEditor, options: { objective: "perf-per-tdp", parallel: "tensor", stages: 4, budget: 50 } });
  assert.equal(ui.offered[0][0], "$(symbol-class) Attention");
  assert.equal(ui.offered[0].at(-1), "module:factory…");
});

test("untrusted: neither the class nor a factory is offered", async () => {
  const ui = scripted(["gpt2", "Throughput", "Single device", "Default"]);
  const asked = await askSearch(ui, undefined, inEditor, false);
  assert.deepEqual(asked?.target, { kind: "zoo", model: "gpt2" });
  assert.ok(!ui.offered[0].some((l) => l.includes("Attention") || l.includes("factory")));
});

test("a code lens's class skips the model pick; a typed factory is trimmed; Escape stops", async () => {
  const lens = scripted(["Throughput", "Pipeline, 2 stages", "Thorough"]);
  assert.deepEqual((await askSearch(lens, inEditor, undefined, true))?.options, { objective: "throughput", parallel: "pipeline", stages: 2, budget: 1000 });
  assert.equal(lens.offered.length, 3);
  const factory = scripted(["module:factory…", "Throughput", "Single device", "Default"], ["  pkg.models:make  "]);
  assert.deepEqual((await askSearch(factory, undefined, undefined, true))?.target, { kind: "factory", spec: "pkg.models:make" });
  assert.equal(await askSearch(scripted(["Throughput", undefined]), inEditor, undefined, true), undefined);
});
