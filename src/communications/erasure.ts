import { and, eq, sql } from "drizzle-orm";
import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { tableName } from "../db/row-json";
import { contactCommunications, trashRows } from "../db/schema";
import { COMMUNICATION_TYPES } from "./schemas";

// The communications' share of a person's erasure (crm/erasure.ts, erasure/erase.ts).

/** Other contacts' communications that name them (the person's own go in `begin`). */
const COPIES: Copy[] = [
  { kind: "communication_texts", table: contactCommunications, key: "id", column: "subject" },
  { kind: "communication_texts", table: contactCommunications, key: "id", column: "body" },
  { kind: "communication_texts", table: contactCommunications, key: "id", column: "metadata" },
];

/**
 * A communication with the person (an object with their `contactId`, a communication's `type` and a `direction`, as
 * its events and stored answers carry it): what was written or said to or by them goes whole, not only where it names
 * them.
 */
const isTheirCommunication = (obj: Record<string, unknown>, person: { id: string }) =>
  obj.contactId === person.id && (COMMUNICATION_TYPES as readonly unknown[]).includes(obj.type) && typeof obj.direction === "string";

export const communicationsErasable: Erasable = {
  /**
   * The person's communications go with their contact: deleted when it is live; kept in the trash with it, they go with
   * its trash entry (contacts/erasure.ts). Counted where they are.
   */
  begin(ctx, { id, live }) {
    const t = contactCommunications;
    const mine = and(eq(t.organizationId, ctx.organizationId), eq(t.contactId, id));
    return {
      reads: [
        live
          ? ctx.db.select({ n: sql<number>`COUNT(*)` }).from(t).where(mine)
          : ctx.db
              .select({ n: sql<number>`COUNT(*)` })
              .from(trashRows)
              .where(and(eq(trashRows.recordId, id), eq(trashRows.tableName, tableName(t)))),
      ],
      write: ([communications]) => ({
        statements: live ? [ctx.db.delete(t).where(mine)] : [],
        erased: { communications: (communications as { n: number }[])[0]!.n },
      }),
    };
  },
  async erase(ctx, scrub, counted) {
    return { name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) };
  },
  objects: [{ is: isTheirCommunication, fields: ["subject", "body", "metadata"] }],
};
