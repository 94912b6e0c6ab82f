import { Validator } from "@cfworker/json-schema";
import { describe, expect, it, vi } from "vitest";
import { call, json } from "../helpers/client";
import { createDeal } from "../helpers/deals";
import { createDocument, leaseCanonical, publicSign, sendForSignature, tokenOf } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import {
  amendmentCanonical,
  day,
  isoDay,
  listingCanonical,
  poppler,
  purchaseCanonical,
  representationCanonical,
  sealedPdf,
  signInTurn,
} from "../helpers/forms";

// The forms a brokerage signs (issue 31): each typed form from its canonical to obligations, a sequential envelope
// in the form's signing order, the public signing flow, and a sealed PDF that poppler reads and verifies.

type Obligation = {
  id: string;
  documentId: string;
  dealId: string | null;
  type: string;
  description: string | null;
  dueDate: string;
  amountCents: number | null;
  urgency: string;
};
const obligationsOf = async (token: string, documentId: string): Promise<Obligation[]> =>
  ((await json(await call("GET", "/api/documents/obligations?withinDays=365", { token }))).obligations as Obligation[]).filter(
    (o) => o.documentId === documentId,
  );
const brief = (list: Obligation[]) => list.map((o) => [o.type, o.dueDate, o.amountCents]);

describe("GET /api/documents/forms", () => {
  it("lists every form with its signing roles, whether it is signable, and a JSON Schema the canonicals validate against", async () => {
    const { token } = await createPrincipal();
    const res = await call("GET", "/api/documents/forms", { token });
    expect(res.status).toBe(200);
    const { forms } = (await json(res)) as {
      forms: { formKey: string; title: string; roles: string[]; signable: boolean; schema: Record<string, unknown> }[];
    };
    expect(forms.map((f) => [f.formKey, f.roles, f.signable])).toEqual([
      ["on/standard-lease", ["landlord", "tenant"], true],
      ["generic/free-form", [], false],
      ["on/agreement-of-purchase-and-sale", ["buyer", "seller"], true],
      ["on/listing-agreement", ["seller", "listing_brokerage"], true],
      ["on/buyer-representation-agreement", ["buyer", "buyer_brokerage"], true],
      ["on/amendment", ["buyer", "seller"], true],
    ]);
    const examples: Record<string, Record<string, unknown>> = {
      "on/standard-lease": leaseCanonical(),
      "on/agreement-of-purchase-and-sale": purchaseCanonical(),
      "on/listing-agreement": listingCanonical(),
      "on/buyer-representation-agreement": representationCanonical(),
      "on/amendment": amendmentCanonical("some-document-id", { waives: [0] }),
    };
    for (const [formKey, canonical] of Object.entries(examples)) {
      const schema = forms.find((f) => f.formKey === formKey)!.schema;
      expect(new Validator(schema as never, "2020-12").validate(canonical).valid, formKey).toBe(true);
      // The schema is strict: an unknown field is refused, as POST /api/documents refuses it.
      expect(new Validator(schema as never, "2020-12").validate({ ...canonical, extra: 1 }).valid, formKey).toBe(false);
    }
  });
});

describe("/openapi.json", () => {
  it("declares each canonical as a named schema in a oneOf on formKey, for POST /api/documents and the draft", async () => {
    const doc = await json(await call("GET", "/openapi.json"));
    const named = {
      "on/standard-lease": "LeaseCanonical",
      "generic/free-form": "FreeFormCanonical",
      "on/agreement-of-purchase-and-sale": "PurchaseAgreementCanonical",
      "on/listing-agreement": "ListingAgreementCanonical",
      "on/buyer-representation-agreement": "BuyerRepresentationAgreementCanonical",
      "on/amendment": "AmendmentCanonical",
    };
    const ref = (name: string) => `#/components/schemas/${name}`;
    const create = doc.components.schemas.DocumentCreate.properties.canonical;
    expect(create.oneOf).toEqual(Object.values(named).map((n) => ({ $ref: ref(n) })));
    expect(create.discriminator).toEqual({
      propertyName: "formKey",
      mapping: Object.fromEntries(Object.entries(named).map(([k, n]) => [k, ref(n)])),
    });
    const { "generic/free-form": _, ...signable } = named;
    expect(doc.components.schemas.DocumentDraft.properties.canonical.oneOf).toEqual(Object.values(signable).map((n) => ({ $ref: ref(n) })));
    expect(doc.components.schemas.PurchaseAgreementCanonical.properties.purchase.required).toEqual([
      "buyers",
      "sellers",
      "property",
      "price",
      "deposit",
      "conditions",
      "irrevocableUntil",
      "completion",
    ]);
  });
});

