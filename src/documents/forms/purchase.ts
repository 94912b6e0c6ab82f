import { z } from "@hono/zod-openapi";
import type { DerivedObligation, DocumentText, FormDefinition } from "./definition";
import { freeText, oneLineText } from "../../lib/validation";
import {
  Address,
  CalendarDate,
  dayNumber,
  dollars,
  inOrder,
  isoDate,
  longDate,
  Money,
  oneLineAddress,
  Party,
  partyLines,
  Provenance,
} from "./parts";

/**
 * on/agreement-of-purchase-and-sale: an offer to buy a property, signed by the buyers, then the sellers.
 * Our own wording: this is not the Ontario Real Estate Association's form. Its obligations are the deposit, one
 * waiver deadline per condition and the closing; a signed amendment (forms/amendment.ts) waives conditions, moves
 * the completion date or changes the price from then on.
 */
export const PURCHASE_FORM = "on/agreement-of-purchase-and-sale";
const PURCHASE_TITLE = "Agreement of Purchase and Sale (Ontario)";
export const CONDITION_TYPES = ["financing", "inspection", "status_certificate", "sale_of_property", "other"] as const;
export const MAX_CONDITIONS = 20;

const Condition = z.strictObject({
  type: z.enum(CONDITION_TYPES),
  description: oneLineText(500),
  waiverDeadline: CalendarDate.openapi({
    description: "The last day the buyer may waive (or fulfil) the condition; otherwise the agreement ends",
  }),
});

const PurchaseTerms = z.strictObject({
  buyers: z.array(Party).min(1).max(10),
  sellers: z.array(Party).min(1).max(10),
  property: z.strictObject({ address: Address, legalDescription: oneLineText(500).optional() }),
  price: Money,
  deposit: z.strictObject({
    cents: Money.shape.cents,
    dueDate: CalendarDate,
    heldBy: oneLineText(200).optional().openapi({ description: "Who holds the deposit in trust (usually the listing brokerage)" }),
  }),
  conditions: z
    .array(Condition)
    .max(MAX_CONDITIONS)
    .openapi({ description: "Each an obligation (condition_waiver) until waived; an amendment waives one by its index here" }),
  irrevocableUntil: CalendarDate.openapi({ description: "The offer stands until the end of this day" }),
  completion: z.strictObject({ date: CalendarDate }),
  inclusions: z.array(oneLineText(200)).max(50).optional().openapi({ description: "Chattels and fixtures included in the price" }),
  exclusions: z.array(oneLineText(200)).max(50).optional(),
  notes: freeText(4_000).optional(),
});
type PurchaseTerms = z.infer<typeof PurchaseTerms>;

/**
 * The rules between an agreement's fields, as signed and as amended (service.ts checks an amendment's new price and
 * completion date against them): nothing falls due after completion, and the deposit is at most the price. A waived
 * condition no longer has a deadline.
 */
export function purchaseRuleIssues(
  p: PurchaseTerms,
  waived: ReadonlySet<number> = new Set(),
): { path: (string | number)[]; message: string }[] {
  const closing = dayNumber(p.completion.date);
  return [
    ...(p.deposit.cents > p.price.cents ? [{ path: ["deposit", "cents"], message: "The deposit cannot exceed the price" }] : []),
    ...(dayNumber(p.deposit.dueDate) > closing
      ? [{ path: ["deposit", "dueDate"], message: "The deposit cannot fall due after completion" }]
      : []),
    ...(dayNumber(p.irrevocableUntil) > closing
      ? [{ path: ["completion", "date"], message: "The completion date cannot come before the offer's irrevocable date" }]
      : []),
    ...p.conditions.flatMap((c, i) =>
      !waived.has(i) && dayNumber(c.waiverDeadline) > closing
        ? [{ path: ["conditions", i, "waiverDeadline"], message: "A condition's waiver deadline cannot come after completion" }]
        : [],
    ),
  ];
}

export const PurchaseCanonical = z
  .strictObject({
    schemaVersion: z.literal(1),
    formKey: z.literal(PURCHASE_FORM),
    purchase: PurchaseTerms.superRefine((p, ctx) => {
      for (const issue of purchaseRuleIssues(p)) ctx.addIssue({ code: "custom", ...issue, params: { code: "invalid_range" } });
    }),
    provenance: Provenance,
  })
  .openapi("PurchaseAgreementCanonical");
export type PurchaseCanonical = z.infer<typeof PurchaseCanonical>;

