import type { EnvelopeField, StoredValue } from "../db/signatures";
import type { FieldIssue } from "../lib/errors";
import { MAX_DRAWN_SIGNATURE_BYTES } from "./schemas";

/**
 * A recipient's submitted field values checked against their fields (issue 44, part 4): each value of the type its
 * field takes, every required field filled (a required checkbox ticked), an option that was offered, a read-only
 * field left as the sender set it, the field's own limits. Every problem is named at once; nothing is kept unless
 * all are right. Name and e-mail fields take the recipient's own; a date left empty is the signing date, drawn at
 * seal time in the organization's time zone.
 */
export type Submitted = string | number | boolean;

export interface CheckedValues {
  values: Record<string, StoredValue>;
  /** Drawn signatures to store (PNG bytes) before the values naming them are written. */
  drawn: { fieldId: string; png: Uint8Array }[];
  issues: FieldIssue[];
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const PNG_DATA_URL = /^data:image\/png;base64,([A-Za-z0-9+/]+={0,2})$/;
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const MAX_TEXT = 1000;

const isRealDate = (s: string) => {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
};

/** The initials of a name: the first letter of each word ("Ελένη Παπαδοπούλου" → "ΕΠ"). */
export const initialsOf = (name: string) =>
  name
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => Array.from(w)[0]!.toLocaleUpperCase())
    .join("");

/** A drawn signature's PNG bytes, or why not. */
function drawnPng(value: string): Uint8Array | string {
  const m = PNG_DATA_URL.exec(value);
  if (!m) return 'Give "adopted" or a PNG data URL (data:image/png;base64,…)';
  if ((m[1]!.length * 3) / 4 > MAX_DRAWN_SIGNATURE_BYTES + 3) return `A drawn signature is at most ${MAX_DRAWN_SIGNATURE_BYTES / 1024} KB`;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(m[1]!), (c) => c.charCodeAt(0));
  } catch {
    return "The data URL is not valid base64";
  }
  if (bytes.length > MAX_DRAWN_SIGNATURE_BYTES) return `A drawn signature is at most ${MAX_DRAWN_SIGNATURE_BYTES / 1024} KB`;
  if (!PNG_MAGIC.every((b, i) => bytes[i] === b)) return "The image is not a PNG";
  return bytes;
}

/** The value a prefilled field stands at (the sender's), as stored. */
function prefilled(field: EnvelopeField): StoredValue | null {
  if (field.value === null) return null;
  if (field.type === "checkbox") return { checked: field.value === true };
  return { text: String(field.value) };
}

const same = (field: EnvelopeField, given: Submitted) =>
  field.type === "checkbox" ? (field.value === true) === (given === true) : String(field.value ?? "") === String(given);

