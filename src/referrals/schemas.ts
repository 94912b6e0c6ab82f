import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import { oneLineText } from "../lib/validation";

/**
 * Referrals (spec: Referral, Rules 2). Values the spec leaves open, decided here and documented in /docs: the channel
 * and reward lists below; every referral starts RECEIVED (the only status the spec shows, so there is no status move);
 * referredContact is an e-mail address or a phone number, and only an e-mail makes a lead (a contact needs one).
 */
export const REFERRAL_CHANNELS = ["MANUAL", "PUBLIC_PROFILE", "EMAIL", "PHONE", "IN_PERSON", "WEBSITE", "SOCIAL_MEDIA", "OTHER"] as const;
export const REWARD_TYPES = ["CASH", "GIFT_CARD", "DISCOUNT", "DONATION", "OTHER"] as const;
export const REWARD_STATUSES = ["NONE", "PENDING", "APPROVED", "PAID", "DECLINED"] as const;
export const REFERRAL_STATUSES = ["RECEIVED"] as const;

const id = z.string().min(1).max(100);
const phone = z
  .string()
  .trim()
  .regex(/^\+?[0-9 ().-]{7,25}$/, { message: "Must be an e-mail address or a phone number" });

export const ReferralCreate = z
  .strictObject({
    agentUserId: id.openapi({ description: "The agent (a user of your organization) the referral is for; the lead is assigned to them" }),
    referrerPersonId: id.optional().openapi({ description: "Who referred, a contact of your organization" }),
    channel: z.enum(REFERRAL_CHANNELS).default("MANUAL"),
    referredName: oneLineText(200),
    referredContact: z
      .union([z.email().max(254), phone])
      .optional()
      .openapi({ description: "E-mail address or phone number of the referred person; an e-mail makes a lead contact" }),
    notes: z.string().trim().max(5000).optional(),
    rewardType: z.enum(REWARD_TYPES).optional(),
    rewardStatus: z.enum(REWARD_STATUSES).optional().openapi({ description: "Defaults to PENDING when a reward type is given" }),
    rewardValue: z
      .number()
      .min(0)
      .max(1_000_000_000)
      .optional()
      .openapi({ description: "Amount of the reward, in the organization's currency" }),
  })
  // A reward's status or value without its type tracks nothing anyone can pay out.
  .superRefine((v, ctx) => {
    for (const field of ["rewardStatus", "rewardValue"] as const)
      if (v[field] !== undefined && v.rewardType === undefined)
        ctx.addIssue({ code: "custom", path: [field], message: "Needs rewardType", params: { code: "requires_reward_type" } });
  })
  .openapi("ReferralCreate");
export type ReferralCreate = z.infer<typeof ReferralCreate>;

export const PublicReferral = z
  .strictObject({
    referrerName: oneLineText(200),
    referrerEmail: z.email().max(254),
    referredName: oneLineText(200),
    referredEmail: z.email().max(254),
    notes: z.string().trim().max(5000).optional(),
    challengeToken: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .openapi({ description: "Turnstile token, required when the bot challenge is configured" }),
  })
  .openapi("PublicReferral");
export type PublicReferral = z.infer<typeof PublicReferral>;

export const Referral = z
  .object({
    id: z.string(),
    agentUserId: z.string(),
    referrerPersonId: z.string().nullable(),
    channel: z.string(),
    status: z.enum(REFERRAL_STATUSES),
    referredName: z.string(),
    referredContact: z.string().nullable(),
    notes: z.string().nullable(),
    rewardType: z.string().nullable(),
    rewardStatus: z.string().nullable(),
    rewardValue: z.number().nullable(),
    leadContactId: z
      .string()
      .nullable()
      .openapi({ description: "The lead contact made (or found by e-mail) from the referral; null until the workflow ran" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Referral");
export type Referral = z.infer<typeof Referral>;

export const ReferralListQuery = listQuery({ status: z.enum(REFERRAL_STATUSES).optional(), agentUserId: id.optional() });
export const ReferralList = z
  .object({
    referrals: z.array(Referral),
    pagination: z.object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), limit: z.int() }),
  })
  .openapi("ReferralList");
