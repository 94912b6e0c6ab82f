export declare function varFromArgs(args: string[], name: string): string | undefined;
export declare function tomlVar(toml: string, name: string): string | undefined;
export declare function configProblem(options?: {
  args?: string[];
  fileVars?: Record<string, string>;
  vars?: Record<string, unknown>;
  toml?: string;
  environment?: string;
}): string | null;
export declare function refuseMisconfiguration(options?: {
  args?: string[];
  fileVars?: Record<string, string>;
  vars?: Record<string, unknown>;
  toml?: string;
  environment?: string;
}): void;
