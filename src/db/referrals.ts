import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
