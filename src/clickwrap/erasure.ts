import { and, asc, eq, gt } from "drizzle-orm";
import type { Erasable, Scrub } from "../crm/erasure";
import { clickwrapAcceptances } from "../db/schema";
import { mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";

// The clickwrap's share of a person's erasure (crm/erasure.ts, erasure/erase.ts): their acceptances are immutable
// (spec: immutable acceptances), so they are counted and kept.

const PAGE = 200;

/** Clickwrap acceptances recorded under the person's id, e-mail or phone (or a name that is theirs alone). */
export async function acceptancesOf(ctx: ServiceContext, scrub: Scrub): Promise<(typeof clickwrapAcceptances.$inferSelect)[]> {
  const { person, recognizer: who } = scrub;
  const theirs: (typeof clickwrapAcceptances.$inferSelect)[] = [];
  for (let after = ""; ; ) {
    const page = await ctx.db
      .select()
      .from(clickwrapAcceptances)
      .where(
        and(
          eq(clickwrapAcceptances.organizationId, ctx.organizationId),
          gt(clickwrapAcceptances.id, after),
          mentionsAny(clickwrapAcceptances.subjectRef, who.needles),
        ),
      )
      .orderBy(asc(clickwrapAcceptances.id))
      .limit(PAGE);
    theirs.push(
      ...page.filter((a) => a.subjectRef === person.id || who.identifies(a.subjectRef) || (who.nameIsTheirs && who.names(a.subjectRef))),
    );
    if (page.length < PAGE) return theirs;
    after = page[page.length - 1]!.id;
  }
}

export const clickwrapErasable: Erasable = {
  erase: async (ctx, scrub) => ({ clickwrap_acceptances: (await acceptancesOf(ctx, scrub)).length }),
};
