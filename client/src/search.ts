// The accelerator search as the user asks for it: which model (the class in the editor, a zoo model or
// a `module:factory`), the objective, the parallelism and the budget; turned into the server's request.

export const ZOO = ["bert-base", "bert-large", "gpt2", "gpt2-xl", "t5-base", "resnet50", "vit-b16", "llama-1b"];

export type Target =
  | { kind: "class"; path: string; className: string }
  | { kind: "zoo"; model: string }
  | { kind: "factory"; spec: string };

export interface Options {
  objective: "throughput" | "perf-per-tdp";
  parallel: "single" | "pipeline" | "tensor";
  stages: number; // pipeline stages or tensor-parallel ways; 1 for a single device
  budget: number;
}

export const DEFAULT_OPTIONS: Options = { objective: "throughput", parallel: "single", stages: 1, budget: 200 };

/** The `adopter.searchAccelerator` argument for a target and options. */
export function searchRequest(target: Target, options: Options): Record<string, unknown> {
  const model = target.kind === "class" ? `${target.path}:${target.className}`
    : target.kind === "zoo" ? target.model : target.spec;
  const request: Record<string, unknown> = { model, objective: options.objective, strategy: "wham", budget: options.budget };
  if (options.parallel === "pipeline" && options.stages > 1) {
    request.pipeline = options.stages;
  } else if (options.parallel === "tensor" && options.stages > 1) {
    request.tensor_parallel = options.stages;
  }
  return request;
}

/** A short name for titles: the class, the zoo model or the factory. */
export function targetLabel(target: Target): string {
  return target.kind === "class" ? target.className : target.kind === "zoo" ? target.model : target.spec;
}

/** Whether running this search imports the user's code (refused in an untrusted workspace). */
export function runsUserCode(target: Target): boolean {
  return target.kind !== "zoo";
}

const CLASS_LINE = /^(\s*)class\s+([A-Za-z_]\w*)\s*[(:]/;

/** The class whose body holds `line` (the innermost, by indentation), or undefined. */
export function classAt(lines: readonly string[], line: number): string | undefined {
  let limit = Number.POSITIVE_INFINITY; // the enclosing block is indented less than this
  for (let i = Math.min(line, lines.length - 1); i >= 0; i--) {
    const text = lines[i];
    if (!text.trim() || text.trimStart().startsWith("#")) {
      continue;
    }
    const indent = text.length - text.trimStart().length;
    if (i !== line && indent >= limit) {
      continue; // a sibling statement, not an enclosing block
    }
    const m = CLASS_LINE.exec(text);
    if (m) {
      return m[2];
    }
    if (indent === 0) {
      return undefined; // top-level code that is not a class
    }
    limit = indent;
  }
  return undefined;
}

/** `module:function` or `module:Class`, as typed in the quick pick; an error message, or undefined when valid. */
export function factoryProblem(spec: string): string | undefined {
  return /^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$/.test(spec.trim())
    ? undefined
    : "write module:function (e.g. mypkg.models:make_model), a function returning (model, example inputs)";
}

export interface Pick<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

/** What the search flow asks of the UI (VS Code's quick picks, or a test's answers). */
export interface SearchUI {
  pick<T>(items: Pick<T>[], placeHolder: string): Promise<T | undefined>;
  input(prompt: string, validate: (value: string) => string | undefined): Promise<string | undefined>;
}

/** Ask for the model (unless given), then the options; undefined when the user cancels a step. */
export async function askSearch(
  ui: SearchUI, given: Target | undefined, inEditor: Target | undefined, trusted: boolean,
): Promise<{ target: Target; options: Options } | undefined> {
  let target = given;
  if (!target) {
    const items: Pick<Target | "factory">[] = [];
    if (inEditor && trusted) {
      items.push({ label: `$(symbol-class) ${targetLabel(inEditor)}`, description: "the class at the cursor", value: inEditor });
    }
    items.push(...ZOO.map((m) => ({ label: m, description: "built-in model", value: { kind: "zoo", model: m } as Target })));
    if (trusted) {
      items.push({ label: "module:factory…", description: "your function returning (model, example inputs)", value: "factory" });
    }
    const picked = await ui.pick(items, "Which model's training step should the accelerator be designed for?");
    if (!picked) {
      return undefined;
    }
    if (picked === "factory") {
      const spec = await ui.input("module:function, e.g. mypkg.models:make_model", factoryProblem);
      if (!spec) {
        return undefined;
      }
      target = { kind: "factory", spec: spec.trim() };
    } else {
      target = picked;
    }
  }
  const objective = await ui.pick<Options["objective"]>([
    { label: "Throughput", description: "samples per second", value: "throughput" },
    { label: "Perf/TDP", description: "samples per second per watt", value: "perf-per-tdp" },
  ], "Objective");
  if (!objective) {
    return undefined;
  }
  const parallel = await ui.pick<[Options["parallel"], number]>([
    { label: "Single device", value: ["single", 1] },
    ...[2, 4, 8].map((n) => ({ label: `Pipeline, ${n} stages`, description: "one design per stage", value: ["pipeline", n] as [Options["parallel"], number] })),
    ...[2, 4, 8].map((n) => ({ label: `Tensor parallel, ${n} ways`, value: ["tensor", n] as [Options["parallel"], number] })),
  ], "Devices");
  if (!parallel) {
    return undefined;
  }
  const budget = await ui.pick<number>([
    { label: "Quick", description: "50 designs", value: 50 },
    { label: "Default", description: "200 designs", value: 200 },
    { label: "Thorough", description: "1000 designs", value: 1000 },
  ], "Search budget");
  if (budget === undefined) {
    return undefined;
  }
  return { target, options: { objective, parallel: parallel[0], stages: parallel[1], budget } };
}