/** What signed amendments changed, folded in order of completion (the latest completion date and price win). */
export interface PurchaseChanges {
  waived: number[];
  completion?: { year: number; month: number; day: number };
  priceCents?: number;
}
export const NO_CHANGES: PurchaseChanges = { waived: [] };

const CONDITION_WORDS: Record<(typeof CONDITION_TYPES)[number], string> = {
  financing: "arranging financing",
  inspection: "a home inspection satisfactory to the buyer",
  status_certificate: "the buyer's review of the condominium status certificate",
  sale_of_property: "the sale of the buyer's property",
  other: "the following",
};

export function purchaseText(canonical: PurchaseCanonical): DocumentText {
  const p = canonical.purchase;
  const where = oneLineAddress(p.property.address);
  const price = dollars(p.price.cents);
  const deposit = dollars(p.deposit.cents);
  const closing = longDate(p.completion.date);
  const conditions = p.conditions.map(
    (c, i) =>
      `${i + 1}. This agreement is conditional on ${CONDITION_WORDS[c.type]}: ${c.description}. Unless the buyer gives written notice waiving or fulfilling this condition by ${longDate(c.waiverDeadline)}, this agreement ends and the deposit is returned to the buyer in full.`,
  );
  return {
    title: PURCHASE_TITLE,
    sections: [
      { heading: "Parties", lines: [...partyLines("Buyer", p.buyers), ...partyLines("Seller", p.sellers)] },
      {
        heading: "Property",
        lines: [where, ...(p.property.legalDescription ? [`Legal description: ${p.property.legalDescription}`] : [])],
      },
      {
        heading: "Price and deposit",
        lines: [
          `Purchase price: ${price}`,
          `Deposit: ${deposit}, due ${longDate(p.deposit.dueDate)}${p.deposit.heldBy ? `, held in trust by ${p.deposit.heldBy}` : ""}`,
        ],
      },
      { heading: "Conditions", lines: conditions.length ? conditions : ["This agreement is not conditional on anything."] },
      ...(p.inclusions?.length ? [{ heading: "Included", lines: p.inclusions }] : []),
      ...(p.exclusions?.length ? [{ heading: "Excluded", lines: p.exclusions }] : []),
      {
        heading: "Clauses",
        lines: [
          `1. The buyer agrees to buy the property at ${where} from the seller for ${price}.`,
          `2. The buyer pays a deposit of ${deposit} by ${longDate(p.deposit.dueDate)}, credited toward the price on completion.`,
          `3. This offer can be accepted until the end of ${longDate(p.irrevocableUntil)}; after that it is void and the deposit is returned to the buyer.`,
          `4. The sale completes on ${closing}, when the seller gives vacant possession and the buyer pays the balance of the price.`,
          "5. A change to this agreement binds the parties only once every party has signed it.",
          ...(p.notes ? p.notes.split(/\r?\n/) : []),
        ],
      },
    ],
  };
}

export function purchaseObligations(canonical: PurchaseCanonical, changes: PurchaseChanges = NO_CHANGES): DerivedObligation[] {
  const p = canonical.purchase;
  const where = p.property.address.street;
  const waived = new Set(changes.waived);
  return [
    {
      type: "deposit_due",
      description: `Deposit due on the purchase of ${where}`,
      dueDate: isoDate(p.deposit.dueDate),
      amountCents: p.deposit.cents,
    },
    ...p.conditions.flatMap((c, i) =>
      waived.has(i)
        ? []
        : [
            {
              type: "condition_waiver" as const,
              key: String(i),
              description: `Last day to waive or fulfil condition ${i + 1} (${c.type}): ${c.description}`,
              dueDate: isoDate(c.waiverDeadline),
              amountCents: null,
            },
          ],
    ),
    {
      type: "closing",
      description: `Completion of the sale of ${where} for ${dollars(changes.priceCents ?? p.price.cents)}`,
      dueDate: isoDate(changes.completion ?? p.completion.date),
      amountCents: null,
    },
  ];
}

export const purchaseForm: FormDefinition = {
  key: PURCHASE_FORM,
  title: PURCHASE_TITLE,
  canonical: PurchaseCanonical,
  roles: ["buyer", "seller"],
  parties: (canonical) => {
    const { purchase } = canonical as PurchaseCanonical;
    return inOrder([purchase.buyers, "buyer"], [purchase.sellers, "seller"]);
  },
  text: (canonical) => purchaseText(canonical as PurchaseCanonical),
  obligations: (canonical) => purchaseObligations(canonical as PurchaseCanonical),
};
