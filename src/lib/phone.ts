import { parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js/min";

/**
 * The keys of the numbers read lately: an import's row is keyed three times on its way (matching, the chunk's own
 * duplicates, the record), and parsing was a fifth of a chunk's planning. Bounded: numbers of up to 64 characters,
 * emptied when full.
 */
const RECENT = 2_000;
const recent = new Map<string, string | null>();

/**
 * Phone numbers as keys: the same number written "(415) 555-0100", "415.555.0100" or "+1 415 555 0100" is
 * one key, its E.164 form. A number without a country code is read in `region` (the organization's
 * `settings.defaultPhoneRegion`). libphonenumber-js carries every country's numbering plan (trunk prefixes, lengths),
 * which a rule of our own would get wrong for most of them. "Possible" rather than "valid": a key must not depend on
 * whether a number block is allocated yet.
 */
export function phoneKey(text: string | null | undefined, region: string): string | null {
  if (!text) return null;
  const memo = `${region}\u0000${text}`;
  const known = text.length <= 64 ? recent.get(memo) : undefined;
  if (known !== undefined) return known;
  const parsed = parsePhoneNumberFromString(text, { defaultCountry: region as CountryCode, extract: false });
  const key = parsed?.isPossible() ? parsed.number : null;
  if (text.length <= 64) {
    if (recent.size >= RECENT) recent.clear();
    recent.set(memo, key);
  }
  return key;
}

/** The region numbers without a country code are read in: the organization's, else US (the settings' default). */
export const regionOf = (ctx: { phoneRegion?: string }): string => ctx.phoneRegion ?? "US";
