import { parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js/min";

/**
 * Phone numbers as keys (issue 33): the same number written "(415) 555-0100", "415.555.0100" or "+1 415 555 0100" is
 * one key, its E.164 form. A number without a country code is read in `region` (the organization's
 * `settings.defaultPhoneRegion`). libphonenumber-js carries every country's numbering plan (trunk prefixes, lengths),
 * which a rule of our own would get wrong for most of them. "Possible" rather than "valid": a key must not depend on
 * whether a number block is allocated yet.
 */
export function phoneKey(text: string | null | undefined, region: string): string | null {
  if (!text) return null;
  const parsed = parsePhoneNumberFromString(text, { defaultCountry: region as CountryCode, extract: false });
  return parsed?.isPossible() ? parsed.number : null;
}

/** The region numbers without a country code are read in: the organization's, else US (the settings' default). */
export const regionOf = (ctx: { phoneRegion?: string }): string => ctx.phoneRegion ?? "US";
