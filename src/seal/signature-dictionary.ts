// Reads the last signature dictionary straight from a PDF's bytes, the way a verifier must: the signed bytes are the
// file itself, not what a PDF library would rebuild from it. Every search and parse is bounded; nothing here throws.

export interface FoundSignature {
  kind: "found";
  /** [offset, length, offset, length]: the two signed spans around the /Contents hex string. */
  byteRange: [number, number, number, number];
  /** The DER of /Contents (its zero padding included; a DER reader stops at the end of the CMS). */
  contents: Uint8Array;
  reason: string | null;
  name: string | null;
  /** /M, the claimed signing time, as ISO 8601 UTC. */
  signedAt: string | null;
}

export type SignatureLookup = FoundSignature | { kind: "none" } | { kind: "malformed" };

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
const BYTE_RANGE = ascii("/ByteRange");
const CONTENTS = ascii("/Contents");
const OBJ = ascii("obj");
const ENDOBJ = ascii("endobj");
/** A CMS with one certificate is a few KB; anything past this is not a signature we could have made. */
const MAX_CONTENTS_HEX = 1 << 20;
const DICTIONARY_WINDOW = 8192;

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number, to: number, backwards = false): number {
  const last = Math.min(to, hay.length) - needle.length;
  const first = Math.max(0, from);
  for (let i = backwards ? last : first; backwards ? i >= first : i <= last; i += backwards ? -1 : 1) {
    let j = 0;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

const latin1 = (bytes: Uint8Array) => {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return out;
};
const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;

/** The last /ByteRange in the file, its /Contents and the dictionary's /Reason, /Name and /M. */
export function findLastSignature(bytes: Uint8Array): SignatureLookup {
  const at = indexOf(bytes, BYTE_RANGE, 0, bytes.length, true);
  if (at === -1) return { kind: "none" };
  const numbers = /^\s*\[\s*(\d{1,15})\s+(\d{1,15})\s+(\d{1,15})\s+(\d{1,15})\s*\]/.exec(
    latin1(bytes.subarray(at + BYTE_RANGE.length, at + BYTE_RANGE.length + 100)),
  );
  if (!numbers) return { kind: "malformed" };
  const byteRange = numbers.slice(1, 5).map(Number) as FoundSignature["byteRange"];
  const start = byteRange[0] + byteRange[1];
  const end = byteRange[2];
  // The gap must be exactly a hex string that is the value of /Contents, or it could be hiding anything.
  if (!(start > 0 && end > start + 1 && end <= bytes.length && end - start - 2 <= MAX_CONTENTS_HEX)) return { kind: "malformed" };
  if (bytes[start] !== 0x3c || bytes[end - 1] !== 0x3e) return { kind: "malformed" };
  let key = start - 1;
  while (key > 0 && isSpace(bytes[key])) key--;
  if (indexOf(bytes, CONTENTS, key - CONTENTS.length + 1, key + 1) === -1) return { kind: "malformed" };
  const contents = decodeHex(bytes.subarray(start + 1, end - 1));
  if (!contents) return { kind: "malformed" };

  // The dictionary's other entries, in the object around it but outside the hex string.
  const objStart = indexOf(bytes, OBJ, at - DICTIONARY_WINDOW, at, true);
  const objEnd = indexOf(bytes, ENDOBJ, end, end + DICTIONARY_WINDOW);
  const text =
    latin1(bytes.subarray(objStart === -1 ? Math.max(0, at - 2048) : objStart, start)) +
    latin1(bytes.subarray(end, objEnd === -1 ? end + 2048 : objEnd));
  const date = readString(text, "M");
  return {
    kind: "found",
    byteRange,
    contents,
    reason: readString(text, "Reason"),
    name: readString(text, "Name"),
    signedAt: date === null ? null : parsePdfDate(date),
  };
}

function decodeHex(hex: Uint8Array): Uint8Array | null {
  const out = new Uint8Array(Math.ceil(hex.length / 2));
  let n = 0;
  let high = -1;
  for (const b of hex) {
    if (isSpace(b)) continue;
    const v = b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x41 && b <= 0x46 ? b - 0x37 : b >= 0x61 && b <= 0x66 ? b - 0x57 : -1;
    if (v === -1) return null;
    if (high === -1) high = v;
    else {
      out[n++] = (high << 4) | v;
      high = -1;
    }
  }
  if (high !== -1) out[n++] = high << 4;
  return out.subarray(0, n);
}

/** The text-string value of `/key` in `text`: a literal `( … )` or a hex `< … >` string, decoded (ISO 32000-1 7.9.2). */
function readString(text: string, key: string): string | null {
  const pattern = new RegExp(`/${key}[\\s]*(\\(|<(?!<))`, "g");
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    const from = m.index + m[0].length;
    const raw = m[1] === "(" ? readLiteral(text, from) : /^[0-9A-Fa-f\s]*(?=>)/.exec(text.slice(from, from + 4096))?.[0];
    if (raw === undefined || raw === null) continue;
    const bytes = m[1] === "(" ? ascii(raw) : decodeHex(ascii(raw));
    return bytes ? decodeText(bytes) : null;
  }
  return null;
}

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f", "(": "(", ")": ")", "\\": "\\" };

/** A literal string's bytes (as latin1 text) from just after its "(", with nested parentheses and escapes. */
function readLiteral(text: string, from: number): string | null {
  let out = "";
  let depth = 1;
  for (let i = from; i < text.length && i < from + 4096; i++) {
    const c = text[i]!;
    if (c === "\\") {
      const next = text[++i] ?? "";
      const octal = /^[0-7]{1,3}/.exec(text.slice(i, i + 3))?.[0];
      if (octal) {
        out += String.fromCharCode(parseInt(octal, 8) & 0xff);
        i += octal.length - 1;
      } else if (next === "\r" && text[i + 1] === "\n") i++;
      else if (next !== "\n" && next !== "\r") out += ESCAPES[next] ?? next;
    } else if (c === "(") {
      depth++;
      out += c;
    } else if (c === ")") {
      if (--depth === 0) return out;
      out += c;
    } else out += c;
  }
  return null;
}

/** UTF-16BE with its byte order mark, UTF-8 with its mark (PDF 2.0), else PDFDocEncoding (read as Latin-1). */
function decodeText(bytes: Uint8Array): string {
  if (bytes[0] === 0xfe && bytes[1] === 0xff) {
    let out = "";
    for (let i = 2; i + 1 < bytes.length; i += 2) out += String.fromCharCode((bytes[i]! << 8) | bytes[i + 1]!);
    return out;
  }
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder().decode(bytes.subarray(3));
  return latin1(bytes);
}

/** "D:YYYYMMDDHHmmSS" with an optional "Z" or "+HH'mm'" offset (ISO 32000-1 7.9.4) → ISO 8601 UTC. */
function parsePdfDate(value: string): string | null {
  const m = /^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:(Z)|([+-])(\d{2})'?(\d{2})?'?)?/.exec(value);
  if (!m) return null;
  const [year, month = 1, day = 1, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((v) => (v === undefined ? undefined : Number(v)));
  const offsetMinutes = m[8] ? (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10] ?? 0)) : 0;
  const time = Date.UTC(year!, month - 1, day, hour, minute, second) - offsetMinutes * 60_000;
  return Number.isFinite(time) ? new Date(time).toISOString() : null;
}
