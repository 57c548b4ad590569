// The settings the server reads (initializationOptions and workspace/configuration), from VS Code's.
export interface ConfigurationLike {
  get<T>(key: string, defaultValue: T): T;
}

export function serverSettings(config: ConfigurationLike, trusted: boolean): Record<string, unknown> {
  return {
    select: config.get<string[]>("select", []),
    ignore: config.get<string[]>("ignore", []),
    severity: config.get<Record<string, string>>("severity", {}),
    target: config.get<string>("target", "auto"),
    // Extra rule files are code the user chose to load: only in a trusted workspace.
    rule_paths: trusted ? config.get<string[]>("rulePaths", []) : [],
    debounce_ms: config.get<number>("debounceMs", 150),
    trusted,
  };
}
