import { z } from "@hono/zod-openapi";
import type { DerivedObligation, DocumentText, FormDefinition } from "./definition";
import { freeText, oneLineText } from "../../lib/validation";
import {
  Address,
  AGREEMENT_RENEWAL_DAYS,
  Brokerage,
  dollars,
  inOrder,
  isoDate,
  longDate,
  Money,
  oneLineAddress,
  Party,
  partyLines,
  Period,
  Provenance,
} from "./parts";

/**
 * The two agency agreements: a seller's listing agreement with the listing brokerage, and a buyer's
 * representation agreement with the buyer's brokerage. Both run for a period; their obligations are its expiry and
 * a renewal decision 30 days before it. Our own wording, not the association's forms.
 */
export const LISTING_FORM = "on/listing-agreement";
export const REPRESENTATION_FORM = "on/buyer-representation-agreement";
const LISTING_TITLE = "Listing Agreement (Ontario)";
const REPRESENTATION_TITLE = "Buyer Representation Agreement (Ontario)";

const Commission = z
  .strictObject({
    percent: z
      .number()
      .min(0.001)
      .max(100)
      .multipleOf(0.001)
      .optional()
      .openapi({ description: "Of the sale price, at most three decimals, e.g. 2.5" }),
    cents: Money.shape.cents.optional().openapi({ description: "A fixed amount instead of (or on top of) a percentage" }),
  })
  .refine((c) => c.percent !== undefined || c.cents !== undefined, {
    message: "Give the commission as a percent, an amount in cents, or both",
    params: { code: "required" },
  });
type Commission = z.infer<typeof Commission>;

const HoldoverDays = z
  .int()
  .min(0)
  .max(365)
  .openapi({ description: "Days after expiry during which a sale to a buyer introduced during the period still earns the commission" });

export const ListingCanonical = z
  .strictObject({
    schemaVersion: z.literal(1),
    formKey: z.literal(LISTING_FORM),
    listing: z.strictObject({
      sellers: z.array(Party).min(1).max(10),
      brokerage: Brokerage,
      property: z.strictObject({ address: Address }),
      listPrice: Money,
      period: Period,
      commission: Commission,
      holdoverDays: HoldoverDays,
      notes: freeText(4_000).optional(),
    }),
    provenance: Provenance,
  })
  .openapi("ListingAgreementCanonical");
export type ListingCanonical = z.infer<typeof ListingCanonical>;

export const RepresentationCanonical = z
  .strictObject({
    schemaVersion: z.literal(1),
    formKey: z.literal(REPRESENTATION_FORM),
    representation: z.strictObject({
      buyers: z.array(Party).min(1).max(10),
      brokerage: Brokerage,
      area: oneLineText(500).openapi({ description: "Where, and what kind of property, the buyer is looking for" }),
      period: Period,
      commission: Commission.optional(),
      holdoverDays: HoldoverDays.optional(),
      notes: freeText(4_000).optional(),
    }),
    provenance: Provenance,
  })
  .openapi("BuyerRepresentationAgreementCanonical");
export type RepresentationCanonical = z.infer<typeof RepresentationCanonical>;

const commissionWords = (c: Commission) =>
  [c.percent !== undefined ? `${c.percent}% of the sale price` : null, c.cents !== undefined ? dollars(c.cents) : null]
    .filter(Boolean)
    .join(" plus ");
const notesLines = (notes?: string) => (notes ? notes.split(/\r?\n/) : []);

function periodObligations(what: string, period: z.infer<typeof Period>): DerivedObligation[] {
  const notice = isoDate(period.expiry, -AGREEMENT_RENEWAL_DAYS);
  const start = isoDate(period.start);
  // A period shorter than the notice: the decision falls on its first day, never before the agreement exists.
  const renewal =
    notice >= start
      ? {
          description: `Decide whether to renew the ${what.toLowerCase()} (${AGREEMENT_RENEWAL_DAYS} days before it expires)`,
          dueDate: notice,
        }
      : {
          description: `Decide whether to renew the ${what.toLowerCase()} (it runs less than ${AGREEMENT_RENEWAL_DAYS} days: from its first day)`,
          dueDate: start,
        };
  return [
    { type: "expiry", description: `${what} expires`, dueDate: isoDate(period.expiry), amountCents: null },
    { type: "renewal", ...renewal, amountCents: null },
  ];
}

