import { and, asc, count, eq, sql } from "drizzle-orm";
import { dealActivities, dealDocuments } from "../db/schema";
import { withRetries } from "../db/write";
import { commit } from "../events/commit";
import { readConfig } from "../env";
import { newEvent } from "../events/outbox";
import { requestFileSigner } from "../files/signed-url";
import { discardUploads, putUploads, settleUploads } from "../files/uploads";
import { toHex } from "../lib/crypto";
import { type FieldIssue, NotConfigured, PayloadTooLarge, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../service-context";
import { dealPrefix } from "../files/keys";
import { imageTypeOf } from "../files/types";
import { type DocumentRecord, toDeal, toDocument } from "./mapping";
import { type DealDocument, DocumentName, type DocumentUploadForm } from "./schemas";
import { findDeal, readDealForWrite } from "./service";
import { activityRow, touchDeal } from "./writes";

/** Per document; the request is bounded by the route's body limit (platform/body-limit.ts LARGE_BODY_ROUTES). */
export const MAX_DOCUMENT_BYTES = 25 * 1024 * 1024;
/** Documents a deal holds at most (its list is answered whole). */
export const MAX_DOCUMENTS = 100;

const OOXML: Record<string, string> = {
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};
const OLE: Record<string, string> = { doc: "application/msword", xls: "application/vnd.ms-excel", ppt: "application/vnd.ms-powerpoint" };

/**
 * A document's type by its first bytes (never by what the client declares): PDF, the images photos take, Office files
 * (OOXML zip containers and legacy OLE, told apart by the file's extension), or null for anything else. Only these
 * are stored, so a download can never be an HTML page or a script.
 */
export function documentTypeOf(head: Uint8Array, fileName: string): string | null {
  const ascii = String.fromCharCode(...head.subarray(0, 5));
  if (ascii === "%PDF-") return "application/pdf";
  const image = imageTypeOf(head);
  if (image) return image;
  const ext = fileName.toLowerCase().split(".").pop() ?? "";
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) return OOXML[ext] ?? null;
  if ([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1].every((b, i) => head[i] === b)) return OLE[ext] ?? null;
  return null;
}

const issue = (field: string, code: string, message: string): FieldIssue => ({ field, path: [field], code, message });

/** What the form's schema cannot judge: the size (a 413 before anything else), emptiness and the type by content. */
async function checkUpload(upload: DocumentUploadForm) {
  const { file } = upload;
  if (file.size > MAX_DOCUMENT_BYTES) throw new PayloadTooLarge(MAX_DOCUMENT_BYTES);
  if (file.size === 0) throw new Validation([issue("file", "empty_file", "The file is empty")]);
  const bytes = await file.arrayBuffer();
  const mimeType = documentTypeOf(new Uint8Array(bytes, 0, Math.min(16, bytes.byteLength)), file.name);
  if (!mimeType)
    throw new Validation([
      issue(
        "file",
        "unsupported_document_type",
        "Not a PDF, an image (JPEG, PNG, GIF, WebP, AVIF, HEIC) or an Office file (judged by its content)",
      ),
    ]);
  const fromFile = DocumentName.safeParse(file.name);
  if (upload.name === undefined && !fromFile.success)
    throw new Validation([
      issue(
        "name",
        "invalid_name",
        "The file's name cannot serve as the document's name (empty, over 200 characters or with control characters); send a name",
      ),
    ]);
  const name = upload.name ?? fromFile.data!;
  return { bytes, mimeType, name, type: upload.type ?? "OTHER", stage: upload.stage ?? null, signedAt: upload.signedAt ?? null };
}

/**
 * POST /v1/deals/{id}/documents: the file goes to R2 first, then its row in one batch (writes.ts touchDeal: no document
 * under a deal deleted meanwhile, never more than MAX_DOCUMENTS). The file is pending until that batch lands
 * (files/uploads.ts): removed again when the write cannot land, by the cron when nothing could. Emits
 * deal.document_uploaded; with an Idempotency-Key the answer is kept in the same batch.
 */
export async function uploadDocument(ctx: ServiceContext, dealId: string, upload: DocumentUploadForm): Promise<DealDocument> {
  if (!readConfig(ctx.env).FILES_URL_SECRET) throw new NotConfigured("FILES_URL_SECRET");
  const doc = await checkUpload(upload);
  await readDealForWrite(ctx, dealId);
  const id = newId();
  const key = `${dealPrefix(ctx.organizationId, dealId)}documents/${id}`;
  const disposition = doc.mimeType === "application/pdf" || doc.mimeType.startsWith("image/") ? "inline" : "attachment";
  const row: DocumentRecord = {
    id,
    organizationId: ctx.organizationId,
    dealId,
    name: doc.name,
    type: doc.type,
    stage: doc.stage,
    key,
    size: doc.bytes.byteLength,
    mimeType: doc.mimeType,
    sha256: toHex(await crypto.subtle.digest("SHA-256", doc.bytes)),
    signedAt: doc.signedAt,
    uploadedAt: new Date().toISOString(),
  };
  try {
    await putUploads(ctx, [
      {
        key,
        bytes: doc.bytes,
        httpMetadata: { contentType: doc.mimeType, contentDisposition: `${disposition}; filename*=UTF-8''${encodeURIComponent(doc.name)}` },
      },
    ]);
    return await withRetries(async () => {
      const before = await readDealForWrite(ctx, dealId);
      const [held] = await ctx.db
        .select({ n: count() })
        .from(dealDocuments)
        .where(and(eq(dealDocuments.organizationId, ctx.organizationId), eq(dealDocuments.dealId, dealId)));
      if ((held?.n ?? 0) >= MAX_DOCUMENTS)
        throw new Validation([issue("file", "too_many_documents", `A deal holds at most ${MAX_DOCUMENTS} documents`)]);
      const at = new Date().toISOString();
      const after = { ...before, lastActivityAt: at, version: before.version + 1 };
      const sign = requestFileSigner(ctx);
      const shown = await toDocument(row, sign);
      const { url: _url, ...document } = shown;
      const room = sql`(SELECT COUNT(*) FROM ${dealDocuments} WHERE ${and(eq(dealDocuments.organizationId, ctx.organizationId), eq(dealDocuments.dealId, dealId))}) < ${MAX_DOCUMENTS}`;
      await commit(
        ctx,
        [
          ...touchDeal(ctx, dealId, at, [room]),
          ctx.db.insert(dealDocuments).values(row),
          ctx.db
            .insert(dealActivities)
            .values(
              activityRow(ctx, dealId, "DOCUMENT_UPLOADED", `Document uploaded: ${doc.name}`, { documentId: id, type: doc.type }, at),
            ),
          ...settleUploads(ctx, [key]),
        ],
        [newEvent(ctx, "deal.document_uploaded", { object: toDeal(after), document, previousAttributes: null, changes: null })],
        { answer: shown },
      );
      return shown;
    });
  } catch (err) {
    ctx.defer(discardUploads(ctx, [key]));
    throw err;
  }
}

/** GET /v1/deals/{id}/documents: oldest first, each with a signed link. */
export async function listDocuments(ctx: ServiceContext, dealId: string): Promise<DealDocument[]> {
  await findDeal(ctx, dealId);
  const rows = await ctx.db
    .select()
    .from(dealDocuments)
    .where(and(eq(dealDocuments.organizationId, ctx.organizationId), eq(dealDocuments.dealId, dealId)))
    .orderBy(asc(dealDocuments.uploadedAt), asc(dealDocuments.id))
    .all();
  const sign = requestFileSigner(ctx);
  return Promise.all(rows.map((r) => toDocument(r, sign)));
}
