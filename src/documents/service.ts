import { and, count, desc, eq, sql } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { deals, documentOverages, documents, documentUsage } from "../db/schema";
import { expectRow, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { findDeal } from "../deals/service";
import { readConfig } from "../env";
import { newEvent } from "../events/outbox";
import { canonicalJson } from "../lib/canonical-json";
import { sha256Hex } from "../lib/crypto";
import { NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { deriveObligations, obligationInserts } from "./obligations";
import type { Document, DocumentCreate } from "./schemas";

/** What the signatures use of a document: its forms (the parties who sign) and its text and PDF as rendered. */
export { FORMS, type SigningParty } from "./forms";
export { renderDocumentPdf, renderDocumentText } from "./render";
/** The erasure of a person (contacts/erase.ts) reaches the documents that name them through this step. */
export { eraseDocumentsNaming } from "./erasure";

type Row = typeof documents.$inferSelect;

export const toDocument = (r: Row): Document => ({ id: r.id, status: r.status, formKey: r.formKey, canonical: r.canonical, sha256: r.sha256, dealId: r.dealId, createdAt: r.createdAt, updatedAt: r.updatedAt });

/** The metering period of an instant: its calendar month in UTC. */
export const periodOf = (at: Date) => at.toISOString().slice(0, 7);
const periodLabel = (at: Date) => new Intl.DateTimeFormat("en-US", { month: "long", year: "numeric", timeZone: "UTC" }).format(at);

export async function findDocument(ctx: ServiceContext, id: string): Promise<Row> {
  const row = await ctx.db.select().from(documents).where(and(eq(documents.organizationId, ctx.organizationId), eq(documents.id, id))).get();
  if (!row) throw new NotFound("Document");
  return row;
}

/** The deal a new document links to must be one of the caller's organization: otherwise a 400 naming `dealId`. */
async function linkedDeal(ctx: ServiceContext, dealId: string | null | undefined): Promise<Statement[]> {
  if (dealId === undefined || dealId === null) return [];
  await findDeal(ctx, dealId).catch((err: unknown) => {
    throw err instanceof NotFound ? new Validation([{ field: "dealId", path: ["dealId"], code: "invalid_reference", message: "No deal with this id in your organization" }]) : err;
  });
  // Still there when the batch runs (a delete in between aborts it, and the retry answers 400).
  return [expectRow(ctx.db, deals, and(eq(deals.organizationId, ctx.organizationId), eq(deals.id, dealId)))];
}

/**
 * POST /api/documents (DESIGN.md contract 4): the reviewed canonical draft becomes a GENERATED document, with the
 * obligations its form implies (documents/obligations.ts). The month's counter moves in the same batch, and a
 * document past the allotment gets its overage row there too, from the counter as that batch leaves it: concurrent
 * generations each take their own position, none is counted twice.
 */
export async function createDocument(ctx: ServiceContext, input: DocumentCreate): Promise<Document> {
  const canonical = input.canonical as Record<string, unknown>;
  const sha256 = await sha256Hex(canonicalJson(canonical));
  return withRetries(async () => {
    const dealGuard = await linkedDeal(ctx, input.dealId);
    const now = new Date();
    const at = nowIso(now);
    const period = periodOf(now);
    const row: Row = {
      id: newId(),
      organizationId: ctx.organizationId,
      formKey: input.formKey,
      status: "GENERATED",
      canonical,
      sha256,
      dealId: input.dealId ?? null,
      createdBy: ctx.actor.userId ?? null,
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
    const included = readConfig(ctx.env).DOCUMENTS_INCLUDED_PER_MONTH;
    const org = ctx.organizationId;
    await commit(
      ctx,
      [
        ...dealGuard,
        ctx.db.insert(documents).values(row),
        ...obligationInserts(ctx.db, await deriveObligations(row, at)),
        ctx.db
          .insert(documentUsage)
          .values({ organizationId: org, period, used: 1 })
          .onConflictDoUpdate({ target: [documentUsage.organizationId, documentUsage.period], set: { used: sql`${documentUsage.used} + 1` } }),
        ...(included === undefined
          ? []
          : [
              ctx.db
                .insert(documentOverages)
                .select(
                  sql`SELECT ${row.id}, ${org}, ${period}, u.used, ${included}, ${at} FROM ${documentUsage} u WHERE u.organization_id = ${org} AND u.period = ${period} AND u.used > ${included}`,
                ),
            ]),
      ],
      [newEvent(ctx, "DOCUMENT_GENERATED", { documentId: row.id, formKey: row.formKey, sha256: row.sha256 })],
    );
    return toDocument(row);
  });
}

export async function getDocument(ctx: ServiceContext, id: string): Promise<Document> {
  return toDocument(await findDocument(ctx, id));
}

/** GET /api/documents: newest first, keyset-paginated. */
export async function listDocuments(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const mine = eq(documents.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(documents)
      .where(after ? and(mine, olderThan(documents.createdAt, documents.id, after)) : mine)
      .orderBy(desc(documents.createdAt), desc(documents.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(documents).where(mine),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { documents: page.map(toDocument), pagination };
}

/** GET /api/documents/usage (spec: Usage). */
export async function getUsage(ctx: ServiceContext) {
  const now = new Date();
  const row = await ctx.db
    .select({ used: documentUsage.used })
    .from(documentUsage)
    .where(and(eq(documentUsage.organizationId, ctx.organizationId), eq(documentUsage.period, periodOf(now))))
    .get();
  return { used: row?.used ?? 0, included: readConfig(ctx.env).DOCUMENTS_INCLUDED_PER_MONTH ?? null, periodLabel: periodLabel(now) };
}