function listingText({ listing: l }: ListingCanonical): DocumentText {
  const where = oneLineAddress(l.property.address);
  return {
    title: LISTING_TITLE,
    sections: [
      { heading: "Parties", lines: [...partyLines("Seller", l.sellers), `Listing brokerage: ${l.brokerage.name} (${l.brokerage.email})`] },
      { heading: "Property", lines: [where] },
      {
        heading: "Listing",
        lines: [
          `List price: ${dollars(l.listPrice.cents)}`,
          `From ${longDate(l.period.start)} to ${longDate(l.period.expiry)}`,
          `Commission: ${commissionWords(l.commission)}`,
          `Holdover: ${l.holdoverDays} days`,
        ],
      },
      {
        heading: "Clauses",
        lines: [
          `1. The seller gives ${l.brokerage.name} the exclusive right to offer the property at ${where} for sale at ${dollars(l.listPrice.cents)}, from ${longDate(l.period.start)} until the end of ${longDate(l.period.expiry)}.`,
          `2. The seller pays the brokerage a commission of ${commissionWords(l.commission)} on a sale agreed during the listing period.`,
          `3. The commission is also due on a sale agreed within ${l.holdoverDays} days after the listing expires to a buyer introduced to the property during it.`,
          "4. The seller refers to the brokerage every enquiry about the property received during the listing period.",
          ...notesLines(l.notes),
        ],
      },
    ],
  };
}

function representationText({ representation: r }: RepresentationCanonical): DocumentText {
  return {
    title: REPRESENTATION_TITLE,
    sections: [
      { heading: "Parties", lines: [...partyLines("Buyer", r.buyers), `Buyer's brokerage: ${r.brokerage.name} (${r.brokerage.email})`] },
      { heading: "Search", lines: [r.area, `From ${longDate(r.period.start)} to ${longDate(r.period.expiry)}`] },
      {
        heading: "Clauses",
        lines: [
          `1. The buyer appoints ${r.brokerage.name} to represent the buyer in finding and buying a property (${r.area}), from ${longDate(r.period.start)} until the end of ${longDate(r.period.expiry)}.`,
          r.commission
            ? `2. The brokerage is paid a commission of ${commissionWords(r.commission)}, first from the seller's side where the listing offers one; the buyer pays any balance.`
            : "2. The brokerage is paid by the seller's side of any purchase; this agreement sets no commission payable by the buyer.",
          `3. During the period the buyer works with no other brokerage on such a purchase${r.holdoverDays ? `, and a purchase of a property first shown by the brokerage within ${r.holdoverDays} days after expiry is covered too` : ""}.`,
          ...notesLines(r.notes),
        ],
      },
    ],
  };
}

export const listingForm: FormDefinition = {
  key: LISTING_FORM,
  title: LISTING_TITLE,
  canonical: ListingCanonical,
  roles: ["seller", "listing_brokerage"],
  parties: (canonical) => {
    const { listing } = canonical as ListingCanonical;
    return inOrder([listing.sellers, "seller"], [[listing.brokerage], "listing_brokerage"]);
  },
  text: (canonical) => listingText(canonical as ListingCanonical),
  obligations: (canonical) => periodObligations("Listing agreement", (canonical as ListingCanonical).listing.period),
};

export const representationForm: FormDefinition = {
  key: REPRESENTATION_FORM,
  title: REPRESENTATION_TITLE,
  canonical: RepresentationCanonical,
  roles: ["buyer", "buyer_brokerage"],
  parties: (canonical) => {
    const { representation } = canonical as RepresentationCanonical;
    return inOrder([representation.buyers, "buyer"], [[representation.brokerage], "buyer_brokerage"]);
  },
  text: (canonical) => representationText(canonical as RepresentationCanonical),
  obligations: (canonical) =>
    periodObligations("Buyer representation agreement", (canonical as RepresentationCanonical).representation.period),
};
