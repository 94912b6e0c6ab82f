import { z } from "@hono/zod-openapi";
import { LAST_INSTANT } from "../lib/validation";

/**
 * Date bounds of the CRM lists (issue 46, smart lists): an ISO 8601 timestamp, or an ISO 8601 duration relative to
 * the request's now (`-P7D`: seven days ago, `P1D`: a day ahead). A relative bound stays relative in the parsed query
 * (so a saved smart list keeps meaning "the last 7 days"); `resolveDateBound` turns it into a timestamp at a given now.
 */
const DURATION =
  /^([+-])?P(?!$)(?:(\d{1,4})Y)?(?:(\d{1,5})M)?(?:(\d{1,5})W)?(?:(\d{1,6})D)?(?:T(?!$)(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,10})S)?)?$/;

const TIMESTAMP = z.iso.datetime({ offset: true });
/** Bounds are compared as UTC text with stored timestamps, so they keep a four-digit year (lib/validation.ts). */
const FIRST_BOUND = new Date(0).setUTCFullYear(0, 0, 1);
const isTimestamp = (v: string): boolean => TIMESTAMP.safeParse(v).success && Date.parse(v) >= FIRST_BOUND && Date.parse(v) <= LAST_INSTANT;

export const isRelativeBound = (v: string): boolean => DURATION.test(v);

export const dateBoundParam = z
  .string()
  .max(64)
  .superRefine((v, ctx) => {
    if (DURATION.test(v) || isTimestamp(v)) return;
    ctx.addIssue({
      code: "custom",
      message: "Must be an ISO 8601 timestamp or an ISO 8601 duration relative to now (-P30D: 30 days ago)",
      params: { code: "invalid_date_bound" },
    });
  })
  .transform((v) => (DURATION.test(v) ? v.toUpperCase() : new Date(v).toISOString()))
  .openapi({
    type: "string",
    example: "-P30D",
    description: "An ISO 8601 timestamp, or an ISO 8601 duration relative to the request's time (negative: in the past), e.g. -P7D, -PT12H",
  });

/**
 * The timestamp a bound stands for at `now`: a timestamp as it is; a duration added to `now` in UTC (years and months
 * on the calendar, as `Date` does; weeks are 7 days).
 */
export function resolveDateBound(value: string, now: Date): string {
  const m = DURATION.exec(value);
  if (!m) return value;
  const sign = m[1] === "-" ? -1 : 1;
  const [y, mo, w, d, h, mi, s] = m.slice(2).map((x) => (x ? Number(x) * sign : 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const at = new Date(now.getTime());
  if (y || mo) at.setUTCFullYear(at.getUTCFullYear() + y, at.getUTCMonth() + mo);
  at.setTime(at.getTime() + ((((w * 7 + d) * 24 + h) * 60 + mi) * 60 + s) * 1000);
  // P9999Y lands past the year 9999: the end of time (and the start, going back), never "+012025-…", which sorts first.
  return new Date(Math.min(Math.max(at.getTime(), FIRST_BOUND), LAST_INSTANT)).toISOString();
}

/** Whether any bound of `q` (its `…[gte]` / `…[lte]` keys) is relative: its result moves with time. */
export const hasRelativeBound = (q: Record<string, unknown>): boolean =>
  Object.entries(q).some(([k, v]) => /\[(gte|lte)\]$/.test(k) && typeof v === "string" && isRelativeBound(v));

/** `q` with every relative date bound (the keys of `keys`) resolved at `now`. */
export function resolveDateBounds<T extends Record<string, unknown>>(q: T, keys: readonly string[], now: Date): T {
  const out: Record<string, unknown> = { ...q };
  for (const k of keys) if (typeof out[k] === "string") out[k] = resolveDateBound(out[k] as string, now);
  return out as T;
}