describe("POST /api/documents: the new forms' rules", () => {
  const paths = async (res: Response) => ((await json(res)).issues as { path: (string | number)[] }[]).map((i) => i.path.join(".")).sort();
  const post = (token: string, canonical: Record<string, any>) =>
    call("POST", "/api/documents", { token, body: { formKey: canonical.formKey, canonical } });

  it("lists every problem of a bad purchase agreement in one 400", async () => {
    const { token } = await createPrincipal();
    const canonical = purchaseCanonical() as Record<string, any>;
    canonical.purchase.deposit.cents = canonical.purchase.price.cents + 1;
    canonical.purchase.conditions[1].waiverDeadline = day(90);
    canonical.purchase.completion.date = day(0); // before the irrevocable date
    const res = await post(token, canonical);
    expect(res.status).toBe(400);
    expect(await paths(res)).toEqual([
      "canonical.purchase.completion.date",
      "canonical.purchase.conditions.0.waiverDeadline",
      "canonical.purchase.conditions.1.waiverDeadline",
      "canonical.purchase.conditions.2.waiverDeadline",
      "canonical.purchase.deposit.cents",
      "canonical.purchase.deposit.dueDate", // day 2, after that completion
    ]);
    // The dates are compared once the fields themselves are valid (zod refines a whole object only then).
    const unknownType = purchaseCanonical() as Record<string, any>;
    unknownType.purchase.conditions[2].type = "feng_shui";
    unknownType.purchase.sellers = [];
    expect(await paths(await post(token, unknownType))).toEqual(["canonical.purchase.conditions.2.type", "canonical.purchase.sellers"]);
  });

  it("refuses a deposit that falls due after completion", async () => {
    const { token } = await createPrincipal();
    const canonical = purchaseCanonical() as Record<string, any>;
    canonical.purchase.deposit.dueDate = day(61); // completion is day 60
    const res = await post(token, canonical);
    expect(res.status).toBe(400);
    expect((await json(res)).issues).toEqual([
      expect.objectContaining({ path: ["canonical", "purchase", "deposit", "dueDate"], code: "invalid_range" }),
    ]);
  });

  it("refuses a listing whose period ends before it starts, or with no commission", async () => {
    const { token } = await createPrincipal();
    const canonical = listingCanonical() as Record<string, any>;
    canonical.listing.period.expiry = day(-1);
    canonical.listing.commission = {};
    expect(await paths(await post(token, canonical))).toEqual(["canonical.listing.commission", "canonical.listing.period.expiry"]);
  });
});

describe("a listing or buyer representation agreement: commission and renewal", () => {
  it("takes a commission percent with at most three decimals (1e-300% printed as written on the agreement)", async () => {
    const { token } = await createPrincipal();
    const send = (percent: number) => {
      const canonical = listingCanonical();
      canonical.listing.commission = { percent };
      return call("POST", "/api/documents", { token, body: { formKey: canonical.formKey, canonical } });
    };
    const tiny = await send(1e-300);
    expect(tiny.status).toBe(400);
    expect(((await json(tiny)).issues as { path: (string | number)[] }[]).map((i) => i.path.join("."))).toEqual([
      "canonical.listing.commission.percent",
    ]);
    expect((await send(2.125)).status).toBe(201);
  });

  it("puts the renewal decision on its first day, never before the agreement starts", async () => {
    const { token } = await createPrincipal();
    const canonical = listingCanonical();
    canonical.listing.period = { start: day(5), expiry: day(25) };
    const res = await call("POST", "/api/documents", { token, body: { formKey: canonical.formKey, canonical } });
    expect(res.status).toBe(201);
    const { id } = (await json(res)) as { id: string };
    expect(brief(await obligationsOf(token, id))).toEqual([
      ["renewal", isoDay(5), null],
      ["expiry", isoDay(25), null],
    ]);
  });
});

