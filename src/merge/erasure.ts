import { and, eq, or } from "drizzle-orm";
import type { Erasable } from "../crm/erasure";
import { contactMergedKeys } from "../db/schema";

// The merges' share of a person's erasure (crm/erasure.ts, erasure/erase.ts).

export const mergeErasable: Erasable = {
  /**
   * The e-mails and phones a merge kept: the ones this contact absorbed, and (a merged contact erased) its own. After
   * the leads' part (leads/erasure.ts), whose reviews are also found by these keys.
   */
  begin: (ctx, { id }) => ({
    write: () => ({
      statements: [
        ctx.db
          .delete(contactMergedKeys)
          .where(
            and(
              eq(contactMergedKeys.organizationId, ctx.organizationId),
              or(eq(contactMergedKeys.contactId, id), eq(contactMergedKeys.sourceId, id)),
            ),
          ),
      ],
    }),
  }),
};
