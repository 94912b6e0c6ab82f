import { z } from "@hono/zod-openapi";
import type { DocumentText, FormDefinition } from "./definition";
import { freeText } from "../../lib/validation";
import { CalendarDate, dollars, longDate, Money, oneLineAddress, partyLines, Provenance } from "./parts";
import { MAX_CONDITIONS, NO_CHANGES, PURCHASE_FORM, type PurchaseCanonical, type PurchaseChanges } from "./purchase";

/**
 * on/amendment (docs/decisions/0028-typed-forms-and-amendments.md): a change to a signed agreement of purchase and sale
 * — conditions waived (by their index in `purchase.conditions`), a new completion date, a new price. It is signed by
 * the parties of the agreement it amends (documents/service.ts derives them) and implies no obligations of its own:
 * once signed, the amended agreement's obligations are re-synced with every signed amendment applied in order of
 * completion.
 */
export const AMENDMENT_FORM = "on/amendment";
const AMENDMENT_TITLE = "Amendment to Agreement of Purchase and Sale (Ontario)";

export const AmendmentCanonical = z
  .strictObject({
    schemaVersion: z.literal(1),
    formKey: z.literal(AMENDMENT_FORM),
    amendment: z
      .strictObject({
        amends: z
          .string()
          .min(1)
          .max(100)
          .openapi({ description: `The id of a signed ${PURCHASE_FORM} document of your organization (its envelope completed)` }),
        waives: z
          .array(
            z
              .int()
              .min(0)
              .max(MAX_CONDITIONS - 1),
          )
          .max(MAX_CONDITIONS)
          .refine((w) => new Set(w).size === w.length, { message: "A condition is waived once", params: { code: "duplicate" } })
          .openapi({ description: "Indexes into the amended agreement's purchase.conditions: the conditions the buyer waives" }),
        completion: z.strictObject({ date: CalendarDate }).optional().openapi({ description: "The new completion (closing) date" }),
        price: Money.optional().openapi({ description: "The new purchase price" }),
        notes: freeText(4_000).optional(),
      })
      .refine((a) => a.waives.length > 0 || a.completion || a.price || a.notes, {
        message: "An amendment changes something: waives a condition, moves completion, changes the price, or says so in notes",
        params: { code: "required" },
      }),
    provenance: Provenance,
  })
  .openapi("AmendmentCanonical");
export type AmendmentCanonical = z.infer<typeof AmendmentCanonical>;

/** Signed amendments, oldest completion first, folded into what they changed: the latest date and price win. */
export function foldAmendments(amendments: AmendmentCanonical[]): PurchaseChanges {
  return amendments.reduce<PurchaseChanges>(
    (acc, { amendment: a }) => ({
      waived: [...new Set([...acc.waived, ...a.waives])],
      completion: a.completion?.date ?? acc.completion,
      priceCents: a.price?.cents ?? acc.priceCents,
    }),
    NO_CHANGES,
  );
}

/**
 * The amendment's wording names what it changes: the agreement's property and parties, and each waived condition in
 * its words, so a signer reads what they agree to (`amended`, the signed agreement's canonical; absent, the id only).
 */
function amendmentText({ amendment: a }: AmendmentCanonical, amended?: PurchaseCanonical): DocumentText {
  const p = amended?.purchase;
  const agreement = p
    ? [
        `Agreement of Purchase and Sale of ${oneLineAddress(p.property.address)} for ${dollars(p.price.cents)}, document ${a.amends}`,
        ...partyLines("Buyer", p.buyers),
        ...partyLines("Seller", p.sellers),
      ]
    : [`Agreement of Purchase and Sale, document ${a.amends}`];
  const condition = (i: number) => (p?.conditions[i] ? ` (${p.conditions[i].type}: ${p.conditions[i].description})` : "");
  const changes = [
    ...a.waives.map(
      (i) => `The buyer waives condition ${i + 1}${condition(i)} of the agreement; the agreement is no longer conditional on it.`,
    ),
    ...(a.completion ? [`The completion date is changed to ${longDate(a.completion.date)}.`] : []),
    ...(a.price ? [`The purchase price is changed to ${dollars(a.price.cents)}.`] : []),
  ].map((line, i) => `${i + 1}. ${line}`);
  return {
    title: AMENDMENT_TITLE,
    sections: [
      { heading: "Agreement amended", lines: agreement },
      { heading: "Changes", lines: [...changes, ...(a.notes ? a.notes.split(/\r?\n/) : [])] },
      {
        heading: "Clauses",
        lines: [
          "Every other term of the agreement stays as it is.",
          "This amendment takes effect when every party to the agreement has signed it.",
        ],
      },
    ],
  };
}

export const amendmentForm: FormDefinition = {
  key: AMENDMENT_FORM,
  title: AMENDMENT_TITLE,
  canonical: AmendmentCanonical,
  roles: ["buyer", "seller"],
  amendsPurchase: true,
  text: (canonical, amended) => amendmentText(canonical as AmendmentCanonical, amended as PurchaseCanonical | undefined),
};
