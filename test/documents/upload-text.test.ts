import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { documents } from "../../src/db/schema";
import { createEventRouter } from "../../src/events/consumers";
import type { DomainEvent } from "../../src/events/event";
import { extractPdfText, MAX_UPLOAD_TEXT_CHARS, PdfUnreadable, uploadTextConsumer } from "../../src/documents/upload-text";
import { pdfLib } from "../../src/files/pdf-lib";
import { newId } from "../../src/lib/ids";
import { EVENT_CONSUMERS } from "../../src/queues";
import { type FakeAiGateway, openAiGateway } from "../helpers/ai-gateway";
import { call, json } from "../helpers/client";
import { allOnShards } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";

/** A PDF of `pages`, each page's lines drawn as real text (Helvetica), as pdftotext or pdf.js would read them. */
async function textPdf(pages: string[][]): Promise<Uint8Array> {
  const { PDFDocument, StandardFonts } = await pdfLib();
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = pdf.addPage([612, 792]);
    for (const [i, line] of lines.entries()) page.drawText(line, { x: 72, y: 720 - 20 * i, size: 12, font });
  }
  return pdf.save();
}

const THREE_PAGES = [
  ["Schedule B: conditions of the agreement of purchase and sale"],
  ["The buyer may obtain a septic inspection of the property", "by a licensed inspector at the buyer's expense."],
  ["Property: 14 Lakeshore Road, Muskoka Lakes, Ontario"],
];

/** An uploaded document as the upload route stores it: the PDF in R2, its row pending indexing. */
async function seedUpload(organizationId: string, bytes: Uint8Array, title = "Cottage purchase conditions") {
  const id = newId();
  const fileKey = `uploads/${organizationId}/${id}.pdf`;
  await env.FILES.put(fileKey, bytes);
  const at = new Date().toISOString();
  await createDb(await tenantDb(organizationId))
    .insert(documents)
    .values({
      id,
      organizationId,
      formKey: "upload",
      status: "GENERATED",
      canonical: {},
      sha256: "0".repeat(64),
      source: "upload",
      title,
      fileKey,
      pageCount: 3,
      textStatus: "pending",
      createdAt: at,
      updatedAt: at,
    });
  return { id, fileKey };
}

const uploaded = (organizationId: string, documentId: string): DomainEvent => ({
  id: newId(),
  type: "DOCUMENT_UPLOADED",
  organizationId,
  actor: { type: "user", userId: null },
  occurredAt: new Date().toISOString(),
  data: { documentId, sha256: "0".repeat(64), pageCount: 3 },
});

async function runConsumer(event: DomainEvent, gateway: FakeAiGateway | null) {
  await uploadTextConsumer.handle([event], {
    env: { ...env, ...(gateway?.vars ?? {}) },
    db: createDb(await tenantDb(event.organizationId)),
  });
}

async function textStatusOf(organizationId: string, id: string) {
  const row = await createDb(await tenantDb(organizationId))
    .select({ textStatus: documents.textStatus })
    .from(documents)
    .where(eq(documents.id, id))
    .get();
  return row?.textStatus;
}

async function searchIds(token: string, q: string, gateway: FakeAiGateway) {
  const res = await call("GET", `/api/documents/search?q=${encodeURIComponent(q)}`, { token, vars: gateway.vars });
  expect(res.status).toBe(200);
  return (await json<{ hits: { documentId: string; score: number }[] }>(res)).hits.map((h) => h.documentId);
}

const vectorIds = (documentId: string) =>
  allOnShards<{ id: string }>("SELECT id FROM document_vectors WHERE document_id = ? ORDER BY chunk", documentId).then((rows) =>
    rows.map((r) => r.id),
  );

