import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { call, json } from "../helpers/client";
import { signedFileUrl } from "../../src/files/signed-url";
import {
  createDocument,
  freshIp,
  leaseCanonical,
  mailTo,
  publicSign,
  runOnShards,
  sendForSignature,
  signAll,
  tokenOf,
} from "../helpers/documents";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";

// What makes a signature stand up later (issue 20): the signer reads the document before consenting, the completed
// envelope becomes one sealed PDF that any PDF tool (and POST /api/public/verify) can check, every party gets a copy,
// and the audit chain's head is signed at the end.
const path = (url: string) => new URL(url).pathname + new URL(url).search;
const hex = async (bytes: ArrayBuffer | Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

async function pdfText(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  const { extractText, getDocumentProxy } = await import("unpdf");
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  return (text as string).replace(/\s+/g, " ");
}

const verify = (body: BodyInit, contentType = "application/pdf") =>
  call("POST", "/api/public/verify", { rawBody: body as string, headers: { "content-type": contentType, "cf-connecting-ip": freshIp() } });

const international = leaseCanonical({
  landlords: [{ name: "山田 太郎", email: "yamada@landlord.test" }],
  tenants: [
    { name: "Дмитрий Иванов", email: "dmitry@tenant.test" },
    { name: "Łukasz Żółć", email: "lukasz@tenant.test" },
  ],
});

/** A completed envelope with its sealed PDF built. */
async function completed(owner: TestPrincipal, canonical = international) {
  const doc = await createDocument(owner.token, canonical);
  const sent = await sendForSignature(owner.token, doc.id);
  for (const l of sent.links) await signAll(tokenOf(l.url));
  await vi.waitFor(
    async () =>
      expect((await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }))).signedDocument.status).toBe(
        "ready",
      ),
    { timeout: 20_000, interval: 100 },
  );
  const link = await json(await call("GET", `/api/signatures/${sent.envelopeId}/document`, { token: owner.token }));
  const res = await call("GET", path(link.url));
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/pdf");
  return { doc, sent, link, pdf: new Uint8Array(await res.arrayBuffer()) };
}

describe("the document as signers read it", () => {
  it("the public read carries the document's text, its SHA-256 and a PDF link for this signer; the PDF is what the hash says", async () => {
    const owner = await createPrincipal();
    const doc = await createDocument(owner.token, international);
    const sent = await sendForSignature(owner.token, doc.id);
    const view = await json(await publicSign("GET", tokenOf(sent.links[1]!.url)));
    expect(view.signer).toMatchObject({ name: "Дмитрий Иванов", role: "tenant", status: "opened" });
    const lines = view.document.text.sections.flatMap((s: { lines: string[] }) => s.lines).join("\n");
    for (const words of ["山田 太郎", "Дмитрий Иванов", "Łukasz Żółć", "1 Queen St W", "$2,500.00"]) expect(lines).toContain(words);
    expect(view.document.title).toMatch(/Standard Form of Lease/);
    expect(view.document.pdfUrl).toContain(`for=${sent.links[1]!.signerId}`);
    const pdf = await call("GET", path(view.document.pdfUrl));
    expect(pdf.status).toBe(200);
    const bytes = new Uint8Array(await pdf.arrayBuffer());
    expect(await hex(bytes)).toBe(view.document.sha256);
    const text = await pdfText(bytes);
    for (const name of ["山田 太郎", "Дмитрий Иванов", "Łukasz Żółć"]) expect(text).toContain(name);
    // The hash is on the envelope and in each `sent` entry of the audit trail.
    const read = await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }));
    expect(read.document).toEqual({ title: view.document.title, sha256: view.document.sha256 });
    const trail = await json(await call("GET", `/api/signatures/${sent.envelopeId}/audit`, { token: owner.token }));
    expect(
      trail.events
        .filter((e: { event: string }) => e.event === "sent")
        .map((e: { data: { documentSha256: string } }) => e.data.documentSha256),
    ).toEqual([view.document.sha256, view.document.sha256, view.document.sha256]);
    // The link is this signer's: it does not open with another signer named in it.
    const swapped = new URL(view.document.pdfUrl);
    swapped.searchParams.set("for", sent.links[0]!.signerId);
    expect((await call("GET", swapped.pathname + swapped.search)).status).toBe(404);
  });
});

