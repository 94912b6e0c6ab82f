import { z } from "@hono/zod-openapi";
import { oneLineText } from "../lib/validation";

/** ISO 3166-1 alpha-2: the officially assigned codes. */
const REGIONS = new Set(
  "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW".split(
    " ",
  ),
);

/**
 * The canonical spelling of an IANA time zone name, or null when it is none: Intl decides which names exist (the
 * runtime's tz database); the pattern keeps out what Intl also takes but IANA does not name (`+05:00`).
 */
export function canonicalTimeZone(name: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/.test(name)) return null;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** Rules a zip-routed organization may keep: lead intake looks a lead's zip up in them. */
export const MAX_ZIP_RULES = 500;

const ZipRule = z
  .strictObject({
    zipPrefix: z
      .string()
      .regex(/^[A-Za-z0-9]{1,10}$/, { message: "1–10 letters or digits: the start of a postal code" })
      .overwrite((v) => v.toUpperCase())
      .openapi({
        example: "941",
        description: "The start of a postal code, letters or digits (stored in capitals); the longest matching prefix wins",
      }),
    userId: z.uuid().openapi({ description: "A user of your organization: new leads from this zip go to them" }),
  })
  .openapi("ZipRule");

/** Rules a rules-routed organization may keep, and users one target may name. */
export const MAX_ROUTING_RULES = 100;
const MAX_TARGET_USERS = 100;

const userId = z.uuid().openapi({ description: "A user of your organization" });
const userIds = z.array(userId).min(1).max(MAX_TARGET_USERS);
const pondId = z.string().min(1).max(100).openapi({ description: "A pond of your organization (`/v1/ponds`)" });

/** Where a first-to-claim lead nobody claimed goes: one user or a pond. */
const Fallback = z.union([z.strictObject({ userId }), z.strictObject({ pondId })]).openapi("RouteFallback");

/**
 * Where a lead goes (issue 46): one user; a pond (unassigned, its members claim it); the next of several users in
 * turn; or an offer to several users, the first to claim it takes it, and after `timeoutMinutes` the fallback does.
 */
export const RouteTarget = z
  .union([
    z.strictObject({ userId }),
    z.strictObject({ pondId }),
    z.strictObject({ roundRobin: userIds.openapi({ description: "Users taking turns, in id order" }) }),
    z.strictObject({
      firstToClaim: z.strictObject({
        userIds,
        timeoutMinutes: z.int().min(1).max(10_080).default(30),
        fallback: Fallback,
      }),
    }),
  ])
  .openapi("RouteTarget");
export type RouteTarget = z.infer<typeof RouteTarget>;

/** What a rule asks of a lead: every given key must hold (source and type as intake stores them; zip by prefix). */
const RuleMatch = z
  .strictObject({
    source: z
      .string()
      .min(1)
      .max(40)
      .overwrite((v) => v.toUpperCase().replace(/[ -]+/g, "_"))
      .optional(),
    tag: z.string().min(1).max(50).optional().openapi({ description: "One of the lead's `tags`" }),
    zipPrefix: z
      .string()
      .regex(/^[A-Za-z0-9]{1,10}$/, { message: "1–10 letters or digits: the start of a postal code" })
      .overwrite((v) => v.toUpperCase())
      .optional(),
    type: z.enum(["inquiry", "showing_request", "offer", "general"]).optional(),
  })
  .openapi("RoutingRuleMatch");

const RoutingRule = z.strictObject({ match: RuleMatch, target: RouteTarget }).openapi("RoutingRule");

const SpeedToLead = z
  .strictObject({
    minutes: z.int().min(1).max(10_080),
    reassignTo: RouteTarget,
  })
  .openapi("SpeedToLead", {
    description:
      "A routed lead its agent has not contacted (no call, e-mail or text logged: `lastContactedAt`) within `minutes` of its assignment goes to `reassignTo`, once",
  });

const LeadRouting = z
  .strictObject({
    mode: z.enum(["round_robin", "zip", "rules"]).openapi({
      description:
        "round_robin: new leads go in turn to the users who accept leads; zip: by zipRules; rules: the first of `rules` whose match holds, else `default`",
    }),
    zipRules: z.array(ZipRule).max(MAX_ZIP_RULES).default([]),
    rules: z.array(RoutingRule).max(MAX_ROUTING_RULES).optional().openapi({ description: "mode rules: tried in order" }),
    default: RouteTarget.optional().openapi({ description: "mode rules: where a lead no rule matches goes (required in that mode)" }),
    speedToLead: SpeedToLead.optional(),
  })
  .superRefine((routing, ctx) => {
    const seen = new Set<string>();
    routing.zipRules.forEach((rule, i) => {
      if (seen.has(rule.zipPrefix))
        ctx.addIssue({
          code: "custom",
          path: ["zipRules", i, "zipPrefix"],
          message: `zipPrefix ${rule.zipPrefix} is listed twice`,
          params: { code: "duplicate_zip_prefix" },
        });
      seen.add(rule.zipPrefix);
    });
    if (routing.mode === "rules" && routing.default === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["default"],
        message: "mode rules needs a default target",
        params: { code: "default_target_required" },
      });
  })
  .openapi("LeadRouting");
export type LeadRouting = z.infer<typeof LeadRouting>;

const Region = z
  .string()
  .refine((v) => REGIONS.has(v), {
    message: "Must be an ISO 3166-1 alpha-2 country code in capitals, such as US",
    params: { code: "invalid_region" },
  })
  .openapi({ example: "US", description: "ISO 3166-1 alpha-2: the country of a phone number written without a country code" });

/** The settings as stored and shown: every key, defaults filled in. Lead intake reads them. */
export const OrganizationSettings = z
  .strictObject({
    defaultPhoneRegion: Region.default("US"),
    leadRouting: LeadRouting.default({ mode: "round_robin", zipRules: [] }),
  })
  .openapi("OrganizationSettings");
export type OrganizationSettings = z.infer<typeof OrganizationSettings>;

const TimeZone = z
  .string()
  .max(64)
  .refine((v) => canonicalTimeZone(v) !== null, {
    message: "Must be an IANA time zone name, such as America/New_York",
    params: { code: "invalid_time_zone" },
  })
  .overwrite((v) => canonicalTimeZone(v) ?? v)
  .openapi({ example: "America/New_York" });

/**
 * PATCH /v1/organization: only what is sent changes. `settings` keys replace the stored ones one by one (a new
 * `leadRouting` whole), so concurrent changes of different keys all land. `name` cannot be changed.
 */
export const UpdateOrganization = z
  .strictObject({
    displayName: oneLineText(200).nullable().openapi({ description: "What people are shown; null shows `name`" }).optional(),
    timeZone: TimeZone.optional(),
    settings: z
      .strictObject({ defaultPhoneRegion: Region.optional(), leadRouting: LeadRouting.optional() })
      .refine((s) => Object.keys(s).length > 0, { message: "Name a setting to change", params: { code: "empty_update" } })
      .optional(),
  })
  .refine((u) => Object.keys(u).length > 0, { message: "Nothing to update", params: { code: "empty_update" } })
  .openapi("UpdateOrganization");
export type UpdateOrganization = z.infer<typeof UpdateOrganization>;

export const Organization = z
  .object({
    id: z.string(),
    name: z.string().openapi({ description: "The organization's key (npm run token maps organizations by it); it never changes" }),
    displayName: z.string().nullable(),
    timeZone: z.string().openapi({ example: "America/New_York" }),
    settings: OrganizationSettings,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Organization");
export type Organization = z.infer<typeof Organization>;
