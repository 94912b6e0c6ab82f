import { z } from "zod";
import type { FieldIssue } from "./errors";

/** Zod's issue codes mapped to the stable `code` of FieldIssue (`errors[].code` on /v1, `issues[].code` on /api). */
function codeOf(issue: z.core.$ZodIssue, missing: boolean): string {
  switch (issue.code) {
    case "invalid_type":
      return missing ? "required" : "invalid_type";
    case "invalid_format":
      // A pattern mismatch is a wrong format, not a wrong regular expression ("invalid_regex" would read as ours).
      return issue.format === "email" ? "invalid_email" : issue.format === "regex" ? "invalid_format" : `invalid_${issue.format}`;
    case "invalid_value":
      return missing ? "required" : "invalid_enum_value";
    case "unrecognized_keys":
      return "unknown_field";
    case "too_small":
      return "too_small";
    case "too_big":
      return "too_big";
    case "custom":
      return typeof issue.params?.code === "string" ? issue.params.code : "invalid";
    default:
      return issue.code;
  }
}

/**
 * Whether `path` is absent from `input` (zod does not report the input of an issue unless asked). A path that runs
 * into a present non-object value points inside what a transform made of it (`fields=password` split into a list),
 * so the value is there, just invalid.
 */
function isMissing(input: unknown, path: PropertyKey[]): boolean {
  let at: unknown = input;
  for (const key of path) {
    if (at === undefined || at === null) return true;
    if (typeof at !== "object") return false;
    if (!(key in at)) return true;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at === undefined;
}

/**
 * Every issue of a failed parse of `input`, each with its path; unknown keys become one issue per key.
 * A missing field reads "Required" with code `required`, a wrong type keeps zod's "expected …, received …".
 */
export function issuesFromZod(error: z.ZodError, input: unknown, prefix: (string | number)[] = []): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        field: [...path, key].join("."),
        path: [...path, key],
        code: "unknown_field",
        message: `Unknown field '${key}'`,
      }));
    }
    // A missing enum is reported by zod as invalid_value, a missing string or object as invalid_type: both "Required".
    const missing = (issue.code === "invalid_type" || issue.code === "invalid_value") && isMissing(input, issue.path);
    let message = missing ? "Required" : issue.message;
    if (issue.code === "invalid_type" && issue.path.length === 0 && issue.expected === "object")
      message = "Request body must be a JSON object";
    return [{ field: path.join("."), path, code: codeOf(issue, missing), message }];
  });
}

/** A string matching `re`; a mismatch is reported with `code` (errors[].code on the CRM routes). */
export const pattern = (re: RegExp, code: string, message: string) => z.string().refine((v) => re.test(v), { message, params: { code } });

/**
 * One line of text (a name, a city, a tag): trimmed, 1 to `max` characters, no control characters (line breaks, NUL)
 * nor bidirectional embeddings, overrides and isolates (which make "gnp.exe" read as "exe.png"), and something
 * visible (not only zero-width or format characters).
 */
export const oneLineText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine(isOneLine, { message: "Must be one line of text without control characters", params: { code: "invalid_character" } })
    .refine(hasVisibleText, { message: "Must contain visible text", params: { code: "invalid_character" } });

/** No control characters (line breaks, NUL) nor bidirectional controls; U+2028 and U+2029 break lines as a newline does. */
export function isOneLine(v: string): boolean {
  return !/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(v);
}

/** Something a reader sees: not only spaces, invisible formatting or combining marks with nothing to sit on. */
export function hasVisibleText(v: string): boolean {
  return /[^\s\p{Cf}\p{Z}\p{M}]/u.test(v);
}

/**
 * Free text a person writes (a note, a survey answer): trimmed, at most `max` characters, line breaks and tabs
 * allowed, other control characters and bidirectional overrides refused.
 */
export const freeText = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .refine((v) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(v), {
      message: "Must not contain control characters",
      params: { code: "invalid_character" },
    });

/** The last instant with a four-digit year: ISO 8601 (as we store and compare instants, as text) and iCalendar need one. */
export const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An ISO 8601 timestamp (any offset) kept as UTC, in the years `fromYear` to 9999 *in UTC*: 9999-12-31T23:00-14:00 is
 * in the year 10000, which `toISOString` writes "+010000-…", a string that sorts before every other date.
 */
export const utcInstant = (fromYear: number, message = "Must be an ISO 8601 timestamp") => {
  // Not Date.UTC: it reads the years 0 to 99 as 1900 to 1999.
  const first = new Date(0).setUTCFullYear(fromYear, 0, 1);
  return z.iso
    .datetime({ offset: true, message })
    .refine(
      (v) => {
        const at = Date.parse(v);
        return Number.isNaN(at) || (at >= first && at <= LAST_INSTANT);
      },
      { message: `Must fall in the years ${fromYear} to 9999 in UTC`, params: { code: "out_of_range" } },
    )
    .transform((v) => new Date(v).toISOString());
};
