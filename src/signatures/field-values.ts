import { unzlibSync } from "fflate";
import type { EnvelopeField, StoredValue } from "../db/signatures";
import type { FieldIssue } from "../lib/errors";
import { MAX_DRAWN_SIGNATURE_BYTES } from "./schemas";

/**
 * A recipient's submitted field values checked against their fields (issue 44, part 4): each value of the type its
 * field takes, every required field filled (a required checkbox ticked), an option that was offered, a read-only
 * field left as the sender set it, the field's own limits. Every problem is named at once; nothing is kept unless
 * all are right. Name and e-mail fields take the recipient's own; a date left empty is the signing date, drawn at
 * seal time in the organization's time zone.
 */
export type Submitted = string | number | boolean;

export interface CheckedValues {
  values: Record<string, StoredValue>;
  /** Drawn signatures to store (PNG bytes) before the values naming them are written. */
  drawn: { fieldId: string; png: Uint8Array }[];
  issues: FieldIssue[];
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const PNG_DATA_URL = /^data:image\/png;base64,([A-Za-z0-9+/]+={0,2})$/;
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const MAX_TEXT = 1000;

const isRealDate = (s: string) => {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
};

/** The initials of a name: the first letter of each word ("Ελένη Παπαδοπούλου" → "ΕΠ"). */
export const initialsOf = (name: string) =>
  name
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => Array.from(w)[0]!.toLocaleUpperCase())
    .join("");

/** A drawn signature's PNG bytes, or why not. */
function drawnPng(value: string): Uint8Array | string {
  const m = PNG_DATA_URL.exec(value);
  if (!m) return 'Give "adopted" or a PNG data URL (data:image/png;base64,…)';
  if ((m[1]!.length * 3) / 4 > MAX_DRAWN_SIGNATURE_BYTES + 3) return `A drawn signature is at most ${MAX_DRAWN_SIGNATURE_BYTES / 1024} KB`;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(m[1]!), (c) => c.charCodeAt(0));
  } catch {
    return "The data URL is not valid base64";
  }
  if (bytes.length > MAX_DRAWN_SIGNATURE_BYTES) return `A drawn signature is at most ${MAX_DRAWN_SIGNATURE_BYTES / 1024} KB`;
  if (!PNG_MAGIC.every((b, i) => bytes[i] === b)) return "The image is not a PNG";
  return pngProblem(bytes) ?? bytes;
}

/** A drawn signature's largest side and area: a phone's canvas at 3× is about 1200 × 600. */
const MAX_PNG_SIDE = 2000;
const MAX_PNG_PIXELS = 2_000_000;
/** Channels per colour type (greyscale, RGB, palette, grey + alpha, RGBA) and the bit depths each allows. */
const PNG_COLOURS: Record<number, { channels: number; depths: number[] }> = {
  0: { channels: 1, depths: [1, 2, 4, 8, 16] },
  2: { channels: 3, depths: [8, 16] },
  3: { channels: 1, depths: [1, 2, 4, 8] },
  4: { channels: 2, depths: [8, 16] },
  6: { channels: 4, depths: [8, 16] },
};

