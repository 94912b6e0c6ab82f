import { and, eq } from "drizzle-orm";
import { fillContactFromLead, type IntakeActivity, type IntakePerson, matchContacts, newContactForLead } from "../contacts/service";
import { leadIntakes } from "../db/schema";
import { expectNoRow, StaleWrite, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { type FieldIssue, NotFound, Unprocessable, Validation } from "../lib/errors";
import { phoneKey, regionOf } from "../lib/phone";
import { organizationSettings } from "../organization/service";
import { findProperty, findPropertyByAddress, inquiryWrite } from "../properties/service";
import type { ServiceContext } from "../service-context";
import { readRouting, routeLead } from "./routing";
import type { LeadCreate, LeadIntake } from "./schemas";

/** An intake's answer and its status: 201 when it created the contact, 200 when it matched one. */
export interface IntakeAnswer {
  status: 200 | 201;
  answer: LeadIntake;
}

type Property = Awaited<ReturnType<typeof findProperty>>;

/** The activity type of a lead's message: a note (nobody of ours was in touch yet, so lastContactedAt stays). */
const ACTIVITY_TYPE = "NOTE" as const;

const byEvent = (ctx: ServiceContext, source: string, sourceEventId: string) =>
  and(eq(leadIntakes.organizationId, ctx.organizationId), eq(leadIntakes.source, source), eq(leadIntakes.sourceEventId, sourceEventId));

/** The first answer to this source's event, if it was taken in. */
async function keptAnswer(ctx: ServiceContext, source: string, sourceEventId: string | undefined): Promise<IntakeAnswer | null> {
  if (sourceEventId === undefined) return null;
  const row = await ctx.db.select({ status: leadIntakes.status, answer: leadIntakes.answer }).from(leadIntakes).where(byEvent(ctx, source, sourceEventId)).get();
  return row ? { status: row.status as 200 | 201, answer: row.answer as LeadIntake } : null;
}

/** Every phone number of the lead must be one (in the organization's region when it has no country code). */
function checkPhones(ctx: ServiceContext, phones: string[]): void {
  const region = regionOf(ctx);
  const issues: FieldIssue[] = phones.flatMap((p, i) =>
    phoneKey(p, region) === null ? [{ field: `person.phones.${i}`, path: ["person", "phones", i], code: "invalid_phone", message: `Not a phone number (read in ${region} when it has no country code)` }] : [],
  );
  if (issues.length) throw new Validation(issues);
}

/** The property the lead names: by id (another organization's answers as an unknown one: 422), or a listing of ours at its address (else none). */
async function namedProperty(ctx: ServiceContext, lead: LeadCreate): Promise<Property | null> {
  if (lead.propertyId !== undefined) {
    return findProperty(ctx, lead.propertyId).catch((err) => {
      if (err instanceof NotFound) throw new Validation([{ field: "propertyId", path: ["propertyId"], code: "invalid_reference", message: "No property with this id in your organization" }]);
      throw err;
    });
  }
  return lead.property ? findPropertyByAddress(ctx, lead.property.address) : null;
}

const zipOf = (property: Property | null, lead: LeadCreate): string | null =>
  property?.zipCode ?? lead.property?.address.zipCode ?? lead.person.address?.zipCode ?? null;

/**
 * POST /v1/leads (issue 33). Matches the lead to a contact of the organization by e-mail or phone (matchContacts), fills
 * a match with what is new or creates and routes a new contact, logs the message as an activity and, when the lead
 * names a property of ours, counts an inquiry with `property.inquiry_received`: all in one guarded batch with the
 * events and, with a sourceEventId, the answer kept for a repeat. A lost race (a concurrent intake of the same person,
 * of the same event, or a routing turn taken) runs the whole intake again on what is there now.
 */
export async function intakeLead(ctx: ServiceContext, lead: LeadCreate): Promise<IntakeAnswer> {
  checkPhones(ctx, lead.person.phones);
  // Side by side: a repeat answers its first answer even when its property has gone since.
  const [first, named] = await Promise.allSettled([keptAnswer(ctx, lead.source, lead.sourceEventId), namedProperty(ctx, lead)]);
  if (first.status === "rejected") throw first.reason;
  if (first.value) return first.value;
  if (named.status === "rejected") throw named.reason;
  const property = named.value;
  const person: IntakePerson = { firstName: lead.person.firstName, lastName: lead.person.lastName, emails: lead.person.emails, phones: lead.person.phones, address: lead.person.address };
  const activity: IntakeActivity = {
    type: ACTIVITY_TYPE,
    description: lead.message ?? `${lead.type.replace("_", " ")} lead from ${lead.source}`,
    metadata: { leadType: lead.type, source: lead.source, ...(lead.sourceEventId ? { sourceEventId: lead.sourceEventId } : {}), ...(property ? { propertyId: property.id } : {}) },
  };
  return withRetries(async (attempt) => {
    // A repeat that raced the first one finds its answer on the retry.
    if (attempt > 1) {
      const kept = await keptAnswer(ctx, lead.source, lead.sourceEventId);
      if (kept) return kept;
    }
    const [match] = await matchContacts(ctx, [{ emails: person.emails, phones: person.phones }]);
    const now = new Date();
    let write;
    let routing: Statement[] = [];
    if (match?.contact) {
      write = await fillContactFromLead(ctx, match.contact.id, person, lead.source, activity, now);
    } else {
      if (person.emails.length === 0) throw new Unprocessable("email_required", "No contact has these phone numbers, and a new contact needs an e-mail address: send the lead with one");
      const [settings, ring] = await Promise.all([organizationSettings(ctx), readRouting(ctx)]);
      const routed = routeLead(ctx, settings.leadRouting, zipOf(property, lead), ring);
      routing = routed.statements;
      write = newContactForLead(ctx, person, { source: lead.source, assignedTo: routed.userId }, activity, now);
    }
    const created = !match?.contact;
    const answer: LeadIntake = { contactId: write.contact.id, created, matchedBy: match?.matchedBy ?? null, assignedTo: write.contact.assignedTo, conflicts: match?.conflicts ?? [] };
    const status = created ? 201 : 200;
    const inquiry = property ? inquiryWrite(ctx, property, { contactId: write.contact.id, ...(lead.message ? { message: lead.message.slice(0, 2000) } : {}) }, now.toISOString()) : { statements: [], events: [] };
    const kept: Statement[] = lead.sourceEventId
      ? [
          expectNoRow(ctx.db, leadIntakes, byEvent(ctx, lead.source, lead.sourceEventId)),
          ctx.db.insert(leadIntakes).values({ organizationId: ctx.organizationId, source: lead.source, sourceEventId: lead.sourceEventId, contactId: answer.contactId, status, answer, createdAt: now.toISOString() }),
        ]
      : [];
    await commit(ctx, [...kept, ...write.statements, ...routing, ...inquiry.statements], [...write.events, ...inquiry.events]).catch((err) => {
      // The e-mail index is the last word on one contact per address: losing to it is a race lost, matched on the retry.
      if (String(err).includes("contacts_org_email_unique") || String(err).includes("contacts.email_key")) throw new StaleWrite();
      throw err;
    });
    return { status, answer };
  });
}
