import { and, eq, getTableColumns, gt, sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { Zip, ZipDeflate, ZipPassThrough } from "fflate";
import { organizationExports } from "../db/schema";
import { columnName } from "../db/row-json";
import { exportArchiveKey } from "../files/export-archives";
import { MOVED_TABLES, type MovedTable } from "../shards/moved-tables";
import type { Files, ServiceContext } from "../service-context";

/**
 * The organization export's zip (docs/decisions/0025-exports.md), written by one queue invocation: NDJSON per table of the
 * organization's rows (every table a shard move carries, so a table added later is in it without a change here), then
 * every file the organization holds in R2 (deal documents, property photos and reports, envelopes' documents, their
 * certificates and sealed PDFs) under `files/<key>`. fflate's streaming Zip deflates the NDJSON and stores the files as
 * they are (PDFs and images are compressed already); its output is cut into R2 multipart parts of PART_SIZE, so the
 * job holds one part and one page of rows, however large the organization.
 */

/** R2 wants every part but the last of one size, at least 5 MiB. */
export const PART_SIZE = 5 * 1024 * 1024;
/** Rows per query of a table's walk. */
const ROWS_PER_QUERY = 1000;

/** Tables left out: stored answers of requests (a day's idempotency), caches, consumer bookkeeping, pending uploads, the exports themselves. */
const LEFT_OUT = new Set([
  "idempotency_keys",
  "list_totals",
  "processed_events",
  "pending_uploads",
  "organization_exports",
  "write_guards",
]);
/** Columns that hold credentials or capabilities (a link's token or its hash, a webhook's secret, an encrypted mail with its links): never exported. */
const CREDENTIAL_COLUMNS = new Set([
  "token_hash",
  "access_token_hash",
  "pending_token",
  "secret_ciphertext",
  "previous_secret_ciphertext",
  "contact_hash",
]);
/** Rows of mail_outbox whose body is encrypted carry links (capabilities): the body is left out of those. */
const ENCRYPTED_BODY = { table: "mail_outbox", flag: "sealed", column: "body" };

/** The R2 prefixes of an organization's files (files/keys.ts, signatures/certificate.ts, signatures/sealing.ts). */
const FILE_KINDS = ["deals", "properties", "envelopes", "certificates", "signed"];

export const EXPORTED_TABLES: MovedTable[] = MOVED_TABLES.filter((t) => !LEFT_OUT.has(t.name));

/** The progress the job reports as it goes (the export row's counters). */
export interface Progress {
  tablesDone: number;
  rows: number;
  files: number;
  bytes: number;
}

/** The multipart upload fed by the zip: chunks gather until a part is full; `drain` uploads the full parts. */
class PartWriter {
  private chunks: Uint8Array[] = [];
  private held = 0;
  private parts: R2UploadedPart[] = [];
  bytes = 0;
  constructor(private readonly upload: R2MultipartUpload) {}

  push(chunk: Uint8Array) {
    this.chunks.push(chunk);
    this.held += chunk.length;
    this.bytes += chunk.length;
  }

  /** Uploads every full part held; with `last`, the rest too as the final (smaller) part. */
  async drain(last = false): Promise<void> {
    while (this.held >= PART_SIZE || (last && this.held > 0)) {
      const size = Math.min(PART_SIZE, this.held);
      const part = new Uint8Array(size);
      let at = 0;
      while (at < size) {
        const chunk = this.chunks[0]!;
        const take = Math.min(chunk.length, size - at);
        part.set(chunk.subarray(0, take), at);
        at += take;
        if (take === chunk.length) this.chunks.shift();
        else this.chunks[0] = chunk.subarray(take);
      }
      this.held -= size;
      this.parts.push(await this.upload.uploadPart(this.parts.length + 1, part));
    }
  }

  complete() {
    return this.upload.complete(this.parts);
  }
}

/** A row as exported: camelCase as drizzle reads it, credentials left out. */
function exportedRow(table: MovedTable, row: Record<string, unknown>, credentials: string[]): Record<string, unknown> {
  for (const key of credentials) delete row[key];
  if (table.name === ENCRYPTED_BODY.table && row[ENCRYPTED_BODY.flag]) row[ENCRYPTED_BODY.column] = null;
  return row;
}

/** The property names (drizzle's) of the table's columns named in `names`. */
function propertiesOf(table: MovedTable, test: (name: string) => boolean): string[] {
  return Object.entries(getTableColumns(table.table) as Record<string, SQLiteColumn>)
    .filter(([, c]) => test(columnName(c)))
    .map(([k]) => k);
}

/** Rows after `last` in the table's key order (a row-value comparison over the key's columns). */
function afterKey(table: MovedTable, last: Record<string, unknown> | null, keyProps: string[]): SQL | undefined {
  if (!last) return undefined;
  if (table.key.length === 1) return gt(table.key[0]!, last[keyProps[0]!]);
  return sql`(${sql.join(table.key, sql`, `)}) > (${sql.join(
    keyProps.map((p) => sql`${last[p]}`),
    sql`, `,
  )})`;
}

/** Writes one table's rows of the organization as `tables/<name>.ndjson`, a page of rows a query. */
async function writeTable(ctx: ServiceContext, zip: Zip, out: PartWriter, table: MovedTable): Promise<number> {
  const columns = getTableColumns(table.table) as Record<string, SQLiteColumn>;
  const keyProps = table.key.map((k) => Object.entries(columns).find(([, c]) => c === k)![0]);
  const credentials = propertiesOf(table, (name) => CREDENTIAL_COLUMNS.has(name));
  const file = new ZipDeflate(`tables/${table.name}.ndjson`, { level: 6 });
  zip.add(file);
  const encoder = new TextEncoder();
  let rows = 0;
  for (let last: Record<string, unknown> | null = null; ; ) {
    const page = (await ctx.db
      .select()
      .from(table.table)
      .where(and(table.of(ctx.organizationId), afterKey(table, last, keyProps)))
      .orderBy(...table.key)
      .limit(ROWS_PER_QUERY)) as Record<string, unknown>[];
    if (page.length === 0) break;
    last = { ...page[page.length - 1]! };
    file.push(encoder.encode(page.map((r) => `${JSON.stringify(exportedRow(table, r, credentials))}\n`).join("")));
    rows += page.length;
    await out.drain();
    if (page.length < ROWS_PER_QUERY) break;
  }
  file.push(new Uint8Array(0), true);
  return rows;
}

/** Writes every R2 object under the organization's prefixes as `files/<key>`, streamed through. */
async function writeFiles(bucket: Files, organizationId: string, zip: Zip, out: PartWriter): Promise<number> {
  let files = 0;
  for (const kind of FILE_KINDS) {
    let cursor: string | undefined;
    do {
      const listed = await bucket.list({ prefix: `${kind}/${organizationId}/`, cursor });
      for (const { key } of listed.objects) {
        const object = await bucket.get(key);
        if (!object) continue;
        const entry = new ZipPassThrough(`files/${key}`);
        zip.add(entry);
        const reader = object.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          entry.push(value);
          await out.drain();
        }
        entry.push(new Uint8Array(0), true);
        files++;
      }
      cursor = listed.truncated ? listed.cursor : undefined;
    } while (cursor);
  }
  return files;
}

