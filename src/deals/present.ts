import { and, asc, desc, eq } from "drizzle-orm";
import { contacts, dealActivities, dealDocuments, tasks, properties } from "../db/schema";
import { versioned } from "../db/write";
import { requestFileSigner } from "../files/signed-url";
import { idsOf, inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { deletedTargets } from "../db/references";
import { type DealRecord, toActivity, toDeal, toDocument, toTask } from "./mapping";
import type { Deal, Include } from "./schemas";

/** Deals as the API shows them, with the requested includes: one query per include for the whole page. */
export async function present(ctx: ServiceContext, records: DealRecord[], include: readonly Include[]): Promise<Deal[]> {
  const shown = records.map((r) => versioned(toDeal(r), r.version));
  if (records.length === 0 || include.length === 0) return shown;
  const org = ctx.organizationId;
  const ids = records.map((r) => r.id);
  if (include.includes("contact")) {
    const wanted = [...new Set(records.map((r) => r.contactId))];
    const rows = await ctx.db
      .select({ id: contacts.id, firstName: contacts.firstName, lastName: contacts.lastName, email: contacts.email })
      .from(contacts)
      .where(and(idsOf(contacts, org, wanted)))
      .all();
    const found = new Map(rows.map((c) => [c.id, c]));
    const gone = await deletedTargets(
      ctx,
      wanted.filter((id) => !found.has(id)),
    );
    for (const d of shown) d.contact = found.get(d.contactId) ?? gone.get(d.contactId)!;
  }
  if (include.includes("property")) {
    const wanted = [...new Set(records.flatMap((r) => (r.propertyId ? [r.propertyId] : [])))];
    const rows = wanted.length
      ? await ctx.db
          .select({
            id: properties.id,
            address: properties.address,
            type: properties.propertyType,
            bedrooms: properties.bedrooms,
            bathrooms: properties.bathrooms,
            squareFootage: properties.squareFootage,
          })
          .from(properties)
          .where(and(idsOf(properties, org, wanted)))
          .all()
      : [];
    const found = new Map(rows.map((p) => [p.id, p]));
    const gone = await deletedTargets(
      ctx,
      wanted.filter((id) => !found.has(id)),
    );
    for (const d of shown) d.property = d.propertyId ? (found.get(d.propertyId) ?? gone.get(d.propertyId)!) : null;
  }
  if (include.includes("documents")) {
    const rows = await ctx.db
      .select()
      .from(dealDocuments)
      .where(and(eq(dealDocuments.organizationId, org), inJsonList(dealDocuments.dealId, ids)))
      .orderBy(asc(dealDocuments.uploadedAt), asc(dealDocuments.id))
      .all();
    const sign = requestFileSigner(ctx);
    const docs = await Promise.all(rows.map((r) => toDocument(r, sign)));
    for (const d of shown) d.documents = docs.filter((_, i) => rows[i]!.dealId === d.id);
  }
  if (include.includes("tasks")) {
    const rows = await ctx.db
      .select()
      .from(tasks)
      .where(and(eq(tasks.organizationId, org), inJsonList(tasks.dealId, ids)))
      .orderBy(asc(tasks.createdAt), asc(tasks.id))
      .all();
    for (const d of shown) d.tasks = rows.filter((t) => t.dealId === d.id).map(toTask);
  }
  if (include.includes("activities")) {
    // Read routes only (one deal): the latest activities.
    for (const d of shown) {
      const rows = await ctx.db
        .select()
        .from(dealActivities)
        .where(and(eq(dealActivities.organizationId, org), eq(dealActivities.dealId, d.id)))
        .orderBy(desc(dealActivities.createdAt), desc(dealActivities.id))
        .limit(INCLUDED_ACTIVITIES)
        .all();
      d.activities = rows.map(toActivity);
    }
  }
  return shown;
}

/** Activities a read with include=activities carries (the whole log is GET …/activities). */
export const INCLUDED_ACTIVITIES = 20;
