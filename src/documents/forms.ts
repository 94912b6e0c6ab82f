import { z } from "@hono/zod-openapi";
import { oneLineText } from "../lib/validation";

/**
 * The forms a document can be generated from. A form is typed when its canonical draft has a schema the signing
 * parties derive from (spec: Rule 1 of Endpoints, "a typed standard-form document"); the Ontario standard lease is
 * the typed standard form (DESIGN.md contract 4). The free-form letter is generated and stored like any document
 * but names no parties, so it cannot be sent for signature.
 */
export interface SigningParty {
  name: string;
  email: string;
  role: string;
}

export interface FormDefinition {
  key: string;
  title: string;
  canonical: z.ZodType<Record<string, unknown>>;
  /** The parties who sign a document of this form, from its canonical draft; absent for untyped forms. */
  parties?: (canonical: Record<string, unknown>) => SigningParty[];
}

const Party = z.strictObject({ name: oneLineText(200), email: z.email().max(254) });

const CalendarDate = z
  .strictObject({ year: z.int().min(1900).max(2200), month: z.int().min(1).max(12), day: z.int().min(1).max(31) })
  .refine((d) => new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDate() === d.day, { message: "Not a calendar date", params: { code: "invalid_date" } });
const dayNumber = (d: { year: number; month: number; day: number }) => Date.UTC(d.year, d.month - 1, d.day);

const Provenance = z.strictObject({ aiDrafted: z.boolean() });

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
        .refine((t) => !t.end || dayNumber(t.end) > dayNumber(t.commencement), { message: "The term must end after it commences", path: ["end"], params: { code: "invalid_range" } }),
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
    parties: (canonical) => {
      const { lease } = canonical as LeaseCanonical;
      return [...lease.landlords.map((p) => ({ ...p, role: "landlord" })), ...lease.tenants.map((p) => ({ ...p, role: "tenant" }))];
    },
  },
  "generic/free-form": { key: "generic/free-form", title: "Free-form document", canonical: FreeFormCanonical },
};

export const FORM_KEYS = Object.keys(FORMS) as [string, ...string[]];
