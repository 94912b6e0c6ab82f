import { and, count, desc, eq, sql } from "drizzle-orm";
import { contactTotals, contactWhere, listContacts, resolvedAt, type ContactPage } from "../contacts/service";
import { ContactListQuery } from "../contacts/schemas";
import { customFieldQuery } from "../crm/custom-fields";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { smartListMembers, smartLists } from "../db/schema";
import { expectVersion, expectVersionMatch, guard, isGuardFailure, type Statement, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { Conflict, type FieldIssue, NotFound, PreconditionFailed, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import { issuesFromZod } from "../lib/validation";
import type { ServiceContext } from "../service-context";
import { MAX_SMART_LISTS, NOT_SAVED, type SmartList, type SmartListCreate, type SmartListListQuery, type SmartListUpdate } from "./schemas";

/**
 * Smart lists (issue 46): a contact query saved by name, answered live. `count` is the total GET /v1/contacts gives for
 * the query (contacts/list.ts `contactTotals`, all the lists of a page in one batch); `smart_list_members` holds who
 * matched when the list was last looked at through a write or the daily pass (membership.ts), the base the
 * entered/exited events are the difference from. A new or changed query fills it without events: nobody entered
 * through a write.
 */
type Row = typeof smartLists.$inferSelect;

export { smartListsErasable } from "./erasure";

/**
 * A saved query's parameters as the contacts list receives them: strings by name (a number or boolean as its text).
 * Any other value is passed on as it is, for the parser to name it with the query's other problems.
 */
const asParams = (raw: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, typeof v === "number" || typeof v === "boolean" ? String(v) : v]));

/** The query to keep, once `parseSavedQuery` took it: the contacts list's parser takes strings only. */
const kept = (query: Record<string, unknown>): Record<string, string> => query as Record<string, string>;

/**
 * The saved query parsed by the contacts list's own parser (the same 422s, each under `query.<name>`), custom fields
 * checked against the organization's definitions. Throws one Validation listing every problem.
 */
export async function parseSavedQuery(ctx: ServiceContext, raw: Record<string, unknown>): Promise<ContactListQuery> {
  const issues: FieldIssue[] = [];
  for (const name of NOT_SAVED)
    if (name in raw)
      issues.push({
        field: `query.${name}`,
        path: ["query", name],
        code: "unexpected_field",
        message: `${name} pages or shapes an answer; it is not saved with the query`,
      });
  const parsed = ContactListQuery.safeParse(raw);
  if (!parsed.success) issues.push(...issuesFromZod(parsed.error, raw, ["query"]));
  else
    try {
      await customFieldQuery(ctx, "contact", "c", parsed.data, parsed.data.sort);
    } catch (err) {
      if (!(err instanceof Validation)) throw err;
      issues.push(...err.issues.map((i) => ({ ...i, field: `query.${i.field}`, path: ["query", ...i.path] })));
    }
  if (issues.length) throw new Validation(issues);
  return (parsed as { data: ContactListQuery }).data;
}

/** A stored query parsed again; null when it no longer parses (a custom field it names was deleted): it matches nobody. */
export async function storedQuery(ctx: ServiceContext, row: Pick<Row, "query">): Promise<ContactListQuery | null> {
  try {
    return await parseSavedQuery(ctx, row.query);
  } catch (err) {
    if (err instanceof Validation) return null;
    throw err;
  }
}

/**
 * The statements that make `listId`'s members those matching `q` at `now`, without events: its old members go, the
 * matching contacts come in one INSERT … SELECT.
 */
async function refill(ctx: ServiceContext, listId: string, q: ContactListQuery, now: Date): Promise<Statement[]> {
  const resolved = resolvedAt(q, now);
  const where = contactWhere(ctx.organizationId, resolved, await customFieldQuery(ctx, "contact", "c", resolved, resolved.sort));
  return [ctx.db.delete(smartListMembers).where(eq(smartListMembers.listId, listId)), membersInsert(ctx, listId, where, now)];
}

/** INSERT … SELECT of the contacts matching `where` (hand-written SQL, its `?` bound in order) as members of `listId`. */
function membersInsert(ctx: ServiceContext, listId: string, where: { sql: string[]; params: unknown[] }, now: Date): Statement {
  const parts = where.sql.join(" AND ").split("?");
  const chunks = [sql`SELECT ${listId}, c.id, c.organization_id, ${nowIso(now)} FROM contacts c WHERE `];
  parts.forEach((p, i) => {
    chunks.push(sql.raw(p));
    if (i < parts.length - 1) chunks.push(sql`${where.params[i]}`);
  });
  return ctx.db.insert(smartListMembers).select(sql.join(chunks, sql.raw("")));
}

const VERSIONED = { table: smartLists, id: smartLists.id, organizationId: smartLists.organizationId, version: smartLists.version };

const mine = (ctx: ServiceContext, id: string) => and(eq(smartLists.organizationId, ctx.organizationId), eq(smartLists.id, id));

async function readRow(ctx: ServiceContext, id: string): Promise<Row> {
  const row = await ctx.db.select().from(smartLists).where(mine(ctx, id)).get();
  if (!row) throw new NotFound("Smart list");
  return row;
}

/** The lists as the API shows them, with their counts at `now` (one batch for all of them). */
async function withCounts(ctx: ServiceContext, rows: Row[], now: Date): Promise<SmartList[]> {
  const queries = await Promise.all(rows.map((r) => storedQuery(ctx, r)));
  const live = queries.flatMap((q) => (q ? [q] : []));
  const totals = await contactTotals(ctx, live, now);
  let at = 0;
  return rows.map((r, i) => {
    const t = queries[i] ? totals[at++]! : { total: 0, exact: true };
    return {
      id: r.id,
      name: r.name,
      query: r.query,
      count: t.total,
      countExact: t.exact,
      createdBy: r.createdBy,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    };
  });
}

