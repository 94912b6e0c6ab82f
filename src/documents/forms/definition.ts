// What a form is, with no form in it: the leaf the forms of this folder and documents/{forms,render,obligations}.ts
// share, so a form module never imports the modules that list it (imports point down, docs/architecture.md).
import type { z } from "@hono/zod-openapi";

/** The obligation types of the spec (Obligation), closed. */
export const OBLIGATION_TYPES = ["closing", "condition_waiver", "deposit_due", "expiry", "renewal"] as const;
export type ObligationType = (typeof OBLIGATION_TYPES)[number];

/** A dated duty a form's canonical data implies (documents/obligations.ts stores it). */
export interface DerivedObligation {
  type: ObligationType;
  /** Tells apart obligations of one type in one document (a purchase agreement's conditions: their index). */
  key?: string;
  description: string;
  dueDate: string;
  amountCents: number | null;
}

export interface DocumentSection {
  heading: string;
  lines: string[];
}

/** A document's wording as sections of lines (the signing page shows it; documents/render.ts draws it as a PDF). */
export interface DocumentText {
  title: string;
  sections: DocumentSection[];
}

export interface SigningParty {
  name: string;
  email: string;
  role: string;
}

export interface FormDefinition {
  key: string;
  title: string;
  canonical: z.ZodType<Record<string, unknown>>;
  /** The signing roles, in signing order (GET /api/documents/forms). */
  roles: string[];
  /** The parties who sign a document of this form, from its canonical draft; absent for untyped forms. */
  parties?: (canonical: Record<string, unknown>) => SigningParty[];
  /** Signed by the parties of the purchase agreement it amends (on/amendment; documents/service.ts reads them). */
  amendsPurchase?: true;
  /** The form's wording (documents/render.ts has the lease's and the free form's); an amendment's names the agreement it amends. */
  text?: (canonical: Record<string, unknown>, amended?: Record<string, unknown>) => DocumentText;
  /** The obligations it implies (documents/obligations.ts has the lease's). */
  obligations?: (canonical: Record<string, unknown>) => DerivedObligation[];
}
