/**
 * Words for the search of contacts, deals and listings: how text becomes the terms of the index and how
 * `q` becomes the prefixes it looks for. One character map folds case and accents and tells word characters from
 * separators; migration 0012_search.sql holds the same map as the table `search_fold`, which the index's triggers
 * read, so the triggers' SQL and this code split text alike (test/search/search-terms.test.ts holds the two together).
 */

/** Code points the map covers; any other character is a word character kept as it is, in SQL and here alike. */
const RANGES: [number, number][] = [
  [0x01, 0x24f], // ASCII, Latin-1, Latin Extended-A and -B
  [0x2b0, 0x36f], // spacing modifiers, combining marks
  [0x370, 0x4ff], // Greek, Cyrillic
  [0x1e00, 0x1eff], // Latin Extended Additional (Vietnamese …)
  [0x2000, 0x2bff], // punctuation, currency, letterlike, arrows, math, shapes, dingbats
  [0x3000, 0x303f], // CJK punctuation
  [0xfb00, 0xfb4f], // ligatures (ﬁ)
  [0xfe30, 0xfe6f], // compatibility and small forms
  [0xff00, 0xffef], // full- and half-width forms
];

/** Folded as a word of their own would not be: "O'Brien" is one word, "obrien". */
const JOINERS = new Set(["'", "\u2019", "\u02bc"]);
/** Letters without a decomposition that people write without their stroke or ligature. */
const LETTERS: Record<string, string> = {
  ß: "ss",
  ẞ: "ss",
  æ: "ae",
  œ: "oe",
  ø: "o",
  ł: "l",
  đ: "d",
  ð: "d",
  þ: "th",
  ı: "i",
  ħ: "h",
  ŧ: "t",
  ŀ: "l",
  ĸ: "k",
  ς: "σ",
};

const isWord = (c: string) => /[\p{L}\p{N}]/u.test(c);

function foldChar(ch: string): string {
  if (JOINERS.has(ch)) return "";
  if (/\p{M}/u.test(ch)) return "";
  if (!isWord(ch)) return " ";
  const lower = ch.normalize("NFKD").toLowerCase().normalize("NFKD").replace(/\p{M}/gu, "");
  // A compatibility form may decompose into several characters, not all letters ("½" is "1⁄2"): letters and digits stay.
  return [...lower]
    .map((c) => LETTERS[c] ?? c)
    .filter(isWord)
    .join("");
}

let fold: Map<string, string> | undefined;

/** Every character of RANGES whose folded form differs from itself: " " for a separator, "" for a mark. */
export function foldMap(): Map<string, string> {
  if (!fold) {
    fold = new Map();
    for (const [from, to] of RANGES) {
      for (let cp = from; cp <= to; cp++) {
        const ch = String.fromCodePoint(cp);
        const folded = foldChar(ch);
        if (folded !== ch) fold.set(ch, folded);
      }
    }
  }
  return fold;
}

/** A term is at most this many characters; a longer word is indexed, and looked for, by its first ones. */
export const MAX_TERM_CHARS = 64;
const clip = (term: string) => [...term].slice(0, MAX_TERM_CHARS).join("");

/** The terms of `text` as the index's triggers write them: folded words, in order, each once (none after a NUL, as there). */
export function termsOf(text: string): string[] {
  const map = foldMap();
  const terms: string[] = [];
  let word = "";
  for (const ch of text.toWellFormed().split("\0")[0]!) {
    const folded = map.get(ch) ?? ch;
    if (folded === " ") {
      if (word) terms.push(clip(word));
      word = "";
    } else word += folded;
  }
  if (word) terms.push(clip(word));
  return [...new Set(terms)];
}

/** A phone's terms as the index writes them: its ASCII digits, and without the 1 of an 11-digit North American number. */
export function phoneTerms(phone: string | null | undefined): string[] {
  const digits = clip((phone ?? "").split("\0")[0]!.replace(/[^0-9]/g, ""));
  if (!digits) return [];
  return digits.length === 11 && digits.startsWith("1") ? [digits, digits.slice(1)] : [digits];
}

/** The fields of a contact its terms come from (tags as the JSON text the row stores). */
export interface SearchableContact {
  firstName: string;
  lastName: string;
  email: string;
  tags: string[];
  notes?: string | null;
  phone?: string | null;
  secondaryPhone?: string | null;
}

/** A contact's terms as the contacts triggers of migration 0012 write them (names, e-mail, tags, notes, both phones), each once. */
export const contactTermsOf = (c: SearchableContact): string[] => [
  ...new Set([
    ...termsOf(`${c.firstName} ${c.lastName} ${c.email} ${JSON.stringify(c.tags)} ${c.notes ?? ""}`),
    ...phoneTerms(c.phone),
    ...phoneTerms(c.secondaryPhone),
  ]),
];

export const MAX_QUERY_CHARS = 200;
export const MAX_QUERY_WORDS = 8;

/** A chunk of `q` written as part of a number: digits with the punctuation phone numbers are written with. */
const NUMBERISH = /^[+(]*\d[\d().\-/]*$/;
/** Quotes and the like around a chunk ("\"(416)", "0101,") are no part of the number. */
const bare = (chunk: string) => chunk.replace(/^[^\p{L}\p{N}+(]+|[^\p{L}\p{N})]+$/gu, "");

/**
 * The words of a query, each as the prefixes one of which a term must start with (AND across words, OR within one).
 * With `phones` (contacts), a run of chunks written as a number ("(416) 555-0101", "+1 416 555 0101") is one word of
 * its digits, as phones are indexed; a number written with North America's country code apart ("+1 …", "1-416-…") or
 * as 11 digits from 1 also matches without it.
 */
export function searchWords(q: string, phones: boolean): string[][] {
  const words: string[][] = [];
  const chunks = q.toWellFormed().split(/\s+/u).filter(Boolean);
  for (let i = 0; i < chunks.length; i++) {
    if (phones && NUMBERISH.test(bare(chunks[i]!))) {
      const group: string[] = [];
      while (i < chunks.length && NUMBERISH.test(bare(chunks[i]!))) group.push(bare(chunks[i++]!));
      i--;
      const digits = clip(group.join("").replace(/\D/g, ""));
      const countryApart = /^\+?1$/.test(group[0]!) || /^\+?1[-.(/]/.test(group[0]!);
      words.push(
        digits.startsWith("1") && digits.length > 1 && (countryApart || digits.length === 11) ? [digits, digits.slice(1)] : [digits],
      );
    } else {
      for (const term of termsOf(chunks[i]!)) words.push([term]);
    }
  }
  const seen = new Set<string>();
  return words.filter((w) => !seen.has(w.join(" ")) && seen.add(w.join(" ")));
}
