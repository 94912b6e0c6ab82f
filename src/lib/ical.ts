/**
 * A small iCalendar writer (RFC 5545): content lines with escaped TEXT values, quoted parameters, CRLF endings and
 * lines folded at 75 octets on UTF-8 character boundaries (§3.1). It knows no appointment: callers build the
 * components (appointments/ical.ts) and hand them over as properties. Written here rather than taken from a library:
 * what we write is a few properties, and the libraries that write iCalendar either pull Node APIs into the Worker or
 * leave folding by octets to the caller.
 */

/** One property: `name`, its parameters (already chosen, unquoted) and its value, raw or as TEXT to be escaped. */
export interface IcalProperty {
  name: string;
  params?: Record<string, string | undefined>;
  /** A value written as is (dates, integers, URIs, enumerations). */
  value?: string;
  /** A TEXT value (SUMMARY, LOCATION, DESCRIPTION): backslash, semicolon, comma and newlines escaped (§3.3.11). */
  text?: string;
}

export interface IcalComponent {
  name: string;
  properties: (IcalProperty | null | undefined)[];
  components?: IcalComponent[];
}

/** §3.3.11: `\` `;` `,` escaped with a backslash, every line break (CRLF, CR, LF) as `\n`. */
export const escapeText = (text: string): string =>
  text
    .replace(/\\/g, "\\\\")
    .replace(/;/g, "\\;")
    .replace(/,/g, "\\,")
    .replace(/\r\n|\r|\n/g, "\\n");

/**
 * §3.2: a parameter value with `:` `;` or `,` is quoted; a DQUOTE cannot appear inside one (nor control characters),
 * so they are dropped (RFC 6868's ^-escapes are not understood by every client).
 */
function paramValue(value: string): string {
  const clean = value.replace(/["\u0000-\u001f\u007f]/g, "");
  return /[:;,]/.test(clean) ? `"${clean}"` : clean;
}

const encoder = new TextEncoder();

/**
 * §3.1: lines longer than 75 octets are split, each continuation starting with one space (which counts in its 75),
 * never inside a multi-octet UTF-8 character.
 */
export function foldLine(line: string): string {
  if (encoder.encode(line).length <= 75) return line;
  const parts: string[] = [];
  let current = "";
  let octets = 0;
  for (const ch of line) {
    const size = encoder.encode(ch).length;
    if (octets + size > 75) {
      parts.push(current);
      current = " ";
      octets = 1;
    }
    current += ch;
    octets += size;
  }
  parts.push(current);
  return parts.join("\r\n");
}

/** The content line of a property, unfolded. */
export function contentLine(p: IcalProperty): string {
  const params = Object.entries(p.params ?? {})
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `;${k}=${paramValue(v)}`)
    .join("");
  const value = p.text !== undefined ? escapeText(p.text) : (p.value ?? "");
  return `${p.name}${params}:${value}`;
}

function componentLines(c: IcalComponent, out: string[]): void {
  out.push(`BEGIN:${c.name}`);
  for (const p of c.properties) if (p) out.push(foldLine(contentLine(p)));
  for (const child of c.components ?? []) componentLines(child, out);
  out.push(`END:${c.name}`);
}

/** A whole iCalendar object: every line folded, CRLF after each (the last too). */
export function writeIcal(calendar: IcalComponent): string {
  const lines: string[] = [];
  componentLines(calendar, lines);
  return `${lines.join("\r\n")}\r\n`;
}

/** A UTC date-time value (§3.3.5 form 2): `20270315T180000Z`. */
export const utcStamp = (at: Date | string): string =>
  new Date(at)
    .toISOString()
    .replace(/\.\d{3}Z$/, "Z")
    .replace(/[-:]/g, "");

/** A DATE value (§3.3.4) of a `YYYY-MM-DD` day. */
export const dateValue = (day: string): string => day.slice(0, 10).replace(/-/g, "");
