import type { ErasureSubject } from "../db/schema";
import { type Matcher, matcherOf, mentionedIn, parseStructure, type Recognizer, replaceMentions } from "../lib/mentions";
import { COMMUNICATION_TYPES } from "../communications/schemas";
import type { ContactRecord } from "../contacts/service";

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
  return {
    id: c.id,
    emailKey: c.emailKey,
    fullName,
    phones,
    words: [fullName, c.email, ...phones].filter((w) => w.trim().length >= 2).sort((a, b) => b.length - a.length),
  };
}

/**
 * What a run of the erasure looks for and takes out. `nameIsTheirs`: no other contact of the organization has the
 * same full name, so a mention of the name is theirs; otherwise only their e-mail and phones are taken out, and the
 * name is left where it stands (it may be the other person's).
 */
export interface Scrub {
  person: Person;
  recognizer: Recognizer;
  /** What is replaced: e-mail and phones, and the name when it is theirs. */
  redacted: Matcher;
}

export function scrubOf(person: Person, nameIsTheirs: boolean): Scrub {
  const identifiers = matcherOf({ emails: [person.emailKey], phones: person.phones });
  const name = matcherOf({ names: [person.fullName] });
  const all = matcherOf({ ids: [person.id], emails: [person.emailKey], phones: person.phones, names: [person.fullName] });
  return {
    person,
    recognizer: { needles: all.needles, identifies: (t) => mentionedIn(t, identifiers), names: (t) => mentionedIn(t, name), nameIsTheirs },
    redacted: nameIsTheirs ? matcherOf({ emails: [person.emailKey], phones: person.phones, names: [person.fullName] }) : identifiers,
  };
}

/** The fields of a contact object (in an event or a stored answer) that identify the person. */
const PERSONAL_FIELDS = ["firstName", "lastName", "email", "phone", "secondaryPhone", "address", "notes", "preferences"];
/** The fields of a testimonial they wrote (in a testimonial.* event) that show them: cleared as on the row itself. */
const AUTHOR_FIELDS = ["displayName", "displayLocation", "displayPhotoUrl"];

/**
 * A communication with the person (an object with their `contactId`, a communication's `type` and a
 * `direction`, as its events and stored answers carry it): what was written or said to or by them goes whole, not
 * only where it names them.
 */
const COMMUNICATION_FIELDS = ["subject", "body", "metadata"];
const isTheirCommunication = (obj: Record<string, unknown>, scrub: Scrub) =>
  obj.contactId === scrub.person.id && (COMMUNICATION_TYPES as readonly unknown[]).includes(obj.type) && typeof obj.direction === "string";

/** `text` with every mention of the person (as `scrub.redacted` finds them) replaced by ERASED. */
export const redactText = (text: string, scrub: Scrub): string => replaceMentions(text, scrub.redacted, ERASED);

/**
 * A JSON document with the person taken out: the contact object itself (an object whose `id` is theirs) loses its
 * personal fields, a communication with them its contents, a testimonial they wrote (`authorPersonId`) its display
 * fields, and every string that names them has that part replaced — JSON kept as a string inside it (a JSON column of
 * a row in the trash) too, walked the same way. Structure, ids, numbers, enum values and everything about other people
 * stay. Text that names nobody comes back as the very same string (not re-serialized), so a caller can tell "nothing
 * to change" by identity. Plain text is redacted as text.
 */
export function redactJson(text: string, scrub: Scrub): string {
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") {
      const nested = parseStructure(value);
      if (nested === undefined) return redactText(value, scrub);
      const out = walk(nested);
      return out === nested ? value : JSON.stringify(out);
    }
    if (Array.isArray(value)) {
      const out = value.map(walk);
      return out.some((v, i) => v !== value[i]) ? out : value;
    }
    if (value && typeof value === "object") {
      const obj = value as Record<string, unknown>;
      const personal = obj.id === scrub.person.id ? PERSONAL_FIELDS : isTheirCommunication(obj, scrub) ? COMMUNICATION_FIELDS : [];
      const isTheirs = obj.authorPersonId === scrub.person.id;
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj)) {
        if (isTheirs && AUTHOR_FIELDS.includes(k)) out[k] = null;
        else out[k] = personal.includes(k) && v !== null ? (typeof v === "string" ? ERASED : null) : walk(v);
        if (out[k] !== v) changed = true;
      }
      return changed ? out : value;
    }
    return value;
  };
  const parsed = parseStructure(text);
  if (parsed === undefined) return redactText(text, scrub);
  const out = walk(parsed);
  return out === parsed ? text : JSON.stringify(out);
}
