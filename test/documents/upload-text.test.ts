import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { documents } from "../../src/db/schema";
import { createEventRouter } from "../../src/events/consumers";
import type { DomainEvent } from "../../src/events/event";
import { MAX_UPLOAD_TEXT_CHARS, PdfUnreadable, readPdfText, uploadTextConsumer } from "../../src/documents/upload-text";
import { pdfLib } from "../../src/files/pdf-lib";
import { unicodeWriter } from "../../src/files/pdf-writer";
import { newId } from "../../src/lib/ids";
import { EVENT_CONSUMERS } from "../../src/queues";
import { type FakeAiGateway, openAiGateway } from "../helpers/ai-gateway";
import { call, json } from "../helpers/client";
import { allOnShards } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { pdfTool } from "../helpers/pdf-tools";

/** A PDF of `pages`, each page's lines drawn as real text (Helvetica), as pdftotext would read them. */
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
    // What was embedded for it: the title first, then every page's text in order, its lines as drawn.
    const indexed = embedded.filter((t) => t.includes("Schedule B"));
    expect(indexed).toHaveLength(1);
    expect(indexed[0]).toMatch(
      /^Cottage purchase conditions\nSchedule B.*sale\n\nThe buyer.*septic inspection of the property\nby a licensed.*\n\nProperty: .*Muskoka Lakes/,
    );

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
    // The header, then noise: no cross-reference table, no trailer, no objects pdf-lib can rebuild one from.
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

describe("readPdfText", () => {
  it("reads every page in order, a blank line between pages, and stops reading at the cap", async () => {
    const text = await readPdfText(await textPdf(THREE_PAGES));
    expect(text).toBe(
      [
        "Schedule B: conditions of the agreement of purchase and sale",
        "The buyer may obtain a septic inspection of the property\nby a licensed inspector at the buyer's expense.",
        "Property: 14 Lakeshore Road, Muskoka Lakes, Ontario",
      ].join("\n\n"),
    );
    const capped = await readPdfText(await textPdf(THREE_PAGES), 40);
    expect(capped).toBe("Schedule B: conditions of the agreement");
    expect(MAX_UPLOAD_TEXT_CHARS).toBeGreaterThan(100_000);
  });

  it("throws PdfUnreadable for bytes that are no PDF", async () => {
    await expect(readPdfText(new TextEncoder().encode("not a pdf at all"))).rejects.toBeInstanceOf(PdfUnreadable);
  });
});

const wordsOf = (text: string) => new Set(text.normalize("NFC").split(/\s+/).filter(Boolean));

/** Our text of `pdf`, once every word poppler's pdftotext finds in it is found there too (as words, NFC). */
async function readLikePoppler(pdf: Uint8Array): Promise<string> {
  const ours = await readPdfText(pdf);
  const poppler = await pdfTool("pdftotext", pdf, ["-enc", "UTF-8", "{in}", "-"]);
  expect(poppler.code, poppler.stderr).toBe(0);
  const theirs = [...wordsOf(poppler.stdout)];
  expect(theirs.length).toBeGreaterThan(0);
  const mine = wordsOf(ours);
  expect(
    theirs.filter((w) => !mine.has(w)),
    `pdftotext:\n${poppler.stdout}\nours:\n${ours}`,
  ).toEqual([]);
  return ours;
}

/** A one-page PDF whose content stream is `content` as written, Helvetica as /F1 and `resources` besides. */
async function handWritten(
  content: string,
  extra: (pdf: import("@pdfme/pdf-lib").PDFDocument, f1: import("@pdfme/pdf-lib").PDFRef) => Record<string, unknown> = () => ({}),
) {
  const { PDFDocument, PDFName, StandardFonts } = await pdfLib();
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([612, 792]);
  const { XObject, Font } = extra(pdf, font.ref) as { XObject?: Record<string, unknown>; Font?: Record<string, unknown> };
  page.node.set(PDFName.of("Resources"), pdf.context.obj({ Font: { F1: font.ref, ...Font }, ...(XObject ? { XObject } : {}) } as never));
  page.node.set(PDFName.of("Contents"), pdf.context.register(pdf.context.flateStream(content)));
  return pdf.save();
}

