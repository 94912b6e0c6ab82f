import { isTimeZone, offsetMinutes } from "../lib/time-zones";
import { fromSpreadsheetSafe } from "../crm/export";
import type { ContactRecord } from "../contacts/service";
import type { AppointmentType, TaskType } from "../db/agenda";
import type { PersonKeys } from "../intake/service";
import type { RowIssue } from "./contact-rows";

/**
 * One record of a Follow Up Boss task or appointment (agenda-columns.ts) read into plain values: times to UTC, types to
 * ours, invitees to e-mails and names. Who the person, the assignee and the invitees are is resolved by the caller
 * (agenda-import.ts), a chunk at a time.
 */

/** What a chunk's records need to be read: the people they name, the users, the organization's time zone, the time. */
export interface AgendaContext {
  timeZone: string;
  at: string;
  createdBy: string | null;
  userOf: (named: string) => string | null;
  contactOf: (keys: PersonKeys) => ContactRecord | null;
}

/** A record's values by target, each with the column it came from (the errors CSV names the column, never the value). */
export type Cells = Map<string, { value: string; column: string }>;

export function cellsOf(fields: string[], columns: string[], targets: (string | null)[]): Cells {
  const cells: Cells = new Map();
  targets.forEach((target, i) => {
    const value = fromSpreadsheetSafe((fields[i] ?? "").trim());
    if (target && value !== "" && !cells.has(target)) cells.set(target, { value, column: columns[i] ?? `column ${i + 1}` });
  });
  return cells;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const ZONED = /(Z|[+-]\d{2}:?\d{2})$/i;

/** How far `timeZone`'s wall clock is ahead of UTC at the instant `at` (ms). */
const offsetAt = (timeZone: string, at: number): number => offsetMinutes(timeZone, at) * 60_000;

/** A wall-clock time (`YYYY-MM-DDTHH:MM:SS`) in `timeZone` as a UTC instant; twice, so a DST change between is right. */
export function wallTimeToUtc(wall: string, timeZone: string): string {
  const asUtc = Date.parse(`${wall}Z`);
  const first = asUtc - offsetAt(timeZone, asUtc);
  return new Date(asUtc - offsetAt(timeZone, first)).toISOString();
}

export { isTimeZone };

/** An ISO date-time as a UTC instant: with its offset as given, without one in `timeZone`; null when it is none. */
export function instantOf(text: string, timeZone: string): string | null {
  if (!DATE_TIME.test(text)) return null;
  const t = text.replace(" ", "T");
  if (ZONED.test(t)) {
    const ms = Date.parse(t);
    return Number.isNaN(ms) ? null : new Date(ms).toISOString();
  }
  const wall = t.length === 16 ? `${t}:00` : t.slice(0, 19);
  return Number.isNaN(Date.parse(`${wall}Z`)) ? null : wallTimeToUtc(wall, timeZone);
}

export const isDay = (text: string): boolean => DAY.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`));

const TRUE = new Set(["true", "yes", "y", "1", "completed", "done"]);
const FALSE = new Set(["false", "no", "n", "0", "open", ""]);
/** A spreadsheet's yes/no; null when it is neither. */
export const booleanOf = (text: string): boolean | null =>
  TRUE.has(text.toLowerCase()) ? true : FALSE.has(text.toLowerCase()) ? false : null;

const TASK_TYPES: Record<string, TaskType> = {
  call: "call",
  "phone call": "call",
  email: "email",
  "e mail": "email",
  text: "text",
  sms: "text",
  "text message": "text",
  "follow up": "follow_up",
  followup: "follow_up",
  showing: "showing",
};
/** Follow Up Boss's task types (Call, Email, Text, Follow Up, Showing, and Closing, Open House, Thank You…: other). */
export const taskTypeOf = (text: string | undefined): TaskType =>
  (text && TASK_TYPES[text.toLowerCase().replace(/[_-]+/g, " ").trim()]) || "other";

/** An account's own appointment types ("Buyer Appointment", "Listing Appointment", "Showing"…), by what they say. */
export function appointmentTypeOf(text: string | undefined): AppointmentType {
  const t = (text ?? "").toLowerCase();
  if (/showing|tour|open house/.test(t)) return "showing";
  if (/listing/.test(t)) return "listing_presentation";
  if (/buyer|consult/.test(t)) return "buyer_consultation";
  if (/closing/.test(t)) return "closing";
  return "other";
}

export const PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT"] as const;

/** An invitee as Follow Up Boss lists one: an e-mail and/or a name (its `userId`/`personId` are no ids of ours). */
export interface Invitee {
  email: string | null;
  name: string | null;
}

/**
 * The invitees cell: Follow Up Boss's JSON list (`[{"personId":1,"name":"…","email":"…"}, …]`, as a JSON row carries
 * it), or names and e-mails separated by `;` or new lines (a spreadsheet's). Null: a JSON list that does not parse.
 */
export function inviteesOf(text: string): Invitee[] | null {
  if (text.startsWith("[")) {
    let list: unknown;
    try {
      list = JSON.parse(text);
    } catch {
      return null;
    }
    if (!Array.isArray(list)) return null;
    return list.flatMap((item): Invitee[] => {
      if (typeof item === "string") return [plainInvitee(item)];
      if (typeof item !== "object" || item === null) return [];
      const { email, name } = item as { email?: unknown; name?: unknown };
      const e = typeof email === "string" && email.trim() ? email.trim() : null;
      const n = typeof name === "string" && name.trim() ? name.trim() : null;
      return e || n ? [{ email: e, name: n }] : [];
    });
  }
  return text
    .split(/[;\n]/)
    .map((t) => t.trim())
    .filter(Boolean)
    .map(plainInvitee);
}

/** "Ann Lee <ann@x.test>", "ann@x.test" or "Ann Lee". */
function plainInvitee(text: string): Invitee {
  const angled = /^(.*)<([^>]+)>$/.exec(text.trim());
  if (angled) return { name: angled[1]!.trim().replace(/^"|"$/g, "") || null, email: angled[2]!.trim() };
  return text.includes("@") ? { email: text.trim(), name: null } : { email: null, name: text.trim() };
}

export const issue = (column: string, reason: string): RowIssue => ({ column: column.slice(0, 200), reason: reason.slice(0, 300) });
