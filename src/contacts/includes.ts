import { sql } from "drizzle-orm";
import { dealsOfContacts } from "../deals/service";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { type Communication, INCLUDED_COMMUNICATIONS, toCommunication } from "../communications/schemas";
import { type Activity, type Contact, type Include, INCLUDED_ACTIVITIES } from "./schemas";

interface ActivityRow {
  contact_id: string;
  id: string;
  type: string;
  description: string | null;
  created_at: string;
  scheduled_at: string | null;
  metadata: string | null;
}

/** An activity as the API shows it, from a drizzle record (camelCase, metadata parsed). */
export const toActivity = (r: {
  id: string;
  type: string;
  description: string | null;
  createdAt: string;
  scheduledAt: string | null;
  metadata: Record<string, unknown> | null;
}): Activity => ({
  id: r.id,
  type: r.type,
  description: r.description,
  createdAt: r.createdAt,
  scheduledAt: r.scheduledAt,
  metadata: r.metadata,
});

/** The same from a raw D1 row (snake_case, metadata as JSON text), as the include query returns it. */
const fromActivityRow = (r: ActivityRow): Activity =>
  toActivity({
    id: r.id,
    type: r.type,
    description: r.description,
    createdAt: r.created_at,
    scheduledAt: r.scheduled_at,
    metadata: r.metadata === null ? null : JSON.parse(r.metadata),
  });

interface CommunicationRow {
  contact_id: string;
  id: string;
  type: string;
  direction: string;
  subject: string | null;
  body: string | null;
  duration_seconds: number | null;
  occurred_at: string;
  metadata: string | null;
  created_at: string;
}

const fromCommunicationRow = (r: CommunicationRow): Communication =>
  toCommunication({
    id: r.id,
    contactId: r.contact_id,
    type: r.type,
    direction: r.direction,
    subject: r.subject,
    body: r.body,
    durationSeconds: r.duration_seconds,
    occurredAt: r.occurred_at,
    metadata: r.metadata === null ? null : JSON.parse(r.metadata),
    createdAt: r.created_at,
  });

/**
 * The newest `limit` rows per contact of `ids` from a table of a contact's records (by `at`, then id), in one query:
 * a window over the table's (organization, contact, `at`, id) index. Names are constants of this file, never input.
 */
async function newestPerContact<R extends { contact_id: string }, T>(
  ctx: ServiceContext,
  ids: string[],
  of: { table: string; columns: string; at: string; limit: number; shown: (r: R) => T },
): Promise<Map<string, T[]>> {
  const rows = await ctx.db.all<R>(sql`
    SELECT ${sql.raw(of.columns)} FROM (
      SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.contact_id ORDER BY r.${sql.raw(of.at)} DESC, r.id DESC) AS n
      FROM ${sql.identifier(of.table)} r
      WHERE r.organization_id = ${ctx.organizationId} AND ${inJsonList(sql`r.contact_id`, ids)}
    ) WHERE n <= ${of.limit} ORDER BY ${sql.raw(of.at)} DESC, id DESC`);
  const byContact = new Map<string, T[]>(ids.map((id) => [id, []]));
  for (const r of rows) byContact.get(r.contact_id)!.push(of.shown(r));
  return byContact;
}

/**
 * Attaches the requested related records to a page of contacts, one query per kind for the whole page.
 * Deals are the contact's newest (deals/service.ts INCLUDED_DEALS); activities the newest by creation, communications
 * the newest by when they happened.
 */
export async function loadIncludes(ctx: ServiceContext, contacts: Contact[], include: Include[]): Promise<void> {
  if (contacts.length === 0) return;
  const ids = contacts.map((c) => c.id);
  if (include.includes("activities")) {
    const columns = "contact_id, id, type, description, created_at, scheduled_at, metadata";
    const byContact = await newestPerContact(ctx, ids, {
      table: "contact_activities",
      columns,
      at: "created_at",
      limit: INCLUDED_ACTIVITIES,
      shown: fromActivityRow,
    });
    for (const c of contacts) c.activities = byContact.get(c.id)!;
  }
  if (include.includes("deals")) {
    const byContact = await dealsOfContacts(ctx, ids);
    for (const c of contacts) c.deals = byContact.get(c.id) ?? [];
  }
  if (include.includes("communications")) {
    const columns = "contact_id, id, type, direction, subject, body, duration_seconds, occurred_at, metadata, created_at";
    const byContact = await newestPerContact(ctx, ids, {
      table: "contact_communications",
      columns,
      at: "occurred_at",
      limit: INCLUDED_COMMUNICATIONS,
      shown: fromCommunicationRow,
    });
    for (const c of contacts) c.communications = byContact.get(c.id)!;
  }
}

/** The `fields` projection: only the named fields, always with id, plus whatever was included. */
export function project(contact: Contact, fields: string[] | undefined): Partial<Contact> {
  if (!fields) return contact;
  const keep = new Set<string>(["id", ...fields, "activities", "deals", "communications"]);
  return Object.fromEntries(Object.entries(contact).filter(([k]) => keep.has(k))) as Partial<Contact>;
}
