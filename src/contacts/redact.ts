import type { ErasureSubject } from "../db/schema";
import type { ContactRecord } from "./mapping";

/** What stands in for an erased name where a column cannot be empty. */
export const ERASED = "[erased]";

/**
 * What identifies the person in copied text: their id, e-mail, full name and phone numbers. A first or last name
 * alone is not searched for: "Lead" or "Sale" would take out every deal stage and type of every payload.
 */
export type Person = ErasureSubject;

export function personOf(c: ContactRecord): Person {
  const fullName = `${c.firstName} ${c.lastName}`;
  const phones = [c.phone, c.secondaryPhone].filter((w): w is string => typeof w === "string" && w.trim().length >= 2);
  return { id: c.id, emailKey: c.emailKey, fullName, phones, words: [fullName, c.email, ...phones].filter((w) => w.trim().length >= 2).sort((a, b) => b.length - a.length) };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The fields of a contact object (in an event or a stored answer) that identify the person. */
const PERSONAL_FIELDS = ["firstName", "lastName", "email", "phone", "secondaryPhone", "address", "notes", "preferences"];

/** `text` with every mention of the person (full name, e-mail, phone, in any case) replaced by ERASED. */
export function redactText(text: string, person: Person): string {
  if (person.words.length === 0) return text;
  const pattern = new RegExp(person.words.map((w) => (/^\w/u.test(w) && /\w$/u.test(w) ? `\\b${escapeRegExp(w)}\\b` : escapeRegExp(w))).join("|"), "giu");
  return text.replace(pattern, ERASED);
}

/**
 * A JSON document with the person taken out: the contact object itself (an object whose `id` is theirs) loses its
 * personal fields, and every string that names them (full name, e-mail, phone) has that part replaced. Structure,
 * ids, numbers, enum values and everything about other people stay. Text that names nobody comes back as the very
 * same string (not re-serialized), so a caller can tell "nothing to change" by identity.
 */
export function redactJson(text: string, person: Person): string {
  let changed = false;
  const scrubString = (s: string) => {
    const out = redactText(s, person);
    if (out !== s) changed = true;
    return out;
  };
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return scrubString(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === "object") {
      const obj = value as Record<string, unknown>;
      const isPerson = obj.id === person.id;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj)) {
        if (isPerson && PERSONAL_FIELDS.includes(k) && v !== null) {
          const erased = typeof v === "string" ? ERASED : null;
          if (erased !== v) changed = true;
          out[k] = erased;
        } else out[k] = walk(v);
      }
      return out;
    }
    return value;
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return scrubString(text);
  }
  // Plain text that happens to parse (a number, a quoted string) is still text: only objects and arrays are JSON here.
  if (parsed === null || typeof parsed !== "object") return scrubString(text);
  const out = JSON.stringify(walk(parsed));
  return changed ? out : text;
}
