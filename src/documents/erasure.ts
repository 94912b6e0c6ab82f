import { and, asc, eq, gt, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { documentObligations, documents, envelopes } from "../db/schema";
import type { Statement } from "../db/write";
import { inJsonList, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../platform/context";
import { documentVectorIndex } from "./vector-index";

/** Documents one round of the step takes. */
export const DOCUMENTS_PER_ROUND = 50;

/** No envelope of any status was made from the document. */
const withoutEnvelope = (documentId: SQLWrapper): SQL => sql`NOT EXISTS (SELECT 1 FROM ${envelopes} e WHERE e.document_id = ${documentId})`;

/** A completed envelope was made from the document: it is a signed record. */
const signed = (documentId: SQLWrapper): SQL => sql`EXISTS (SELECT 1 FROM ${envelopes} e WHERE e.document_id = ${documentId} AND e.status = 'completed')`;

/**
 * A person's erasure, on the documents side (issue 29), after the envelopes' side has deleted every envelope that
 * names them and never completed. Every document whose canonical text names the person leaves the search index (a
 * signed one too: it is kept as a record, not offered to search). A document no envelope was made from — a draft
 * that was generated, never signed — is deleted whole with its obligations: its text is the reviewed draft its
 * SHA-256 identifies, so rewriting it would leave a document nobody reviewed; nothing obliges keeping an unsigned
 * draft. A document with a completed envelope stays as signed. Each round: the index first, then one D1 batch, so a
 * failure leaves the rest for the next run. `counted()` adds the rows the statement before it deleted.
 */
export async function eraseDocumentsNaming(ctx: ServiceContext, needles: string[], counted: () => Statement): Promise<void> {
  const org = ctx.organizationId;
  const index = documentVectorIndex(ctx.env, ctx.db);
  let held = 0;
  for (let after = ""; ; ) {
    const round = await ctx.db
      // Each test nested in its own sql: drizzle writes a column directly in a select field without its table name.
      .select({ id: documents.id, unsent: sql<number>`${withoutEnvelope(documents.id)}`, signed: sql<number>`${signed(documents.id)}` })
      .from(documents)
      .where(and(eq(documents.organizationId, org), gt(documents.id, after), mentionsAny(documents.canonical, needles)))
      .orderBy(asc(documents.id))
      .limit(DOCUMENTS_PER_ROUND);
    if (round.length === 0) break;
    await index.removeDocuments(
      org,
      round.map((d) => d.id),
    );
    const drafts = round.filter((d) => d.unsent).map((d) => d.id);
    if (drafts.length > 0) {
      await ctx.db.batch([
        ctx.db.delete(documentObligations).where(and(eq(documentObligations.organizationId, org), inJsonList(documentObligations.documentId, drafts), withoutEnvelope(documentObligations.documentId))),
        ctx.db.delete(documents).where(and(eq(documents.organizationId, org), inJsonList(documents.id, drafts), withoutEnvelope(documents.id))),
        counted(),
      ]);
    }
    held += round.filter((d) => !d.unsent && !d.signed).length;
    if (round.length < DOCUMENTS_PER_ROUND) break;
    after = round[round.length - 1]!.id;
  }
  // An envelope sent for such a document after the envelopes' side had run: the next run deletes it, then the document.
  if (held > 0) throw new Error(`${held} document(s) naming the person got an envelope during the erasure; the next run of the erasure finishes them`);
}
