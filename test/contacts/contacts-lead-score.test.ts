import { describe, expect, it } from "vitest";
import { type ActivityFigures, calculateLeadScore, type LeadScoreInput, NO_ACTIVITY } from "../../src/contacts/lead-score";
import { call, json } from "../helpers/client";
import { createContact, getContact, logActivity, updateContact } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";

const AS_OF = new Date("2025-06-15T12:00:00.000Z");
const daysBefore = (days: number) => new Date(AS_OF.getTime() - days * 86_400_000).toISOString();

const BARE: LeadScoreInput = {
  type: "LEAD",
  status: "ACTIVE",
  source: null,
  phone: null,
  secondaryPhone: null,
  address: null,
  notes: null,
  preferences: null,
  lastContactedAt: null,
};

/** Every completeness point, the best source, top price range and type CLIENT. */
const RICH: LeadScoreInput = {
  type: "CLIENT",
  status: "ACTIVE",
  source: "REFERRAL",
  phone: "+1 555 0100",
  secondaryPhone: "+1 555 0101",
  address: { street: "1 Main St", city: "Springfield", state: "IL", zipCode: "62701" },
  notes: "Wants a garden",
  preferences: {
    communicationMethod: "PHONE",
    propertyTypes: ["SINGLE_FAMILY"],
    priceRange: { min: 800_000, max: 1_200_000 },
    locations: ["Downtown"],
  },
  lastContactedAt: null,
};

describe("calculateLeadScore (unit, fixed asOf)", () => {
  it("scores a bare lead by its type only", () => {
    expect(calculateLeadScore(BARE, NO_ACTIVITY, AS_OF)).toBe(3);
    expect(calculateLeadScore({ ...BARE, type: "VENDOR" }, NO_ACTIVITY, AS_OF)).toBe(0);
    expect(calculateLeadScore({ ...BARE, type: "CLIENT" }, NO_ACTIVITY, AS_OF)).toBe(5);
  });

  it("adds the documented parts", () => {
    // completeness 25 + source 20 + price range 10 + type 5
    expect(calculateLeadScore(RICH, NO_ACTIVITY, AS_OF)).toBe(60);
    expect(calculateLeadScore({ ...BARE, phone: "1" }, NO_ACTIVITY, AS_OF)).toBe(8);
    expect(calculateLeadScore({ ...BARE, address: { city: "X" } }, NO_ACTIVITY, AS_OF)).toBe(5);
    expect(calculateLeadScore({ ...BARE, source: "WEBSITE" }, NO_ACTIVITY, AS_OF)).toBe(15);
    expect(calculateLeadScore({ ...BARE, source: "SOMETHING_ELSE" }, NO_ACTIVITY, AS_OF)).toBe(9);
    expect(calculateLeadScore({ ...BARE, preferences: { priceRange: { max: 500_000 } } }, NO_ACTIVITY, AS_OF)).toBe(3 + 4 + 7);
  });

  it("reaches exactly 100 with full data, engagement and a recent touch, and never exceeds it", () => {
    const busy: ActivityFigures = { count: 40, conversations: 40, lastActivityAt: daysBefore(1) };
    expect(calculateLeadScore(RICH, busy, AS_OF)).toBe(100);
    expect(calculateLeadScore(RICH, { count: 10_000, conversations: 10_000, lastActivityAt: daysBefore(0) }, AS_OF)).toBe(100);
  });

  it("decays with the time since the last touch", () => {
    const at = (lastContactedAt: string | null) => calculateLeadScore({ ...BARE, lastContactedAt }, NO_ACTIVITY, AS_OF);
    expect([at(daysBefore(1)), at(daysBefore(20)), at(daysBefore(60)), at(daysBefore(400)), at(null)]).toEqual([18, 13, 8, 3, 3]);
    // The later of lastContactedAt and the last activity counts.
    expect(
      calculateLeadScore(
        { ...BARE, lastContactedAt: daysBefore(400) },
        { count: 0, conversations: 0, lastActivityAt: daysBefore(2) },
        AS_OF,
      ),
    ).toBe(18);
  });

  it("scores DISQUALIFIED and DO_NOT_CONTACT 0 whatever they carry", () => {
    const busy: ActivityFigures = { count: 10, conversations: 5, lastActivityAt: daysBefore(1) };
    expect(calculateLeadScore({ ...RICH, status: "DISQUALIFIED" }, busy, AS_OF)).toBe(0);
    expect(calculateLeadScore({ ...RICH, status: "DO_NOT_CONTACT" }, busy, AS_OF)).toBe(0);
  });

  it("is deterministic and always an integer within 0–100", () => {
    const figures: ActivityFigures[] = [
      NO_ACTIVITY,
      { count: 1, conversations: 0, lastActivityAt: daysBefore(3) },
      { count: 7, conversations: 3, lastActivityAt: daysBefore(45) },
    ];
    for (const base of [BARE, RICH]) {
      for (const f of figures) {
        for (const status of ["ACTIVE", "INACTIVE", "CONVERTED"]) {
          const input = { ...base, status };
          const score = calculateLeadScore(input, f, AS_OF);
          expect(Number.isInteger(score)).toBe(true);
          expect(score).toBeGreaterThanOrEqual(0);
          expect(score).toBeLessThanOrEqual(100);
          expect(calculateLeadScore(structuredClone(input), structuredClone(f), new Date(AS_OF))).toBe(score);
        }
      }
    }
  });
});

