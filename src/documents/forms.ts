import { z } from "@hono/zod-openapi";
import { oneLineText } from "../lib/validation";
import { AmendmentCanonical, amendmentForm } from "./forms/amendment";
import { ListingCanonical, listingForm, RepresentationCanonical, representationForm } from "./forms/agency";
import { CalendarDate, dayNumber, Party, Provenance } from "./forms/parts";
import { PurchaseCanonical, purchaseForm } from "./forms/purchase";
import type { FormDefinition } from "./forms/definition";

export type { FormDefinition, SigningParty } from "./forms/definition";

/**
 * The forms a document can be generated from. A form is typed when its canonical draft has a schema the signing
 * parties derive from (spec: Rule 1 of Endpoints, "a typed standard-form document"); the Ontario standard lease is
 * the typed standard form (DESIGN.md contract 4). The free-form letter is generated and stored like any document
 * but names no parties, so it cannot be sent for signature.
 */

/** on/standard-lease (DESIGN.md contract 4): the typed standard form. */
export const LeaseCanonical = z
  .strictObject({
    schemaVersion: z.literal(1),
    formKey: z.literal("on/standard-lease"),
    lease: z.strictObject({
      tenants: z.array(Party).min(1).max(10),
      landlords: z.array(Party).min(1).max(10),
      property: z.strictObject({
        address: z.strictObject({ street: oneLineText(200), city: oneLineText(100), province: oneLineText(100) }),
      }),
      term: z
        .strictObject({ commencement: CalendarDate, end: CalendarDate.optional() })
        .refine((t) => !t.end || dayNumber(t.end) > dayNumber(t.commencement), {
          message: "The term must end after it commences",
          path: ["end"],
          params: { code: "invalid_range" },
        }),
      monthlyRent: z.strictObject({ cents: z.int().min(0).max(100_000_000_00) }),
      deposit: z.strictObject({ cents: z.int().min(0).max(100_000_000_00), dueDate: CalendarDate.optional() }).optional(),
    }),
    provenance: Provenance,
  })
  .openapi("LeaseCanonical");
export type LeaseCanonical = z.infer<typeof LeaseCanonical>;

/** generic/free-form: a titled text, generated and kept, not signable (no parties derive from it). */
export const FreeFormCanonical = z
  .strictObject({
    schemaVersion: z.literal(1),
    formKey: z.literal("generic/free-form"),
    title: oneLineText(200),
    body: z.string().min(1).max(100_000),
    provenance: Provenance,
  })
  .openapi("FreeFormCanonical");

export const FORMS: Record<string, FormDefinition> = {
  "on/standard-lease": {
    key: "on/standard-lease",
    title: "Residential Tenancy Agreement (Standard Form of Lease), Ontario",
    canonical: LeaseCanonical,
    roles: ["landlord", "tenant"],
    parties: (canonical) => {
      const { lease } = canonical as LeaseCanonical;
      return [...lease.landlords.map((p) => ({ ...p, role: "landlord" })), ...lease.tenants.map((p) => ({ ...p, role: "tenant" }))];
    },
  },
  "generic/free-form": { key: "generic/free-form", title: "Free-form document", canonical: FreeFormCanonical, roles: [] },
  [purchaseForm.key]: purchaseForm,
  [listingForm.key]: listingForm,
  [representationForm.key]: representationForm,
  [amendmentForm.key]: amendmentForm,
};

/** Every form's canonical schema, for the union POST /api/documents validates with (one named schema each). */
export const CANONICALS = [
  LeaseCanonical,
  FreeFormCanonical,
  PurchaseCanonical,
  ListingCanonical,
  RepresentationCanonical,
  AmendmentCanonical,
] as const;
export const isSignable = (form: FormDefinition) => Boolean(form.parties || form.amendsPurchase);
/** The forms a person signs: the draft route picks one of these. */
export const SIGNABLE_FORM_KEYS = Object.values(FORMS)
  .filter(isSignable)
  .map((f) => f.key);

export const FORM_KEYS = Object.keys(FORMS) as [string, ...string[]];
