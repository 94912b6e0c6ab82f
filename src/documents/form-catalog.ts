import { z } from "@hono/zod-openapi";
import { FORMS, isSignable } from "./forms";

/**
 * The forms as an integrator or an AI model needs them (GET /api/documents/forms, the draft route's prompt, the MCP
 * list_forms tool): key, title, signing roles, and the canonical's JSON Schema, derived from the zod schema
 * POST /api/documents validates with, so the two cannot drift.
 */
const schemas = new Map<string, Record<string, unknown>>();

/** A form's canonical as JSON Schema (input side: what a client sends), computed once per isolate. */
export function formJsonSchema(formKey: string): Record<string, unknown> {
  let schema = schemas.get(formKey);
  if (!schema) {
    const form = FORMS[formKey];
    if (!form) throw new Error(`No form ${formKey}`);
    schema = z.toJSONSchema(form.canonical, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    schemas.set(formKey, schema);
  }
  return schema;
}

export interface FormSummary {
  formKey: string;
  title: string;
  roles: string[];
  signable: boolean;
  schema: Record<string, unknown>;
}

export const listForms = (): FormSummary[] =>
  Object.values(FORMS).map((f) => ({
    formKey: f.key,
    title: f.title,
    roles: f.roles,
    signable: isSignable(f),
    schema: formJsonSchema(f.key),
  }));
