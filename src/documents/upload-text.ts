import { and, eq } from "drizzle-orm";
import { type AiGateway, configuredGateway } from "../ai/gateway";
import type { Db } from "../db/client";
import { documents } from "../db/schema";
import type { Env } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { extractPdfText } from "../files/pdf-text";
import { pdfLib } from "../files/pdf-lib";
import { createLogger, type Logger, loggableError } from "../lib/log";
import { CHUNK_CHARS, chunkText } from "./indexing";
import { documentVectorIndex, MAX_CHUNKS } from "./vector-index";

/**
 * An uploaded PDF's text in the search index (issue 44 part 1, last sentence; part 6: heavy work runs in a queue
 * consumer). The DOCUMENT_UPLOADED consumer reads the stored PDF from R2, extracts its text with our reader on pdf-lib
 * (files/pdf-text.ts: pdf.js would cost every isolate's cold start for this one consumer), and indexes the title and
 * that text as the DOCUMENT_GENERATED consumer indexes a form's rendering (documents/indexing.ts): same chunks, same
 * vector ids `documentId#chunk`, so a redelivery overwrites.
 *
 * `textStatus` is what a user sees, and `done` means search finds the document by its text:
 * - done: the text was read and indexed (a scanned PDF without a text layer has none: its title alone is indexed);
 * - failed: pdf-lib could not parse the file, or its stored PDF is missing; its title alone is indexed, and the event is
 *   not retried (the same bytes fail the same way, so retries would only hold the queue);
 * - pending stays while no AI gateway is configured: nothing can be indexed then and search answers [] anyway, so
 *   `done` would be untrue; the event is logged and not retried, as the DOCUMENT_GENERATED consumer does.
 * A gateway or D1 failure throws and is retried on the queue's schedule; extraction is deterministic, so doing it again
 * is only time.
 */

/** The most text read from one PDF: what the index keeps of a document (MAX_CHUNKS chunks); later pages are not read. */
export const MAX_UPLOAD_TEXT_CHARS = MAX_CHUNKS * CHUNK_CHARS;

/** pdf-lib could not parse the file: the same bytes fail the same way, so this is never worth a retry. */
export class PdfUnreadable extends Error {
  constructor(cause: unknown) {
    super(`the PDF could not be read: ${loggableError(cause)}`, { cause });
    this.name = "PdfUnreadable";
  }
}

/**
 * The text of a stored PDF (files/pdf-text.ts: pages in order, "\n\n" between them), at most `maxChars`: pages past the
 * cap are never read, so a 500-page upload costs what its first pages do. Throws PdfUnreadable when pdf-lib cannot
 * parse the file. Stored uploads are never encrypted; pdf-lib refuses one that were, and it would end failed too.
 */
export async function readPdfText(bytes: Uint8Array, maxChars = MAX_UPLOAD_TEXT_CHARS): Promise<string> {
  // Outside the try: a module that fails to load is our fault and is retried, not blamed on the file.
  const { PDFDocument } = await pdfLib();
  try {
    const pdf = await PDFDocument.load(bytes, { updateMetadata: false });
    return await extractPdfText(pdf, maxChars);
  } catch (err) {
    throw new PdfUnreadable(err);
  }
}

export const uploadTextConsumer: EventConsumer = {
  name: "upload-text",
  accepts: (type) => type === "DOCUMENT_UPLOADED",
  async handle(events, { env, db }) {
    const log = createLogger();
    const gateway = configuredGateway(env);
    if (!gateway) {
      log.info("upload text indexing skipped: no AI gateway configured", { eventIds: events.map((e) => e.id) });
      return;
    }
    // One PDF at a time: each is parsed whole in memory, and a Worker has 128 MB (issue 44 part 6).
    for (const event of events) await indexUpload(env, db, gateway, log, event);
  },
};

async function indexUpload(env: Env, db: Db, gateway: AiGateway, log: Logger, event: DomainEvent): Promise<void> {
  const organizationId = event.organizationId;
  const documentId = String(event.data.documentId ?? "");
  const index = documentVectorIndex(env, db);
  // The event's organization only: another organization's document of that id is not found.
  const doc = await db
    .select({ source: documents.source, title: documents.title, fileKey: documents.fileKey })
    .from(documents)
    .where(and(eq(documents.id, documentId), eq(documents.organizationId, organizationId)))
    .get();
  if (!doc) {
    // Deleted or erased since: whatever an earlier delivery indexed goes too.
    if (documentId) await index.removeDocuments(organizationId, [documentId]);
    return;
  }
  if (doc.source !== "upload" || !doc.fileKey) return;

  const stored = await env.FILES.get(doc.fileKey);
  let text: string | null = null;
  let unread = stored ? null : "its stored PDF is missing";
  if (stored) {
    try {
      text = await readPdfText(new Uint8Array(await stored.arrayBuffer()));
    } catch (err) {
      // Anything else (R2 failing mid-read, say) is retried by the queue.
      if (!(err instanceof PdfUnreadable)) throw err;
      unread = err.message;
    }
  }
  if (unread) log.warn("upload text not extracted; its title alone is indexed", { eventId: event.id, documentId, error: unread });

  const chunks = chunkText([doc.title ?? "", text ?? ""].join("\n").trim());
  const vectors = chunks.length > 0 ? await gateway.embed(chunks) : [];
  await index.putDocument(
    organizationId,
    documentId,
    chunks.map((_, chunk) => ({ documentId, chunk, values: vectors[chunk]! })),
  );
  // Only the row that was read, with the file that was read. Neither version nor updatedAt moves: indexing is not an
  // edit of the document, and a guarded write of one (on its version) must not lose to it.
  const marked = await db
    .update(documents)
    .set({ textStatus: text === null ? "failed" : "done" })
    .where(and(eq(documents.id, documentId), eq(documents.organizationId, organizationId), eq(documents.fileKey, doc.fileKey)))
    .returning({ id: documents.id });
  // Gone while its text was read (a deletion that already cleared the index): the vectors just written go as well.
  if (marked.length === 0) await index.removeDocuments(organizationId, [documentId]);
}
