import { and, asc, eq, gt, inArray, or } from "drizzle-orm";
import { importErrors, imports } from "../db/schema";
import { settleUploads, putUploadStream, discardUploads } from "../files/uploads";
import { deleteFiles } from "../files/storage";
import { Conflict, NotFound, Validation, type FieldIssue } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { appUrlOf, readConfig } from "../env";
import { csvLine } from "./csv";
import { type ImportKind, isTarget } from "./mapping";
import { type Import, ImportMapping, type ImportQuery, type ImportRows } from "./schemas";
export { importsErasable } from "./erasure";

export type ImportRow = typeof imports.$inferSelect;

/** The message of one chunk to run: which import (the chunk is the one its row names next). */
export const ACTIVE = ["queued", "running"] as const;

export const sourceKeyOf = (organizationId: string, id: string) => `imports/${organizationId}/${id}.csv`;

export function toImport(env: ServiceContext["env"], row: ImportRow): Import {
  return {
    id: row.id,
    kind: row.kind as Import["kind"],
    status: row.status as Import["status"],
    onDuplicate: row.onDuplicate as Import["onDuplicate"],
    format: (row.detectedFormat as Import["format"]) ?? null,
    processed: row.processed,
    created: row.created,
    updated: row.updated,
    skipped: row.skipped,
    failed: row.failed,
    errorsUrl: `${appUrlOf(readConfig(env))}/v1/imports/${row.id}/errors`,
    failureReason: row.failureReason,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    finishedAt: row.finishedAt,
  };
}

/** Every problem of a mapping: a target no field of the kind has. */
function mappingIssues(kind: ImportKind, mapping: Record<string, string> | undefined, field: string): FieldIssue[] {
  return Object.entries(mapping ?? {})
    .filter(([, target]) => target !== "ignore" && !isTarget(kind, target))
    .map(([column, target]) => ({
      field: `${field}.${column}`,
      path: [field, column],
      code: "invalid_target",
      message: `No ${kind} field '${target}'`,
    }));
}

/** The mapping of a CSV upload, from its query parameter (JSON). */
function mappingOfQuery(kind: ImportKind, text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Validation([
      { field: "mapping", path: ["mapping"], code: "invalid_json", message: "mapping must be a JSON object of column → field" },
    ]);
  }
  const checked = ImportMapping.safeParse(parsed);
  if (!checked.success)
    throw new Validation([
      {
        field: "mapping",
        path: ["mapping"],
        code: "invalid_mapping",
        message: "mapping must be a JSON object of column → field (strings)",
      },
    ]);
  const issues = mappingIssues(kind, checked.data, "mapping");
  if (issues.length) throw new Validation(issues);
  return checked.data;
}

async function begin(
  ctx: ServiceContext,
  id: string,
  kind: ImportKind,
  sizeBytes: number,
  onDuplicate: string,
  mapping: Record<string, string> | undefined,
): Promise<Import> {
  const at = nowIso();
  const key = sourceKeyOf(ctx.organizationId, id);
  const row: ImportRow = {
    id,
    organizationId: ctx.organizationId,
    kind,
    status: "queued",
    sourceKey: key,
    sizeBytes,
    onDuplicate,
    mapping: mapping ?? null,
    columns: null,
    resolvedMapping: null,
    detectedFormat: null,
    nextChunk: 0,
    byteOffset: 0,
    nextRow: 2,
    processed: 0,
    created: 0,
    updated: 0,
    skipped: 0,
    failed: 0,
    failureReason: null,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    progressAt: at,
    finishedAt: null,
  };
  try {
    await ctx.db.batch([ctx.db.insert(imports).values(row), ...settleUploads(ctx, [key])]);
  } catch (err) {
    ctx.defer(discardUploads(ctx, [key]));
    throw err;
  }
  // A lost send is picked up by the cron (resumeStalledImports) once the import has sat queued for a while.
  ctx.defer(ctx.queues.imports.send({ importId: id, organizationId: ctx.organizationId }).catch(() => undefined));
  return toImport(ctx.env, row);
}

/** POST /v1/imports with a CSV body: streamed to R2 as it arrives, then queued. */
export async function startCsvImport(
  ctx: ServiceContext,
  query: ImportQuery,
  body: ReadableStream<Uint8Array> | null,
  length: number | null,
): Promise<Import> {
  if (!query.kind)
    throw new Validation([
      {
        field: "kind",
        path: ["kind"],
        code: "required",
        message: "kind is required with a CSV body (?kind=contacts, properties, tasks or appointments)",
      },
    ]);
  const mapping = mappingOfQuery(query.kind, query.mapping);
  if (length === null || !Number.isSafeInteger(length)) {
    throw new Validation(
      [
        {
          field: "Content-Length",
          path: ["Content-Length"],
          code: "length_required",
          message: "A CSV body needs Content-Length (it is streamed to storage as it arrives)",
        },
      ],
      "malformed",
    );
  }
  if (!body || length === 0) throw new Validation([{ field: "", path: [], code: "empty_file", message: "The CSV is empty" }]);
  const id = newId();
  try {
    await putUploadStream(ctx, sourceKeyOf(ctx.organizationId, id), body, length, { contentType: "text/csv" });
  } catch (err) {
    ctx.defer(discardUploads(ctx, [sourceKeyOf(ctx.organizationId, id)]));
    if (err instanceof TypeError)
      throw new Validation(
        [{ field: "", path: [], code: "body_length_mismatch", message: "The body did not match its Content-Length" }],
        "malformed",
      );
    throw err;
  }
  return begin(ctx, id, query.kind, length, query.onDuplicate ?? "skip", mapping);
}

