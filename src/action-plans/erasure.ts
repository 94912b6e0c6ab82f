import { and, eq, sql } from "drizzle-orm";
import type { Erasable } from "../crm/erasure";
import { planEnrollments, planStepRuns } from "../db/plans";

// The action plans' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): their enrollments and the history
// of each (a step run's outcome keeps the address an e-mail went to and its rendered subject). The plans themselves
// are the organization's and name nobody.

export const actionPlansErasable: Erasable = {
  /** Every enrollment of the person (live, paused or ended), with its step runs, in `begin`'s batch: no step runs after it. */
  begin(ctx, { id }) {
    const mine = and(eq(planEnrollments.organizationId, ctx.organizationId), eq(planEnrollments.contactId, id));
    const theirs = sql`${planStepRuns.enrollmentId} IN (SELECT ${planEnrollments.id} FROM ${planEnrollments} WHERE ${mine})`;
    return {
      reads: [ctx.db.select({ n: sql<number>`COUNT(*)` }).from(planEnrollments).where(mine)],
      write: ([enrollments]) => ({
        statements: [
          ctx.db.delete(planStepRuns).where(and(eq(planStepRuns.organizationId, ctx.organizationId), theirs)),
          ctx.db.delete(planEnrollments).where(mine),
        ],
        erased: { plan_enrollments: (enrollments as { n: number }[])[0]!.n },
      }),
    };
  },
};