export function checkFieldValues(
  signer: { name: string; email: string },
  fields: EnvelopeField[],
  given: Record<string, Submitted>,
): CheckedValues {
  const issues: FieldIssue[] = [];
  const values: Record<string, StoredValue> = {};
  const drawn: CheckedValues["drawn"] = [];
  const issue = (id: string, code: string, message: string) => issues.push({ field: `fields.${id}`, path: ["fields", id], code, message });
  const byId = new Map(fields.map((f) => [f.id, f]));
  for (const id of Object.keys(given)) if (!byId.has(id)) issue(id, "unknown_field", "You have no field with this id");

  for (const field of fields) {
    const value = given[field.id];
    const empty = value === undefined || value === "";
    if (field.type === "name" || field.type === "email") {
      values[field.id] = { text: field.type === "name" ? signer.name : signer.email };
      continue;
    }
    if (field.readOnly) {
      if (!empty && !same(field, value)) issue(field.id, "read_only", "This field is read-only: its value was set by the sender");
      const kept = prefilled(field);
      if (kept) values[field.id] = kept;
      continue;
    }
    if (empty) {
      const kept = prefilled(field);
      if (kept && !(field.type === "checkbox" && field.required && !field.value)) {
        values[field.id] = kept;
        continue;
      }
      if (field.required) issue(field.id, "required", `This ${field.type} field is required`);
      continue;
    }
    const wrong = (expected: string) => issue(field.id, "wrong_type", `Expected ${expected}`);
    switch (field.type) {
      case "checkbox":
        if (typeof value !== "boolean") wrong("true or false");
        else if (field.required && !value) issue(field.id, "required", "This checkbox must be ticked");
        else values[field.id] = { checked: value };
        break;
      case "date":
        if (typeof value !== "string" || !isRealDate(value)) wrong("a date as YYYY-MM-DD");
        else values[field.id] = { text: value };
        break;
      case "number": {
        if (typeof value !== "number" || !Number.isFinite(value)) {
          wrong("a number");
          break;
        }
        const v = field.validation;
        if (v?.min !== undefined && value < v.min) issue(field.id, "too_small", `At least ${v.min}`);
        else if (v?.max !== undefined && value > v.max) issue(field.id, "too_big", `At most ${v.max}`);
        else values[field.id] = { text: String(value) };
        break;
      }
      case "radio":
      case "dropdown":
        if (typeof value !== "string") wrong("one of the options");
        else if (!field.options?.includes(value)) issue(field.id, "not_an_option", `Choose one of: ${(field.options ?? []).join(", ")}`);
        else values[field.id] = { text: value };
        break;
      case "text": {
        if (typeof value !== "string") {
          wrong("text");
          break;
        }
        const max = field.validation?.maxLength ?? MAX_TEXT;
        if (/\p{Cc}/u.test(value)) issue(field.id, "invalid_characters", "One line of text, without control characters");
        else if (Array.from(value).length > max) issue(field.id, "too_long", `At most ${max} characters`);
        else if (field.validation?.pattern && !new RegExp(`^(?:${field.validation.pattern})$`, "u").test(value))
          issue(field.id, "pattern_mismatch", "The value does not have the expected form");
        else values[field.id] = { text: value };
        break;
      }
      case "signature":
      case "initials": {
        if (typeof value !== "string") {
          wrong('"adopted" or a PNG data URL');
          break;
        }
        if (value === "adopted") {
          values[field.id] = { adopted: field.type === "initials" ? initialsOf(signer.name) : signer.name };
          break;
        }
        const png = drawnPng(value);
        if (typeof png === "string") issue(field.id, "invalid_signature", png);
        else drawn.push({ fieldId: field.id, png });
        break;
      }
    }
  }
  return { values, drawn, issues };
}

/**
 * A pattern a sender may set: it compiles, and no quantified group holds a quantifier of its own (`(a+)+`, `(a|a*)*`),
 * the shape that backtracks exponentially; values are at most 1,000 characters besides.
 */
export function patternProblem(pattern: string): string | null {
  try {
    new RegExp(pattern, "u");
  } catch {
    return "Not a valid regular expression";
  }
  const stack: boolean[] = [];
  let quantifiedInside = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === "\\") {
      i++;
      continue;
    }
    if (ch === "[") {
      while (i < pattern.length && pattern[i] !== "]") i += pattern[i] === "\\" ? 2 : 1;
      continue;
    }
    if (ch === "(") {
      stack.push(quantifiedInside);
      quantifiedInside = false;
      continue;
    }
    if (ch === ")") {
      const inner = quantifiedInside;
      quantifiedInside = stack.pop() ?? false;
      const next = pattern[i + 1];
      if (next === "*" || next === "+" || next === "?" || next === "{") {
        if (inner) return "A quantified group may not hold a quantifier of its own, as in (a+)+";
        quantifiedInside = true;
      } else if (inner) quantifiedInside = true;
      continue;
    }
    if (ch === "*" || ch === "+" || ch === "{") quantifiedInside = true;
  }
  return null;
}
