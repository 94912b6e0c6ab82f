import { and, desc, eq } from "drizzle-orm";
import { acceptancesOf } from "../clickwrap/service";
import { toCommunication } from "../communications/schemas";
import { nameIsShared, personOf, toActivity, toContact } from "../contacts/service";
import { scrubOf } from "../crm/erasure";
import {
  contactActivities,
  contactCommunications,
  deals,
  leadReviews,
  mailOutbox,
  referrals,
  surveyResponses,
  surveys,
  tasks,
  testimonials,
} from "../db/schema";
import { documentsNaming } from "../documents/service";
import { reviewsWithNumbersOf } from "../leads/service";
import { NotFound } from "../lib/errors";
import { inJsonList } from "../lib/sql";
import type { Permission } from "../platform/permissions";
import { referredIs } from "../referrals/service";
import type { ServiceContext } from "../service-context";
import { envelopesNaming } from "../signatures/service";
import { toTask } from "../tasks/service";
import { appointmentsOfContact } from "../appointments/service";
import { findPerson } from "./erase";
import { mailTo } from "./platform";

/**
 * The parts of a person's export that other domains hold, each with the permissions that read it where the API shows
 * it: a credential that may not read deals gets no deal through the right of access either. The mail sent
 * to the person names envelopes, documents and surveys in its subjects, so it needs the read permission of each. The
 * contact, its activities, communications and leads waiting for review are the contacts domain's (`contacts:read`,
 * which the route needs).
 */
export const ACCESS_PARTS = {
  mails: ["documents:read", "signatures:read", "reputation:read"],
  deals: "deals:read",
  testimonials: "reputation:read",
  referrals: "reputation:read",
  surveys: "reputation:read",
  surveyResponses: "reputation:read",
  clickwrapAcceptances: "clickwrap:read",
  documents: "documents:read",
  envelopes: "signatures:read",
  tasks: "tasks:read",
  appointments: "appointments:read",
} as const satisfies Record<string, Permission | readonly Permission[]>;

export type AccessPart = keyof typeof ACCESS_PARTS;
const PARTS = Object.keys(ACCESS_PARTS) as AccessPart[];

/**
 * GET /v1/contacts/{id}/export (the right of access): everything the organization holds about the person,
 * found where their erasure finds them (each domain's erasure.ts: the same lookups, so the two cannot drift apart) — the contact (live
 * or in the trash), its activities and communications, their deals, the testimonials they wrote, referrals naming
 * them, their surveys and answers, clickwrap acceptances under their id, e-mail or phone, the mail sent to them
 * (subjects: bodies hold links), leads waiting for review with one of their numbers, and the documents and envelopes
 * that are theirs (by e-mail or phone, or a name no other contact has). Capabilities (a survey's link token and its
 * hash) are left out. A part whose permission is not in `granted` is neither read nor answered, and is named in
 * `omitted`: with every permission the export is complete.
 */
export async function personalData(ctx: ServiceContext, id: string, granted: readonly Permission[]) {
  const { live, trashed } = await findPerson(ctx, id);
  const contact = live ?? trashed;
  // An erasure that has begun: nothing is held any more but its tombstone.
  if (!contact) throw new NotFound("Contact");
  const may = (part: AccessPart) => ([ACCESS_PARTS[part]].flat() as Permission[]).every((p) => granted.includes(p));
  const omitted = PARTS.filter((p) => !may(p));
  const org = ctx.organizationId;
  const person = personOf(contact);
  const scrub = scrubOf(person, !(await nameIsShared(ctx, person)));
  // A part the credential may not read holds its place in the batch with a select of nothing (LIMIT 0 reads no row).
  const none = ctx.db.select({ id: deals.id }).from(deals).where(eq(deals.id, "")).limit(0);
  const [activities, communications, mails, reviews, theirDeals, authored, referred, theirSurveys, theirTasks] = await ctx.db.batch([
    ctx.db
      .select()
      .from(contactActivities)
      .where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id)))
      .orderBy(desc(contactActivities.createdAt)),
    ctx.db
      .select()
      .from(contactCommunications)
      .where(and(eq(contactCommunications.organizationId, org), eq(contactCommunications.contactId, id)))
      .orderBy(desc(contactCommunications.occurredAt)),
    may("mails")
      ? ctx.db
          .select({ id: mailOutbox.id, subject: mailOutbox.subject, createdAt: mailOutbox.createdAt })
          .from(mailOutbox)
          .where(mailTo(ctx, person))
      : none,
    ctx.db.select().from(leadReviews).where(reviewsWithNumbersOf(ctx, contact)),
    may("deals")
      ? ctx.db
          .select()
          .from(deals)
          .where(and(eq(deals.organizationId, org), eq(deals.contactId, id)))
      : none,
    may("testimonials")
      ? ctx.db
          .select()
          .from(testimonials)
          .where(and(eq(testimonials.organizationId, org), eq(testimonials.authorPersonId, id)))
      : none,
    may("referrals") ? ctx.db.select().from(referrals).where(referredIs(ctx, person)) : none,
    may("surveys")
      ? ctx.db
          .select()
          .from(surveys)
          .where(and(eq(surveys.organizationId, org), eq(surveys.recipientPersonId, id)))
      : none,
    // The tasks on their contact (those an erasure takes, and a deal's it unlinks).
    may("tasks")
      ? ctx.db
          .select()
          .from(tasks)
          .where(and(eq(tasks.organizationId, org), eq(tasks.contactId, id)))
      : none,
  ]);
  const surveyIds = may("surveys") ? (theirSurveys as (typeof surveys.$inferSelect)[]).map((s) => s.id) : [];
  const [answers, acceptances, documents, envelopes, attended] = await Promise.all([
    // Bound as one JSON list: a person may have had hundreds of surveys, and D1 binds at most 100 values.
    may("surveyResponses") && surveyIds.length
      ? ctx.db
          .select()
          .from(surveyResponses)
          .where(and(eq(surveyResponses.organizationId, org), inJsonList(surveyResponses.surveyId, surveyIds)))
      : [],
    may("clickwrapAcceptances") ? acceptancesOf(ctx, scrub) : [],
    may("documents") ? documentsNaming(ctx, scrub.recognizer) : [],
    may("envelopes") ? envelopesNaming(ctx, scrub.recognizer) : [],
    may("appointments") ? appointmentsOfContact(ctx, id) : [],
  ]);
  const parts: Record<AccessPart, unknown[]> = {
    mails,
    deals: theirDeals,
    testimonials: authored,
    referrals: referred,
    surveys: (theirSurveys as (typeof surveys.$inferSelect)[]).map(({ accessTokenHash: _h, pendingToken: _t, ...s }) => s),
    surveyResponses: answers,
    clickwrapAcceptances: acceptances,
    documents,
    envelopes,
    tasks: may("tasks") ? (theirTasks as (typeof tasks.$inferSelect)[]).map(toTask) : [],
    appointments: attended,
  };
  return {
    exportedAt: new Date().toISOString(),
    contact: { ...toContact(contact), inTrash: live === null },
    activities: activities.map(toActivity),
    communications: communications.map(toCommunication),
    leadReviews: reviews,
    ...Object.fromEntries(PARTS.filter(may).map((p) => [p, parts[p]])),
    omitted,
  };
}
