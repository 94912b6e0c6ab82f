import { and, asc, eq, gt, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { documentObligations, documents, envelopes } from "../db/schema";
import type { Statement } from "../db/write";
import type { Erasable } from "../crm/erasure";
import type { Recognizer } from "../lib/mentions";
import { idsOf, inJsonList, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { documentVectorIndex } from "./vector-index";

/** Documents one round of the step takes (their text is read: it is tested in JS). */
export const DOCUMENTS_PER_ROUND = 25;

/** No envelope of any status was made from the document. */
const withoutEnvelope = (documentId: SQLWrapper): SQL => sql`NOT EXISTS (SELECT 1 FROM ${envelopes} e WHERE e.document_id = ${documentId})`;

/** A completed envelope was made from the document: it is a signed record. */
const signed = (documentId: SQLWrapper): SQL =>
  sql`EXISTS (SELECT 1 FROM ${envelopes} e WHERE e.document_id = ${documentId} AND e.status = 'completed')`;

/**
 * A person's erasure, on the documents side, after the envelopes' side has deleted every envelope that
 * names them by e-mail or phone and never completed. A document no envelope was made from — a draft that was
 * generated, never signed — that names them by their e-mail or phone (a party's address, or anywhere in its text) is
 * deleted whole with its obligations: its text is the reviewed draft its SHA-256 identifies, so rewriting it would
 * leave a document nobody reviewed; nothing obliges keeping an unsigned draft. One that names a name alone (a
 * free-form memo, a namesake's lease) is kept as it is and counted: the name may be another person's. A document
 * with a completed envelope stays as signed. Every document that is theirs — by e-mail or phone, or by a name no
 * other contact has — leaves the search index (a signed one too: it is kept as a record, not offered to search).
 * Each round: the index first, then one D1 batch, so a failure leaves the rest for the next run. `counted()` adds the
 * rows the statement before it deleted. Answers how many unsigned documents it kept that name the name alone.
 */
export async function eraseDocumentsNaming(ctx: ServiceContext, who: Recognizer, counted: () => Statement): Promise<number> {
  const org = ctx.organizationId;
  const index = documentVectorIndex(ctx.env, ctx.db);
  let held = 0;
  let byName = 0;
  for (let after = ""; ; ) {
    const round = await ctx.db
      // Each test nested in its own sql: drizzle writes a column directly in a select field without its table name.
      .select({
        id: documents.id,
        canonical: sql<string>`${documents.canonical}`,
        unsent: sql<number>`${withoutEnvelope(documents.id)}`,
        signed: sql<number>`${signed(documents.id)}`,
      })
      .from(documents)
      .where(and(eq(documents.organizationId, org), gt(documents.id, after), mentionsAny(documents.canonical, who.needles)))
      .orderBy(asc(documents.id))
      .limit(DOCUMENTS_PER_ROUND);
    if (round.length === 0) break;
    const seen = round.map((d) => ({ ...d, theirs: who.identifies(d.canonical), named: who.names(d.canonical) }));
    const unindexed = seen.filter((d) => d.theirs || (d.named && who.nameIsTheirs)).map((d) => d.id);
    if (unindexed.length > 0) await index.removeDocuments(org, unindexed);
    const drafts = seen.filter((d) => d.unsent && d.theirs).map((d) => d.id);
    if (drafts.length > 0) {
      await ctx.db.batch([
        ctx.db
          .delete(documentObligations)
          .where(
            and(
              eq(documentObligations.organizationId, org),
              inJsonList(documentObligations.documentId, drafts),
              withoutEnvelope(documentObligations.documentId),
            ),
          ),
        ctx.db.delete(documents).where(and(idsOf(documents, org, drafts), withoutEnvelope(documents.id))),
        counted(),
      ]);
    }
    held += seen.filter((d) => d.theirs && !d.unsent && !d.signed).length;
    byName += seen.filter((d) => !d.theirs && d.named && !d.signed).length;
    if (round.length < DOCUMENTS_PER_ROUND) break;
    after = round[round.length - 1]!.id;
  }
  // An envelope sent for such a document after the envelopes' side had run: the next run deletes it, then the document.
  if (held > 0)
    throw new Error(`${held} document(s) naming the person got an envelope during the erasure; the next run of the erasure finishes them`);
  return byName;
}

/** The documents that are the person's (naming their e-mail or phone, or a name that is theirs alone): the right of access lists them. */
export async function documentsNaming(ctx: ServiceContext, who: Recognizer): Promise<{ id: string; createdAt: string }[]> {
  const theirs: { id: string; createdAt: string }[] = [];
  for (let after = ""; ; ) {
    const round = await ctx.db
      .select({ id: documents.id, createdAt: documents.createdAt, canonical: sql<string>`${documents.canonical}` })
      .from(documents)
      .where(and(eq(documents.organizationId, ctx.organizationId), gt(documents.id, after), mentionsAny(documents.canonical, who.needles)))
      .orderBy(asc(documents.id))
      .limit(DOCUMENTS_PER_ROUND);
    theirs.push(
      ...round
        .filter((d) => who.identifies(d.canonical) || (who.nameIsTheirs && who.names(d.canonical)))
        .map(({ id, createdAt }) => ({ id, createdAt })),
    );
    if (round.length < DOCUMENTS_PER_ROUND) return theirs;
    after = round[round.length - 1]!.id;
  }
}

/** The documents' share of a person's erasure (crm/erasure.ts, erasure/erase.ts), after the signatures' (their envelopes). */
export const documentsErasable: Erasable = {
  erase: async (ctx, scrub, counted) => ({
    documents_by_name: await eraseDocumentsNaming(ctx, scrub.recognizer, () => counted("documents")),
  }),
};
