import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { uploadTagsConsumer } from "../../src/documents/upload-tags";
import { call, json } from "../helpers/client";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";
import { sealedPdf } from "../helpers/forms";
import { pdfTool, placedWords } from "../helpers/pdf-tools";
import { expectFieldsOnTags, type PlacedField, taggedPdf } from "../helpers/tagged-pdfs";
import { act, fieldIds, linkOf, sendUpload, type UploadedDoc, upload, uploaded } from "../helpers/uploads";

// Issue 45 part 2: text tags in an uploaded PDF become its fields, where the tags' glyphs stand (rotated and cropped
// pages too), and leave the PDF's content: neither the stored PDF nor the sealed copy has them in its text.

const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@tags.test`;
const hex = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** Letter with four tags, a /Rotate 90 page, and a page whose CropBox sits inside a larger MediaBox. */
const agreement = () =>
  taggedPdf([
    {
      lines: [
        { x: 40, y: 700, text: "Buyer signs here: {{signature;role=buyer}} and dates {{date;role=buyer;name=signed_on}} today." },
        { x: 72, y: 600, text: "Heating: {{dropdown;role=seller;name=heating;options=Gas|Oil|Electric}}", size: 9 },
        { x: 72, y: 500, text: "Seller: {{signature;role=seller;required=false}} (if present)", size: 12 },
      ],
    },
    {
      rotate: 90,
      lines: [
        { x: 100, y: 400, text: "Initials {{initials;role=seller}} on the rotated page" },
        // Upright as the page is shown: drawn a quarter turn counter-clockwise in the page's own space.
        { x: 300, y: 100, text: "Upright {{name;role=seller}} name", rotate: 90 },
      ],
    },
    { size: [800, 1000], crop: [100, 150, 400, 500], lines: [{ x: 150, y: 400, text: "Agent note {{text;role=buyer;name=note}} end" }] },
  ]);

async function storedPdf(owner: TestPrincipal, id: string): Promise<Uint8Array> {
  const res = await call("GET", `/api/documents/${id}/pdf`, { token: owner.token });
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

async function textOf(pdf: Uint8Array): Promise<string> {
  const r = await pdfTool("pdftotext", pdf, ["-enc", "UTF-8", "{in}", "-"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.replace(/\s+/g, " ");
}

type TaggedDoc = UploadedDoc & { fields: (PlacedField & Record<string, unknown>)[] | null; tagsStatus: string | null };
const uploadTagged = async (token: string, bytes: Uint8Array, query: string) => (await uploaded(token, bytes, query)) as TaggedDoc;

const documentOf = async (owner: TestPrincipal, id: string) => json(await call("GET", `/api/documents/${id}`, { token: owner.token }));

describe("POST /api/documents/uploads?tags=true", () => {
  it("answers the tags as fields on their glyphs, on rotated and cropped pages too, and stores the PDF without them", async () => {
    const owner = await createPrincipal();
    const bytes = await agreement();
    const doc = await uploadTagged(owner.token, bytes, "title=Tagged&tags=true");
    const fields = doc.fields!;
    expect(doc).toMatchObject({ tagsStatus: "done", sha256: await hex(bytes), pageCount: 3 });
    // What a tag gives besides its box: name and options as written, required by default for signatures and initials.
    const tag = (type: string, role: string, page: number, given: Record<string, unknown> = {}) => ({
      type,
      role,
      page,
      name: null,
      required: false,
      options: null,
      readOnly: false,
      value: null,
      validation: null,
      ...given,
    });
    expect(fields.map(({ x, y, width, height, ...rest }) => rest)).toEqual([
      tag("signature", "buyer", 1, { required: true }),
      tag("date", "buyer", 1, { name: "signed_on" }),
      tag("dropdown", "seller", 1, { name: "heating", options: ["Gas", "Oil", "Electric"] }),
      tag("signature", "seller", 1),
      tag("initials", "seller", 2, { required: true }),
      tag("name", "seller", 2),
      tag("text", "buyer", 3, { name: "note" }),
    ]);
    // Within 1 % of the boxes poppler gives the tags' words in the PDF as uploaded.
    expectFieldsOnTags(fields, await placedWords(bytes), doc.pages);

    // The stored PDF: no tag left in its text, the text around them still there and where it was.
    const stored = await storedPdf(owner, doc.id);
    const text = await textOf(stored);
    expect(text).not.toContain("{{");
    expect(text).not.toContain("role=");
    for (const kept of [
      "Buyer signs here:",
      "and dates",
      "today.",
      "Heating:",
      "(if present)",
      "on the rotated page",
      "Upright",
      "Agent note",
      "end",
    ])
      expect(text).toContain(kept);
    const before = await placedWords(bytes);
    const after = await placedWords(stored);
    for (const word of ["dates", "today.", "(if", "rotated", "name", "end"]) {
      const [was, is] = [before, after].map((words) => words.find((w) => w.text === word));
      expect(is, word).toBeDefined();
      expect(Math.abs(is!.xMin - was!.xMin) + Math.abs(is!.yMin - was!.yMin), `${word} stays put`).toBeLessThan(0.5);
    }
    expect((await documentOf(owner, doc.id)).fields).toEqual(fields);
  });

  it("sends to recipients keyed by the tags' roles with no fields given; the sealed copy has no tag and verifies", async () => {
    const owner = await createPrincipal();
    const doc = await uploadTagged(owner.token, await agreement(), "title=Tagged&tags=true");
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [
        { key: "buyer", name: "Bea Buyer", email: email("bea"), role: "signer" },
        { key: "seller", name: "Sid Seller", email: email("sid"), role: "signer" },
      ],
    });
    const buyer = linkOf(sent, "buyer");
    const b = await fieldIds(buyer);
    expect(Object.keys(b).sort()).toEqual(["note", "signature", "signed_on"]);
    expect((await act(buyer, "sign", { [b.signature!]: "adopted", [b.note!]: "Keys at the desk" })).status).toBe(200);
    const seller = linkOf(sent, "seller");
    const s = await fieldIds(seller);
    expect(Object.keys(s).sort()).toEqual(["heating", "initials", "name", "signature"]);
    expect(await json(await act(seller, "sign", { [s.initials!]: "adopted", [s.heating!]: "Oil" }))).toMatchObject({ completed: true });

    const sealed = await sealedPdf(owner, sent.envelopeId);
    const text = await textOf(sealed);
    expect(text).not.toContain("{{");
    expect(text).toContain("Buyer signs here:");
    expect(text).toContain("Keys at the desk");
    expect(text).toContain("Oil");
    const sig = await pdfTool("pdfsig", sealed, ["{in}"]);
    expect(sig.stdout).toContain("Signature is Valid");
    expect(sig.stdout).toContain("Total document signed");
  });

  it("names a role no recipient has, and waits for no fields the send gives itself", async () => {
    const owner = await createPrincipal();
    const doc = await uploadTagged(owner.token, await agreement(), "tags=true");
    const res = await call("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: { recipients: [{ key: "buyer", name: "Bea Buyer", email: email("bea"), role: "signer" }] },
    });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.issues).toEqual([
      expect.objectContaining({ path: ["recipients"], code: "role_without_recipient", message: expect.stringContaining("seller") }),
    ]);
    // Fields given at send replace the tags' own.
    await sendUpload(owner.token, doc.id, {
      recipients: [{ key: "solo", name: "Sol Solo", email: email("sol"), role: "signer" }],
      fields: [{ recipient: "solo", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    });
  });

  it("refuses tags it cannot read with 422 invalid_tag naming each one's page and text, and stores nothing", async () => {
    const owner = await createPrincipal();
    const bad = await taggedPdf([
      {
        lines: [
          { x: 40, y: 700, text: "Fine {{signature;role=buyer}}" },
          { x: 40, y: 650, text: "{{stamp;role=buyer}}" },
        ],
      },
      {
        lines: [
          { x: 40, y: 700, text: "{{text;name=who}}" },
          { x: 40, y: 650, text: "{{checkbox;role=buyer;options=a|b}}" },
          { x: 40, y: 600, text: "{{radio;role=buyer}}" },
          { x: 40, y: 550, text: "{{text;role=buyer;required=maybe}}" },
          { x: 40, y: 500, text: "{{text;role=buyer;colour}}" },
          { x: 40, y: 450, text: "{{name;role=buyer and never closed" },
        ],
      },
    ]);
    const listed = async () => (await json(await call("GET", "/api/documents", { token: owner.token }))).pagination.total;
    const res = await upload(owner.token, bad, "tags=true");
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.error).toBe("invalid_tag");
    const issues = body.issues as { code: string; message: string }[];
    expect(issues.map((i) => i.code)).toEqual([
      "unknown_type",
      "role_required",
      "options_not_allowed",
      "options_required",
      "invalid_option",
      "invalid_option",
      "unclosed_tag",
    ]);
    expect(issues[0]!.message).toContain("Page 1, {{stamp;role=buyer}}");
    expect(issues[1]!.message).toContain("Page 2, {{text;name=who}}");
    expect(issues[6]!.message).toContain("Page 2, {{name;role=buyer and never closed");
    expect(await listed()).toBe(0);
  });

  it("changes nothing without tags=true", async () => {
    const owner = await createPrincipal();
    const bytes = await agreement();
    const doc = await uploadTagged(owner.token, bytes, "tags=false");
    expect(doc).toMatchObject({ fields: null, tagsStatus: null });
    expect(await hex(await storedPdf(owner, doc.id))).toBe(await hex(bytes));
  });
});

describe("text tags of a PDF over 20 pages", () => {
  const long = (last: string) =>
    taggedPdf(
      Array.from({ length: 21 }, (_, i) => ({
        lines: [{ x: 40, y: 700, text: i === 20 ? `Last page ${last} done` : `Page ${i + 1}` }],
      })),
    );

  it("are found by the queue consumer: pending at upload, then done with the fields and the PDF without them", async () => {
    const owner = await createPrincipal();
    const bytes = await long("{{signature;role=buyer}}");
    const doc = await uploadTagged(owner.token, bytes, "tags=true");
    expect(doc).toMatchObject({ tagsStatus: "pending", fields: null, pageCount: 21 });
    const early = await call("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: { recipients: [{ key: "buyer", name: "Bea Buyer", email: email("bea"), role: "signer" }] },
    });
    // Unless the consumer was quicker than this request.
    if (early.status === 422)
      expect((await json(early)).issues.map((i: { code: string }) => i.code)).toEqual(["tags_pending", "signature_field_required"]);
    else expect(early.status).toBe(201);
    if (early.status === 201) return;

    await vi.waitFor(async () => expect((await documentOf(owner, doc.id)).tagsStatus).toBe("done"), { timeout: 20_000, interval: 100 });
    const done = await documentOf(owner, doc.id);
    expect(done.fields).toHaveLength(1);
    expect(done.sha256).toBe(await hex(bytes));
    expectFieldsOnTags(done.fields, await placedWords(bytes), doc.pages);
    const text = await textOf(await storedPdf(owner, doc.id));
    expect(text).not.toContain("{{");
    expect(text).toContain("Last page");
    expect(text).toContain("done");
  });

  it("end failed, without fields, when a tag cannot be read", async () => {
    const owner = await createPrincipal();
    const doc = await uploadTagged(owner.token, await long("{{signature}}"), "tags=true");
    expect(doc.tagsStatus).toBe("pending");
    await vi.waitFor(async () => expect((await documentOf(owner, doc.id)).tagsStatus).toBe("failed"), { timeout: 20_000, interval: 100 });
    expect((await documentOf(owner, doc.id)).fields).toBeNull();
  });

  it("record once however many deliveries run at once: one document.updated, one stored PDF, the fields once", async () => {
    const owner = await createPrincipal();
    const doc = await uploadTagged(owner.token, await long("{{initials;role=buyer}}"), "tags=true");
    const db = createDb(await tenantDb(owner.organizationId));
    const event = {
      id: crypto.randomUUID(),
      type: "DOCUMENT_UPLOADED",
      organizationId: owner.organizationId,
      actor: { type: "user" as const, userId: null },
      occurredAt: new Date().toISOString(),
      data: { documentId: doc.id, tags: true },
    };
    // Beside the queue's own delivery, three more at once.
    await Promise.all([1, 2, 3].map(() => uploadTagsConsumer.handle([event], { env, db })));
    await vi.waitFor(async () => expect((await documentOf(owner, doc.id)).tagsStatus).toBe("done"), { timeout: 20_000, interval: 100 });
    // Every attempt's leftovers go once its write is refused (deferred discards): give them the moment they take.
    await vi.waitFor(
      async () => {
        const objects = (await env.FILES.list({ prefix: `documents/${owner.organizationId}/` })).objects.map((o) => o.key);
        const row = await (await tenantDb(owner.organizationId))
          .prepare("SELECT file_key FROM documents WHERE id = ?")
          .bind(doc.id)
          .first<{ file_key: string }>();
        expect(objects).toEqual([row!.file_key]);
      },
      { timeout: 10_000, interval: 100 },
    );
    const updates = await (await tenantDb(owner.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = 'document.updated'")
      .bind(owner.organizationId)
      .first<{ n: number }>();
    expect(updates!.n).toBe(1);
    expect((await documentOf(owner, doc.id)).fields).toEqual([expect.objectContaining({ type: "initials", role: "buyer", page: 21 })]);
  });
});