describe("our text against poppler's pdftotext", () => {
  it("(a) pdf-lib's Helvetica (WinAnsi) with accented Latin, and columns drawn apart on one line", async () => {
    const { PDFDocument, StandardFonts } = await pdfLib();
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    const bold = await pdf.embedFont(StandardFonts.TimesRomanBold);
    const page = pdf.addPage([612, 792]);
    page.drawText("Société Générale, Ölfeld — «Straße» naïve façade: 25 € ± 3 %", { x: 72, y: 720, size: 12, font });
    page.drawText("Vendor", { x: 72, y: 690, size: 11, font: bold });
    page.drawText("Crédit Agricole", { x: 300, y: 690, size: 11, font });
    const text = await readLikePoppler(await pdf.save());
    expect(text).toBe("Société Générale, Ölfeld — «Straße» naïve façade: 25 € ± 3 %\nVendor Crédit Agricole");
  });

  it("(b) our Unicode writer: TrueType subsets, Identity-H and ToUnicode, Greek, Cyrillic and Japanese", async () => {
    const { PDFDocument } = await pdfLib();
    const pdf = await PDFDocument.create();
    const writer = await unicodeWriter(env, pdf);
    writer.line("Landlord: 山田太郎 (Tōkyō), tenants Γιώργος Παπαδόπουλος and Дмитрий Иванов", { size: 11 });
    writer.line("Łukasz Żółć signs for Ελληνική Εταιρεία and ООО «Северный берег».", { strong: true });
    writer.newPage();
    writer.line("第二条 賃料は月額二十五万円とする。");
    await writer.finish((n, of) => `page ${n} of ${of}`);
    const text = await readLikePoppler(await pdf.save());
    for (const word of ["山田太郎", "Γιώργος", "Παπαδόπουλος", "Дмитрий", "Иванов", "Żółć", "«Северный", "賃料は月額二十五万円とする。"])
      expect(wordsOf(text)).toContain(word);
    expect(text.split("\n\n")).toHaveLength(2);
  });

  it("(c) text inside form XObjects, nested, with their own resources and matrices", async () => {
    const pdf = await handWritten("BT /F1 12 Tf 72 720 Td (Before the form) Tj ET /Outer Do", (doc, f1) => {
      const inner = doc.context.register(
        doc.context.flateStream("BT /F1 10 Tf 0 0 Td (Nested: riparian rights reserved) Tj ET", {
          Type: "XObject",
          Subtype: "Form",
          BBox: [0, 0, 400, 40],
          Resources: { Font: { F9: f1, F1: f1 } },
        }),
      );
      const outer = doc.context.register(
        doc.context.stream("BT /F1 12 Tf 0 40 Td (Easement registered on title) Tj ET q 1 0 0 1 0 10 cm /Inner Do Q", {
          Type: "XObject",
          Subtype: "Form",
          BBox: [0, 0, 400, 80],
          Matrix: [1, 0, 0, 1, 72, 600],
          Resources: { Font: { F1: f1 }, XObject: { Inner: inner } },
        }),
      );
      return { XObject: { Outer: outer } };
    });
    const text = await readLikePoppler(pdf);
    expect(text).toBe("Before the form\nEasement registered on title\nNested: riparian rights reserved");
  });

  it("(d) TJ kerning and word gaps, T*, ' and \", Td steps, escapes, hex strings, an inline image, a comment", async () => {
    const content = [
      "BT /F1 12 Tf 72 720 Td",
      "[(Ker) 30 (ning) -20 ( stays) -450 (whole)] TJ",
      "0 -20 Td [(W) 80 (aterfront) -300 (lot) -40 (s)] TJ",
      "14 TL T* (Next line by T-star) Tj",
      "(Quote operator line) '",
      '3 0.5 (Double quote line) "',
      "ET",
      "BT /F1 12 Tf 72 560 Td (Column) Tj 120 0 Td (far) Tj ET",
      // Helvetica's A is 667/1000 wide: a Td of exactly its width joins the next glyph to it.
      "BT /F1 12 Tf 72 540 Td (A) Tj 8.004 0 Td (B) Tj ET",
      "BT /F1 12 Tf 72 520 Td (Escaped \\(parens\\) and octal \\351t\\351 back\\\\slash) Tj ET % a comment (with a paren",
      "q 10 0 0 10 72 480 cm BI /W 2 /H 2 /BPC 8 /CS /G ID \x80EI\x80\xff EI Q",
      "BT /F1 12 Tf 72 460 Td <48656C6C6F2C20686578> Tj ET",
    ].join("\n");
    const text = await readLikePoppler(await handWritten(content));
    expect(text).toBe(
      [
        "Kerning stays whole",
        "Waterfront lots",
        "Next line by T-star",
        "Quote operator line",
        "Double quote line",
        "Column far",
        "AB",
        "Escaped (parens) and octal été back\\slash",
        "Hello, hex",
      ].join("\n"),
    );
  });

  it("(d) a ToUnicode CMap (bfchar, bfrange, its array form) and /Differences glyph names", async () => {
    const cmap = [
      "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
      "1 begincodespacerange <00> <FF> endcodespacerange",
      "2 beginbfchar <21> <00660069> <22> <D835DC00> endbfchar",
      "2 beginbfrange <41> <43> <0061> <44> <45> [<0416> <00E9>] endbfrange",
      "endcmap CMapName currentdict /CMap defineresource pop end end",
    ].join("\n");
    const pdf = await handWritten("BT /F2 12 Tf 72 720 Td (ABC DE!) Tj /F3 12 Tf 72 700 Td (ABCDE) Tj ET", (doc) => ({
      Font: {
        F2: doc.context.register(
          doc.context.obj({
            Type: "Font",
            Subtype: "Type1",
            BaseFont: "Helvetica",
            Encoding: "WinAnsiEncoding",
            ToUnicode: doc.context.register(doc.context.flateStream(cmap)),
          }),
        ),
        F3: doc.context.register(
          doc.context.obj({
            Type: "Font",
            Subtype: "Type1",
            BaseFont: "Helvetica",
            Encoding: {
              Type: "Encoding",
              BaseEncoding: "WinAnsiEncoding",
              Differences: [65, "Eacute", "uni0416", "f_i", "germandbls", "Ccedilla"],
            },
          }),
        ),
      },
    }));
    expect(await readLikePoppler(pdf)).toBe("abc Жéfi\nÉЖfißÇ");
  });

  it("(f) a filled form field: its value is read from its appearance stream, after the page's own text", async () => {
    const { PDFDocument, StandardFonts } = await pdfLib();
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    const page = pdf.addPage([612, 792]);
    page.drawText("Buyer's name as registered:", { x: 72, y: 720, size: 12, font });
    const field = pdf.getForm().createTextField("buyer");
    field.setText("Jeanne Lefebvre-Tremblay");
    field.addToPage(page, { x: 72, y: 680, width: 300, height: 24, font });
    expect(await readLikePoppler(await pdf.save())).toBe("Buyer's name as registered:\nJeanne Lefebvre-Tremblay");
  });

  it("(e) a multi-page document: every page, in order", async () => {
    const pages = [
      ...THREE_PAGES,
      ["Schedule C: chattels included", "refrigerator, stove, dishwasher, washer and dryer"],
      [],
      ["Signed at Gravenhurst this 3rd day of June"],
    ];
    const text = await readLikePoppler(await textPdf(pages));
    const read = text.split("\n\n");
    expect(read).toHaveLength(5);
    expect(read.map((p) => p.slice(0, 10))).toEqual(["Schedule B", "The buyer ", "Property: ", "Schedule C", "Signed at "]);
  });
});

