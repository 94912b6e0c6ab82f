export declare const EMBEDDING_INDEXES: Record<string, { dimensions: number; metric: string }>;
export declare function parseDeployArgs(argv: string[]): {
  environment: string;
  secretsFile: string | undefined;
  plan: boolean;
  smokeOrigin: string | undefined;
  rest: string[];
};
export declare function secretNamesIn(text: string): string[];
export declare function wantedResources(config: unknown): { databases: string[]; queues: string[]; buckets: string[]; indexes: string[] };
export declare function smokeCheck(origin: string): Promise<string[]>;