describe("the upload text consumer (DOCUMENT_UPLOADED)", () => {
  it("extracts a 3-page PDF's text inside workerd, indexes it, marks it done: search finds it, another organization never", async () => {
    const gateway = await openAiGateway();
    const a = await createPrincipal();
    const b = await createPrincipal();
    const doc = await seedUpload(a.organizationId, await textPdf(THREE_PAGES));
    const other = await seedUpload(b.organizationId, await textPdf([["Kitchen renovation budget"]]), "Renovation budget");
    // Nothing indexed yet: not found while pending.
    expect(await searchIds(a.token, "septic inspection", gateway)).not.toContain(doc.id);

    // Through the Worker's real events router and consumer list, as the queue delivers it.
    const batch = createMessageBatch("events", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: uploaded(a.organizationId, doc.id) },
      { id: "m2", timestamp: new Date(), attempts: 1, body: uploaded(b.organizationId, other.id) },
    ]);
    const ctx = createExecutionContext();
    await createEventRouter(EVENT_CONSUMERS)(batch, { ...env, ...gateway.vars });
    expect((await getQueueResult(batch, ctx)).retryMessages).toEqual([]);

    expect(await textStatusOf(a.organizationId, doc.id)).toBe("done");
    expect(await vectorIds(doc.id)).toEqual([`${doc.id}#0`]);
    // The text of page 2 and page 3 is what finds it, the title first in the indexed text.
    const hits = await searchIds(a.token, "septic inspection Muskoka", gateway);
    expect(hits[0]).toBe(doc.id);
    const embedded = (await gateway.requests()).filter((r) => r.path === "embeddings").flatMap((r) => r.body.input as string[]);
    // What was embedded for it: the title first, then every page's text in order.
    const indexed = embedded.filter((t) => t.includes("Schedule B"));
    expect(indexed).toHaveLength(1);
    expect(indexed[0]).toMatch(/^Cottage purchase conditions\nSchedule B.*\n.*septic inspection.*\n.*Muskoka Lakes/);

    // B searching the same words sees its own document at most, never A's.
    expect(await searchIds(b.token, "septic inspection Muskoka", gateway)).not.toContain(doc.id);
    expect(await searchIds(b.token, "kitchen renovation", gateway)).toEqual([other.id]);
  });

  it("a redelivery overwrites the same vectors", async () => {
    const gateway = await openAiGateway();
    const { token, organizationId } = await createPrincipal();
    const doc = await seedUpload(organizationId, await textPdf(THREE_PAGES));
    const event = uploaded(organizationId, doc.id);
    await runConsumer(event, gateway);
    await runConsumer(event, gateway);
    expect(await vectorIds(doc.id)).toEqual([`${doc.id}#0`]);
    expect(await textStatusOf(organizationId, doc.id)).toBe("done");
    expect(await searchIds(token, "septic inspection", gateway)).toEqual([doc.id]);
  });

  it("a damaged PDF ends failed, acked and not retried; its title alone is searchable", async () => {
    const gateway = await openAiGateway();
    const { token, organizationId } = await createPrincipal();
    const good = await textPdf(THREE_PAGES);
    // The header, then noise: no cross-reference table, no trailer, no objects pdf.js can rebuild one from.
    const damaged = new Uint8Array([...good.slice(0, 9), ...new TextEncoder().encode("\u0000garbage ".repeat(200))]);
    const doc = await seedUpload(organizationId, damaged, "Dock licence");
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const batch = createMessageBatch("events", [{ id: "bad", timestamp: new Date(), attempts: 1, body: uploaded(organizationId, doc.id) }]);
    const ctx = createExecutionContext();
    await createEventRouter([uploadTextConsumer])(batch, { ...env, ...gateway.vars });
    const result = await getQueueResult(batch, ctx);
    warn.mockRestore();
    expect(result.retryMessages).toEqual([]);
    expect(result.explicitAcks).toEqual(["bad"]);
    expect(await textStatusOf(organizationId, doc.id)).toBe("failed");
    expect(await searchIds(token, "dock licence", gateway)).toEqual([doc.id]);
    expect(await searchIds(token, "septic inspection", gateway)).toEqual([]);
  });

  it("an upload whose stored PDF is missing ends failed, not retried", async () => {
    const gateway = await openAiGateway();
    const { organizationId } = await createPrincipal();
    const doc = await seedUpload(organizationId, await textPdf(THREE_PAGES));
    await env.FILES.delete(doc.fileKey);
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    await runConsumer(uploaded(organizationId, doc.id), gateway);
    warn.mockRestore();
    expect(await textStatusOf(organizationId, doc.id)).toBe("failed");
  });

  it("a PDF without a text layer (a scan) is done with its title indexed", async () => {
    const gateway = await openAiGateway();
    const { token, organizationId } = await createPrincipal();
    const doc = await seedUpload(organizationId, await textPdf([[], []]), "Scanned survey plan");
    await runConsumer(uploaded(organizationId, doc.id), gateway);
    expect(await textStatusOf(organizationId, doc.id)).toBe("done");
    expect(await searchIds(token, "survey plan", gateway)).toEqual([doc.id]);
  });

  it("without an AI gateway nothing is indexed and the document stays pending", async () => {
    const { organizationId } = await createPrincipal();
    const doc = await seedUpload(organizationId, await textPdf(THREE_PAGES));
    await runConsumer(uploaded(organizationId, doc.id), null);
    expect(await textStatusOf(organizationId, doc.id)).toBe("pending");
    expect(await vectorIds(doc.id)).toEqual([]);
  });

  it("an event naming another organization's document indexes nothing and changes nothing", async () => {
    const gateway = await openAiGateway();
    const a = await createPrincipal();
    const b = await createPrincipal();
    const doc = await seedUpload(a.organizationId, await textPdf(THREE_PAGES));
    await runConsumer(uploaded(b.organizationId, doc.id), gateway);
    expect(await vectorIds(doc.id)).toEqual([]);
    expect(await textStatusOf(a.organizationId, doc.id)).toBe("pending");
    expect(await searchIds(b.token, "septic inspection", gateway)).toEqual([]);
  });

  it("a document deleted while its text was read leaves no vectors", async () => {
    const gateway = await openAiGateway();
    const { organizationId } = await createPrincipal();
    const doc = await seedUpload(organizationId, await textPdf(THREE_PAGES));
    const db = createDb(await tenantDb(organizationId));
    // The row goes between the consumer's read and its conditional update: the embeddings request is that moment.
    const gatewayEnv = { ...env, ...gateway.vars };
    const realFetch = globalThis.fetch;
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      await db.delete(documents).where(eq(documents.id, doc.id));
      return realFetch(input, init);
    });
    try {
      await uploadTextConsumer.handle([uploaded(organizationId, doc.id)], { env: gatewayEnv, db });
    } finally {
      spy.mockRestore();
    }
    expect(await vectorIds(doc.id)).toEqual([]);
  });
});

describe("extractPdfText", () => {
  it("reads every page in order, and stops reading at the cap", async () => {
    const text = await extractPdfText(await textPdf(THREE_PAGES));
    expect(text).toContain("septic inspection of the property");
    expect(text!.indexOf("Schedule B")).toBeLessThan(text!.indexOf("septic"));
    expect(text!.indexOf("septic")).toBeLessThan(text!.indexOf("Muskoka"));
    expect(text!.split("\n")).toHaveLength(3);
    const capped = await extractPdfText(await textPdf(THREE_PAGES), 40);
    expect(capped).toHaveLength(40);
    expect(capped).not.toContain("Muskoka");
    expect(MAX_UPLOAD_TEXT_CHARS).toBeGreaterThan(100_000);
  });

  it("throws PdfUnreadable for bytes that are no PDF", async () => {
    await expect(extractPdfText(new TextEncoder().encode("not a pdf at all"))).rejects.toBeInstanceOf(PdfUnreadable);
  });
});
