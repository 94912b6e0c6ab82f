/**
 * Finding a person in free text (an erasure) in two steps: a cheap SQL filter that may over-match
 * (`needles`, lib/sql.ts `mentionsAny`), then a precise test in JS (`pattern`) that decides and redacts. Both see
 * the ways one mention is written: another case (beyond ASCII too), another Unicode form (NFC, NFD), other spacing
 * (two spaces, a line break), a phone in another format ("416-555-0142" for "+1 (416) 555-0142"), and the escaped
 * text a JSON column stores (`\"`, `\\`, once or twice: the trash keeps JSON columns as strings inside JSON). Each
 * is matched whole: never inside a longer word, e-mail address or number.
 */

/** What to look for: ids are only SQL needles (the JSON walk recognizes an object by them); the rest are searched and replaced. */
export interface Wanted {
  ids?: string[];
  emails?: string[];
  phones?: string[];
  names?: string[];
}

/**
 * The SQL filter's needles, ASCII-folded like SQLite's `lower()`: `plain` looked for in the lower-cased text,
 * `spaced` in the lower-cased text with whitespace (and its JSON escapes) collapsed to one space, `digits` in the
 * text with a phone's separators removed.
 */
export interface Needles {
  plain: string[];
  spaced: string[];
  digits: string[];
}

export interface Matcher {
  needles: Needles;
  /** Every mention (global); null when there is nothing to search for. */
  pattern: RegExp | null;
}

/** SQLite's `lower()` folds ASCII letters only: a needle is folded the same way. */
export const foldAscii = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/**
 * The JS twin of lib/sql.ts `spacedSql`: whitespace, and the escapes of line breaks and tabs JSON writes (once or
 * twice), become one space.
 */
export const spacedText = (s: string): string => s.replace(/(?:\\\\|\\)[nrt]|[\t\n\r\u00a0]/g, " ").replace(/ {2,}/g, " ");

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const jsonEscaped = (s: string) => JSON.stringify(s).slice(1, -1);
const titleCase = (s: string) => s.toLowerCase().replace(/(^|\s)(\S)/gu, (_, space: string, c: string) => space + c.toUpperCase());
const oneSpaced = (s: string) => s.normalize("NFC").trim().split(/\s+/u).join(" ");

/** Letters, digits and combining marks: what a name or an address may not touch to be a whole mention. */
const WORD = "[\\p{L}\\p{N}\\p{M}_]";
/** A phone's separators, a few between two digits. */
const SEP = "[\\s.\\-()/]{0,3}";

/** A name's words in NFC or NFD, any case, any whitespace between them. */
function namePattern(name: string): string {
  const words = oneSpaced(name)
    .split(" ")
    .map((w) => {
      const forms = [...new Set([w, w.normalize("NFD")])].map(escapeRegExp);
      return forms.length > 1 ? `(?:${forms.join("|")})` : forms[0]!;
    });
  return `(?<!${WORD})${words.join("\\s+")}(?!${WORD})`;
}

/** An address not inside a longer one ("x.ann@a.test" is not "ann@a.test"; a sentence's final period may follow). */
const emailPattern = (email: string) =>
  `(?<![\\p{L}\\p{N}\\p{M}._%+\\-])${escapeRegExp(email.trim())}(?![\\p{L}\\p{N}\\p{M}_\\-]|\\.[\\p{L}\\p{N}])`;

/**
 * A phone as its country code (when written with one, or "1" for a ten-digit number) and national digits; null when
 * it has fewer than seven digits (then it is searched as written only: a short number is part of too many others).
 */
