import type { IcalComponent } from "./ical";

/**
 * IANA time zones through the runtime's Intl (the Workers runtime carries the full tz database): whether a name is
 * one, the wall-clock time of an instant in it, and its VTIMEZONE (RFC 5545 §3.6.5) for the years a calendar shows,
 * built from the zone's real transitions rather than a hand-kept table.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether `zone` is an IANA zone name the runtime knows (`America/New_York`, `UTC`); offsets like `+05:00` are not. */
export function isTimeZone(zone: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone)) return false;
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** The wall-clock time of `at` in `zone`. */
export function wallClock(zone: string, at: number): WallClock {
  const parts: Record<string, number> = {};
  for (const p of formatterOf(zone).formatToParts(new Date(at))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second! };
}

/** The zone's offset from UTC at `at`, in minutes (east positive). */
export function offsetMinutes(zone: string, at: number): number {
  const w = wallClock(zone, at);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return Math.round((asUtc - Math.floor(at / 1000) * 1000) / 60_000);
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** An iCalendar local DATE-TIME (§3.3.5 form 1 / 3): `20270315T140000`. */
export const localStamp = (w: WallClock): string =>
  `${pad(w.year, 4)}${pad(w.month)}${pad(w.day)}T${pad(w.hour)}${pad(w.minute)}${pad(w.second)}`;

/** `-0500`, `+0530`: a UTC-OFFSET value (§3.3.14). */
function utcOffset(minutes: number): string {
  const sign = minutes < 0 ? "-" : "+";
  const m = Math.abs(minutes);
  return `${sign}${pad(Math.floor(m / 60))}${pad(m % 60)}`;
}

interface Transition {
  at: number;
  from: number;
  to: number;
}

const DAY_MS = 86_400_000;

/**
 * The offset changes of `zone` from the start of `fromYear` to the end of `toYear`: the offset is sampled daily (no
 * zone changes twice in a day) and each change is narrowed to the minute by bisection.
 */
function transitions(zone: string, fromYear: number, toYear: number): Transition[] {
  const found: Transition[] = [];
  const end = Date.UTC(toYear + 1, 0, 1);
  let t = Date.UTC(fromYear, 0, 1);
  let offset = offsetMinutes(zone, t);
  while (t < end) {
    const next = Math.min(t + DAY_MS, end);
    const nextOffset = offsetMinutes(zone, next);
    if (nextOffset !== offset) {
      let lo = t;
      let hi = next;
      while (hi - lo > 60_000) {
        const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
        if (offsetMinutes(zone, mid) === offset) lo = mid;
        else hi = mid;
      }
      found.push({ at: hi, from: offset, to: nextOffset });
      offset = nextOffset;
    }
    t = next;
  }
  return found;
}

const vtimezones = new Map<string, IcalComponent>();

/**
 * The VTIMEZONE of `zone` for the years `fromYear`…`toYear`: one observance per transition (DTSTART the local time
 * of the onset in the offset before it, §3.6.5), after one from 1970 for the offset in force when the span starts, so
 * every local time in the span (and before it) resolves. A zone without transitions (no DST) is one STANDARD observance. DAYLIGHT is an
 * observance whose offset is ahead of the span's least offset (the zone's standard time).
 */
export function vtimezone(zone: string, fromYear: number, toYear: number): IcalComponent {
  const key = `${zone}|${fromYear}|${toYear}`;
  const cached = vtimezones.get(key);
  if (cached) return cached;
  const start = Date.UTC(fromYear, 0, 1);
  const initial = offsetMinutes(zone, start);
  const changes = transitions(zone, fromYear, toYear);
  const standard = Math.min(initial, ...changes.map((c) => c.to));
  const observance = (at: number | null, from: number, to: number): IcalComponent => ({
    name: to > standard ? "DAYLIGHT" : "STANDARD",
    properties: [
      // The first observance starts at 1970 (the common convention): it holds for any time before the span's changes.
      { name: "DTSTART", value: at === null ? "19700101T000000" : localStamp(wallClockAtOffset(at, from)) },
      { name: "TZOFFSETFROM", value: utcOffset(from) },
      { name: "TZOFFSETTO", value: utcOffset(to) },
      { name: "TZNAME", text: zoneAbbreviation(zone, at ?? start) },
    ],
  });
  const component: IcalComponent = {
    name: "VTIMEZONE",
    properties: [{ name: "TZID", value: zone }],
    components: [observance(null, initial, initial), ...changes.map((c) => observance(c.at, c.from, c.to))],
  };
  vtimezones.set(key, component);
  return component;
}

/** The wall clock of `at` read at a fixed offset (the onset of an observance in the offset before it). */
function wallClockAtOffset(at: number, offset: number): WallClock {
  const d = new Date(at + offset * 60_000);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
  };
}

/** `EST`, `EDT`, or `GMT+9` where the zone has no abbreviation in English. */
function zoneAbbreviation(zone: string, at: number): string {
  const part = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "short" })
    .formatToParts(new Date(at))
    .find((p) => p.type === "timeZoneName");
  return part?.value ?? zone;
}