/**
 * Writes the organization's zip to R2 at `exportArchiveKey` with a multipart upload; `report` is called after each
 * table with the progress so far. Anything thrown aborts the upload, so no part outlives a failed run (a retry starts
 * again from scratch). Answers the final counts.
 */
export async function writeArchive(
  ctx: ServiceContext,
  exportId: string,
  readme: string,
  report: (p: Progress) => Promise<void>,
): Promise<Progress> {
  const key = exportArchiveKey(ctx.organizationId, exportId);
  const upload = await ctx.files.createMultipartUpload(key, {
    httpMetadata: { contentType: "application/zip", contentDisposition: `attachment; filename="organization-export-${exportId}.zip"` },
  });
  const out = new PartWriter(upload);
  let failed: Error | null = null;
  const zip = new Zip((err, chunk) => {
    if (err) failed = err;
    else out.push(chunk);
  });
  const progress: Progress = { tablesDone: 0, rows: 0, files: 0, bytes: 0 };
  try {
    const about = new ZipDeflate("README.txt");
    zip.add(about);
    about.push(new TextEncoder().encode(readme), true);
    for (const table of EXPORTED_TABLES) {
      progress.rows += await writeTable(ctx, zip, out, table);
      progress.tablesDone++;
      if (failed) throw failed;
      await report({ ...progress, bytes: out.bytes });
    }
    progress.files = await writeFiles(ctx.files, ctx.organizationId, zip, out);
    zip.end();
    if (failed) throw failed;
    await out.drain(true);
    await out.complete();
    return { ...progress, bytes: out.bytes };
  } catch (err) {
    await upload.abort().catch(() => undefined);
    throw err;
  }
}

/** The job's row still says it runs: checked before the zip is completed (an erasure may have ended it meanwhile). */
export async function stillRunning(ctx: ServiceContext, exportId: string): Promise<boolean> {
  const row = await ctx.db
    .select({ status: organizationExports.status })
    .from(organizationExports)
    .where(and(eq(organizationExports.organizationId, ctx.organizationId), eq(organizationExports.id, exportId)))
    .get();
  return row?.status === "running";
}
