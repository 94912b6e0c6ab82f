import type { PDFDocument } from "@pdfme/pdf-lib";
import { and, eq } from "drizzle-orm";
import type { RoleField, UploadPage } from "../db/documents";
import type { Db } from "../db/client";
import { documents, pendingUploads } from "../db/schema";
import { expectVersion, withRetries } from "../db/write";
import type { Env } from "../env";
import { commit } from "../events/commit";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { resourceEvent } from "../events/resource-event";
import { pdfLib } from "../files/pdf-lib";
import { findTextTags, removeTextTags, type TagProblem } from "../files/pdf-tags";
import { discardUploads, putUploads, settleUploads } from "../files/uploads";
import { withDeferred } from "../lib/deferred";
import { Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import { type Logger, loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { toDocument } from "./service";

/**
 * Text tags on an upload (issue 45 part 2, `?tags=true`): the fields the PDF's own `{{…}}` tags place, for roles a send
 * then fills with recipients of the same keys (signatures/recipients.ts), and the PDF stored without the tags' text.
 * Up to TAGS_INLINE_PAGES pages the upload itself does it and a tag that cannot be read refuses it (422 invalid_tag,
 * nothing stored); past that the DOCUMENT_UPLOADED consumer below does (`tagsStatus` pending, then done or failed).
 */

/** Documents with more pages than this have their tags found by the queue consumer, not within the upload's request. */
export const TAGS_INLINE_PAGES = 20;

const DOCUMENTS = { table: documents, id: documents.id, organizationId: documents.organizationId, version: documents.version };

/** The tags that cannot be read, each named by its page and text. */
export function invalidTags(problems: TagProblem[]): Unprocessable {
  return new Unprocessable(
    "invalid_tag",
    `${problems.length} text tag(s) could not be read`,
    problems.map((p, i) => ({ field: `tags.${i}`, path: ["tags", i], code: p.code, message: `Page ${p.page}, ${p.text}: ${p.message}` })),
  );
}

/**
 * The fields of `pdf`'s tags and the PDF without them (null when it has none: the bytes stay as they are), or the
 * problems of the tags that cannot be read. `pdf` is changed when it had tags.
 */
export async function takeTags(
  pdf: PDFDocument,
  pages: UploadPage[],
): Promise<{ fields: RoleField[]; bytes: Uint8Array | null } | { problems: TagProblem[] }> {
  const { tags, problems } = await findTextTags(pdf, pages);
  if (problems.length > 0) return { problems };
  if (tags.length === 0) return { fields: [], bytes: null };
  await removeTextTags(pdf, tags);
  return { fields: tags.map((t) => t.field), bytes: await pdf.save() };
}

/**
 * The key of an upload's PDF once its tags are taken out: beside the original, under the same document's prefix, and
 * new for each attempt, so a retry never meets the pending note of an attempt that failed and was not yet swept.
 */
const untaggedKey = (organizationId: string, documentId: string) => `documents/${organizationId}/${documentId}.${newId()}.pdf`;

export const uploadTagsConsumer: EventConsumer = {
  name: "upload-tags",
  accepts: (type) => type === "DOCUMENT_UPLOADED",
  async handle(events, { env, db }) {
    // One PDF at a time: each is parsed whole in memory, and a Worker has 128 MB (issue 44 part 6).
    for (const event of events) if (event.data.tags === true) await tagUpload(env, db, event);
  },
};

type Row = typeof documents.$inferSelect;
type Outcome = { fields: RoleField[] | null; tagsStatus: "done" | "failed"; bytes: Uint8Array | null };

/**
 * One upload's tags, found in its stored PDF: done with the fields (and the PDF without the tags stored under a new
 * key, the old one then deleted), or failed without fields when a tag cannot be read or the PDF cannot be. Either way
 * the document's version moves and document.updated says so. Idempotent: a document no longer pending is left alone.
 * R2 or D1 failing throws, and the queue retries.
 */
async function tagUpload(env: Env, db: Db, event: DomainEvent): Promise<void> {
  const documentId = String(event.data.documentId ?? "");
  const read = () =>
    db
      .select()
      .from(documents)
      .where(and(eq(documents.id, documentId), eq(documents.organizationId, event.organizationId)))
      .get();
  const row = await read();
  if (!row?.fileKey || row.tagsStatus !== "pending") return;
  const fileKey = row.fileKey;
  await withDeferred(async (defer) => {
    const ctx = systemContext(env, db, event.organizationId, `tags:${documentId}`, defer);
    const outcome = await findTags(env, ctx.log, row, fileKey);
    const key = outcome.bytes ? untaggedKey(ctx.organizationId, documentId) : null;
    if (key && outcome.bytes)
      await putUploads(ctx, [
        {
          key,
          bytes: outcome.bytes,
          httpMetadata: { contentType: "application/pdf", contentDisposition: `inline; filename="document-${documentId}.pdf"` },
        },
      ]).catch((err: unknown) => {
        ctx.defer(discardUploads(ctx, [key]));
        throw err;
      });
    try {
      const recorded = await withRetries(async () => {
        const before = await read();
        // Done by another delivery meanwhile, or deleted: nothing to record.
        if (before?.tagsStatus !== "pending" || before.fileKey !== fileKey) return false;
        await settle(ctx, before, outcome, key);
        return true;
      });
      if (!recorded && key) ctx.defer(discardUploads(ctx, [key]));
    } catch (err) {
      // Not recorded (or its answer lost: then its key is settled, and the discard leaves it).
      if (key) ctx.defer(discardUploads(ctx, [key]));
      throw err;
    }
  });
}

/** What the stored PDF's tags give; failed (and logged) when the PDF cannot be read or a tag cannot be. */
async function findTags(env: Env, log: Logger, row: Row, fileKey: string): Promise<Outcome> {
  const failed = (why: string, extra: Record<string, unknown> = {}): Outcome => {
    log.warn("upload tags failed; the document keeps no fields", { documentId: row.id, why, ...extra });
    return { fields: null, tagsStatus: "failed", bytes: null };
  };
  const stored = await env.FILES.get(fileKey);
  if (!stored) return failed("its stored PDF is missing");
  const bytes = new Uint8Array(await stored.arrayBuffer());
  const { PDFDocument } = await pdfLib();
  let pdf: PDFDocument;
  try {
    pdf = await PDFDocument.load(bytes, { updateMetadata: false });
  } catch (err) {
    return failed("the PDF could not be read", { error: loggableError(err) });
  }
  const taken = await takeTags(pdf, row.pages ?? []);
  if ("problems" in taken) return failed("tags could not be read", { problems: taken.problems.slice(0, 20) });
  return { fields: taken.fields, tagsStatus: "done", bytes: taken.bytes };
}

/**
 * Records the outcome on `before`, guarded on its version: fields and status, and with a new PDF its key, the old
 * object noted pending in the same batch (so the cron's sweep deletes it should the delete after the commit fail).
 */
async function settle(ctx: ServiceContext, before: Row, outcome: Outcome, key: string | null): Promise<void> {
  const at = nowIso();
  const after: Row = {
    ...before,
    fields: outcome.fields,
    tagsStatus: outcome.tagsStatus,
    fileKey: key ?? before.fileKey,
    version: before.version + 1,
    updatedAt: at,
  };
  const replaced = key && before.fileKey ? [before.fileKey] : [];
  await commit(
    ctx,
    [
      expectVersion(ctx.db, DOCUMENTS, ctx.organizationId, before),
      ctx.db
        .update(documents)
        .set({ fields: after.fields, tagsStatus: after.tagsStatus, fileKey: after.fileKey, version: after.version, updatedAt: at })
        .where(and(eq(documents.id, before.id), eq(documents.organizationId, ctx.organizationId))),
      ...(key ? settleUploads(ctx, [key]) : []),
      ...replaced.map((old) => ctx.db.insert(pendingUploads).values({ key: old, organizationId: ctx.organizationId, createdAt: at })),
    ],
    [resourceEvent(ctx, "document.updated", toDocument(after), toDocument(before))],
  );
  if (replaced.length > 0) ctx.defer(discardUploads(ctx, replaced));
}
