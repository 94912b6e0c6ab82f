import { and, count, eq } from "drizzle-orm";
import { keysPage, toKeyIntegration } from "../api-keys/service";
import { decodeNewestFirstCursor, paginate } from "../crm/pagination";
import { apiKeys, oauthConnections } from "../db/schema";
import { PERMISSION_NAMES } from "../platform/permissions";
import type { ServiceContext } from "../service-context";
import { clientIntegrationRows, rowHasLiveFamily, toClientIntegration } from "./connections";
import type { Integration } from "./schemas";

/**
 * An organization's integrations (docs/guides/permissions-and-roles.md): the OAuth clients its users granted access and its API keys.
 * The OAuth server (oauth/) connects and disconnects clients through the functions re-exported here.
 */
export { connectClient, disconnectExpired, revokeAndDisconnect } from "./connections";

const atOf = (i: Integration) => (i.type === "api_key" ? i.createdAt : i.connectedAt);

/**
 * GET /v1/integrations: clients and keys together, newest first (a client by when it connected, a key by when it was
 * made), keyset pages. One directory round trip: each kind's page from the cursor on, and each kind's count.
 */
export async function listIntegrations(
  ctx: Pick<ServiceContext, "directory" | "organizationId">,
  { limit, cursor }: { limit: number; cursor?: string },
) {
  const after = decodeNewestFirstCursor(cursor);
  const d = ctx.directory;
  const [keys, clients, [keyTotal], [clientTotal]] = await d.batch([
    keysPage(d, ctx.organizationId, after, limit + 1),
    clientIntegrationRows(d, ctx.organizationId, after, limit + 1),
    d.select({ n: count() }).from(apiKeys).where(eq(apiKeys.organizationId, ctx.organizationId)),
    d
      .select({ n: count() })
      .from(oauthConnections)
      .where(and(eq(oauthConnections.organizationId, ctx.organizationId), rowHasLiveFamily())),
  ]);
  const merged: Integration[] = [...keys.map(toKeyIntegration), ...clients.map((c) => toClientIntegration(c, PERMISSION_NAMES))];
  // Byte order, as SQLite compares the cursor's columns.
  const key = (i: Integration) => `${atOf(i)}\u0000${i.id}`;
  merged.sort((a, b) => (key(a) < key(b) ? 1 : key(a) > key(b) ? -1 : 0));
  const { page, pagination } = paginate(merged, limit, (keyTotal?.n ?? 0) + (clientTotal?.n ?? 0), (i) => ({ at: atOf(i), id: i.id }));
  return { data: page, pagination };
}
