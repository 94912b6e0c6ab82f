import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

export type ReferralStatus = "RECEIVED";

/**
 * Referrals (spec: Referral): logged by hand or captured from an agent's public profile (channel PUBLIC_PROFILE),
 * each RECEIVED. The REFERRAL_RECEIVED consumer turns the referred person into a lead contact and links it here
 * (`leadContactId`), once. Reward tracking (type, status, value) is optional.
 */
export const referrals = sqliteTable(
  "referrals",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    agentUserId: text().notNull(),
    referrerPersonId: text(),
    channel: text().notNull(),
    status: text().$type<ReferralStatus>().notNull(),
    referredName: text().notNull(),
    referredContact: text(),
    /** Lower-cased e-mail of the referred person when referredContact is one: the lead is de-duplicated by it. */
    referredEmailKey: text(),
    notes: text(),
    rewardType: text(),
    rewardStatus: text(),
    rewardValue: real(),
    /** The lead contact the consumer made or found; null until it ran (or when there is no e-mail to key it on). */
    leadContactId: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("referrals_org_created_idx").on(t.organizationId, t.createdAt, t.id),
    index("referrals_org_status_idx").on(t.organizationId, t.status, t.createdAt, t.id),
    index("referrals_org_agent_idx").on(t.organizationId, t.agentUserId, t.createdAt, t.id),
  ],
);

/**
 * The public form's de-duplication (docs/decisions/0030-public-referrals-resist-spam.md): while `expiresAt` (30 days
 * after the referral) is ahead, a referral of the same person to the same agent answers `referralId` instead of making
 * a second one. One row per key, replaced once expired; the key is the SHA-256 of the lower-cased e-mail (or the
 * phone's digits), not the address itself. The capture's batch guards that no live row exists and writes this one, so
 * of concurrent copies one lands.
 */
export const referralKeys = sqliteTable(
  "referral_keys",
  {
    organizationId: text().notNull(),
    agentUserId: text().notNull(),
    contactHash: text().notNull(),
    referralId: text().notNull(),
    expiresAt: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.agentUserId, t.contactHash] })],
);
