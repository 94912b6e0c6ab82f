import type { RoleField, UploadFormField, UploadPage } from "../db/documents";
import type { EnvelopeField, RecipientKind } from "../db/signatures";
import type { SigningParty } from "../documents/service";
import { type FieldIssue, Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import { checkFieldValues, patternProblem } from "./field-values";
import type { FieldInput, SignatureRequest } from "./schemas";
import type { z } from "@hono/zod-openapi";

/**
 * Who an envelope goes to, in what order, and what each fills (issue 44, parts 2 and 3). A typed form's parties are
 * all signers without fields, in one order (parallel) or one order each (sequential). An uploaded document's
 * recipients and fields are the sender's, checked against the document all at once: every problem is named in one
 * 422 (invalid_recipients), nothing is written.
 */
export interface Recipient {
  key: string | null;
  name: string;
  email: string;
  role: string;
  kind: RecipientKind;
  order: number;
  fields: EnvelopeField[] | null;
  /** Issue 45: signs through a view URL (embedded) or a host session (hostUserId); never mailed a link. */
  embedded: boolean;
  hostUserId: string | null;
}

export function formRecipients(parties: SigningParty[], mode: "parallel" | "sequential"): Recipient[] {
  return parties.map((p, i) => ({
    key: null,
    name: p.name,
    email: p.email,
    role: p.role,
    kind: "signer",
    order: mode === "sequential" ? i + 1 : 1,
    fields: null,
    embedded: false,
    hostUserId: null,
  }));
}

const CHOICES = new Set(["radio", "dropdown"]);
/** A box may end this far past its page's edge (rounding in a client's percent arithmetic). */
const EDGE = 0.001;

type UploadInput = Pick<SignatureRequest, "recipients" | "fields" | "formValues" | "signers">;

export function uploadRecipients(
  doc: {
    pages: UploadPage[] | null;
    formFields: UploadFormField[] | null;
    fields: RoleField[] | null;
    tagsStatus: "pending" | "done" | "failed" | null;
  },
  input: UploadInput,
): Recipient[] {
  const issues: FieldIssue[] = [];
  const issue = (path: (string | number)[], code: string, message: string) => issues.push({ field: path.join("."), path, code, message });
  const pages = doc.pages ?? [];
  const recipients = input.recipients ?? [];
  const given = input.fields ?? tagFields(doc, recipients, issue);
  if (input.signers) issue(["signers"], "not_for_uploads", "An uploaded document is sent to recipients (with their fields), not signers");
  if (recipients.length === 0) issue(["recipients"], "required", "An uploaded document needs at least one recipient");

  const byKey = new Map<string, (typeof recipients)[number]>();
  const emails = new Map<string, number>();
  for (const [i, r] of recipients.entries()) {
    if (byKey.has(r.key)) issue(["recipients", i, "key"], "duplicate_key", `The key ${r.key} is given to more than one recipient`);
    else byKey.set(r.key, r);
    const email = r.email.toLowerCase();
    if (emails.has(email)) issue(["recipients", i, "email"], "duplicate_email", "Each recipient needs an address of their own");
    emails.set(email, i);
  }
  if (recipients.length > 0 && recipients.every((r) => r.role === "cc"))
    issue(["recipients"], "no_actor", "Someone besides a cc must sign, approve or view the document");

  const owners = new Map([...byKey].map(([key, r]) => [key, r.role]));
  const fields = placeFields(
    pages,
    owners,
    given.map((f) => ({ ...f, owner: f.recipient })),
    issue,
    "recipient",
  );
  for (const [i, r] of recipients.entries())
    if (r.role === "signer" && !fields.get(r.key)?.some((f) => f.type === "signature"))
      issue(["recipients", i], "signature_field_required", `The signer ${r.key} has no signature field`);

  const formFields = new Map((doc.formFields ?? []).map((f) => [f.name, f]));
  for (const [name, value] of Object.entries(input.formValues ?? {})) {
    const f = formFields.get(name);
    if (!f) issue(["formValues", name], "unknown_form_field", "The PDF has no form field with this name");
    else if (f.type === "signature") issue(["formValues", name], "not_fillable", "A signature form field is not filled with a value");
    else if ((f.type === "checkbox") !== (typeof value === "boolean"))
      issue(["formValues", name], "wrong_type", f.type === "checkbox" ? "A checkbox takes true or false" : `A ${f.type} field takes text`);
  }

  if (issues.length > 0)
    throw new Unprocessable("invalid_recipients", `${issues.length} problem(s) with the recipients and fields`, issues);
  return recipients.map((r) => ({
    key: r.key,
    name: r.name,
    email: r.email,
    role: r.role,
    kind: r.role,
    order: r.order,
    fields: r.role === "signer" || r.role === "approver" ? (fields.get(r.key) ?? []) : null,
    embedded: r.embedded ?? false,
    hostUserId: r.inPerson?.hostUserId ?? null,
  }));
}

/** A field as a send (its recipient's key) or a template (its role's key) gives it: `owner` is that key. */
export type FieldSpec = Omit<z.infer<typeof FieldInput>, "recipient"> & { owner: string };
type Issue = (path: (string | number)[], code: string, message: string) => void;

/**
 * Fields checked against the document's pages and their owners (a recipient or a template's role, `ownerKey` names
 * which in the messages): each problem goes to `issue` under `fields.<i>`; the answer is each owner's placed fields.
 */
export function placeFields(
  pages: UploadPage[],
  owners: Map<string, RecipientKind>,
  specs: FieldSpec[],
  issue: Issue,
  ownerKey: "recipient" | "role",
): Map<string, EnvelopeField[]> {
  const fields = new Map<string, EnvelopeField[]>();
  for (const [i, f] of specs.entries()) {
    const at = (key: string) => ["fields", i, key];
    const kind = owners.get(f.owner);
    if (!kind) issue(at(ownerKey), `unknown_${ownerKey}`, `No ${ownerKey} has the key ${f.owner}`);
    else if (kind === "viewer" || kind === "cc") issue(at(ownerKey), "no_fields_for_role", `A ${kind} fills no fields; ${f.owner} is one`);
    if (f.page > pages.length) issue(at("page"), "page_out_of_range", `The document has ${pages.length} page(s)`);
    if (f.x + f.width > 100 + EDGE) issue(at("width"), "outside_page", "The field runs past the page's right edge (x + width > 100)");
    if (f.y + f.height > 100 + EDGE) issue(at("height"), "outside_page", "The field runs past the page's bottom edge (y + height > 100)");
    if (CHOICES.has(f.type) && !f.options?.length) issue(at("options"), "options_required", `A ${f.type} field needs its options`);
    if (!CHOICES.has(f.type) && f.options) issue(at("options"), "options_not_allowed", `A ${f.type} field takes no options`);
    if (f.readOnly && f.value === undefined) issue(at("value"), "value_required", "A read-only field needs the value it shows");
    const v = f.validation;
    const pattern = v?.pattern;
    const patternBad = pattern ? (f.type === "text" ? patternProblem(pattern) : "Only a text field takes a pattern") : null;
    if (patternBad) issue(at("validation"), "invalid_pattern", patternBad);
    if (v?.min !== undefined && v.max !== undefined && v.min > v.max) issue(at("validation"), "invalid_range", "min is above max");
    if ((v?.min !== undefined || v?.max !== undefined) && f.type !== "number")
      issue(at("validation"), "invalid_range", "Only a number field takes min and max");
    if (f.value !== undefined) {
      // The sender's value keeps the field's own rules: what a recipient could not enter, the sender cannot either.
      const broken = prefillProblem(f.type, f.value, f.options) ?? (patternBad ? null : ruleProblem(f.type, f.value, v, f.options));
      if (broken) issue(at("value"), "invalid_value", broken);
    }
    if (kind) {
      const list = fields.get(f.owner) ?? [];
      list.push({
        id: newId(),
        type: f.type,
        page: f.page,
        x: f.x,
        y: f.y,
        width: f.width,
        height: f.height,
        name: f.name ?? null,
        required: f.required ?? (f.type === "signature" || f.type === "initials"),
        readOnly: f.readOnly ?? false,
        value: f.value ?? null,
        options: f.options ?? null,
        validation: f.validation ?? null,
      });
      fields.set(f.owner, list);
    }
  }
  return fields;
}

/** Why `value` does not suit a field (its type, options and validation), or null: a sender's prefill, a template use's value. */
export function valueProblem(
  f: Pick<EnvelopeField, "type"> & { options?: string[] | null; validation?: EnvelopeField["validation"] },
  value: string | number | boolean,
): string | null {
  return (
    prefillProblem(f.type, value, f.options ?? undefined) ?? ruleProblem(f.type, value, f.validation ?? undefined, f.options ?? undefined)
  );
}

/**
 * Issue 45 part 2: a send that gives no fields takes the document's own, from its text tags, each for the recipient
 * whose key is its role; a role no recipient has is named once (its fields are left out of the other checks). While
 * the tags are still being found there are none yet to take, and a send without fields waits for them.
 */
function tagFields(
  doc: { fields: RoleField[] | null; tagsStatus: "pending" | "done" | "failed" | null },
  recipients: { key: string }[],
  issue: (path: (string | number)[], code: string, message: string) => void,
): NonNullable<UploadInput["fields"]> {
  if (doc.tagsStatus === "pending")
    issue(["fields"], "tags_pending", "The document's text tags are still being found: send once its tagsStatus is done, or give fields");
  const keys = new Set(recipients.map((r) => r.key));
  const missing = [...new Set((doc.fields ?? []).map((f) => f.role))].filter((role) => !keys.has(role));
  for (const role of missing)
    issue(["recipients"], "role_without_recipient", `The document's text tags name the role ${role}; no recipient has that key`);
  return (doc.fields ?? [])
    .filter((f) => keys.has(f.role))
    .map(({ role, name, value, options, validation, ...f }) => ({
      ...f,
      recipient: role,
      ...(name === null ? {} : { name }),
      ...(value === null ? {} : { value }),
      ...(options === null ? {} : { options }),
      ...(validation === null ? {} : { validation }),
    }));
}

/**
 * Why a prefilled value of the right type breaks its field's validation, or null: the check a recipient's own value
 * gets (field-values.ts), so what a recipient could not enter the sender cannot either.
 */
function ruleProblem(
  type: EnvelopeField["type"],
  value: string | number | boolean,
  validation: EnvelopeField["validation"] | undefined,
  options: string[] | undefined,
): string | null {
  const field: EnvelopeField = {
    id: "prefill",
    type,
    page: 1,
    x: 0,
    y: 0,
    width: 0,
    height: 0,
    name: null,
    required: false,
    readOnly: false,
    value: null,
    options: options ?? null,
    validation: validation ?? null,
  };
  return checkFieldValues({ name: "", email: "" }, [field], { prefill: value }).issues[0]?.message ?? null;
}

/** Why a prefilled value does not suit its field, or null. */
function prefillProblem(type: EnvelopeField["type"], value: string | number | boolean, options: string[] | undefined): string | null {
  if (type === "checkbox") return typeof value === "boolean" ? null : "A checkbox's value is true or false";
  if (type === "number") return typeof value === "number" ? null : "A number field's value is a number";
  if (type === "date") return typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value) ? null : "A date is YYYY-MM-DD";
  if (CHOICES.has(type)) return typeof value === "string" && options?.includes(value) ? null : "The value must be one of the options";
  if (type === "signature" || type === "initials" || type === "name" || type === "email")
    return `A ${type} field is filled by its recipient, not prefilled`;
  return typeof value === "string" ? null : "A text field's value is text";
}