/** POST /v1/smart-lists: at most MAX_SMART_LISTS per organization (counted in the batch: 409 too_many_smart_lists). */
export async function createSmartList(ctx: ServiceContext, input: SmartListCreate, now: Date = new Date()): Promise<SmartList> {
  const query = asParams(input.query);
  const parsed = await parseSavedQuery(ctx, query);
  const at = nowIso(now);
  const row: Row = {
    id: newId(),
    organizationId: ctx.organizationId,
    name: input.name,
    query: kept(query),
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  try {
    await ctx.db.batch([
      guard(
        ctx.db,
        sql`(SELECT COUNT(*) FROM ${smartLists} WHERE ${smartLists.organizationId} = ${ctx.organizationId}) < ${MAX_SMART_LISTS}`,
      ),
      ctx.db.insert(smartLists).values(row),
      ...(await refill(ctx, row.id, parsed, now)),
    ]);
  } catch (err) {
    if (isGuardFailure(err))
      throw new Conflict(`An organization keeps at most ${MAX_SMART_LISTS} smart lists: delete one first`, "too_many_smart_lists");
    throw err;
  }
  return versioned((await withCounts(ctx, [row], now))[0]!, row.version);
}

/** GET /v1/smart-lists: newest first, keyset pages, each list with its live count. */
export async function listSmartLists(ctx: ServiceContext, q: SmartListListQuery, now: Date = new Date()) {
  const ours = eq(smartLists.organizationId, ctx.organizationId);
  const after = decodeNewestFirstCursor(q.cursor);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(smartLists)
      .where(after ? and(ours, olderThan(smartLists.createdAt, smartLists.id, after)) : ours)
      .orderBy(desc(smartLists.createdAt), desc(smartLists.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(smartLists).where(ours),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: await withCounts(ctx, page, now), pagination };
}

/** A list as answered, marked with its version for the ETag (If-Match on PATCH and DELETE compares it). */
export async function getSmartList(ctx: ServiceContext, id: string, now: Date = new Date()): Promise<SmartList> {
  const row = await readRow(ctx, id);
  return versioned((await withCounts(ctx, [row], now))[0]!, row.version);
}

/**
 * PATCH /v1/smart-lists/{id}: the fields sent replace the list's (a new query refills its members, without events),
 * compare-and-set on its version, read again when a concurrent change won (each change lands; the later one's fields
 * win where both set them).
 */
export async function updateSmartList(ctx: ServiceContext, id: string, input: SmartListUpdate, now: Date = new Date()): Promise<SmartList> {
  const query = input.query ? asParams(input.query) : null;
  const parsed = query ? await parseSavedQuery(ctx, query) : null;
  const saved = query ? kept(query) : null;
  const next = await withRetries(async () => {
    const row = await readRow(ctx, id);
    expectVersionMatch(ctx, row.version);
    const next: Row = { ...row, name: input.name ?? row.name, query: saved ?? row.query, updatedAt: nowIso(now), version: row.version + 1 };
    await commit(ctx, [
      expectVersion(ctx.db, VERSIONED, ctx.organizationId, { id, version: row.version }),
      ctx.db
        .update(smartLists)
        .set({ name: next.name, query: next.query, updatedAt: next.updatedAt, version: next.version })
        .where(mine(ctx, id)),
      ...(parsed ? await refill(ctx, id, parsed, now) : []),
    ]);
    return next;
  });
  return versioned((await withCounts(ctx, [next], now))[0]!, next.version);
}

/**
 * DELETE /v1/smart-lists/{id}: the list and its members; its contacts are untouched. With If-Match, only the version
 * it names is deleted (412 when the list moved on since).
 */
export async function deleteSmartList(ctx: ServiceContext, id: string): Promise<void> {
  let at = mine(ctx, id);
  if (ctx.ifMatch && ctx.ifMatch !== "*") {
    const row = await readRow(ctx, id);
    expectVersionMatch(ctx, row.version);
    at = and(at, eq(smartLists.version, row.version));
  }
  const [gone] = await ctx.db.batch([
    ctx.db.delete(smartLists).where(at).returning({ id: smartLists.id }),
    // Only once the list is gone: a delete refused by its If-Match leaves the members of the list that stays.
    ctx.db
      .delete(smartListMembers)
      .where(
        and(
          eq(smartListMembers.organizationId, ctx.organizationId),
          eq(smartListMembers.listId, id),
          sql`NOT EXISTS (SELECT 1 FROM ${smartLists} WHERE ${mine(ctx, id)})`,
        ),
      ),
  ]);
  if (gone.length === 0) {
    // Gone (404), or, under If-Match, changed between the read and the delete (412).
    await readRow(ctx, id);
    throw new PreconditionFailed();
  }
}

/** GET /v1/smart-lists/{id}/contacts: GET /v1/contacts with the saved query and the request's page parameters. */
export async function listSmartListContacts(
  ctx: ServiceContext,
  id: string,
  page: Pick<ContactListQuery, "limit" | "cursor" | "include" | "fields">,
  now: Date = new Date(),
): Promise<ContactPage> {
  const q = await storedQuery(ctx, await readRow(ctx, id));
  if (!q)
    throw new Validation([
      {
        field: "query",
        path: ["query"],
        code: "invalid_query",
        message: "The saved query no longer holds (a custom field it names was deleted): change it",
      },
    ]);
  return listContacts(ctx, { ...q, ...Object.fromEntries(Object.entries(page).filter(([, v]) => v !== undefined)) }, now);
}
