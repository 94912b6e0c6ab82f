import { and, eq, gt, inArray, isNull } from "drizzle-orm";
import type { Db } from "../db/client";
import { oauthRefreshTokens } from "../db/schema";
import { nowIso } from "../lib/time";
import { isPermission, type Permission } from "../platform/permissions";

/**
 * What the person on the consent page already allowed the client, per organization they may choose: the permissions of
 * their live grants of it (a refresh token family whose current token is unused, unrevoked and unexpired). A client
 * that steps up (MCP authorization, "Scope Challenge Handling": the 403 insufficient_scope names what the token holds
 * plus what the tool needs) asks again for all of it; the page then marks what is new.
 */
export async function grantedBefore(
  db: Db,
  clientId: string,
  memberships: { userId: string; organizationId: string }[],
): Promise<Record<string, Permission[]>> {
  if (memberships.length === 0) return {};
  const rows = await db
    .select({
      userId: oauthRefreshTokens.userId,
      organizationId: oauthRefreshTokens.organizationId,
      permissions: oauthRefreshTokens.permissions,
    })
    .from(oauthRefreshTokens)
    .where(
      and(
        eq(oauthRefreshTokens.clientId, clientId),
        inArray(
          oauthRefreshTokens.organizationId,
          memberships.map((m) => m.organizationId),
        ),
        isNull(oauthRefreshTokens.usedAt),
        isNull(oauthRefreshTokens.revokedAt),
        gt(oauthRefreshTokens.expiresAt, nowIso()),
      ),
    )
    .all();
  const granted: Record<string, Set<Permission>> = {};
  for (const row of rows) {
    // Another user's grant in the same organization is theirs, not this person's.
    if (!memberships.some((m) => m.userId === row.userId && m.organizationId === row.organizationId)) continue;
    const held = (granted[row.organizationId] ??= new Set());
    for (const p of row.permissions) if (isPermission(p)) held.add(p);
  }
  return Object.fromEntries(Object.entries(granted).map(([org, held]) => [org, [...held]]));
}
