import type { documents } from "../db/schema";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { uploadKey } from "../files/keys";
import { discardUploads, putUploads, settleUploads } from "../files/uploads";
import { inspectPdf, PdfRefused } from "../files/pdf-inspect";
import { sha256Hex } from "../lib/crypto";
import { Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { linkedDeal } from "./deal-link";
import { type Document, MAX_UPLOAD_PAGES, UPLOAD_FORM_KEY } from "./schemas";
import { documents as documentsTable } from "../db/schema";
import { toDocument } from "./service";
import { invalidTags, TAGS_INLINE_PAGES, takeTags } from "./upload-tags";

type Row = typeof documents.$inferSelect;

/**
 * The PDF as stored and described: refused with 422 and its code (pdf_invalid, pdf_encrypted, pdf_too_long) when it
 * cannot be signed. A PDF with an owner password only is stored as its unencrypted re-import.
 */
async function inspectUpload(bytes: Uint8Array, tags: boolean) {
  let inspected: Awaited<ReturnType<typeof inspectPdf>>;
  try {
    inspected = await inspectPdf(bytes, { maxPages: MAX_UPLOAD_PAGES });
  } catch (err) {
    if (err instanceof PdfRefused) throw new Unprocessable(err.code, err.message);
    throw err;
  }
  const tagged = tags ? await tagsOf(inspected) : { fields: null, tagsStatus: null, bytes: null };
  const stored = tagged.bytes ?? (inspected.restrictionsRemoved ? await inspected.pdf.save() : bytes);
  return { ...inspected, ...tagged, stored };
}

/**
 * Issue 45 part 2 (`?tags=true`): up to TAGS_INLINE_PAGES pages, the tags' fields and the PDF without them, or 422
 * invalid_tag naming every tag that cannot be read (nothing stored); past that, pending for the queue consumer.
 */
async function tagsOf(inspected: Awaited<ReturnType<typeof inspectPdf>>) {
  if (inspected.pages.length > TAGS_INLINE_PAGES) return { fields: null, tagsStatus: "pending" as const, bytes: null };
  const taken = await takeTags(inspected.pdf, inspected.pages);
  if ("problems" in taken) throw invalidTags(taken.problems);
  return { fields: taken.fields, tagsStatus: "done" as const, bytes: taken.bytes };
}

/**
 * A title for a PDF uploaded without one: its own /Title when it has visible text, with what `?title=` refuses taken
 * out (controls, bidirectional overrides and isolates, invisible format characters, line and paragraph separators:
 * a title reaches mails and the signing page, where `\u202egpj.exe` would read as something it is not).
 */
function titleOf(given: string | undefined, own: string | undefined): string {
  if (given?.trim()) return given.trim();
  const cleaned = (own ?? "")
    .normalize("NFC")
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  return /[\p{L}\p{N}]/u.test(cleaned) ? Array.from(cleaned).slice(0, 200).join("").trim() : "Untitled PDF";
}

/**
 * POST /api/documents/uploads (issue 44): a brokerage's own PDF becomes a GENERATED document anyone of the
 * organization can send for signature. Checked before anything is stored (pdf_invalid, pdf_encrypted, pdf_too_long);
 * then the file goes to R2 (noted pending first) and its row is committed with document.created (`source: upload`) and
 * DOCUMENT_UPLOADED, which has its text extracted and indexed for search by a queue consumer. An upload is not a
 * generation: the month's meter does not move. With `tags`, the PDF's text tags become its fields and leave the stored
 * PDF (upload-tags.ts); `sha256` stays the hash of the bytes received.
 */
export async function uploadDocument(
  ctx: ServiceContext,
  input: { bytes: Uint8Array; title?: string; dealId?: string; tags?: boolean },
): Promise<Document> {
  const [sha256, inspected, dealGuard] = await Promise.all([
    sha256Hex(input.bytes),
    inspectUpload(input.bytes, input.tags ?? false),
    linkedDeal(ctx, input.dealId),
  ]);
  const at = nowIso();
  const id = newId();
  const key = uploadKey(ctx.organizationId, id);
  const title = titleOf(input.title, inspected.pdf.getTitle());
  const row: Row = {
    id,
    organizationId: ctx.organizationId,
    formKey: UPLOAD_FORM_KEY,
    status: "GENERATED",
    canonical: {},
    sha256,
    dealId: input.dealId ?? null,
    source: "upload",
    title,
    fileKey: key,
    pageCount: inspected.pages.length,
    pages: inspected.pages.map(({ width, height, rotation, crop }) => ({ width, height, rotation, crop })),
    formFields: inspected.formFields,
    restrictionsRemoved: inspected.restrictionsRemoved,
    textStatus: "pending",
    fields: inspected.fields,
    tagsStatus: inspected.tagsStatus,
    templateId: null,
    templateVersion: null,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  await putUploads(ctx, [
    {
      key,
      bytes: inspected.stored,
      httpMetadata: { contentType: "application/pdf", contentDisposition: `inline; filename="document-${id}.pdf"` },
    },
  ]).catch((err: unknown) => {
    ctx.defer(discardUploads(ctx, [key]));
    throw err;
  });
  try {
    await commit(
      ctx,
      [...dealGuard, ctx.db.insert(documentsTable).values(row), ...settleUploads(ctx, [key])],
      [
        newEvent(ctx, "DOCUMENT_UPLOADED", {
          documentId: id,
          sha256,
          pageCount: row.pageCount,
          // Its tags are the consumer's to find (documents/upload-tags.ts).
          ...(row.tagsStatus === "pending" ? { tags: true } : {}),
        }),
        resourceEvent(ctx, "document.created", toDocument(row)),
      ],
      // With an Idempotency-Key, a retry after a lost reply replays this answer instead of storing the PDF again.
      { answer: toDocument(row) },
    );
  } catch (err) {
    ctx.defer(discardUploads(ctx, [key]));
    throw err;
  }
  return toDocument(row);
}
