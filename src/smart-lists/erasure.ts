import { and, eq } from "drizzle-orm";
import type { Erasable } from "../crm/erasure";
import { smartListMembers } from "../db/schema";

/**
 * The smart lists' share of a person's erasure (crm/erasure.ts): the rows saying which lists their contact was in go
 * in the first step's batch, without smart_list.exited (nobody stopped matching; the person is gone). A saved query
 * naming them (an `email` or `q` filter) is the organization's; it matches nobody once they are erased.
 */
export const smartListsErasable: Erasable = {
  begin: (ctx, { id }) => ({
    write: () => ({
      statements: [
        ctx.db
          .delete(smartListMembers)
          .where(and(eq(smartListMembers.organizationId, ctx.organizationId), eq(smartListMembers.contactId, id))),
      ],
    }),
  }),
};
