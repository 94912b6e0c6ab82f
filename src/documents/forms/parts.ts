import { z } from "@hono/zod-openapi";
import { oneLineText } from "../../lib/validation";

/** The pieces every typed form's canonical schema is built from, and the words its rendering uses for them. */
export const Party = z.strictObject({ name: oneLineText(200), email: z.email().max(254) });
export type Party = z.infer<typeof Party>;

export type CalendarDay = { year: number; month: number; day: number };
export const CalendarDate = z
  .strictObject({ year: z.int().min(1900).max(2200), month: z.int().min(1).max(12), day: z.int().min(1).max(31) })
  .refine((d) => new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDate() === d.day, {
    message: "Not a calendar date",
    params: { code: "invalid_date" },
  });
export const dayNumber = (d: CalendarDay) => Date.UTC(d.year, d.month - 1, d.day);

export const Provenance = z.strictObject({ aiDrafted: z.boolean() });

/** Whole cents, at most $10 billion. */
export const Money = z.strictObject({ cents: z.int().min(0).max(100_000_000_00) });
export const Address = z.strictObject({ street: oneLineText(200), city: oneLineText(100), province: oneLineText(100) });
export const Brokerage = z.strictObject({ name: oneLineText(200), email: z.email().max(254) });

/** A term from `start` to `expiry`, which must come after it. */
export const Period = z
  .strictObject({ start: CalendarDate, expiry: CalendarDate })
  .refine((p) => dayNumber(p.expiry) > dayNumber(p.start), {
    message: "The period must expire after it starts",
    path: ["expiry"],
    params: { code: "invalid_range" },
  });

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
/** Spelled-out month: 03/04/2027 reads as March or April depending on the reader; "April 3, 2027" does not. */
export const longDate = (d: CalendarDay) => `${MONTHS[d.month - 1]} ${d.day}, ${d.year}`;
export const dollars = (cents: number) =>
  `$${(cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
export const oneLineAddress = (a: z.infer<typeof Address>) => `${a.street}, ${a.city}, ${a.province}`;
export const partyLines = (role: string, list: Party[]) => list.map((p) => `${role}: ${p.name} (${p.email})`);

export const DAY_MS = 86_400_000;
/** A calendar day as YYYY-MM-DD, `days` later (earlier when negative). */
export const isoDate = (d: CalendarDay, days = 0) => new Date(dayNumber(d) + days * DAY_MS).toISOString().slice(0, 10);
/** A listing or buyer representation agreement's renewal falls due this many days before it expires. */
export const AGREEMENT_RENEWAL_DAYS = 30;
/** Signing parties in signing order: each group's people with the group's role. */
export const inOrder = (...groups: [Party[], string][]) =>
  groups.flatMap(([people, role]) => people.map((p) => ({ name: p.name, email: p.email, role })));
