/**
 * CSV (RFC 4180) read in chunks by byte offset (docs/decisions/0021-imports-in-guarded-chunks.md). Our own small parser
 * rather than a library: a chunk must end on a record boundary and say at which BYTE of the file it ended, so the next
 * chunk (another queue message, maybe after a crash) starts exactly there; the streaming parsers that run in Workers
 * (Papa Parse, csv-parse) report positions in characters of what they decoded, not in bytes of the file. Quotes,
 * doubled quotes, line breaks inside quotes, CRLF, LF or lone CR line ends and a UTF-8 byte-order mark are handled; a
 * blank line is no record.
 */

import { spreadsheetSafe } from "../crm/export";

export interface CsvRecord {
  fields: string[];
  /** The character index just after the record's line end in the text parsed. */
  end: number;
}

/**
 * The complete records of `text` from character `start`. With `final` false the text may stop inside a record; that
 * record is left out (the caller reads it with the next window). With `final` true the last record may end without a
 * line break, and an unclosed quote runs to the end of the text.
 */
export function parseCsv(
  text: string,
  { start = 0, final = true, max = Infinity }: { start?: number; final?: boolean; max?: number } = {},
): CsvRecord[] {
  const out: CsvRecord[] = [];
  let i = start;
  const n = text.length;
  while (i < n && out.length < max) {
    const fields: string[] = [];
    let field = "";
    let quoted = false;
    let j = i;
    for (;;) {
      if (j >= n) {
        if (!final) return out;
        fields.push(field);
        break;
      }
      const ch = text[j]!;
      if (quoted) {
        if (ch === '"') {
          if (text[j + 1] === '"') {
            field += '"';
            j += 2;
            continue;
          }
          // A quote at the end of a window may be the first of a doubled pair: wait for the next window.
          if (j + 1 >= n && !final) return out;
          quoted = false;
          j++;
          continue;
        }
        field += ch;
        j++;
        continue;
      }
      if (ch === '"' && field === "") {
        quoted = true;
        j++;
      } else if (ch === ",") {
        fields.push(field);
        field = "";
        j++;
      } else if (ch === "\n" || ch === "\r") {
        // CRLF is one line end; a CR at the window's end may be followed by its LF in the next one.
        if (ch === "\r" && j + 1 >= n && !final) return out;
        j += ch === "\r" && text[j + 1] === "\n" ? 2 : 1;
        fields.push(field);
        break;
      } else {
        field += ch;
        j++;
      }
    }
    i = j;
    if (!(fields.length === 1 && fields[0] === "")) out.push({ fields, end: j });
    else if (out.length > 0) out[out.length - 1]!.end = j;
  }
  return out;
}

const BOM = "\uFEFF";

export interface CsvChunk {
  records: string[][];
  /** The byte offset of the file just after the last record taken. */
  nextOffset: number;
  /** No record is left after these. */
  done: boolean;
}

/** A source the chunks read from: `read(offset, length)` answers at most `length` bytes from `offset` (fewer at the end). */
export type ByteRange = (offset: number, length: number) => Promise<Uint8Array>;

export class NotUtf8 extends Error {}
export class RecordTooLong extends Error {}

const FIRST_WINDOW = 256 * 1024;
const MAX_WINDOW = 8 * 1024 * 1024;

/**
 * Up to `max` records of the file from byte `offset` (a record boundary). The window is cut after its last line feed
 * (a byte no UTF-8 sequence contains), so it decodes whole; a record longer than the window doubles it, up to 8 MB.
 */
export async function readCsvChunk(read: ByteRange, size: number, offset: number, max: number): Promise<CsvChunk> {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const encoder = new TextEncoder();
  for (let window = FIRST_WINDOW; ; window *= 2) {
    if (offset >= size) return { records: [], nextOffset: size, done: true };
    const bytes = await read(offset, window);
    const final = offset + bytes.length >= size;
    const cut = final ? bytes.length : bytes.lastIndexOf(0x0a) + 1;
    if (cut > 0) {
      let text: string;
      try {
        text = decoder.decode(bytes.subarray(0, cut));
      } catch {
        throw new NotUtf8("The file is not UTF-8 text");
      }
      const start = offset === 0 && text.startsWith(BOM) ? 1 : 0;
      const records = parseCsv(text, { start, final, max });
      if (records.length > 0 || final) {
        const end = records.length > 0 ? records[records.length - 1]!.end : text.length;
        const nextOffset = offset + encoder.encode(text.slice(0, end)).length;
        return { records: records.map((r) => r.fields), nextOffset, done: nextOffset >= size };
      }
    }
    if (window >= MAX_WINDOW) throw new RecordTooLong(`A record at byte ${offset} is longer than ${MAX_WINDOW} bytes`);
  }
}

/** One CSV field as written: quoted when it holds a comma, a quote, a line break or leading/trailing space. */
export const csvField = (value: string | number): string => {
  // A file's own header names and cells come back in the errors CSV: neutralized like an export's.
  const text = typeof value === "number" ? String(value) : spreadsheetSafe(value);
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

export const csvLine = (values: (string | number)[]): string => `${values.map(csvField).join(",")}\r\n`;
