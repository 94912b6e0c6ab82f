import { and, count, desc, eq, gte, type SQL, sql } from "drizzle-orm";
import { organizations, outboxEvents, users, webhookDeliveries } from "../db/schema";
import { decodeNewestFirstCursor as decodeCursor, olderThan, paginate } from "../crm/pagination";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { CATALOGUE, type CatalogueName } from "./catalogue";
import { retentionStart } from "./limits";
import { payloadOf, type WebhookPayload } from "./payload";

/** A delivery that has not succeeded: still retrying, or failed for good (410, endpoint off) or dead-lettered. */
const UNSUCCESSFUL = ["retrying", "failed", "dead"] as const;

/**
 * The event log (GET /v1/events): the organization's catalogue events of the last 30 days, newest first (keyset on
 * occurredAt, id), each the payload its deliveries carry (payload.ts; names and e-mails as they are now). Domain events
 * outside the catalogue (DEAL_WON, DOCUMENT_SIGNED …) are not listed. The page, its total and the organization are
 * one D1 batch; the outbox's (organization, type, time) indexes serve the order and the type filter. `readable`: the
 * names the caller may see (catalogue.ts `readPermissionOf`).
 */
export async function listEventLog(
  ctx: ServiceContext,
  q: { limit: number; cursor?: string; type?: CatalogueName; deliverySuccess?: "true" | "false" },
  readable: readonly CatalogueName[] = CATALOGUE,
) {
  const o = outboxEvents;
  const d = webhookDeliveries;
  const after = decodeCursor(q.cursor);
  const deliveriesWhere = (status: SQL) =>
    sql`EXISTS (SELECT 1 FROM ${d} WHERE ${d.eventId} = ${o.id} AND ${d.organizationId} = ${ctx.organizationId} AND ${status})`;
  const delivery =
    q.deliverySuccess === "false"
      ? deliveriesWhere(inJsonList(d.status, UNSUCCESSFUL))
      : q.deliverySuccess === "true"
        ? and(deliveriesWhere(sql`true`), sql`NOT ${deliveriesWhere(sql`${d.status} <> 'delivered'`)}`)
        : undefined;
  const scope = and(
    eq(o.organizationId, ctx.organizationId),
    q.type ? eq(o.type, q.type) : inJsonList(o.type, readable),
    gte(o.occurredAt, retentionStart()),
    delivery,
  );
  const page = after ? and(scope, olderThan(o.occurredAt, o.id, after)) : scope;
  const { db } = ctx;
  const [rows, [total], [org]] = await db.batch([
    db
      // Aliased: D1 answers a batch's rows by column name, and the two tables both have `id` and `name`.
      .select({
        id: o.id,
        type: o.type,
        occurredAt: o.occurredAt,
        data: o.data,
        userId: sql<string | null>`${users.id}`.as("user_id"),
        userName: sql<string | null>`${users.name}`.as("user_name"),
        userEmail: sql<string | null>`${users.email}`.as("user_email"),
      })
      .from(o)
      .leftJoin(users, and(eq(users.id, sql`json_extract(${o.actor}, '$.userId')`), eq(users.organizationId, o.organizationId)))
      .where(page)
      .orderBy(desc(o.occurredAt), desc(o.id))
      .limit(q.limit + 1),
    db.select({ n: count() }).from(o).where(scope),
    db.select({ id: organizations.id, name: organizations.name }).from(organizations).where(eq(organizations.id, ctx.organizationId)),
  ]);
  const organization = org ?? { id: ctx.organizationId, name: "" };
  const { page: items, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.occurredAt, id: r.id }));
  const data: WebhookPayload[] = items.map((r) =>
    payloadOf(r, { organization, user: r.userId === null ? null : { id: r.userId, name: r.userName, email: r.userEmail! } }),
  );
  return { data, pagination };
}
