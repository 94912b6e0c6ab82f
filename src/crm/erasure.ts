import type { contacts, ErasureSubject } from "../db/schema";
import type { Statement } from "../db/write";
import type { DomainEvent } from "../events/event";
import { type Matcher, matcherOf, mentionedIn, type Recognizer } from "../lib/mentions";
import type { ServiceContext } from "../service-context";

// A person's erasure (DELETE /v1/contacts/{id}?erase=true, docs/decisions/0014-erasure.md) is a workflow across the
// domains (erasure/erase.ts): each domain that holds the person's data erases its own tables through the one
// interface below, `Erasable`, and the workflow calls them in order. Here, below the domains so that each can meet
// it: who the person is, what a run looks for and takes out, and the interface. crm/copies.ts rewrites copied text.

/** What stands in for an erased name where a column cannot be empty. */
export const ERASED = "[erased]";

/**
 * What identifies the person in copied text: their id, e-mail, full name and phone numbers. A first or last name
 * alone is not searched for: "Lead" or "Sale" would take out every deal stage and type of every payload.
 */
export type Person = ErasureSubject;

/** What an erasure keeps as it is though it names the person (the answer's `retained`; each reason in erasure/erase.ts). */
export const RETAINED_KINDS = ["signed_envelopes", "clickwrap_acceptances", "documents_by_name", "name_mentions"] as const;
export type RetainedKind = (typeof RETAINED_KINDS)[number];

/**
 * An object of a domain's that is the person's, wherever a JSON copy holds it (an event's payload, a kept answer, a row
 * in the trash): its `fields` go whole, not only where they name them — a string becomes ERASED, another value
 * null; with `clear`, every one of them becomes null.
 */
export interface PersonalObject {
  is(obj: Record<string, unknown>, person: Person): boolean;
  fields: readonly string[];
  clear?: boolean;
}

/**
 * What a run of the erasure looks for and takes out. `nameIsTheirs` (in the recognizer): no other contact of the
 * organization has the same full name, so a mention of the name is theirs; otherwise only their e-mail and phones are
 * taken out, and the name is left where it stands (it may be the other person's).
 */
export interface Scrub {
  person: Person;
  recognizer: Recognizer;
  /** What is replaced: e-mail and phones, and the name when it is theirs. */
  redacted: Matcher;
  /** The domains' objects that are wholly the person's (`Erasable.objects`), in the order the domains are called. */
  objects: readonly PersonalObject[];
  /** A row kept in the trash, by its table's name, as its domain rewrites it before it is redacted like any copy. */
  trashedRows: ReadonlyMap<string, (row: string, scrub: Scrub) => string>;
}

/** The scrub of a run over `domains` (their objects and trashed rows; none when only the recognizer is wanted). */
export function scrubOf(person: Person, nameIsTheirs: boolean, domains: readonly Erasable[] = []): Scrub {
  const identifiers = matcherOf({ emails: [person.emailKey], phones: person.phones });
  const name = matcherOf({ names: [person.fullName] });
  const all = matcherOf({ ids: [person.id], emails: [person.emailKey], phones: person.phones, names: [person.fullName] });
  return {
    person,
    recognizer: { needles: all.needles, identifies: (t) => mentionedIn(t, identifiers), names: (t) => mentionedIn(t, name), nameIsTheirs },
    redacted: nameIsTheirs ? matcherOf({ emails: [person.emailKey], phones: person.phones, names: [person.fullName] }) : identifiers,
    objects: domains.flatMap((d) => d.objects ?? []),
    trashedRows: new Map(domains.flatMap((d) => (d.trashedRow ? [[d.trashedRow.table, d.trashedRow.rewrite] as const] : []))),
  };
}

/** The person as `begin` finds them: their contact, live or as the trash keeps it. */
export interface Subject {
  /** The contact's id: the person's. */
  id: string;
  contact: typeof contacts.$inferSelect;
  live: boolean;
  person: Person;
  /** When the erasure began: the time every row it writes carries. */
  at: string;
}

/** Adds the rows the statement before it changed to the erasure's count of `kind` (a batch runs in order, on one connection). */
export type Counted = (kind: string) => Statement;

/** What a domain's step kept though it names the person, by kind. */
export type Kept = Partial<Record<RetainedKind, number>>;

/** A domain's part of `begin`: reads first (in one batch with every domain's), then its writes from their results. */
export interface BeginPart {
  /** What the part erases, read (counted, say) before anything is written. */
  reads?: Statement[];
  /** Given the results of `reads`, in their order: its statements, what they erase by kind, its events. */
  write(results: unknown[][]): BeginWrite | Promise<BeginWrite>;
}

export interface BeginWrite {
  statements?: Statement[];
  erased?: Record<string, number>;
  events?: DomainEvent[];
  /** Once the batch has committed (a cache to purge). */
  committed?(): void;
}

/**
 * A domain's share of a person's erasure, each part optional. `begin`: what the domain holds under the person's id,
 * e-mail or phones, erased in the first step's one atomic batch (`begin` itself may check or act first: a refusal
 * thrown there leaves everything as it was). `erase`: a later step, idempotent (a second run finds nothing left and
 * counts nothing) and made of bounded rounds, each change in one batch with its count (`counted`); it answers what it
 * keeps. `objects` and `trashedRow`: how the domain's records look in copies, for every domain's redaction.
 */
export interface Erasable {
  begin?(ctx: ServiceContext, subject: Subject): BeginPart | Promise<BeginPart>;
  erase?(ctx: ServiceContext, scrub: Scrub, counted: Counted): Promise<Kept>;
  objects?: readonly PersonalObject[];
  trashedRow?: { table: string; rewrite(row: string, scrub: Scrub): string };
}
