import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { envelopes, envelopeSigners } from "../db/schema";
import { ACTIVE, isExpired } from "./machine";

/**
 * Whether the signer a document link was made for (`for=<signerId>`, service.ts signerDocumentView) may still read
 * `key`: only while they have yet to sign or decline an envelope still open (a viewer: once they have viewed it too). A link handed out before they signed or
 * declined, or before the envelope was voided, declined or expired, then answers like an unknown one,
 * rather than for the rest of its 15 minutes.
 */
export async function signerMayReadDocument(db: Db, organizationId: string, key: string, signerId: string): Promise<boolean> {
  const row = await db
    .select({
      signer: envelopeSigners.status,
      envelope: envelopes.status,
      expiresAt: envelopes.expiresAt,
      documentKey: envelopes.documentKey,
    })
    .from(envelopeSigners)
    .innerJoin(envelopes, eq(envelopes.id, envelopeSigners.envelopeId))
    .where(
      and(
        eq(envelopeSigners.id, signerId),
        eq(envelopeSigners.organizationId, organizationId),
        eq(envelopes.organizationId, organizationId),
      ),
    )
    .get();
  if (row === undefined || row.documentKey !== key) return false;
  // A viewer is done the moment the document is before them (issue 44): the link they were handed then keeps serving
  // them for its minutes, also when their view was the last step and completed the envelope.
  if (row.signer === "viewed") return row.envelope === "completed" || (row.envelope === "partially_signed" && !isExpired(row));
  return row.envelope === "partially_signed" && !isExpired(row) && ACTIVE.has(row.signer);
}