describe("readPdfText on broken content", () => {
  it("a content stream that is garbage is skipped, the rest read; nothing throws", async () => {
    const { PDFArray, PDFDocument, PDFName } = await pdfLib();
    const pdf = await PDFDocument.load(await textPdf([["First page lost"], ["Second page lost"], ["Third page kept"]]));
    const noise = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251);
    const [first, second, third] = pdf.getPages();
    const contents = PDFName.of("Contents");
    const broken = () => pdf.context.register(pdf.context.stream(noise, { Filter: "FlateDecode" }));
    // A deflate stream that does not inflate; bytes that tokenize to nothing sensible; a broken part before a good one.
    first!.node.set(contents, broken());
    second!.node.set(contents, pdf.context.register(pdf.context.stream(noise)));
    const parts = third!.node.Contents();
    third!.node.set(contents, pdf.context.obj([broken(), ...(parts instanceof PDFArray ? parts.asArray() : [parts!])]));
    expect(await readPdfText(await pdf.save())).toBe("Third page kept");
  });

  it("a form XObject that draws itself is read once", async () => {
    const pdf = await handWritten("/Loop Do", (doc, f1) => {
      const ref = doc.context.nextRef();
      doc.context.assign(
        ref,
        doc.context.stream("BT /F1 12 Tf 72 700 Td (Drawn once) Tj ET /Loop Do", {
          Type: "XObject",
          Subtype: "Form",
          BBox: [0, 0, 612, 792],
          Resources: { Font: { F1: f1 }, XObject: { Loop: ref } },
        }),
      );
      return { XObject: { Loop: ref } };
    });
    expect(await readPdfText(pdf)).toBe("Drawn once");
  });
});
