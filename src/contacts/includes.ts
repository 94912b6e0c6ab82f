import { sql } from "drizzle-orm";
import { dealsOfContacts } from "../deals/service";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
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
export const toActivity = (r: { id: string; type: string; description: string | null; createdAt: string; scheduledAt: string | null; metadata: Record<string, unknown> | null }): Activity => ({
  id: r.id,
  type: r.type,
  description: r.description,
  createdAt: r.createdAt,
  scheduledAt: r.scheduledAt,
  metadata: r.metadata,
});

/** The same from a raw D1 row (snake_case, metadata as JSON text), as the include query returns it. */
const fromActivityRow = (r: ActivityRow): Activity =>
  toActivity({ id: r.id, type: r.type, description: r.description, createdAt: r.created_at, scheduledAt: r.scheduled_at, metadata: r.metadata === null ? null : JSON.parse(r.metadata) });

/**
 * Attaches the requested related records to a page of contacts, one query per kind for the whole page.
 * Deals are the contact's newest (deals/service.ts INCLUDED_DEALS). Communications are not records this service holds
 * (the spec shows no communication routes), so every contact truthfully has none.
 */
export async function loadIncludes(ctx: ServiceContext, contacts: Contact[], include: Include[]): Promise<void> {
  if (contacts.length === 0) return;
  if (include.includes("activities")) {
    const ids = contacts.map((c) => c.id);
    const rows = await ctx.db.all<ActivityRow>(sql`
      SELECT contact_id, id, type, description, created_at, scheduled_at, metadata FROM (
        SELECT a.*, ROW_NUMBER() OVER (PARTITION BY a.contact_id ORDER BY a.created_at DESC, a.id DESC) AS n
        FROM contact_activities a
        WHERE a.organization_id = ${ctx.organizationId} AND ${inJsonList(sql`a.contact_id`, ids)}
      ) WHERE n <= ${INCLUDED_ACTIVITIES} ORDER BY created_at DESC, id DESC`);
    const byContact = new Map<string, Activity[]>(ids.map((id) => [id, []]));
    for (const r of rows) byContact.get(r.contact_id)!.push(fromActivityRow(r));
    for (const c of contacts) c.activities = byContact.get(c.id)!;
  }
  if (include.includes("deals")) {
    const byContact = await dealsOfContacts(ctx, contacts.map((c) => c.id));
    for (const c of contacts) c.deals = byContact.get(c.id) ?? [];
  }
  if (include.includes("communications")) for (const c of contacts) c.communications = [];
}

/** The `fields` projection: only the named fields, always with id, plus whatever was included. */
export function project(contact: Contact, fields: string[] | undefined): Partial<Contact> {
  if (!fields) return contact;
  const keep = new Set<string>(["id", ...fields, "activities", "deals", "communications"]);
  return Object.fromEntries(Object.entries(contact).filter(([k]) => keep.has(k))) as Partial<Contact>;
}
