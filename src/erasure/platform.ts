import { and, eq, sql } from "drizzle-orm";
import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable, Person } from "../crm/erasure";
import { idempotencyKeys, mailOutbox, outboxEvents } from "../db/schema";
import type { ServiceContext } from "../service-context";

// What the layers below the domains hold of a person (they are below the Erasable interface, so their share is
// here): the mail sent to them (mail/), the events that carried them (events/) and the answers kept for a replay
// (platform/idempotency.ts).

/** The mail log's messages to the person's e-mail. */
export const mailTo = (ctx: ServiceContext, person: Person) =>
  and(eq(mailOutbox.organizationId, ctx.organizationId), sql`lower(${mailOutbox.to}) = ${person.emailKey}`);

/**
 * Event payloads and replayed answers (JSON, redacted structurally), and the subjects of mail to others that name the
 * person (an invitation to an appointment titled with their name: issue 46); those bodies are encrypted in the log.
 */
const COPIES: Copy[] = [
  { kind: "mail_subjects", table: mailOutbox, key: "id", column: "subject" },
  { kind: "events", table: outboxEvents, key: "id", column: "data" },
  { kind: "idempotency_records", table: idempotencyKeys, key: "key", column: "responseBody" },
];

export const platformErasable: Erasable = {
  begin: (ctx, { person }) => ({
    reads: [ctx.db.select({ n: sql<number>`COUNT(*)` }).from(mailOutbox).where(mailTo(ctx, person))],
    write: ([mails]) => ({
      statements: [ctx.db.delete(mailOutbox).where(mailTo(ctx, person))],
      erased: { mails: (mails as { n: number }[])[0]!.n },
    }),
  }),
  erase: async (ctx, scrub, counted) => ({ name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) }),
};