describe("a signer's PDF link", () => {
  /** An open envelope of three signers, with the PDF link each signer's page was given (valid 10 to 15 minutes). */
  async function opened() {
    const owner = await createPrincipal();
    const doc = await createDocument(owner.token, international);
    const sent = await sendForSignature(owner.token, doc.id);
    const tokens = sent.links.map((l) => tokenOf(l.url));
    const pdfUrls: string[] = [];
    for (const token of tokens) pdfUrls.push(path((await json(await publicSign("GET", token))).document.pdfUrl));
    for (const url of pdfUrls) expect((await call("GET", url)).status).toBe(200);
    return { owner, sent, tokens, pdfUrls };
  }
  const status = async (url: string) => (await call("GET", url)).status;

  it("stops working once that signer has signed; the others' keep working while the envelope is open", async () => {
    const { tokens, pdfUrls } = await opened();
    await signAll(tokens[0]!);
    expect(await status(pdfUrls[0]!)).toBe(404);
    expect(await status(pdfUrls[1]!)).toBe(200);
  });

  it("stops working, everyone's, once a signer has declined", async () => {
    const { tokens, pdfUrls } = await opened();
    expect((await publicSign("POST", tokens[1]!, { action: "decline", reason: "Wrong unit" })).status).toBe(200);
    expect(await Promise.all(pdfUrls.map(status))).toEqual([404, 404, 404]);
  });

  it("stops working once the envelope is voided or past its expiry; the sender's own links keep working", async () => {
    const { sent, pdfUrls } = await opened();
    await runOnShards("UPDATE envelopes SET expires_at = ? WHERE id = ?", new Date(Date.now() - 1000).toISOString(), sent.envelopeId);
    expect(await status(pdfUrls[0]!)).toBe(404);

    const voided = await opened();
    expect((await call("DELETE", `/api/signatures/${voided.sent.envelopeId}`, { token: voided.owner.token })).status).toBe(200);
    expect(await Promise.all(voided.pdfUrls.map(status))).toEqual([404, 404, 404]);
    // A link made for nobody in particular (the sender's, the copies sent at completion) is not a signer's: it works as before.
    const key = decodeURIComponent(new URL(`http://x${voided.pdfUrls[0]}`).pathname.slice("/api/public/files/".length));
    expect(await status(path((await signedFileUrl(env, "http://api.test", key)).url))).toBe(200);
  });
});

