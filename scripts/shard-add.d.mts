export declare function withShard(toml: string, n: number): string;