const FORMS = [
  {
    name: "agreement of purchase and sale",
    canonical: purchaseCanonical,
    signers: (c: any) => [
      ...c.purchase.buyers.map((p: any) => [p.name, "buyer"]),
      ...c.purchase.sellers.map((p: any) => [p.name, "seller"]),
    ],
    obligations: [
      ["deposit_due", isoDay(2), 45_000_00],
      ["condition_waiver", isoDay(7), null],
      ["condition_waiver", isoDay(9), null],
      ["condition_waiver", isoDay(10), null],
      ["closing", isoDay(60), null],
    ],
    words: ["Agreement of Purchase and Sale", "Ana Patel", "Raj Patel", "Lee Wong", "12 Elm St", "$910,000.00", "$45,000.00"],
  },
  {
    name: "listing agreement",
    canonical: listingCanonical,
    signers: (c: any) => [...c.listing.sellers.map((p: any) => [p.name, "seller"]), [c.listing.brokerage.name, "listing_brokerage"]],
    obligations: [
      ["renewal", isoDay(60), null],
      ["expiry", isoDay(90), null],
    ],
    words: [
      "Listing Agreement",
      "Mira Okafor",
      "Lakeshore Realty Inc.",
      "88 Harbour Rd",
      "$749,900.00",
      "2.5% of the sale price",
      `to ${longDay(90)}`,
    ],
  },
  {
    name: "buyer representation agreement",
    canonical: representationCanonical,
    signers: (c: any) => [
      ...c.representation.buyers.map((p: any) => [p.name, "buyer"]),
      [c.representation.brokerage.name, "buyer_brokerage"],
    ],
    obligations: [
      ["renewal", isoDay(90), null],
      ["expiry", isoDay(120), null],
    ],
    words: [
      "Buyer Representation Agreement",
      "Sofia Lindqvist",
      "Northgate Buyers Brokerage",
      "Ottawa west of the Rideau",
      `to ${longDay(120)}`,
    ],
  },
];

function longDay(days: number) {
  const d = day(days);
  return `${new Date(Date.UTC(d.year, d.month - 1, d.day)).toLocaleString("en-US", { month: "long", timeZone: "UTC" })} ${d.day}, ${d.year}`;
}

/** Creates, sends (sequential) and signs a document through the public flow; answers it with its sealed PDF as poppler reads it. */
async function signedThrough(owner: TestPrincipal, canonical: Record<string, any>, expectedSigners: string[][], dealId?: string) {
  const res = await call("POST", "/api/documents", {
    token: owner.token,
    body: { formKey: canonical.formKey, canonical, ...(dealId ? { dealId } : {}) },
  });
  expect(res.status, JSON.stringify(await res.clone().json())).toBe(201);
  const doc = await json(res);
  const sent = await sendForSignature(owner.token, doc.id, { mode: "sequential" });
  const envelope = await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }));
  // Derived from the form, in the table's order; only the first is up in sequential mode.
  expect(envelope.signers.map((s: { name: string; role: string }) => [s.name, s.role])).toEqual(expectedSigners);
  expect(envelope.signers.map((s: { status: string }) => s.status)).toEqual(expectedSigners.map((_, i) => (i === 0 ? "sent" : "pending")));
  // The signing page shows the form's text.
  const view = await json(await publicSign("GET", tokenOf(sent.links[0]!.url)));
  expect(view.document.title).toBe(envelope.document.title);
  await signInTurn(
    sent,
    envelope.signers.map((s: { email: string }) => s.email),
  );
  const pdf = await sealedPdf(owner, sent.envelopeId);
  return { doc, sent, view, envelope, ...(await poppler(pdf)) };
}

