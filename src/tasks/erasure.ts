import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { Erasable } from "../crm/erasure";
import { tasks } from "../db/schema";

/**
 * The tasks' share of a person's erasure (crm/erasure.ts): the tasks about them (their contact's, live or in the
 * trash: a contact's tasks stay when it is trashed) go in `begin`'s batch; a task that is also a deal's stays with the
 * deal, no longer naming the contact, as every reference to an erased contact does. Their name in any task's title or
 * notes is rewritten with the deals' texts (deals/erasure.ts).
 */
export const tasksErasable: Erasable = {
  begin(ctx, { id }) {
    const org = ctx.organizationId;
    const theirs = and(eq(tasks.organizationId, org), eq(tasks.contactId, id));
    return {
      reads: [
        ctx.db
          .select({ n: sql<number>`COUNT(*)` })
          .from(tasks)
          .where(and(theirs, isNull(tasks.dealId))),
      ],
      write([counted]) {
        const n = (counted as { n: number }[])[0]?.n ?? 0;
        return {
          statements: [
            ctx.db.delete(tasks).where(and(theirs, isNull(tasks.dealId))),
            ctx.db
              .update(tasks)
              .set({ contactId: null, version: sql`${tasks.version} + 1` })
              .where(and(theirs, isNotNull(tasks.dealId))),
          ],
          erased: (n ? { tasks: n } : {}) as Record<string, number>,
        };
      },
    };
  },
};
