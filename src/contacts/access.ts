import { and, desc, eq, inArray } from "drizzle-orm";
import { contactActivities, contactCommunications, deals, leadReviews, mailOutbox, referrals, surveyResponses, surveys, testimonials } from "../db/schema";
import { documentsNaming } from "../documents/service";
import { NotFound } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { envelopesNaming } from "../signatures/service";
import { acceptancesOf, findPerson, mailTo, nameIsShared, referredIs, reviewsWithNumbersOf } from "./erase";
import { toActivity, toCommunication } from "./includes";
import { toContact } from "./mapping";
import { personOf, scrubOf } from "./redact";

/**
 * GET /v1/contacts/{id}/export (issue 33, the right of access): everything the organization holds about the person,
 * found where their erasure finds them (erase.ts: the same lookups, so the two cannot drift apart) — the contact (live
 * or in the trash), its activities and communications, their deals, the testimonials they wrote, referrals naming
 * them, their surveys and answers, clickwrap acceptances under their id, e-mail or phone, the mail sent to them
 * (subjects: bodies hold links), leads waiting for review with one of their numbers, and the documents and envelopes that are theirs (by e-mail or phone, or a name no
 * other contact has). Capabilities (a survey's link token and its hash) are left out.
 */
export async function personalData(ctx: ServiceContext, id: string) {
  const { live, trashed } = await findPerson(ctx, id);
  const contact = live ?? trashed;
  // An erasure that has begun: nothing is held any more but its tombstone.
  if (!contact) throw new NotFound("Contact");
  const org = ctx.organizationId;
  const person = personOf(contact);
  const scrub = scrubOf(person, !(await nameIsShared(ctx, person)));
  const [activities, communications, theirDeals, authored, referred, theirSurveys, mails, reviews] = await ctx.db.batch([
    ctx.db.select().from(contactActivities).where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id))).orderBy(desc(contactActivities.createdAt)),
    ctx.db.select().from(contactCommunications).where(and(eq(contactCommunications.organizationId, org), eq(contactCommunications.contactId, id))).orderBy(desc(contactCommunications.occurredAt)),
    ctx.db.select().from(deals).where(and(eq(deals.organizationId, org), eq(deals.contactId, id))),
    ctx.db.select().from(testimonials).where(and(eq(testimonials.organizationId, org), eq(testimonials.authorPersonId, id))),
    ctx.db.select().from(referrals).where(referredIs(ctx, person)),
    ctx.db.select().from(surveys).where(and(eq(surveys.organizationId, org), eq(surveys.recipientPersonId, id))),
    ctx.db.select({ id: mailOutbox.id, subject: mailOutbox.subject, createdAt: mailOutbox.createdAt }).from(mailOutbox).where(mailTo(ctx, person)),
    ctx.db.select().from(leadReviews).where(reviewsWithNumbersOf(ctx, contact)),
  ]);
  const surveyIds = theirSurveys.map((s) => s.id);
  const answers = surveyIds.length ? await ctx.db.select().from(surveyResponses).where(and(eq(surveyResponses.organizationId, org), inArray(surveyResponses.surveyId, surveyIds))) : [];
  return {
    exportedAt: new Date().toISOString(),
    contact: { ...toContact(contact), inTrash: live === null },
    activities: activities.map(toActivity),
    communications: communications.map(toCommunication),
    deals: theirDeals,
    testimonials: authored,
    referrals: referred,
    surveys: theirSurveys.map(({ accessTokenHash: _h, pendingToken: _t, ...s }) => s),
    surveyResponses: answers,
    clickwrapAcceptances: await acceptancesOf(ctx, scrub),
    mails,
    leadReviews: reviews,
    documents: await documentsNaming(ctx, scrub.recognizer),
    envelopes: await envelopesNaming(ctx, scrub.recognizer),
  };
}
