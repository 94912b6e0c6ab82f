/** The local databases by binding (DB, DB_SHARD_0 …), as D1 bindings. */
export type LocalDatabases = Record<string, unknown>;
export declare function openLocalD1(): Promise<{ env: LocalDatabases; dispose(): Promise<void> }>;
export declare function withLocalD1<T>(
  use: (env: LocalDatabases, applied: string[]) => Promise<T>,
  options?: { migrate?: boolean },
): Promise<T>;
export declare function retryLocked<T>(run: () => Promise<T>): Promise<T>;
export declare function migrateLocal(): Promise<string[]>;