let crcTable: Uint32Array | undefined;
function crc32(bytes: Uint8Array, start: number, end: number): number {
  crcTable ??= Uint32Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = crcTable[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * Why a drawn signature is not a PNG the seal can draw, or null: every chunk whole with its CRC, a header of a size a
 * signature has (a 69-byte PNG may claim 50,000 × 50,000 pixels), not interlaced, and image data that inflates to
 * exactly the size the header implies, checked against a buffer of that size (never more). The seal then never
 * meets an image it cannot decode or one that would not fit a Worker's memory.
 */
function pngProblem(bytes: Uint8Array): string | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const idat: Uint8Array[] = [];
  let header: { width: number; height: number; depth: number; colour: number } | null = null;
  let ended = false;
  for (let at = 8; at < bytes.length && !ended; ) {
    if (at + 12 > bytes.length) return "The PNG is cut short";
    const length = view.getUint32(at);
    const end = at + 8 + length;
    if (end + 4 > bytes.length) return "The PNG is cut short";
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    if (crc32(bytes, at + 4, end) !== view.getUint32(end)) return `The PNG's ${type} chunk is damaged`;
    if (type === "IHDR") {
      if (length !== 13 || header) return "The PNG's header is malformed";
      header = { width: view.getUint32(at + 8), height: view.getUint32(at + 12), depth: bytes[at + 16]!, colour: bytes[at + 17]! };
      const colour = PNG_COLOURS[header.colour];
      if (!colour?.depths.includes(header.depth) || bytes[at + 18] !== 0 || bytes[at + 19] !== 0) return "The PNG's header is malformed";
      if (bytes[at + 20] !== 0) return "An interlaced PNG is not taken: export the signature without interlacing";
      if (header.width < 1 || header.height < 1 || header.width > MAX_PNG_SIDE || header.height > MAX_PNG_SIDE)
        return `A drawn signature is at most ${MAX_PNG_SIDE} × ${MAX_PNG_SIDE} pixels`;
      if (header.width * header.height > MAX_PNG_PIXELS) return `A drawn signature is at most ${MAX_PNG_PIXELS} pixels`;
    } else if (!header) return "The PNG does not start with its header";
    else if (type === "IDAT") idat.push(bytes.subarray(at + 8, end));
    else if (type === "IEND") ended = true;
    at = end + 4;
  }
  if (!header || !ended || idat.length === 0) return "The PNG is incomplete";
  const rowBytes = Math.ceil((header.width * PNG_COLOURS[header.colour]!.channels * header.depth) / 8);
  const expected = header.height * (1 + rowBytes);
  const data = idat.length === 1 ? idat[0]! : Uint8Array.from(idat.flatMap((c) => Array.from(c)));
  try {
    if (unzlibSync(data, { out: new Uint8Array(expected + 1) }).length !== expected) return "The PNG's image data does not match its size";
  } catch {
    return "The PNG's image data is damaged";
  }
  return null;
}

/** The value a prefilled field stands at (the sender's), as stored. */
function prefilled(field: EnvelopeField): StoredValue | null {
  if (field.value === null) return null;
  if (field.type === "checkbox") return { checked: field.value === true };
  return { text: String(field.value) };
}

const same = (field: EnvelopeField, given: Submitted) =>
  field.type === "checkbox" ? (field.value === true) === (given === true) : String(field.value ?? "") === String(given);

export function checkFieldValues(
  signer: { name: string; email: string },
  fields: EnvelopeField[],
  given: Record<string, Submitted>,
): CheckedValues {
  const issues: FieldIssue[] = [];
  const values: Record<string, StoredValue> = {};
  const drawn: CheckedValues["drawn"] = [];
  const issue = (id: string, code: string, message: string) => issues.push({ field: `fields.${id}`, path: ["fields", id], code, message });
  const byId = new Map(fields.map((f) => [f.id, f]));
  for (const id of Object.keys(given)) if (!byId.has(id)) issue(id, "unknown_field", "You have no field with this id");

  for (const field of fields) {
    const value = given[field.id];
    const empty = value === undefined || value === "";
    if (field.type === "name" || field.type === "email") {
      values[field.id] = { text: field.type === "name" ? signer.name : signer.email };
      continue;
    }
    if (field.readOnly) {
      if (!empty && !same(field, value)) issue(field.id, "read_only", "This field is read-only: its value was set by the sender");
      const kept = prefilled(field);
      if (kept) values[field.id] = kept;
      continue;
    }
    if (empty) {
      const kept = prefilled(field);
      if (kept && !(field.type === "checkbox" && field.required && !field.value)) {
        values[field.id] = kept;
        continue;
      }
      if (field.required) issue(field.id, "required", `This ${field.type} field is required`);
      continue;
    }
    const wrong = (expected: string) => issue(field.id, "wrong_type", `Expected ${expected}`);
    switch (field.type) {
      case "checkbox":
        if (typeof value !== "boolean") wrong("true or false");
        else if (field.required && !value) issue(field.id, "required", "This checkbox must be ticked");
        else values[field.id] = { checked: value };
        break;
      case "date":
        if (typeof value !== "string" || !isRealDate(value)) wrong("a date as YYYY-MM-DD");
        else values[field.id] = { text: value };
        break;
      case "number": {
        if (typeof value !== "number" || !Number.isFinite(value)) {
          wrong("a number");
          break;
        }
        const v = field.validation;
        if (v?.min !== undefined && value < v.min) issue(field.id, "too_small", `At least ${v.min}`);
        else if (v?.max !== undefined && value > v.max) issue(field.id, "too_big", `At most ${v.max}`);
        else values[field.id] = { text: String(value) };
        break;
      }
      case "radio":
      case "dropdown":
        if (typeof value !== "string") wrong("one of the options");
        else if (!field.options?.includes(value)) issue(field.id, "not_an_option", `Choose one of: ${(field.options ?? []).join(", ")}`);
        else values[field.id] = { text: value };
        break;
      case "text": {
        if (typeof value !== "string") {
          wrong("text");
          break;
        }
        const limit = field.validation?.pattern ? MAX_PATTERNED_TEXT : MAX_TEXT;
        const max = Math.min(field.validation?.maxLength ?? limit, limit);
        if (/\p{Cc}/u.test(value)) issue(field.id, "invalid_characters", "One line of text, without control characters");
        else if (Array.from(value).length > max) issue(field.id, "too_long", `At most ${max} characters`);
        else if (field.validation?.pattern && !new RegExp(`^(?:${field.validation.pattern})$`, "u").test(value))
          issue(field.id, "pattern_mismatch", "The value does not have the expected form");
        else values[field.id] = { text: value };
        break;
      }
      case "signature":
      case "initials": {
        if (typeof value !== "string") {
          wrong('"adopted" or a PNG data URL');
          break;
        }
        if (value === "adopted") {
          values[field.id] = { adopted: field.type === "initials" ? initialsOf(signer.name) : signer.name };
          break;
        }
        const png = drawnPng(value);
        if (typeof png === "string") issue(field.id, "invalid_signature", png);
        else drawn.push({ fieldId: field.id, png });
        break;
      }
    }
  }
  return { values, drawn, issues };
}

/**
 * A pattern a sender may set, or why not (issue 44). JavaScript's regular expressions backtrack, and a signer's value
 * (at most 200 characters when a pattern is set) runs against it inside the envelope's object: `(a|a)+` takes seconds at 30 characters,
 * `\w*\w*\w*\w*x` hours at 200. So the pattern is parsed and the ways it can split a value are counted, a quantified
 * part counting its repetitions (an unbounded one the value's length) times the ways of what it repeats; an
 * unbounded repetition of something that can match in more than one way (alternatives, a quantifier inside) is
 * refused outright (the exponential case), and so is any pattern past a million ways, or with a backreference.
 */
const MAX_PATTERN_WAYS = 10_000_000;
/** A text field with a pattern takes at most this many characters (its own maxLength if lower). */
export const MAX_PATTERNED_TEXT = 200;
const VALUE_LENGTH = MAX_PATTERNED_TEXT;

export function patternProblem(pattern: string): string | null {
  try {
    new RegExp(pattern, "u");
  } catch {
    return "Not a valid regular expression";
  }
  try {
    const ways = new PatternCost(pattern).alternatives();
    return ways > MAX_PATTERN_WAYS ? "The pattern can match a value in too many ways to check it quickly: simplify it" : null;
  } catch (err) {
    if (err instanceof PatternRefused) return err.message;
    throw err;
  }
}

class PatternRefused extends Error {}

/** A recursive descent over the pattern's syntax, answering the ways each part can match (capped at Infinity). */
class PatternCost {
  private at = 0;
  constructor(private readonly p: string) {}

  alternatives(): number {
    let ways = this.sequence();
    while (this.p[this.at] === "|") {
      this.at++;
      ways += this.sequence();
    }
    return ways;
  }

  private sequence(): number {
    let ways = 1;
    while (this.at < this.p.length && this.p[this.at] !== "|" && this.p[this.at] !== ")") {
      ways *= this.quantified(this.atom());
      if (ways > MAX_PATTERN_WAYS) return Infinity;
    }
    return ways;
  }

  /** The ways of an atom (1 for a character or class; a group's own) under the quantifier that follows it, if any. */
  private quantified(inner: number): number {
    const q = this.quantifier();
    if (!q) return inner;
    this.at += this.p[this.at] === "?" ? 1 : 0; // lazy: the same ways
    if (q.max === Infinity) {
      if (inner > 1) throw new PatternRefused("A repeated part of the pattern can match in more than one way, as in (a|a)+ or (a+)+");
      return VALUE_LENGTH;
    }
    let ways = 0;
    for (let k = q.min; k <= q.max && ways <= MAX_PATTERN_WAYS; k++) ways += inner ** k;
    return ways;
  }

  private quantifier(): { min: number; max: number } | null {
    const ch = this.p[this.at];
    if (ch === "*" || ch === "+" || ch === "?") {
      this.at++;
      return { min: ch === "+" ? 1 : 0, max: ch === "?" ? 1 : Infinity };
    }
    const m = ch === "{" ? /^\{(\d+)(,(\d*))?\}/.exec(this.p.slice(this.at)) : null;
    if (!m) return null;
    this.at += m[0].length;
    const min = Number(m[1]);
    return { min, max: m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]) };
  }

  private atom(): number {
    const ch = this.p[this.at++]!;
    if (ch === "\\") {
      const next = this.p[this.at++] ?? "";
      if (/[1-9]/.test(next) || next === "k") throw new PatternRefused("A backreference is not allowed in a pattern");
      if (next === "u" && this.p[this.at] === "{") this.at = this.p.indexOf("}", this.at) + 1;
      else if (next === "u") this.at += 4;
      else if (next === "x") this.at += 2;
      else if ((next === "p" || next === "P") && this.p[this.at] === "{") this.at = this.p.indexOf("}", this.at) + 1;
      return 1;
    }
    if (ch === "[") {
      while (this.at < this.p.length && this.p[this.at] !== "]") this.at += this.p[this.at] === "\\" ? 2 : 1;
      this.at++;
      return 1;
    }
    if (ch === "(") {
      if (this.p[this.at] === "?") {
        // (?:…), lookarounds (?=…) (?!…) (?<=…) (?<!…), named groups (?<name>…)
        const m = /^\?(:|=|!|<=|<!|<[A-Za-z_$][\w$]*>)/.exec(this.p.slice(this.at));
        this.at += m ? m[0].length : 1;
      }
      const ways = this.alternatives();
      this.at++; // ")"
      return ways;
    }
    return 1; // a character, ".", "^", "$"
  }
}
