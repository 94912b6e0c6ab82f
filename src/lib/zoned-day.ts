import { offsetMinutes } from "./time-zones";

/**
 * A calendar day in an IANA time zone, as the UTC instants that bound it: what "due today" means for an organization
 * whose agents live in that zone (issue 46). Intl is the only zone database a Worker has; it is enough.
 */
export interface ZonedDay {
  /** The zone's date at the instant asked about, YYYY-MM-DD. */
  date: string;
  /** The first instant of that date and of the next one, as UTC ISO timestamps. */
  startIso: string;
  endIso: string;
}

/** The zone's offset from UTC at `instant`, in milliseconds (positive east of Greenwich). */
const offsetAt = (instant: number, timeZone: string) => offsetMinutes(timeZone, instant) * 60_000;

/** The first instant of the zone's day `date` (YYYY-MM-DD): its midnight, or the first instant after a gap that skips it. */
function midnightOf(date: string, timeZone: string): number {
  const wall = Date.parse(`${date}T00:00:00Z`);
  // Two steps settle a transition near midnight: the offset at the guess, then at the corrected instant.
  let t = wall - offsetAt(wall, timeZone);
  t = wall - offsetAt(t, timeZone);
  return t;
}

const DAY_MS = 86_400_000;

/** The day of `timeZone` that `now` falls in, with its bounds. */
export function zonedDay(now: Date, timeZone: string): ZonedDay {
  const date = new Date(now.getTime() + offsetAt(now.getTime(), timeZone)).toISOString().slice(0, 10);
  const next = new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
  return { date, startIso: new Date(midnightOf(date, timeZone)).toISOString(), endIso: new Date(midnightOf(next, timeZone)).toISOString() };
}
