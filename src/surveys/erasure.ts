import { and, eq, inArray, isNull, or, sql } from "drizzle-orm";
import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { surveyResponses, surveys } from "../db/schema";
import type { ServiceContext } from "../service-context";

// The surveys' share of a person's erasure (crm/erasure.ts, erasure/erase.ts).

/** Survey invitations not mailed yet: they will never go. */
const unsentTo = (ctx: ServiceContext, id: string) =>
  and(
    eq(surveys.organizationId, ctx.organizationId),
    eq(surveys.recipientPersonId, id),
    inArray(surveys.status, ["SCHEDULED", "OPENED"]),
    isNull(surveys.sentAt),
  );

const COPIES: Copy[] = [{ kind: "survey_answers", table: surveyResponses, key: "surveyId", column: "answers" }];

export const surveysErasable: Erasable = {
  /**
   * Their answers stay (the agent's figures) without the address they answered from; invitations not mailed yet are
   * skipped, and no survey keeps their address.
   */
  begin(ctx, { id, person, at }) {
    const org = ctx.organizationId;
    return {
      reads: [ctx.db.select({ n: sql<number>`COUNT(*)` }).from(surveys).where(unsentTo(ctx, id))],
      write: ([pending]) => ({
        statements: [
          ctx.db
            .update(surveyResponses)
            .set({ ip: null, userAgent: null })
            .where(
              and(
                eq(surveyResponses.organizationId, org),
                inArray(
                  surveyResponses.surveyId,
                  ctx.db
                    .select({ id: surveys.id })
                    .from(surveys)
                    .where(and(eq(surveys.organizationId, org), eq(surveys.recipientPersonId, id))),
                ),
              ),
            ),
          ctx.db
            .update(surveys)
            .set({ status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
            .where(unsentTo(ctx, id)),
          // The address each EMAIL survey was scheduled for: theirs, whichever contact the survey is of now. One
          // not mailed yet is skipped first: without its address it would have nobody to be held to.
          ctx.db
            .update(surveys)
            .set({ status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
            .where(
              and(
                eq(surveys.organizationId, org),
                eq(surveys.recipientEmailKey, person.emailKey),
                inArray(surveys.status, ["SCHEDULED", "OPENED"]),
                isNull(surveys.sentAt),
              ),
            ),
          // "" rather than null: no address is one the survey can ever be mailed to again (a re-issue included), where
          // null would mean a survey from before addresses were kept.
          ctx.db
            .update(surveys)
            .set({ recipientEmailKey: "" })
            .where(
              and(eq(surveys.organizationId, org), or(eq(surveys.recipientPersonId, id), eq(surveys.recipientEmailKey, person.emailKey))),
            ),
        ],
        erased: { surveys: (pending as { n: number }[])[0]!.n },
      }),
    };
  },
  async erase(ctx, scrub, counted) {
    return { name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) };
  },
};