export function phoneParts(phone: string): { cc: string | null; national: string } | null {
  const main = phone.replace(/\s*(?:x|ext\.?)\s*\d+\s*$/i, "").trim();
  const digits = main.replace(/\D/g, "");
  const written =
    main.match(/^\+\s*(\d{1,3})[\s.\-(/]/)?.[1] ?? (/^\+?1/.test(main) && digits.length === 11 && digits.startsWith("1") ? "1" : null);
  const national = written ? digits.slice(written.length) : digits;
  if (national.length < 7) return null;
  return { cc: written ?? (national.length === 10 ? "1" : null), national };
}

/** The national digits with any separators, after an optional country code (and a trunk 0 outside North America). */
function phonePattern(parts: { cc: string | null; national: string }): string {
  const body = parts.national.split("").join(SEP);
  const cc = parts.cc ? `(?:(?:\\+\\s?)?${parts.cc}${SEP})?` : "";
  const trunk = parts.cc && parts.cc !== "1" ? `(?:0${SEP})?` : "";
  // Not inside a longer number: no digit (or "+") just before, nor one past a dot or dash, nor another country's
  // code ("+44 416 555 0142" is not "+1 416 555 0142"); no digit just after, nor one past a dot or dash.
  return `(?<![\\p{N}+])(?<!\\p{N}[.\\-])(?<!\\+\\p{N}{1,3}[\\s.\\-]?)${cc}${trunk}\\(?${body}(?!\\p{N})(?![.\\-]\\p{N})`;
}

/** The forms one text needle is written in: as given, lower, upper and title case; NFC and NFD; raw and JSON-escaped once and twice. */
function textNeedles(s: string): string[] {
  const out = new Set<string>();
  for (const cased of [s, s.toLowerCase(), s.toUpperCase(), titleCase(s)]) {
    for (const form of [cased.normalize("NFC"), cased.normalize("NFD")]) {
      const once = jsonEscaped(form);
      for (const written of [form, once, jsonEscaped(once)]) out.add(foldAscii(written));
    }
  }
  return [...out];
}

export function matcherOf(wanted: Wanted): Matcher {
  const plain = new Set<string>(wanted.ids ?? []);
  const spaced = new Set<string>();
  const digits = new Set<string>();
  const patterns: string[] = [];
  const addText = (s: string) => {
    for (const n of textNeedles(s)) /\s/.test(n) ? spaced.add(spacedText(n)) : plain.add(n);
  };
  for (const email of wanted.emails ?? []) {
    if (email.trim().length < 3) continue;
    addText(email.trim());
    patterns.push(emailPattern(email));
  }
  for (const phone of wanted.phones ?? []) {
    const parts = phoneParts(phone);
    if (parts) {
      digits.add(parts.national);
      patterns.push(phonePattern(parts));
    } else if (phone.trim().length >= 2) {
      addText(phone.trim());
      patterns.push(`(?<![\\p{N}+])${escapeRegExp(phone.trim())}(?!\\p{N})`);
    }
  }
  for (const name of wanted.names ?? []) {
    if (oneSpaced(name).length < 2) continue;
    addText(oneSpaced(name));
    patterns.push(namePattern(name));
  }
  // Longest first: of two mentions that start at one place, the longer is replaced whole.
  patterns.sort((a, b) => b.length - a.length);
  return {
    needles: { plain: [...plain], spaced: [...spaced], digits: [...digits] },
    pattern: patterns.length ? new RegExp(patterns.join("|"), "giu") : null,
  };
}

/** `text` with every mention replaced by `by`; the very same string when there is none. */
export function replaceMentions(text: string, matcher: Matcher, by: string): string {
  if (!matcher.pattern) return text;
  matcher.pattern.lastIndex = 0;
  return text.replace(matcher.pattern, by);
}

/**
 * The strings of a text: its JSON's strings (and those of JSON kept as a string inside it, as the trash keeps a
 * row's JSON columns) when it is a JSON object or array, else the text itself.
 */
export function stringsOf(text: string): string[] {
  const out: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === "string") {
      const nested = parseStructure(value);
      if (nested === undefined) out.push(value);
      else walk(nested);
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") Object.values(value).forEach(walk);
  };
  walk(text);
  return out;
}

/** The JSON object or array a string holds, or undefined (plain text, or JSON of a number or a string: text). */
export function parseStructure(text: string): object | undefined {
  const start = text.trimStart()[0];
  if (start !== "{" && start !== "[") return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Whether any string of `text` (JSON walked as `stringsOf` does) mentions what `matcher` looks for. */
export function mentionedIn(text: string | null | undefined, matcher: Matcher): boolean {
  const pattern = matcher.pattern;
  if (!text || !pattern) return false;
  return stringsOf(text).some((s) => {
    pattern.lastIndex = 0;
    return pattern.test(s);
  });
}

/**
 * How an erasure tells a record is the person's (passed down to the domains that delete whole records): by their
 * e-mail or phone (`identifies`), or by their full name (`names`), which is theirs alone only when no other contact
 * of the organization has it (`nameIsTheirs`). `needles` find every candidate of either.
 */
export interface Recognizer {
  needles: Needles;
  identifies: (text: string | null | undefined) => boolean;
  names: (text: string | null | undefined) => boolean;
  nameIsTheirs: boolean;
}