describe.each(FORMS)("the $name, end to end", (form) => {
  it("create → obligations with the deal → sequential envelope in the form's order → public signing → sealed PDF poppler reads and verifies", async () => {
    const owner = await createPrincipal();
    const deal = await createDeal(owner.token);
    const canonical = form.canonical() as Record<string, any>;
    const { doc, view, text, sig } = await signedThrough(owner, canonical, form.signers(canonical), deal.id);

    const obligations = await obligationsOf(owner.token, doc.id);
    expect(brief(obligations)).toEqual(form.obligations);
    expect(obligations.every((o) => o.dealId === deal.id)).toBe(true);

    const viewText = view.document.text.sections.flatMap((s: { lines: string[] }) => s.lines).join("\n");
    for (const words of form.words.slice(1)) expect(viewText).toContain(words);
    for (const words of form.words) expect(text).toContain(words);
    for (const [name] of form.signers(canonical)) expect(text).toContain(`/s/ ${name}`);
    expect(text).toContain("Certificate of completion");
    expect(sig).toContain("Signature Validation: Signature is Valid.");
    expect(sig).toContain("Total document signed");
  });
});

describe("amendments of a purchase agreement", () => {
  it("amends must name a signed purchase agreement of your organization: anything else is a 400 naming amendment.amends", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const offer = await createDocument(owner.token, purchaseCanonical()); // generated, not signed: edited, not amended
    const lease = await createDocument(owner.token, leaseCanonical());
    const foreign = await createDocument(stranger.token, purchaseCanonical());
    const amend = (amends: string, change = { waives: [0] }) =>
      call("POST", "/api/documents", {
        token: owner.token,
        body: { formKey: "on/amendment", canonical: amendmentCanonical(amends, change) },
      });
    for (const amends of [offer.id, lease.id, foreign.id, "no-such-document"]) {
      const res = await amend(amends);
      expect(res.status, amends).toBe(400);
      expect((await json(res)).issues).toEqual([
        expect.objectContaining({ field: "amendment.amends", path: ["canonical", "amendment", "amends"], code: "invalid_reference" }),
      ]);
    }
    // Another organization's agreement answers exactly like an id that does not exist.
    expect(await json(await amend(foreign.id))).toEqual(await json(await amend("no-such-document")));
  });

  it("an amendment keeps the agreement's rules: no price below the deposit, no completion before a deadline still standing", async () => {
    const owner = await createPrincipal();
    const canonical = purchaseCanonical(); // deposit $45,000 due day 2; conditions due days 7, 9, 10; completion day 60
    const buyersThenSellers = [
      ...canonical.purchase.buyers.map((p) => [p.name, "buyer"]),
      ...canonical.purchase.sellers.map((p) => [p.name, "seller"]),
    ];
    const { doc } = await signedThrough(owner, canonical, buyersThenSellers);
    const amend = (change: Parameters<typeof amendmentCanonical>[1]) =>
      call("POST", "/api/documents", {
        token: owner.token,
        body: { formKey: "on/amendment", canonical: amendmentCanonical(doc.id, change) },
      });
    const problems = async (res: Response) => {
      expect(res.status).toBe(400);
      return ((await json(res)).issues as { path: unknown[]; message: string }[]).map((i) => [i.path.join("."), i.message]);
    };

    expect(await problems(await amend({ priceCents: 100 }))).toEqual([
      ["canonical.amendment.price.cents", "The new price cannot be below the agreement's deposit of $45,000.00"],
    ]);
    // Closing on day 8 would come before the inspection (day 9) and status certificate (day 10) deadlines…
    expect(
      (await problems(await amend({ completion: day(8) }))).map(([path, message]) => [path, message!.match(/condition \d/)?.[0]]),
    ).toEqual([
      ["canonical.amendment.completion.date", "condition 2"],
      ["canonical.amendment.completion.date", "condition 3"],
    ]);
    expect(await problems(await amend({ completion: day(1) }))).toContainEqual([
      "canonical.amendment.completion.date",
      expect.stringContaining("the deposit falls due"),
    ]);
    // …unless this amendment waives them, or a signed one already has.
    expect((await amend({ completion: day(8), waives: [1, 2] })).status).toBe(201);
    await signedThrough(owner, amendmentCanonical(doc.id, { waives: [1, 2] }), buyersThenSellers);
    expect((await amend({ completion: day(8) })).status).toBe(201);
  });

  it("a signed amendment waives the financing condition and moves closing; a later one wins; through the queue", async () => {
    const owner = await createPrincipal();
    const deal = await createDeal(owner.token);
    const canonical = purchaseCanonical();
    const buyersThenSellers = [
      ...canonical.purchase.buyers.map((p) => [p.name, "buyer"]),
      ...canonical.purchase.sellers.map((p) => [p.name, "seller"]),
    ];
    const { doc } = await signedThrough(owner, canonical, buyersThenSellers, deal.id);
    const before = await obligationsOf(owner.token, doc.id);
    const waivers = before.filter((o) => o.type === "condition_waiver");
    expect(waivers).toHaveLength(3);

    // Only conditions the agreement has can be waived.
    const beyond = await call("POST", "/api/documents", {
      token: owner.token,
      body: { formKey: "on/amendment", canonical: amendmentCanonical(doc.id, { waives: [0, 3] }) },
    });
    expect(beyond.status).toBe(400);
    expect((await json(beyond)).issues.map((i: { path: unknown[] }) => i.path)).toEqual([["canonical", "amendment", "waives", 1]]);

    // Waive financing (index 0), move completion to day 45: signed by the agreement's parties, in its order.
    const first = await signedThrough(owner, amendmentCanonical(doc.id, { waives: [0], completion: day(45) }), buyersThenSellers);
    // The signers read what they amend: the agreement's property, price and parties, and the waived condition in its words.
    const amendmentWords = [
      "Agreement of Purchase and Sale of 12 Elm St, Toronto, ON for $910,000.00",
      "Seller: Lee Wong",
      "The buyer waives condition 1 (financing: Buyer arranging a first mortgage of $728,000) of the agreement",
    ];
    const firstView = first.view.document.text.sections.flatMap((s: { lines: string[] }) => s.lines).join(" ");
    for (const words of amendmentWords) expect(firstView).toContain(words);
    for (const words of amendmentWords) expect(first.text).toContain(words);
    for (const [name] of buyersThenSellers) expect(first.text).toContain(name!);
    expect(first.sig).toContain("Signature Validation: Signature is Valid.");
    await vi.waitFor(
      async () => expect((await obligationsOf(owner.token, doc.id)).find((o) => o.type === "closing")?.dueDate).toBe(isoDay(45)),
      { timeout: 15_000, interval: 100 },
    );
    const after = await obligationsOf(owner.token, doc.id);
    expect(brief(after)).toEqual([
      ["deposit_due", isoDay(2), 45_000_00],
      ["condition_waiver", isoDay(9), null],
      ["condition_waiver", isoDay(10), null],
      ["closing", isoDay(45), null],
    ]);
    // The financing row went; the others are the same rows as before, still on the deal.
    expect(after.filter((o) => o.type === "condition_waiver").map((o) => o.id)).toEqual([waivers[1]!.id, waivers[2]!.id]);
    expect(after.every((o) => o.dealId === deal.id)).toBe(true);

    // A second amendment: a new price and completion on day 50; the latest completed amendment wins.
    const second = await signedThrough(
      owner,
      amendmentCanonical(doc.id, { completion: day(50), priceCents: 895_000_00 }),
      buyersThenSellers,
    );
    expect(second.text).toContain("$895,000.00");
    await vi.waitFor(
      async () => expect((await obligationsOf(owner.token, doc.id)).find((o) => o.type === "closing")?.dueDate).toBe(isoDay(50)),
      { timeout: 15_000, interval: 100 },
    );
    const latest = await obligationsOf(owner.token, doc.id);
    expect(latest.filter((o) => o.type === "condition_waiver")).toHaveLength(2);
    expect(latest.find((o) => o.type === "closing")!.description).toContain("$895,000.00");
  });
});
