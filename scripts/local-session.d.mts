import type { LocalDatabases } from "./local-d1.mjs";

export declare function mintLocalSession(
  env: LocalDatabases,
  who: { org: string; email: string; name?: string | null; role?: "owner" | "admin" | "agent" },
): Promise<{ token: string; userId: string; organizationId: string }>;
