import { z } from "@hono/zod-openapi";
import { pattern, utcInstant } from "../lib/validation";

/**
 * The one strict parser of list query strings: every list route builds its query with `listQuery`, so
 * integers are plain decimals (no `0x10`, `1e2`, ` 5` or `5.0`), an unknown parameter is a 422 `unknown_field`, and
 * an invalid value names the parameter with an invalid-value code.
 */
export const intParam = (min: number, max: number) =>
  // One spelling per number: no sign but a minus, no leading zeros ("05", "+5", "-0" and "5.0" are refused).
  pattern(/^(?:0|-?[1-9]\d{0,14})$/, "invalid_integer", "Must be a decimal integer, written without leading zeros")
    .transform(Number)
    .pipe(z.int().min(min).max(max));

/** A plain decimal number (no exponent, no hex), between `min` and `max`. */
export const decimalParam = (min: number, max: number) =>
  pattern(/^-?\d{1,12}(\.\d{1,8})?$/, "invalid_number", "Must be a decimal number")
    .transform(Number)
    .pipe(z.number().min(min).max(max));

/** A timestamp filter, compared as UTC text with stored ones: a year past 9999 in UTC is refused (lib/validation.ts). */
export const timestampParam = utcInstant(0);

/** A comma-separated list of `item`, at most `max` entries. */
export const csv = <T extends z.ZodType<string, string>>(item: T, max = 20) =>
  z
    .string()
    .max(2000)
    .transform((v) =>
      v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item).min(1).max(max));

export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;

/** `limit` and `cursor` of every list (spec: Limits, list routes limit 1 to 100, default 25). */
export const pageParams = {
  limit: intParam(1, MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE).openapi({
    type: "integer",
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    example: DEFAULT_PAGE_SIZE,
    description: "1–100, default 25; anything else is a 422",
  }),
  cursor: z.string().min(1).max(1000).optional().openapi({ description: "`pagination.nextCursor` of the previous page" }),
};

/** A list route's query: the page parameters and the route's own; any other parameter is refused. */
export const listQuery = <T extends z.ZodRawShape>(shape: T) => z.strictObject({ ...pageParams, ...shape });

/** The query of a route that takes no parameters: any is refused, as the lists refuse unknown ones (unknown_field). */
export const NoQuery = z.strictObject({});
