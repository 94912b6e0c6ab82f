import { z } from "@hono/zod-openapi";

/**
 * Streaming exports of the CRM lists: a keyset walk written to the response page by page, so 100,000
 * rows pass through a Worker without being held. A page is one D1 query (a Worker invocation has 1,000), so a page is
 * EXPORT_PAGE rows: 100,000 rows take 200 queries.
 */
export const EXPORT_PAGE = 500;

export const EXPORT_FORMATS = ["csv", "ndjson"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export const formatParam = z
  .enum(EXPORT_FORMATS)
  .default("csv")
  .openapi({ description: "csv (a header row, nested fields as dotted columns, lists joined with `; `) or ndjson (one object per line)" });

/** One page of a walk: the API objects, and the cursor after them (null on the last page). */
export interface ExportPage {
  data: object[];
  nextCursor: string | null;
}

type Schema = z.ZodType & { _zod: { def: { type: string; innerType?: Schema; shape?: Record<string, Schema>; in?: Schema } } };

/**
 * The dotted columns of an object schema: nested objects as `address.city`, anything else (lists, records, scalars)
 * one column. Fields that are optional (an `include`) are left out: a row has them only when asked. A record (a
 * free-form map) is one column here; its keys found in the first page become columns of their own (`columnsOf`).
 */
export function schemaColumns(schema: z.ZodType, prefix = ""): string[] {
  let s = schema as Schema;
  while (["nullable", "default", "readonly"].includes(s._zod.def.type) || (s._zod.def.type === "pipe" && s._zod.def.in))
    s = (s._zod.def.innerType ?? s._zod.def.in)!;
  if (s._zod.def.type !== "object" || !s._zod.def.shape) return [prefix.slice(0, -1)];
  return Object.entries(s._zod.def.shape).flatMap(([key, field]) =>
    (field as Schema)._zod.def.type === "optional" ? [] : schemaColumns(field, `${prefix}${key}.`),
  );
}

/** An object as dotted columns: nested objects flattened, lists joined, null and absent as "". */
export function flatten(value: unknown, prefix = "", out: Record<string, string> = {}): Record<string, string> {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value);
    // An empty or null object keeps its column, so a row without an address lines up with one that has it.
    if (entries.length === 0 && prefix) out[prefix.slice(0, -1)] = "";
    for (const [k, v] of entries) flatten(v, `${prefix}${k}.`, out);
    return out;
  }
  const key = prefix.slice(0, -1);
  if (Array.isArray(value)) out[key] = value.map((v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : String(v))).join("; ");
  else out[key] = value === null || value === undefined ? "" : String(value);
  return out;
}

/** The header: the schema's columns the rows have, then any other column the first page has (a record's keys), in order met. */
function columnsOf(base: string[], first: object[]): string[] {
  // A projection (`fields`) leaves keys out of the objects: their columns go too.
  const present = first[0] ? new Set(Object.keys(first[0])) : null;
  const columns = new Set(present ? base.filter((c) => present.has(c.split(".")[0]!)) : base);
  for (const row of first) for (const key of Object.keys(flatten(row))) columns.add(key);
  // A dotted key under a column the schema names whole (a record `customFields` → `customFields.x`) replaces it.
  for (const c of [...columns]) if ([...columns].some((k) => k.startsWith(`${c}.`))) columns.delete(c);
  return [...columns];
}

/**
 * A cell a spreadsheet would run as a formula (it starts with = + - @, a tab or a CR: CSV injection) gets a leading
 * apostrophe, which spreadsheets show as text; a plain number (a phone in E.164, a negative amount) is left as it is.
 * Imports take the apostrophe off again (`fromSpreadsheetSafe`), so an export imported back reads equal.
 */
export const spreadsheetSafe = (v: string) => (/^[=+\-@\t\r]/.test(v) && !/^[+-]?\d+(\.\d+)?$/.test(v) ? `'${v}` : v);
export const fromSpreadsheetSafe = (v: string) => (/^'[=+\-@\t\r]/.test(v) ? v.slice(1) : v);

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled; formulas neutralized first. */
const csvField = (raw: string) => {
  const v = spreadsheetSafe(raw);
  return /[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
};
const csvLine = (fields: string[]) => `${fields.map(csvField).join(",")}\r\n`;

/**
 * The export as a byte stream: `pageOf(cursor)` is called when the reader wants more (the stream's pull), so at most
 * one page is held however many rows the filters select, and a client that reads slowly slows the walk. In CSV the
 * columns are the schema's, `customColumns` (every custom field defined: a value first met on a later page keeps its
 * column) and the keys of the first page with rows.
 */
export function exportStream(
  format: ExportFormat,
  schema: z.ZodType,
  pageOf: (cursor: string | null) => Promise<ExportPage>,
  customColumns: string[] = [],
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let cursor: string | null = null;
  let columns: string[] | null = null;
  let done = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (done) return controller.close();
      // A page may hold nothing yet point further (a broad search examines a bounded window a page, crm/search.ts):
      // read on until one holds rows or the walk ends, so a pull that enqueues nothing never stalls the stream.
      let text = "";
      while (!text && !done) {
        const page = await pageOf(cursor);
        cursor = page.nextCursor;
        done = cursor === null;
        if (format === "ndjson") for (const row of page.data) text += `${JSON.stringify(row)}\n`;
        else {
          // The header waits for the first page with rows (or the end): it adds the keys that page has.
          if (!columns && (page.data.length > 0 || done)) {
            columns = columnsOf([...schemaColumns(schema), ...customColumns], page.data);
            text += csvLine(columns);
          }
          for (const row of page.data) {
            const flat = flatten(row);
            text += csvLine(columns!.map((c) => flat[c] ?? ""));
          }
        }
      }
      if (text) controller.enqueue(encoder.encode(text));
      if (done) controller.close();
    },
  });
}

/** The headers of an export answer: its type and a file name (`contacts-2026-11-27.csv`). */
export function exportHeaders(name: string, format: ExportFormat, now = new Date()): Record<string, string> {
  return {
    "Content-Type": format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
    "Content-Disposition": `attachment; filename="${name}-${now.toISOString().slice(0, 10)}.${format}"`,
    "Cache-Control": "no-store",
  };
}

/** An export's query: the list's filters (its shape, without page parameters and includes) and `format`. */
export const exportQuery = <T extends z.ZodRawShape>(filters: T) => z.strictObject({ format: formatParam, ...filters });
