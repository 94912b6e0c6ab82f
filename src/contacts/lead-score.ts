/**
 * Lead score, 0–100, computed from what the contact carries (the spec leaves the method open: "not shown").
 * Deterministic: the same contact, activity figures and `asOf` instant always give the same score. It is computed at
 * write time when a request carries `calculateLeadScore: true`, and recomputed on every later change of its inputs
 * (a contact update, a new activity) for as long as the contact keeps the flag; a leadScore given without the flag
 * switches the automatic score off.
 *
 * | part          | max | how                                                                                   |
 * |---------------|-----|---------------------------------------------------------------------------------------|
 * | completeness  |  25 | phone 5, second phone 2, address 5 (street+city+state+zip; 2 if partial), notes 3,     |
 * |               |     | preferences: method 2, property types 2, locations 2, price range 4                    |
 * | source        |  20 | REFERRAL/PAST_CLIENT 20, OPEN_HOUSE 15, WEBSITE 12, SIGN_CALL 12, PORTAL 10,           |
 * |               |     | EMAIL_CAMPAIGN 8, SOCIAL_MEDIA 8, COLD_CALL 5, any other 6, none 0                     |
 * | engagement    |  25 | 1.5 per activity (max 15) + 2 per meeting, showing or phone call (max 10)              |
 * | recency       |  15 | last contact or activity ≤ 7 days 15, ≤ 30 days 10, ≤ 90 days 5, older or never 0      |
 * | price range   |  10 | top of the range ≥ 1,000,000: 10, ≥ 500,000: 7, ≥ 250,000: 5, > 0: 3                   |
 * | type          |   5 | CLIENT 5, PAST_CLIENT 4, REFERRAL 4, LEAD 3, VENDOR 0                                   |
 *
 * Contacts with status DISQUALIFIED or DO_NOT_CONTACT score 0: they are not leads to work.
 */
export const LEAD_SCORE_METHOD =
  "completeness 25 + source 20 + engagement 25 + recency 15 + price range 10 + type 5; DISQUALIFIED and DO_NOT_CONTACT score 0";

export interface LeadScoreInput {
  type: string;
  status: string;
  source: string | null;
  phone: string | null;
  secondaryPhone: string | null;
  address: { street?: string; city?: string; state?: string; zipCode?: string } | null;
  notes: string | null;
  preferences: {
    communicationMethod?: string;
    propertyTypes?: string[];
    priceRange?: { min?: number; max?: number };
    locations?: string[];
  } | null;
  lastContactedAt: string | null;
}

export interface ActivityFigures {
  count: number;
  /** Meetings, showings and phone calls: the activities that signal a live lead. */
  conversations: number;
  lastActivityAt: string | null;
}

export const NO_ACTIVITY: ActivityFigures = { count: 0, conversations: 0, lastActivityAt: null };
export const CONVERSATION_TYPES = ["MEETING", "SHOWING", "PHONE_CALL"] as const;

const SOURCE_POINTS: Record<string, number> = {
  REFERRAL: 20,
  PAST_CLIENT: 20,
  OPEN_HOUSE: 15,
  WEBSITE: 12,
  SIGN_CALL: 12,
  PORTAL: 10,
  EMAIL_CAMPAIGN: 8,
  SOCIAL_MEDIA: 8,
  COLD_CALL: 5,
};
const TYPE_POINTS: Record<string, number> = { CLIENT: 5, PAST_CLIENT: 4, REFERRAL: 4, LEAD: 3, VENDOR: 0 };
const DAY_MS = 86_400_000;

function completeness(c: LeadScoreInput): number {
  let points = 0;
  if (c.phone) points += 5;
  if (c.secondaryPhone) points += 2;
  const a = c.address ?? {};
  const parts = [a.street, a.city, a.state, a.zipCode].filter(Boolean).length;
  points += parts === 4 ? 5 : parts > 0 ? 2 : 0;
  if (c.notes?.trim()) points += 3;
  const p = c.preferences ?? {};
  if (p.communicationMethod) points += 2;
  if (p.propertyTypes?.length) points += 2;
  if (p.locations?.length) points += 2;
  if (p.priceRange && (p.priceRange.min !== undefined || p.priceRange.max !== undefined)) points += 4;
  return points;
}

function recency(lastTouch: string | null, asOf: Date): number {
  if (!lastTouch) return 0;
  const days = (asOf.getTime() - Date.parse(lastTouch)) / DAY_MS;
  if (days <= 7) return 15;
  if (days <= 30) return 10;
  if (days <= 90) return 5;
  return 0;
}

function priceRange(c: LeadScoreInput): number {
  const r = c.preferences?.priceRange;
  const top = r?.max ?? r?.min ?? 0;
  if (top >= 1_000_000) return 10;
  if (top >= 500_000) return 7;
  if (top >= 250_000) return 5;
  return top > 0 ? 3 : 0;
}

export function calculateLeadScore(contact: LeadScoreInput, activity: ActivityFigures, asOf: Date): number {
  if (contact.status === "DISQUALIFIED" || contact.status === "DO_NOT_CONTACT") return 0;
  const source = contact.source ? (SOURCE_POINTS[contact.source] ?? 6) : 0;
  const engagement = Math.min(15, activity.count * 1.5) + Math.min(10, activity.conversations * 2);
  const lastTouch =
    [contact.lastContactedAt, activity.lastActivityAt]
      .filter((t): t is string => t !== null)
      .sort()
      .at(-1) ?? null;
  const score =
    completeness(contact) + source + engagement + recency(lastTouch, asOf) + priceRange(contact) + (TYPE_POINTS[contact.type] ?? 0);
  return Math.max(0, Math.min(100, Math.round(score)));
}
