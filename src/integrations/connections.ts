import { and, eq, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { oauthClients, oauthConnections, oauthRefreshTokens } from "../db/schema";
import { commitInDirectory, type DirectoryItem, type DirectoryWork } from "../events/directory-outbox";
import { newEvent } from "../events/outbox";
import { nowIso } from "../lib/time";
import type { Actor } from "../service-context";
import type { OAuthClientIntegration } from "./schemas";

/**
 * The OAuth clients connected to an organization (docs/decisions/0019-directory-outbox.md). A client is connected while some user of
 * the organization holds a live refresh token family of it (consent started it; a revocation, a detected reuse or 30
 * days unused end it). `oauth_connections` holds a row per connected client, and the events are staged on the
 * transitions only, by conditions evaluated inside the batch that starts or ends a family: D1 runs a batch as one
 * transaction, one at a time, so of concurrent first grants exactly one connects, and of concurrent revocations of the
 * last families exactly one disconnects.
 */

export interface ClientInOrganization {
  organizationId: string;
  clientId: string;
}

/** The refresh tokens that keep a client connected: unused (the current one of its family), unrevoked, unexpired at `at`. */
const liveTokensOf = (organizationId: string | SQL, clientId: string | SQL, at = nowIso()): SQL =>
  sql`${oauthRefreshTokens.organizationId} = ${organizationId} AND ${oauthRefreshTokens.clientId} = ${clientId}
      AND ${oauthRefreshTokens.revokedAt} IS NULL AND ${oauthRefreshTokens.usedAt} IS NULL AND ${oauthRefreshTokens.expiresAt} > ${at}`;

/** Some user of the organization still holds a live family of the client (at `at`: the cron's pass time, else now). */
const liveFamily = (organizationId: string | SQL, clientId: string | SQL, at = nowIso()): SQL =>
  sql`EXISTS (SELECT 1 FROM ${oauthRefreshTokens} WHERE ${liveTokensOf(organizationId, clientId, at)})`;
/** The same, for the connection row a query is on. */
export const rowHasLiveFamily = (at = nowIso()) =>
  liveFamily(sql`${oauthConnections.organizationId}`, sql`${oauthConnections.clientId}`, at);

const connectionOf = ({ organizationId, clientId }: ClientInOrganization) =>
  and(eq(oauthConnections.organizationId, organizationId), eq(oauthConnections.clientId, clientId));
const connected = (c: ClientInOrganization): SQL => sql`EXISTS (SELECT 1 FROM ${oauthConnections} WHERE ${connectionOf(c)})`;

const event = (
  c: ClientInOrganization,
  actor: Actor,
  type: "integration.connected" | "integration.disconnected",
  object: OAuthClientIntegration,
) => newEvent({ organizationId: c.organizationId, actor }, type, { object, previousAttributes: null, changes: null });

/**
 * For the batch that starts a family (the code exchange), after its refresh token: connects the client when no other
 * grant in the organization had, with `integration.connected`. A row whose grants all ran out in the last minute (the
 * cron has not yet disconnected it) counts as connected: that client then stays connected, without either event.
 */
export function connectClient(
  directory: Db,
  grant: ClientInOrganization & { userId: string; clientName: string | null; permissions: string[] },
): DirectoryItem[] {
  const at = nowIso();
  const object: OAuthClientIntegration = {
    type: "oauth_client",
    id: grant.clientId,
    name: grant.clientName,
    grantedBy: [grant.userId],
    permissions: grant.permissions,
    connectedAt: at,
  };
  return [
    { event: event(grant, { type: "user", userId: grant.userId }, "integration.connected", object), when: sql`NOT ${connected(grant)}` },
    directory
      .insert(oauthConnections)
      .values({ organizationId: grant.organizationId, clientId: grant.clientId, connectedBy: grant.userId, connectedAt: at })
      .onConflictDoNothing(),
  ];
}

/**
 * For a batch that may end the client's last family in the organization (after the statements that revoke): the
 * connection goes, with `integration.disconnected` carrying the integration as it was listed.
 */
function disconnectClient(
  directory: Db,
  c: ClientInOrganization,
  actor: Actor,
  object: OAuthClientIntegration,
  at = nowIso(),
): DirectoryItem[] {
  return [
    {
      event: event(c, actor, "integration.disconnected", object),
      when: sql`${connected(c)} AND NOT ${liveFamily(c.organizationId, c.clientId, at)}`,
    },
    directory.delete(oauthConnections).where(and(connectionOf(c), sql`NOT ${liveFamily(c.organizationId, c.clientId, at)}`)),
  ];
}

/**
 * Revokes `statements`' family (refresh tokens and grants, oauth/refresh.ts) and disconnects its client when that was
 * the last live family in the organization, in one batch. `actor`: the family's user (a revocation the client asked
 * for) or the system (a detected reuse).
 */
export async function revokeAndDisconnect(
  work: Omit<DirectoryWork, "shard">,
  familyId: string,
  statements: DirectoryItem[],
  actor: "user" | "system",
): Promise<void> {
  const d = work.directory;
  const family = await d
    .select({
      organizationId: oauthRefreshTokens.organizationId,
      clientId: oauthRefreshTokens.clientId,
      userId: oauthRefreshTokens.userId,
      permissions: oauthRefreshTokens.permissions,
      connectedAt: oauthConnections.connectedAt,
      clientName: oauthClients.clientName,
    })
    .from(oauthRefreshTokens)
    .leftJoin(
      oauthConnections,
      and(
        eq(oauthConnections.organizationId, oauthRefreshTokens.organizationId),
        eq(oauthConnections.clientId, oauthRefreshTokens.clientId),
      ),
    )
    .leftJoin(oauthClients, eq(oauthClients.id, oauthRefreshTokens.clientId))
    .where(eq(oauthRefreshTokens.familyId, familyId))
    .limit(1)
    .get();
  // A family that never connected anything (made before connections were kept, or with no refresh token) only revokes.
  const disconnect =
    family?.connectedAt != null
      ? disconnectClient(
          d,
          family,
          { type: actor, userId: actor === "user" ? family.userId : null },
          {
            type: "oauth_client",
            id: family.clientId,
            name: family.clientName ?? null,
            grantedBy: [family.userId],
            permissions: family.permissions,
            connectedAt: family.connectedAt,
          },
        )
      : [];
  await commitInDirectory(work, [...statements, ...disconnect]);
}

/**
 * Cron: connections whose last family ran out (30 days without a refresh, or its user left) end with
 * `integration.disconnected`, as a revocation would have ended them. "Ran out" is judged at the pass's `now` (DESIGN.md
 * contract 12).
 */
export async function disconnectExpired(work: Omit<DirectoryWork, "shard">, { now = new Date(), max = 100 } = {}): Promise<number> {
  const d = work.directory;
  const at = nowIso(now);
  const lastFamily = (column: "user_id" | "permissions") =>
    sql<
      string | null
    >`(SELECT ${sql.raw(column)} FROM ${oauthRefreshTokens} WHERE ${oauthRefreshTokens.organizationId} = ${oauthConnections.organizationId} AND ${oauthRefreshTokens.clientId} = ${oauthConnections.clientId} ORDER BY ${oauthRefreshTokens.createdAt} DESC LIMIT 1)`;
  const stale = await d
    .select({
      organizationId: oauthConnections.organizationId,
      clientId: oauthConnections.clientId,
      connectedBy: oauthConnections.connectedBy,
      connectedAt: oauthConnections.connectedAt,
      clientName: oauthClients.clientName,
      lastUser: lastFamily("user_id"),
      lastPermissions: lastFamily("permissions"),
    })
    .from(oauthConnections)
    .leftJoin(oauthClients, eq(oauthClients.id, oauthConnections.clientId))
    .where(sql`NOT ${rowHasLiveFamily(at)}`)
    .limit(max);
  if (stale.length === 0) return 0;
  const items = stale.flatMap((c) =>
    disconnectClient(
      d,
      c,
      { type: "system", userId: null },
      {
        type: "oauth_client",
        id: c.clientId,
        name: c.clientName ?? null,
        grantedBy: [c.lastUser ?? c.connectedBy],
        permissions: c.lastPermissions ? (JSON.parse(c.lastPermissions) as string[]) : [],
        connectedAt: c.connectedAt,
      },
      at,
    ),
  );
  const { events } = await commitInDirectory(work, items);
  return events.length;
}

/** The organization's connected clients (a live family each), newest first from `after` on, as GET /v1/integrations lists them. */
export function clientIntegrationRows(directory: Db, organizationId: string, after: { at: string; id: string } | null, limit: number) {
  const live = liveTokensOf(sql`${oauthConnections.organizationId}`, sql`${oauthConnections.clientId}`);
  return directory
    .select({
      id: oauthConnections.clientId,
      name: oauthClients.clientName,
      connectedAt: oauthConnections.connectedAt,
      grantedBy: sql<string>`(SELECT json_group_array(DISTINCT ${oauthRefreshTokens.userId}) FROM ${oauthRefreshTokens} WHERE ${live})`,
      permissions: sql<string>`(SELECT json_group_array(DISTINCT p.value) FROM ${oauthRefreshTokens}, json_each(${oauthRefreshTokens.permissions}) p WHERE ${live})`,
    })
    .from(oauthConnections)
    .leftJoin(oauthClients, eq(oauthClients.id, oauthConnections.clientId))
    .where(
      and(
        eq(oauthConnections.organizationId, organizationId),
        rowHasLiveFamily(),
        after ? sql`(${oauthConnections.connectedAt}, ${oauthConnections.clientId}) < (${after.at}, ${after.id})` : undefined,
      ),
    )
    .orderBy(sql`${oauthConnections.connectedAt} DESC, ${oauthConnections.clientId} DESC`)
    .limit(limit);
}

/** A connected client's row as an integration: its users and permissions in a stable order. */
export function toClientIntegration(
  row: { id: string; name: string | null; connectedAt: string; grantedBy: string; permissions: string },
  order: readonly string[],
): OAuthClientIntegration {
  const permissions = JSON.parse(row.permissions) as string[];
  return {
    type: "oauth_client",
    id: row.id,
    name: row.name,
    grantedBy: (JSON.parse(row.grantedBy) as string[]).sort(),
    permissions: permissions.sort((a, b) => order.indexOf(a) - order.indexOf(b)),
    connectedAt: row.connectedAt,
  };
}