describe("the sealed, signed PDF", () => {
  it("holds the document, a signature page per signer with names as written, and the certificate; verify says valid", async () => {
    const owner = await createPrincipal();
    const { doc, sent, pdf } = await completed(owner);
    const text = await pdfText(pdf);
    for (const words of [
      "山田 太郎",
      "Дмитрий Иванов",
      "Łukasz Żółć",
      "/s/ 山田 太郎",
      "/s/ Łukasz Żółć",
      "Certificate of completion",
      "1 Queen St W",
    ])
      expect(text).toContain(words);
    expect(text.replace(/\s/g, "")).toContain(doc.sha256);
    expect(text).toMatch(/Attested by the signer's client/);

    const res = await verify(pdf as unknown as string);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const read = await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }));
    expect(await json(res)).toEqual({
      valid: true,
      envelopeId: sent.envelopeId,
      completedAt: read.completedAt,
      documentSha256: read.document.sha256,
      signers: read.signers.map((s: { name: string; role: string; signedAt: string }) => ({
        name: s.name,
        role: s.role,
        signedAt: s.signedAt,
        verification: "client_attested",
      })),
    });
    expect(JSON.stringify(await json(await verify(pdf as unknown as string)))).not.toContain("@");
  });

  it("verify: one changed byte is not valid; an unsealed PDF is not_signed; a body that is not a PDF is 400; another type 415", async () => {
    const owner = await createPrincipal();
    const { pdf } = await completed(owner, leaseCanonical());
    const changed = pdf.slice();
    // A byte of the document's own content, well inside the signed range.
    const at = new TextDecoder("latin1").decode(changed).indexOf("/Producer");
    changed[at + 12] = changed[at + 12]! ^ 1;
    expect(await json(await verify(changed as unknown as string))).toEqual({
      valid: false,
      reason: expect.stringMatching(/^(digest_mismatch|signature_invalid|malformed)$/),
    });
    const appended = new Uint8Array([...pdf, ...new TextEncoder().encode("\n% appended after sealing\n")]);
    expect(await json(await verify(appended as unknown as string))).toEqual({ valid: false, reason: "incomplete_coverage" });
    const { PDFDocument } = await import("@pdfme/pdf-lib");
    const plain = await PDFDocument.create();
    plain.addPage();
    expect(await json(await verify((await plain.save()) as unknown as string))).toEqual({ valid: false, reason: "not_signed" });
    const notPdf = await verify("hello, this is not a PDF");
    expect(notPdf.status).toBe(400);
    const wrongType = await verify(pdf as unknown as string, "application/octet-stream");
    expect(wrongType.status).toBe(415);
    expect((await json(wrongType)).message).toMatch(/application\/pdf/);
  });

  it("verify takes at most 10 MiB (413) and 20 checks a minute per address (429)", async () => {
    const big = new Uint8Array(10 * 1024 * 1024 + 1);
    big.set(new TextEncoder().encode("%PDF-1.7\n"));
    const tooBig = await call("POST", "/api/public/verify", {
      rawBody: big as unknown as string,
      headers: { "content-type": "application/pdf", "cf-connecting-ip": freshIp() },
    });
    expect(tooBig.status).toBe(413);
    const ip = freshIp();
    // One after another: the count per address is what is checked here. (21 at once hung the test runtime in the last
    // full runs — 'Cannot perform I/O on behalf of a different request' — while passing alone; see the issue 45 note.)
    const answers: Response[] = [];
    for (let i = 0; i < 21; i++)
      answers.push(
        await call("POST", "/api/public/verify", {
          rawBody: "%PDF-1.7\n%%EOF\n",
          headers: { "content-type": "application/pdf", "cf-connecting-ip": ip },
        }),
      );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(20).fill(200), 429]);
    expect(await json(answers.find((a) => a.status === 200)!)).toEqual({ valid: false, reason: "not_signed" });
  });

  it("every signer and the sender get a copy by mail, once, with a link that works for 30 days", async () => {
    const owner = await createPrincipal();
    const canonical = leaseCanonical({
      landlords: [{ name: "Copy Landlord", email: `l-${crypto.randomUUID()}@copy.test` }],
      tenants: [{ name: "Copy Tenant", email: `t-${crypto.randomUUID()}@copy.test` }],
    });
    const { sent, pdf } = await completed(owner, canonical);
    const sender = (await env.DB.prepare("SELECT email FROM users WHERE id = ?").bind(owner.userId).first<{ email: string }>())!.email;
    for (const to of [...sent.links.map((l) => l.email), sender]) {
      await vi.waitFor(async () => expect((await mailTo(to)).filter((m) => m.subject.startsWith("Signed by every party"))).toHaveLength(1));
      const mail = (await mailTo(to)).find((m) => m.subject.startsWith("Signed by every party"))!;
      const url = mail.text.match(/https?:\/\/\S+\/api\/public\/files\/\S+/)![0];
      expect(Number(new URL(url).searchParams.get("expires")) * 1000 - Date.now()).toBeGreaterThan(29 * 86_400_000);
      const copy = await call("GET", path(url));
      expect(new Uint8Array(await copy.arrayBuffer())).toEqual(pdf);
    }
  });

  it("the audit chain's head is sealed at the end: a chain rebuilt by someone with table access no longer verifies", async () => {
    const owner = await createPrincipal();
    const { sent } = await completed(owner, leaseCanonical());
    const trail = await json(await call("GET", `/api/signatures/${sent.envelopeId}/audit`, { token: owner.token }));
    expect(trail.chain).toMatchObject({ valid: true, seal: "valid" });
    // Rebuild the chain with one IP changed, hashes recomputed as the code does: the chain verifies, the seal does not.
    const { appendAudit, GENESIS } = await import("../../src/signatures/audit");
    const { createDb } = await import("../../src/db/client");
    const rows = trail.events.map((e: Record<string, unknown>, i: number) => ({
      event: e.event,
      signerId: e.signerId,
      at: e.at,
      ip: i === 2 ? "6.6.6.6" : e.ip,
      userAgent: e.userAgent,
      data: e.data,
    }));
    const shard = await tenantDb(owner.organizationId);
    const rebuilt = await appendAudit(createDb(shard), owner.organizationId, sent.envelopeId, { seq: 0, hash: GENESIS }, rows);
    await shard.batch([
      shard.prepare("DROP TRIGGER envelope_audit_no_delete"),
      shard.prepare("DELETE FROM envelope_audit WHERE envelope_id = ?").bind(sent.envelopeId),
      shard.prepare(
        "CREATE TRIGGER envelope_audit_no_delete BEFORE DELETE ON envelope_audit BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END",
      ),
    ]);
    await createDb(shard).batch(rebuilt.statements as never);
    const after = await json(await call("GET", `/api/signatures/${sent.envelopeId}/audit`, { token: owner.token }));
    expect(after.events[2].ip).toBe("6.6.6.6");
    expect(after.chain).toMatchObject({ valid: false, brokenAt: null, seal: "invalid" });
  });

  it("the certificate of completion prints every name as written", async () => {
    const owner = await createPrincipal();
    const { sent } = await completed(owner);
    await vi.waitFor(
      async () =>
        expect((await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }))).certificate.status).toBe(
          "ready",
        ),
      { timeout: 20_000 },
    );
    const link = await json(await call("GET", `/api/signatures/${sent.envelopeId}/certificate`, { token: owner.token }));
    const text = await pdfText(await (await call("GET", path(link.url))).arrayBuffer());
    for (const name of ["山田 太郎", "Дмитрий Иванов", "Łukasz Żółć"]) expect(text).toContain(name);
  });

  it("the signed document is not there before completion (409) and is another organization's 404", async () => {
    const owner = await createPrincipal();
    const doc = await createDocument(owner.token);
    const sent = await sendForSignature(owner.token, doc.id);
    const early = await call("GET", `/api/signatures/${sent.envelopeId}/document`, { token: owner.token });
    expect(early.status).toBe(409);
    expect((await json(early)).error).toBe("document_unavailable");
    const other = await createPrincipal();
    expect((await call("GET", `/api/signatures/${sent.envelopeId}/document`, { token: other.token })).status).toBe(404);
  });
});