/** A JSON row's value as its CSV cell: a list as its JSON text (agenda-rows.ts reads invitees back from it). */
const cellText = (value: ImportRows["rows"][number][string] | undefined): string =>
  value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);

/** POST /v1/imports with JSON rows: written as a CSV (columns in order of first use), so one path runs both. */
export async function startRowsImport(ctx: ServiceContext, body: ImportRows): Promise<Import> {
  const issues = mappingIssues(body.kind, body.mapping, "mapping");
  const columns = [...new Set(body.rows.flatMap((r) => Object.keys(r)))];
  for (const column of Object.keys(body.mapping ?? {})) {
    if (!columns.includes(column))
      issues.push({ field: `mapping.${column}`, path: ["mapping", column], code: "unknown_column", message: "No row has this column" });
  }
  if (issues.length) throw new Validation(issues);
  const text = csvLine(columns) + body.rows.map((r) => csvLine(columns.map((c) => cellText(r[c])))).join("");
  const bytes = new TextEncoder().encode(text);
  const id = newId();
  const key = sourceKeyOf(ctx.organizationId, id);
  const stream = new Response(bytes).body!;
  await putUploadStream(ctx, key, stream, bytes.length, { contentType: "text/csv" });
  return begin(ctx, id, body.kind, bytes.length, body.onDuplicate ?? "skip", body.mapping);
}

async function findImport(ctx: ServiceContext, id: string): Promise<ImportRow> {
  const row = await ctx.db
    .select()
    .from(imports)
    .where(and(eq(imports.id, id), eq(imports.organizationId, ctx.organizationId)))
    .get();
  if (!row) throw new NotFound("Import");
  return row;
}

export async function getImport(ctx: ServiceContext, id: string): Promise<Import> {
  return toImport(ctx.env, await findImport(ctx, id));
}

/**
 * POST /v1/imports/{id}/cancel: no chunk runs after this one commits (each chunk's batch is guarded on the import
 * still running); what earlier chunks wrote stays. 409 `import_finished` once it has ended.
 */
export async function cancelImport(ctx: ServiceContext, id: string): Promise<Import> {
  const before = await findImport(ctx, id);
  const at = nowIso();
  const [row] = await ctx.db
    .update(imports)
    .set({ status: "cancelled", finishedAt: at, updatedAt: at })
    .where(and(eq(imports.id, id), eq(imports.organizationId, ctx.organizationId), inArray(imports.status, [...ACTIVE])))
    .returning();
  if (!row)
    throw new Conflict(`The import has ended (${(await findImport(ctx, id)).status}); there is nothing to cancel`, "import_finished");
  ctx.defer(deleteFiles(ctx, [before.sourceKey]));
  return toImport(ctx.env, row);
}

const ERROR_PAGE = 1000;

/**
 * GET /v1/imports/{id}/errors: the rows an import could not take (or took with a warning) as CSV, `row,column,reason`,
 * written as a keyset walk over them goes (pages of 1,000), never held whole.
 */
export async function importErrorsCsv(ctx: ServiceContext, id: string): Promise<ReadableStream<Uint8Array>> {
  await findImport(ctx, id);
  const encoder = new TextEncoder();
  let after: [number, number] | null = null;
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(encoder.encode(csvLine(["row", "column", "reason"])));
        return;
      }
      const e = importErrors;
      const page = await ctx.db
        .select({ row: e.rowNumber, seq: e.seq, column: e.column, reason: e.reason })
        .from(e)
        .where(
          and(
            eq(e.importId, id),
            eq(e.organizationId, ctx.organizationId),
            after ? or(gt(e.rowNumber, after[0]), and(eq(e.rowNumber, after[0]), gt(e.seq, after[1]))) : undefined,
          ),
        )
        .orderBy(asc(e.rowNumber), asc(e.seq))
        .limit(ERROR_PAGE);
      if (page.length > 0) controller.enqueue(encoder.encode(page.map((r) => csvLine([r.row, r.column, r.reason])).join("")));
      if (page.length < ERROR_PAGE) controller.close();
      else after = [page[page.length - 1]!.row, page[page.length - 1]!.seq];
    },
  });
}
