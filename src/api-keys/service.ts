import { and, count, desc, eq, sql } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import type { Db } from "../db/client";
import { apiKeys } from "../db/schema";
import { expectRow, guard, isGuardFailure } from "../db/write";
import { commitInDirectory, type DirectoryWork } from "../events/directory-outbox";
import { newEvent } from "../events/outbox";
import { newToken, sha256Hex } from "../lib/crypto";
import { Conflict, InsufficientPermission, InsufficientRole, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import { type Permission, type Role, ROLE_PERMISSIONS } from "../platform/permissions";
import type { ServiceContext } from "../service-context";
import type { ApiKey, ApiKeyIntegration, CreateApiKey } from "./schemas";

/**
 * API keys (docs/guides/permissions-and-roles.md): bearers for machines, kept in the directory because a key is resolved before
 * its organization's shard is known (platform/auth.ts). Creating one emits `integration.connected`, deleting it
 * `integration.disconnected`: both staged in the directory batch of the change and written to the shard outbox once
 * (events/directory-outbox.ts).
 */

/** Keys an organization may hold at once: a bound on what the integrations list and the directory carry. */
export const MAX_KEYS_PER_ORGANIZATION = 100;
/** `bk_` and 8 characters of the key: enough to tell keys apart in a list, 48 bits of 256. */
const PREFIX_LENGTH = 11;

type KeyRow = typeof apiKeys.$inferSelect;

export const toApiKey = (row: KeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  permissions: row.permissions,
  createdAt: row.createdAt,
  createdBy: row.createdBy,
  lastUsedAt: row.lastUsedAt,
  expiresAt: row.expiresAt,
});

/** A key as an integration (GET /v1/integrations, the integration events): never the key itself. */
export const toKeyIntegration = (row: KeyRow): ApiKeyIntegration => ({ type: "api_key", ...toApiKey(row) });

/**
 * Who creates a key: their role, what their own credential may do (a session: everything its role allows) and when
 * that credential stops working (undefined for a session; null for a key that never expires).
 */
export interface KeyCreator {
  role: Role;
  granted: readonly Permission[];
  expiresAt?: string | null;
}

/**
 * A key expires no later than the credential that creates it: a key that expires in an hour, or an OAuth
 * client's hour-long token, may not mint one that never does and so outlive its own end or revocation. A session is
 * the user signed in, not a delegation: what it creates lives as asked.
 */
const cappedExpiry = (asked: string | undefined, creator: KeyCreator): string | null =>
  typeof creator.expiresAt === "string" && (asked === undefined || Date.parse(asked) > Date.parse(creator.expiresAt))
    ? creator.expiresAt
    : (asked ?? null);

/** A key carries no more than its creator may do: beyond the role 403 insufficient_role, beyond the credential insufficient_permission. */
function assertWithinReach(permissions: Permission[], creator: KeyCreator): void {
  const beyondRole = permissions.filter((p) => !ROLE_PERMISSIONS[creator.role].includes(p));
  if (beyondRole.length > 0)
    throw new InsufficientRole(`The ${creator.role} role does not allow ${beyondRole.join(", ")}: a key may not carry it`);
  const beyondCredential = permissions.filter((p) => !creator.granted.includes(p));
  if (beyondCredential.length > 0)
    throw new InsufficientPermission(`This credential was not granted ${beyondCredential.join(", ")}: a key it creates may not carry it`);
}

const work = (ctx: ServiceContext): DirectoryWork => ({
  env: ctx.env,
  directory: ctx.directory,
  defer: ctx.defer,
  shard: { organizationId: ctx.organizationId, db: ctx.db },
});
const ofOrganization = (organizationId: string, id: string) => and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.id, id));

/** POST /v1/api-keys: the key, shown once, and its row; only the key's SHA-256 is stored. */
export async function createApiKey(ctx: ServiceContext, input: CreateApiKey, creator: KeyCreator): Promise<ApiKey & { key: string }> {
  assertWithinReach(input.permissions, creator);
  const key = newToken("bk");
  const row: KeyRow = {
    id: newId(),
    organizationId: ctx.organizationId,
    createdBy: ctx.actor.userId!,
    name: input.name,
    prefix: key.slice(0, PREFIX_LENGTH),
    keyHash: await sha256Hex(key),
    permissions: input.permissions,
    createdAt: nowIso(),
    expiresAt: cappedExpiry(input.expiresAt, creator),
    lastUsedAt: null,
  };
  const d = ctx.directory;
  try {
    await commitInDirectory(work(ctx), [
      // Counted in the batch, so concurrent creations cannot pass the bound together.
      guard(
        d,
        sql`(SELECT COUNT(*) FROM ${apiKeys} WHERE ${apiKeys.organizationId} = ${ctx.organizationId}) < ${MAX_KEYS_PER_ORGANIZATION}`,
      ),
      d.insert(apiKeys).values(row),
      { event: newEvent(ctx, "integration.connected", { object: toKeyIntegration(row), previousAttributes: null, changes: null }) },
    ]);
  } catch (err) {
    if (isGuardFailure(err))
      throw new Conflict(`An organization holds at most ${MAX_KEYS_PER_ORGANIZATION} API keys: delete one first`, "too_many_api_keys");
    throw err;
  }
  return { ...toApiKey(row), key };
}

/** GET /v1/api-keys: newest first, keyset pages. */
export async function listApiKeys(
  ctx: Pick<ServiceContext, "directory" | "organizationId">,
  { limit, cursor }: { limit: number; cursor?: string },
) {
  const [rows, [total]] = await ctx.directory.batch([
    keysPage(ctx.directory, ctx.organizationId, decodeNewestFirstCursor(cursor), limit + 1),
    ctx.directory.select({ n: count() }).from(apiKeys).where(eq(apiKeys.organizationId, ctx.organizationId)),
  ]);
  const { page: items, pagination } = paginate(rows, limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: items.map(toApiKey), pagination };
}

/** DELETE /v1/api-keys/{id}: the key answers 401 from the next request on. Of concurrent deletes one wins; the others 404. */
export async function deleteApiKey(ctx: ServiceContext, id: string): Promise<void> {
  const row = await ctx.directory.select().from(apiKeys).where(ofOrganization(ctx.organizationId, id)).get();
  if (!row) throw new NotFound("API key");
  const d = ctx.directory;
  try {
    await commitInDirectory(work(ctx), [
      expectRow(d, apiKeys, ofOrganization(ctx.organizationId, id)),
      d.delete(apiKeys).where(ofOrganization(ctx.organizationId, id)),
      { event: newEvent(ctx, "integration.disconnected", { object: toKeyIntegration(row), previousAttributes: null, changes: null }) },
    ]);
  } catch (err) {
    if (isGuardFailure(err)) throw new NotFound("API key");
    throw err;
  }
}

/**
 * The organization's keys, newest first from `after` on: a page of GET /v1/api-keys, and of GET /v1/integrations,
 * which pages them with the clients (`toKeyIntegration` each).
 */
export function keysPage(directory: Db, organizationId: string, after: { at: string; id: string } | null, limit: number) {
  const mine = eq(apiKeys.organizationId, organizationId);
  return directory
    .select()
    .from(apiKeys)
    .where(after ? and(mine, olderThan(apiKeys.createdAt, apiKeys.id, after)) : mine)
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
    .limit(limit);
}
