// Canonicals of the forms of issue 31, free of workerd imports so the Node render bench can use them too.

/** A calendar day `days` from today (UTC), as the forms take it, and as the obligations list shows it. */
export const day = (days: number) => {
  const d = new Date(Date.now() + days * 86_400_000);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
};
export const isoDay = (days: number) => `${new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)}T00:00:00.000Z`;

const unique = () => crypto.randomUUID().slice(0, 8);

/** An offer on 12 Elm St with three conditions: financing (index 0), inspection (1), status certificate (2). */
export function purchaseCanonical() {
  const u = unique();
  return {
    schemaVersion: 1,
    formKey: "on/agreement-of-purchase-and-sale",
    purchase: {
      buyers: [
        { name: "Ana Patel", email: `ana.${u}@buyer.test` },
        { name: "Raj Patel", email: `raj.${u}@buyer.test` },
      ],
      sellers: [{ name: "Lee Wong", email: `lee.${u}@seller.test` }],
      property: { address: { street: "12 Elm St", city: "Toronto", province: "ON" } },
      price: { cents: 910_000_00 },
      deposit: { cents: 45_000_00, dueDate: day(2) },
      conditions: [
        { type: "financing", description: "Buyer arranging a first mortgage of $728,000", waiverDeadline: day(7) },
        { type: "inspection", description: "Home inspection satisfactory to the buyer", waiverDeadline: day(9) },
        { type: "status_certificate", description: "Review of the status certificate by the buyer's lawyer", waiverDeadline: day(10) },
      ],
      irrevocableUntil: day(1),
      completion: { date: day(60) },
    },
    provenance: { aiDrafted: false },
  };
}

export function listingCanonical() {
  const u = unique();
  return {
    schemaVersion: 1,
    formKey: "on/listing-agreement",
    listing: {
      sellers: [{ name: "Mira Okafor", email: `mira.${u}@seller.test` }],
      brokerage: { name: "Lakeshore Realty Inc.", email: `listings.${u}@lakeshore.test` },
      property: { address: { street: "88 Harbour Rd", city: "Kingston", province: "ON" } },
      listPrice: { cents: 749_900_00 },
      period: { start: day(0), expiry: day(90) },
      commission: { percent: 2.5 },
      holdoverDays: 60,
    },
    provenance: { aiDrafted: false },
  };
}

export function representationCanonical() {
  const u = unique();
  return {
    schemaVersion: 1,
    formKey: "on/buyer-representation-agreement",
    representation: {
      buyers: [{ name: "Sofia Lindqvist", email: `sofia.${u}@buyer.test` }],
      brokerage: { name: "Northgate Buyers Brokerage", email: `agents.${u}@northgate.test` },
      area: "Detached houses in Ottawa west of the Rideau",
      period: { start: day(0), expiry: day(120) },
    },
    provenance: { aiDrafted: false },
  };
}

export function amendmentCanonical(
  amends: string,
  change: { waives?: number[]; completion?: ReturnType<typeof day>; priceCents?: number; notes?: string } = {},
) {
  return {
    schemaVersion: 1,
    formKey: "on/amendment",
    amendment: {
      amends,
      waives: change.waives ?? [],
      ...(change.completion ? { completion: { date: change.completion } } : {}),
      ...(change.priceCents !== undefined ? { price: { cents: change.priceCents } } : {}),
      ...(change.notes ? { notes: change.notes } : {}),
    },
    provenance: { aiDrafted: false },
  };
}
