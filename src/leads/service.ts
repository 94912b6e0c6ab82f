import { and, eq } from "drizzle-orm";
import {
  fillContactFromLead,
  type IntakeActivity,
  type IntakePerson,
  matchContacts,
  newContactForLead,
  noContactWith,
} from "../intake/service";
import { leadIntakes, leadReviews } from "../db/schema";
import { expectNoRow, StaleWrite, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { type FieldIssue, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { phoneKey, regionOf } from "../lib/phone";
import type { OrganizationSettings } from "../organization/schemas";
import { organizationSettings } from "../organization/service";
import { findProperty, findPropertyByAddress, inquiryWrite } from "../properties/service";
import type { ServiceContext } from "../service-context";
import { type Decision, newRoutingRow, placementOf, routeByRules, routedTarget } from "../ponds/service";
import type { RoutePreview } from "../ponds/schemas";
import { readRouting, routeLead } from "./routing";
import type { LeadCreate, LeadIntake, LeadReceived } from "./schemas";
export { leadsErasable, reviewsWithNumbersOf } from "./erasure";

/** An intake's answer and its status: 201 when it created the contact, 200 when it matched one, 202 when it kept the lead for review. */
export type IntakeAnswer = { status: 200 | 201; answer: LeadIntake } | { status: 202; answer: LeadReceived };
/** An intake that reached a contact. */
export type ContactAnswer = Extract<IntakeAnswer, { status: 200 | 201 }>;

export type Property = Awaited<ReturnType<typeof findProperty>>;

/** A lead as it is taken in: the person, its activity, the property asked about and the zip a new contact is routed by. */
export interface Intake {
  source: string;
  sourceEventId?: string;
  message?: string;
  person: IntakePerson;
  activity: IntakeActivity;
  property: Property | null;
  zip: string | null;
  /** What mode rules route by besides the source and zip (issue 46); a review's lead has its type and no tags. */
  type?: string;
  tags?: string[];
}

/** The activity type of a lead's message: a note (nobody of ours was in touch yet, so lastContactedAt stays). */
const ACTIVITY_TYPE = "NOTE" as const;

const byEvent = (ctx: ServiceContext, source: string, sourceEventId: string) =>
  and(eq(leadIntakes.organizationId, ctx.organizationId), eq(leadIntakes.source, source), eq(leadIntakes.sourceEventId, sourceEventId));

/** The answer kept for this source's event, if it was taken in (the first one's, or what accepting its review made). */
async function keptAnswer(ctx: ServiceContext, source: string, sourceEventId: string | undefined): Promise<IntakeAnswer | null> {
  if (sourceEventId === undefined) return null;
  const row = await ctx.db
    .select({ status: leadIntakes.status, answer: leadIntakes.answer })
    .from(leadIntakes)
    .where(byEvent(ctx, source, sourceEventId))
    .get();
  return row ? ({ status: row.status, answer: row.answer } as IntakeAnswer) : null;
}

/**
 * The statements that keep an event's answer: for a new event guarded on none being kept (of concurrent repeats one
 * writes it, the others find it on their retry); for an accepted review (`settled`) its 202 replaced by the contact's.
 */
function keepAnswer(
  ctx: ServiceContext,
  intake: Pick<Intake, "source" | "sourceEventId">,
  kept: IntakeAnswer,
  contactId: string,
  at: string,
  mode: "new" | "settled",
): Statement[] {
  if (intake.sourceEventId === undefined) return [];
  const row = {
    organizationId: ctx.organizationId,
    source: intake.source,
    sourceEventId: intake.sourceEventId,
    contactId,
    status: kept.status,
    answer: kept.answer,
    createdAt: at,
  };
  if (mode === "settled") {
    return [
      ctx.db
        .insert(leadIntakes)
        .values(row)
        .onConflictDoUpdate({
          target: [leadIntakes.organizationId, leadIntakes.source, leadIntakes.sourceEventId],
          set: { contactId, status: kept.status, answer: kept.answer },
        }),
    ];
  }
  return [expectNoRow(ctx.db, leadIntakes, byEvent(ctx, intake.source, intake.sourceEventId)), ctx.db.insert(leadIntakes).values(row)];
}

/** Every phone number of the lead must be one (in the organization's region when it has no country code). */
export function checkPhones(ctx: ServiceContext, phones: string[]): void {
  const region = regionOf(ctx);
  const issues: FieldIssue[] = phones.flatMap((p, i) =>
    phoneKey(p, region) === null
      ? [
          {
            field: `person.phones.${i}`,
            path: ["person", "phones", i],
            code: "invalid_phone",
            message: `Not a phone number (read in ${region} when it has no country code)`,
          },
        ]
      : [],
  );
  if (issues.length) throw new Validation(issues);
}

/** The property the lead names: by id (another organization's answers as an unknown one: 422), or a listing of ours at its address (else none). */
export async function namedProperty(ctx: ServiceContext, lead: LeadCreate): Promise<Property | null> {
  if (lead.propertyId !== undefined) {
    return findProperty(ctx, lead.propertyId).catch((err) => {
      if (err instanceof NotFound)
        throw new Validation([
          {
            field: "propertyId",
            path: ["propertyId"],
            code: "invalid_reference",
            message: "No property with this id in your organization",
          },
        ]);
      throw err;
    });
  }
  return lead.property ? findPropertyByAddress(ctx, lead.property.address) : null;
}

const zipOf = (property: Property | null, lead: LeadCreate): string | null =>
  property?.zipCode ?? lead.property?.address.zipCode ?? lead.person.address?.zipCode ?? null;

/** The lead's message as its activity, with where it came from in the metadata. */
export function leadActivity(
  lead: { type: LeadCreate["type"]; source: string; sourceEventId?: string; message?: string },
  property: Property | null,
): IntakeActivity {
  return {
    type: ACTIVITY_TYPE,
    description: lead.message ?? `${lead.type.replace("_", " ")} lead from ${lead.source}`,
    metadata: {
      leadType: lead.type,
      source: lead.source,
      ...(lead.sourceEventId ? { sourceEventId: lead.sourceEventId } : {}),
      ...(property ? { propertyId: property.id } : {}),
    },
  };
}

/**
 * POST /v1/leads. Matches the lead to a contact of the organization by e-mail or phone (matchContacts),
 * fills a match with what is new or creates and routes a new contact (`takeIn`); a lead with only phone numbers that
 * match nobody is kept for review (`keepForReview`). With a sourceEventId the answer is kept for a repeat, in the
 * change's batch. A lost race (a concurrent intake of the same person, of the same event, or a routing turn taken)
 * runs the whole intake again on what is there now. The caller shapes the answer for its credential. `settle` joins
 * the batch that takes the lead in (a stored lead's removal from the inbox, leads/inbox.ts: exactly once).
 */
export async function intakeLead(ctx: ServiceContext, lead: LeadCreate, settle: Statement[] = []): Promise<IntakeAnswer> {
  checkPhones(ctx, lead.person.phones);
  // Side by side: a repeat answers its first answer even when its property has gone since.
  const [first, named] = await Promise.allSettled([keptAnswer(ctx, lead.source, lead.sourceEventId), namedProperty(ctx, lead)]);
  if (first.status === "rejected") throw first.reason;
  if (first.value) return first.value;
  if (named.status === "rejected") throw named.reason;
  const property = named.value;
  const intake: Intake = {
    source: lead.source,
    sourceEventId: lead.sourceEventId,
    message: lead.message,
    person: {
      firstName: lead.person.firstName,
      lastName: lead.person.lastName,
      emails: lead.person.emails,
      phones: lead.person.phones,
      address: lead.person.address,
    },
    activity: leadActivity(lead, property),
    property,
    zip: zipOf(property, lead),
    type: lead.type,
    tags: lead.tags,
  };
  return withRetries(async (attempt) => {
    // A repeat that raced the first one finds its answer on the retry.
    if (attempt > 1) {
      const kept = await keptAnswer(ctx, lead.source, lead.sourceEventId);
      if (kept) return kept;
    }
    const [match] = await matchContacts(ctx, [{ emails: intake.person.emails, phones: intake.person.phones }]);
    if (!match?.contact && intake.person.emails.length === 0) return keepForReview(ctx, lead, intake, settle);
    return takeIn(ctx, intake, match, { statements: settle, kept: "new" });
  });
}

/**
 * Where a new contact goes: mode rules by its rules (ponds/targets.ts); round_robin and zip as they always did
 * (routing.ts), as a user or nobody.
 */
async function decideRoute(
  ctx: ServiceContext,
  routing: OrganizationSettings["leadRouting"],
  intake: Pick<Intake, "source" | "zip" | "type" | "tags">,
  ring: Awaited<ReturnType<typeof readRouting>>,
): Promise<Decision> {
  if (routing.mode === "rules") {
    const facts = { source: intake.source, type: intake.type ?? "general", tags: intake.tags ?? [], zip: intake.zip };
    return routeByRules(ctx, routing, facts, ring.turn);
  }
  const routed = routeLead(ctx, routing, intake.zip, ring);
  if (routed.userId === null) return { kind: "nobody", reason: "no user accepts leads", statements: [] };
  const reason = routed.statements.length ? "round robin over the users who accept leads" : "zip rule";
  return { kind: "user", userId: routed.userId, reason, statements: routed.statements };
}

/**
 * POST /v1/leads/route-preview: where `settings.leadRouting` would send this lead as a new contact, and why, writing
 * nothing (round robin names the user whose turn is next; a lead that matches a contact would fill it instead).
 */
export async function previewRoute(ctx: ServiceContext, lead: LeadCreate): Promise<RoutePreview> {
  checkPhones(ctx, lead.person.phones);
  const [property, settings, ring] = await Promise.all([namedProperty(ctx, lead), organizationSettings(ctx), readRouting(ctx)]);
  const source = lead.source;
  const decision = await decideRoute(
    ctx,
    settings.leadRouting,
    { source, zip: zipOf(property, lead), type: lead.type, tags: lead.tags },
    ring,
  );
  return { target: routedTarget(decision), reason: decision.reason };
}

/**
 * One attempt at a lead that reaches a contact: the match filled, or a new contact created and routed, with the
 * activity, the property's inquiry, the kept answer and `extra`, in one guarded batch (a lost race throws StaleWrite
 * for the caller's retry). The answer is the batch's to keep too (an Idempotency-Key's record, events/commit.ts).
 */
export async function takeIn(
  ctx: ServiceContext,
  intake: Intake,
  match: Awaited<ReturnType<typeof matchContacts>>[number] | undefined,
  extra: { statements: Statement[]; kept: "new" | "settled" },
): Promise<ContactAnswer> {
  const now = new Date();
  const at = now.toISOString();
  let write;
  let routing: Statement[] = [];
  if (match?.contact) {
    write = await fillContactFromLead(ctx, match.contact.id, intake.person, intake.source, intake.activity, now);
  } else {
    const [settings, ring] = await Promise.all([organizationSettings(ctx), readRouting(ctx)]);
    const decision = await decideRoute(ctx, settings.leadRouting, intake, ring);
    write = newContactForLead(
      ctx,
      intake.person,
      { source: intake.source, ...placementOf(decision), tags: intake.tags },
      intake.activity,
      now,
    );
    // Its routing trail (issue 46), written with the contact: every routed lead keeps where it went and why.
    routing = [
      ...decision.statements,
      ...(decision.kind === "nobody" ? [] : [newRoutingRow(ctx, write.contact.id, decision, settings.leadRouting.speedToLead, at)]),
    ];
  }
  const created = !match?.contact;
  const answer: LeadIntake = {
    contactId: write.contact.id,
    created,
    matchedBy: match?.matchedBy ?? null,
    assignedTo: write.contact.assignedTo,
    conflicts: match?.conflicts ?? [],
  };
  const result: ContactAnswer = { status: created ? 201 : 200, answer };
  const property = intake.property;
  const inquiry = property
    ? inquiryWrite(
        ctx,
        property,
        { contactId: write.contact.id, ...(intake.message ? { message: intake.message.slice(0, 2000) } : {}) },
        at,
      )
    : { statements: [], events: [] };
  const kept = keepAnswer(ctx, intake, result, answer.contactId, at, extra.kept);
  await commit(
    ctx,
    [...kept, ...extra.statements, ...write.statements, ...routing, ...inquiry.statements],
    [...write.events, ...inquiry.events],
    { answer },
  ).catch((err) => {
    // The e-mail index is the last word on one contact per address: losing to it is a race lost, matched on the retry.
    if (String(err).includes("contacts_org_email_unique") || String(err).includes("contacts.email_key")) throw new StaleWrite();
    throw err;
  });
  return result;
}

/**
 * A lead with only phone numbers that match no contact: it cannot become a contact (a contact needs an
 * e-mail), so it is kept for the team to accept or dismiss (leads/reviews.ts), with the answer for a repeat in the
 * same batch, guarded on no contact having one of its numbers by then. Nothing of it reaches a contact, and no event
 * is sent.
 */
async function keepForReview(ctx: ServiceContext, lead: LeadCreate, intake: Intake, settle: Statement[]): Promise<IntakeAnswer> {
  const region = regionOf(ctx);
  const at = new Date().toISOString();
  // Each number once, as first written (checkPhones made sure each has a key).
  const keys = new Set<string>();
  const phones = lead.person.phones.flatMap((p) => {
    const key = phoneKey(p, region)!;
    return keys.has(key) ? [] : (keys.add(key), [[key, p] as const]);
  });
  const id = newId();
  const result: IntakeAnswer = { status: 202, answer: { received: true, reviewId: id } };
  const review = ctx.db.insert(leadReviews).values({
    id,
    organizationId: ctx.organizationId,
    source: lead.source,
    sourceEventId: lead.sourceEventId ?? null,
    type: lead.type,
    firstName: lead.person.firstName || null,
    lastName: lead.person.lastName || null,
    phones: phones.map(([, p]) => p),
    phoneKeys: phones.map(([k]) => k),
    address: lead.person.address ?? null,
    message: lead.message ?? null,
    propertyId: intake.property?.id ?? null,
    zipCode: intake.zip,
    createdAt: at,
  });
  // Guarded on the numbers still matching nobody: a contact made with one meanwhile is matched on the retry.
  await commit(ctx, [...keepAnswer(ctx, intake, result, "", at, "new"), ...settle, noContactWith(ctx, [], [...keys]), review]);
  return result;
}
