import { and, eq, inArray, or, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { type Copy, rewriteCopies } from "../crm/copies";
import { ERASED, type Erasable, type Person } from "../crm/erasure";
import { referralKeys, referrals } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { phoneParts } from "../lib/mentions";
import { digitsOnly, inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";

// The referrals' share of a person's erasure (crm/erasure.ts, erasure/erase.ts).

/** The referred person as the duplicate check knows them: the e-mail lower-cased, or a phone number's digits (and a leading +). */
export function referredKey(contact: string): string {
  const trimmed = contact.trim();
  return trimmed.includes("@") ? trimmed.toLowerCase() : trimmed.replace(/[^0-9+]/g, "").replace(/(?!^)\+/g, "");
}

/** Referrals whose referred person is this one: the lead made from them, their e-mail or their phone (in any format). */
export const referredIs = (ctx: ServiceContext, person: Person) =>
  and(
    eq(referrals.organizationId, ctx.organizationId),
    or(
      eq(referrals.leadContactId, person.id),
      eq(referrals.referredEmailKey, person.emailKey),
      ...person.phones.map((phone) => phoneIs(referrals.referredContact, phone)),
    ),
  );

/** The column holds the phone, in whatever format: its digits, with or without the country code (or as written, when short). */
function phoneIs(column: SQLiteColumn, phone: string): SQL {
  const parts = phoneParts(phone);
  if (!parts) return eq(column, phone);
  return inJsonList(digitsOnly(column), [parts.national, ...(parts.cc ? [parts.cc + parts.national] : [])]);
}

const COPIES: Copy[] = [
  { kind: "referral_notes", table: referrals, key: "id", column: "notes", versioned: true },
  { kind: "referral_notes", table: referrals, key: "id", column: "referredName", versioned: true },
];

export const referralsErasable: Erasable = {
  /**
   * Referrals that name them keep their place (a referrer's record) without them; the referral form's duplicate keys,
   * hashes of their e-mail and phones, go.
   */
  begin(ctx, { person, at }) {
    return {
      reads: [ctx.db.select({ n: sql<number>`COUNT(*)` }).from(referrals).where(referredIs(ctx, person))],
      async write([referred]) {
        const keyHashes = await Promise.all([person.emailKey, ...person.phones].map((c) => sha256Hex(referredKey(c))));
        return {
          statements: [
            ctx.db
              .update(referrals)
              .set({
                referredName: ERASED,
                referredContact: null,
                referredEmailKey: null,
                updatedAt: at,
                version: sql`${referrals.version} + 1`,
              })
              .where(referredIs(ctx, person)),
            ctx.db
              .delete(referralKeys)
              .where(and(eq(referralKeys.organizationId, ctx.organizationId), inArray(referralKeys.contactHash, keyHashes))),
          ],
          erased: { referrals: (referred as { n: number }[])[0]!.n },
        };
      },
    };
  },
  async erase(ctx, scrub, counted) {
    return { name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) };
  },
};