const RICH_BODY = {
  type: "CLIENT",
  source: "REFERRAL",
  phone: "+1 555 0100",
  secondaryPhone: "+1 555 0101",
  address: { street: "1 Main St", city: "Springfield", state: "IL", zipCode: "62701", country: "US" },
  notes: "Wants a garden",
  preferences: {
    communicationMethod: "PHONE",
    propertyTypes: ["SINGLE_FAMILY"],
    priceRange: { min: 800_000, max: 1_200_000 },
    locations: ["Downtown"],
  },
};

describe("lead score through the API", () => {
  it("gives identical contacts identical scores, within 0–100", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const scores = [
      (await createContact(a.token, { ...RICH_BODY, calculateLeadScore: true })).leadScore,
      (await createContact(a.token, { ...RICH_BODY, calculateLeadScore: true })).leadScore,
      (await createContact(b.token, { ...RICH_BODY, calculateLeadScore: true })).leadScore,
    ];
    expect(scores[0]).toBe(60);
    expect(new Set(scores).size).toBe(1);
  });

  it("scores a contact with rich data higher than a bare one", async () => {
    const { token } = await createPrincipal();
    const bare = await createContact(token, { calculateLeadScore: true });
    const rich = await createContact(token, { ...RICH_BODY, calculateLeadScore: true });
    expect(bare.leadScore).toBe(3);
    expect(rich.leadScore!).toBeGreaterThan(bare.leadScore!);
    expect(rich).not.toHaveProperty("calculateLeadScore");
  });

  it("ignores a given leadScore when the flag asks for the computed one", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { leadScore: 99, calculateLeadScore: true });
    expect(c.leadScore).toBe(3);
  });

  it("recomputes the score when an input changes on a later update", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { calculateLeadScore: true });
    const withPhone = await updateContact(token, c.id, { phone: "+1 555 0199" });
    expect(withPhone.leadScore).toBe(c.leadScore! + 5);
    const referred = await updateContact(token, c.id, { source: "REFERRAL" });
    expect(referred.leadScore).toBe(withPhone.leadScore! + 20);
    expect((await getContact(token, c.id)).leadScore).toBe(referred.leadScore);
    const cleared = await updateContact(token, c.id, { phone: null, source: null });
    expect(cleared.leadScore).toBe(c.leadScore);
  });

  it("computes the score when the flag is set on a later update", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { phone: "+1 555 0100" });
    expect(c.leadScore).toBeNull();
    expect((await updateContact(token, c.id, { calculateLeadScore: true })).leadScore).toBe(8);
  });

  it("recomputes the score when an activity is logged", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { calculateLeadScore: true });
    await logActivity(token, c.id, { type: "PHONE_CALL" });
    // engagement 1.5 + 2, recency 15 (touched just now): 3 + 18.5 → 22 (rounded)
    const after = await getContact(token, c.id);
    expect(after.leadScore).toBe(22);
    expect(after.lastContactedAt).not.toBeNull();
  });

  it("stores a given leadScore as is without the flag and never recomputes it", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { leadScore: 42 });
    expect(c.leadScore).toBe(42);
    expect((await updateContact(token, c.id, { ...RICH_BODY })).leadScore).toBe(42);
    await logActivity(token, c.id, { type: "MEETING" });
    expect((await getContact(token, c.id)).leadScore).toBe(42);
    expect((await updateContact(token, c.id, { leadScore: 7 })).leadScore).toBe(7);
  });

  it("switches the computed score off when a leadScore is given without the flag", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { calculateLeadScore: true });
    const manual = await updateContact(token, c.id, { leadScore: 80 });
    expect(manual.leadScore).toBe(80);
    // An input change no longer moves it.
    expect((await updateContact(token, c.id, { phone: "+1 555 0100", source: "REFERRAL" })).leadScore).toBe(80);
    await logActivity(token, c.id, { type: "PHONE_CALL" });
    expect((await getContact(token, c.id)).leadScore).toBe(80);
  });

  it("keeps the score when the flag is switched off explicitly", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { calculateLeadScore: true, phone: "+1 555 0100" });
    const off = await updateContact(token, c.id, { calculateLeadScore: false });
    expect(off.leadScore).toBe(c.leadScore);
    expect((await updateContact(token, c.id, { source: "REFERRAL" })).leadScore).toBe(c.leadScore);
  });

  it("scores a DISQUALIFIED contact 0, and scores it again when it is reactivated", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { ...RICH_BODY, calculateLeadScore: true });
    expect(c.leadScore).toBe(60);
    expect((await updateContact(token, c.id, { status: "DISQUALIFIED" })).leadScore).toBe(0);
    expect((await updateContact(token, c.id, { status: "ACTIVE" })).leadScore).toBe(60);
    const dnc = await createContact(token, { ...RICH_BODY, status: "DO_NOT_CONTACT", calculateLeadScore: true });
    expect(dnc.leadScore).toBe(0);
  });

  it("refuses a calculateLeadScore that is not a boolean", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/v1/contacts", {
      token,
      body: { firstName: "A", lastName: "B", email: "flag@example.test", calculateLeadScore: "yes" },
    });
    expect(res.status).toBe(422);
    expect((await json(res)).error.errors.map((e: { field: string }) => e.field)).toEqual(["calculateLeadScore"]);
  });
});
