// The document desk's tools and the files they link to: each tool answers what its route answers, and a PDF comes
// through resources/read with the caller's own permissions.
import { describe, expect, it } from "vitest";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createDocument, leaseCanonical, mailTo, sendForSignature } from "../helpers/documents";
import { createPrincipal } from "../helpers/factories";
import { sealedPdf } from "../helpers/forms";
import { connect, oauthAccessToken, post, tool } from "../helpers/mcp";
import { seedCompletedEnvelope } from "../helpers/route-table";
import { buildPdf, sendUpload, uploaded } from "../helpers/uploads";

const isPdf = (bytes: Uint8Array) => new TextDecoder().decode(bytes.slice(0, 5)) === "%PDF-";
const fromBase64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const links = (content: { type: string; uri?: string }[]) => content.filter((c) => c.type === "resource_link").map((c) => c.uri);

describe("MCP document tools", () => {
  it("generates a document as POST /api/documents does, links its PDF, and reads the PDF through resources/read", async () => {
    const owner = await createPrincipal();
    const client = await connect(owner.token);
    const made = await tool(client, "generate_document", { formKey: "on/standard-lease", canonical: leaseCanonical() });
    expect(made.isError, made.text).toBe(false);
    const id = made.data.document.id as string;
    expect(made.data.document).toEqual(await json(await call("GET", `/api/documents/${id}`, { token: owner.token })));
    expect(made.data.document.status).toBe("GENERATED");
    const uri = `brokerage://documents/${id}/document.pdf`;
    expect(links(made.content)).toEqual([uri]);
    // It counted toward the month's generations, as the route does.
    expect((await json(await call("GET", "/api/documents/usage", { token: owner.token }))).used).toBe(1);

    const got = await tool(client, "get_document", { documentId: id });
    expect(got.data.document).toEqual(made.data.document);
    expect(links(got.content)).toEqual([uri]);
    const read = await client.readResource({ uri });
    expect(read.contents).toHaveLength(1);
    expect(read.contents[0]).toMatchObject({ uri, mimeType: "application/pdf" });
    expect(isPdf(fromBase64((read.contents[0] as { blob: string }).blob))).toBe(true);
    // The templates say what can be read; nothing is listed.
    expect((await client.listResources()).resources).toEqual([]);
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      "brokerage://documents/{id}/document.pdf",
      "brokerage://envelopes/{id}/signed.pdf",
      "brokerage://envelopes/{id}/certificate.pdf",
    ]);
    await client.close();
  });

  it("refuses bad canonical data with every issue, and keeps each organization to its own documents and files", async () => {
    const owner = await createPrincipal();
    const other = await createPrincipal();
    const theirs = await createDocument(other.token);
    const client = await connect(owner.token);
    const bad = await tool(client, "generate_document", { formKey: "on/standard-lease", canonical: { formKey: "on/standard-lease" } });
    expect(bad.isError).toBe(true);
    expect(bad.data.error).toBe("validation_error");
    expect(bad.data.issues.length).toBeGreaterThan(1);
    expect((await json(await call("GET", "/api/documents", { token: owner.token }))).documents).toEqual([]);

    expect((await tool(client, "get_document", { documentId: theirs.id })).data).toMatchObject({ error: "not_found" });
    await expect(client.readResource({ uri: `brokerage://documents/${theirs.id}/document.pdf` })).rejects.toMatchObject({ code: -32602 });
    await expect(client.readResource({ uri: "brokerage://documents/x/../../etc.pdf" })).rejects.toMatchObject({ code: -32602 });
    await expect(client.readResource({ uri: "https://example.com/a.pdf" })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });

  it("answers a draft failure as the route's draft_failed, storing nothing", async () => {
    const owner = await createPrincipal();
    const client = await connect(owner.token);
    const route = await call("POST", "/api/documents/draft", { token: owner.token, body: { prompt: "A one-year lease of 1 Queen St W" } });
    expect(route.status).toBe(422);
    const drafted = await tool(client, "draft_document", { prompt: "A one-year lease of 1 Queen St W" });
    expect(drafted).toMatchObject({ isError: true, data: { error: "draft_failed" } });
    expect((await tool(client, "draft_document", { prompt: "" })).data.error).toBe("validation_error");
    await client.close();
  });
});

describe("MCP envelope tools", () => {
  it("reads a completed envelope as GET /api/signatures/{id} does, with its sealed PDF and certificate as resources", async () => {
    const owner = await createPrincipal();
    const { envelopeId } = await seedCompletedEnvelope(owner);
    const client = await connect(owner.token);
    const got = await tool(client, "get_envelope", { envelopeId });
    expect(got.isError, got.text).toBe(false);
    expect(got.data.envelope).toEqual(await json(await call("GET", `/api/signatures/${envelopeId}`, { token: owner.token })));
    const [signedUri, certificateUri] = links(got.content);
    expect(signedUri).toBe(`brokerage://envelopes/${envelopeId}/signed.pdf`);
    expect(certificateUri).toBe(`brokerage://envelopes/${envelopeId}/certificate.pdf`);
    const signed = await client.readResource({ uri: signedUri! });
    // The same bytes the route's signed link downloads.
    expect(fromBase64((signed.contents[0] as { blob: string }).blob)).toEqual(await sealedPdf(owner, envelopeId!));
    const certificate = await client.readResource({ uri: certificateUri! });
    expect(isPdf(fromBase64((certificate.contents[0] as { blob: string }).blob))).toBe(true);
    await client.close();
  });

  it("resends a signer's link by mail without showing it, voids the envelope, and refuses what is no longer open", async () => {
    const owner = await createPrincipal();
    const doc = await createDocument(owner.token);
    const sent = await sendForSignature(owner.token, doc.id);
    const signer = sent.links[0]!;
    const client = await connect(owner.token);
    // Not completed: no links, and the files cannot be read yet.
    const open = await tool(client, "get_envelope", { envelopeId: sent.envelopeId });
    expect(links(open.content)).toEqual([]);
    await expect(client.readResource({ uri: `brokerage://envelopes/${sent.envelopeId}/signed.pdf` })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("signed document exists only for a completed envelope"),
    });

    const before = (await mailTo(signer.email)).length;
    const resent = await tool(client, "resend_signing_link", { envelopeId: sent.envelopeId, signerId: signer.signerId });
    expect(resent.isError, resent.text).toBe(false);
    expect(resent.data.signer).toEqual({
      signerId: signer.signerId,
      name: signer.name,
      email: signer.email,
      role: signer.role,
      mailed: true,
    });
    // The link is the signer's alone: it went by mail and is nowhere in the answer.
    expect(resent.text).not.toMatch(/\/sign\//);
    expect((await mailTo(signer.email)).length).toBe(before + 1);

    const voided = await tool(client, "void_envelope", { envelopeId: sent.envelopeId, reason: "Wrong rent" });
    expect(voided.data).toEqual({ voided: true, envelopeId: sent.envelopeId });
    expect((await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }))).status).toBe("voided");
    expect((await tool(client, "void_envelope", { envelopeId: sent.envelopeId })).isError).toBe(true);
    expect((await tool(client, "resend_signing_link", { envelopeId: sent.envelopeId, signerId: signer.signerId })).isError).toBe(true);
    await client.close();
  });

  it("reads files only with the permission each needs: a key without it is refused, an access token is stepped up", async () => {
    const owner = await createPrincipal();
    const { envelopeId } = await seedCompletedEnvelope(owner);
    const key = await createApiKey(owner.token, ["documents:read"]);
    const client = await connect(key.key);
    await expect(client.readResource({ uri: `brokerage://envelopes/${envelopeId}/certificate.pdf` })).rejects.toMatchObject({
      message: expect.stringContaining("signatures:read"),
    });
    expect((await tool(client, "get_envelope", { envelopeId })).data).toMatchObject({ error: "insufficient_permission" });
    await client.close();

    const narrow = await oauthAccessToken(owner, "documents:read");
    const res = await post(
      { jsonrpc: "2.0", id: 4, method: "resources/read", params: { uri: `brokerage://envelopes/${envelopeId}/certificate.pdf` } },
      { authorization: `Bearer ${narrow}`, "mcp-protocol-version": "2025-11-25" },
    );
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toMatch(/error="insufficient_scope", scope="documents:read signatures:read"/);
  });

  it("get_document shows an uploaded PDF's pages and form fields, and its envelope's recipients with their fields", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(
      owner.token,
      await buildPdf([{}, { rotate: 90 }], { text: [{ name: "buyer", page: 1, rect: [60, 600, 200, 20] }] }),
    );
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [
        { key: "b", name: "Bea Buyer", email: "bea@mcp-upload.test", role: "signer" },
        { key: "c", name: "Cal Copy", email: "cal@mcp-upload.test", role: "cc", order: 1 },
      ],
      fields: [{ recipient: "b", type: "signature", page: 2, x: 10, y: 70, width: 30, height: 8, name: "sig" }],
    });
    const client = await connect(owner.token);
    const got = await tool(client, "get_document", { documentId: doc.id });
    expect(got.isError, got.text).toBe(false);
    expect(got.data.document).toMatchObject({
      source: "upload",
      pageCount: 2,
      pages: doc.pages,
      formFields: [expect.objectContaining({ name: "buyer" })],
    });
    expect(got.data.envelope.id).toBe(sent.envelopeId);
    expect(got.data.envelope.signers).toEqual([
      expect.objectContaining({
        key: "b",
        role: "signer",
        order: 1,
        fields: [expect.objectContaining({ type: "signature", page: 2, name: "sig", required: true, filled: null })],
      }),
      expect.objectContaining({ key: "c", role: "cc", status: "pending" }),
    ]);
    // The PDF read in-band is the upload as stored.
    const read = await client.readResource({ uri: `brokerage://documents/${doc.id}/document.pdf` });
    const stored = new Uint8Array(await (await call("GET", `/api/documents/${doc.id}/pdf`, { token: owner.token })).arrayBuffer());
    expect(fromBase64((read.contents[0] as { blob: string }).blob)).toEqual(stored);
    // Without signatures:read the envelope is left out, not refused.
    const narrow = await createApiKey(owner.token, ["documents:read"]);
    const narrowClient = await connect(narrow.key);
    const onlyDocument = await tool(narrowClient, "get_document", { documentId: doc.id });
    expect(onlyDocument.isError, onlyDocument.text).toBe(false);
    expect(onlyDocument.data.envelope).toBeUndefined();
    await client.close();
    await narrowClient.close();
  });

  it("send_for_signature sends an uploaded PDF to recipients in orders with their fields, mailing only the first order", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}, {}], { text: [{ name: "buyer", page: 1, rect: [60, 600, 200, 20] }] }));
    const client = await connect(owner.token);
    const sent = await tool(client, "send_for_signature", {
      documentId: doc.id,
      recipients: [
        { key: "a", name: "Ada Approver", email: "ada@mcp-send.test", role: "approver", order: 1 },
        { key: "b", name: "Bo Buyer", email: "bo@mcp-send.test", role: "signer", order: 2 },
      ],
      fields: [{ recipient: "b", type: "signature", page: 2, x: 10, y: 70, width: 30, height: 8 }],
      formValues: { buyer: "Bo Buyer" },
    });
    expect(sent.isError, sent.text).toBe(false);
    expect(sent.data.envelope.signers).toEqual([
      expect.objectContaining({ key: "a", role: "approver", order: 1, status: "sent", mailed: true, upNow: true }),
      expect.objectContaining({ key: "b", role: "signer", order: 2, status: "pending", mailed: false, upNow: false }),
    ]);
    expect(sent.text).not.toContain("/sign/");
    // The route's checks hold through the tool: a field for nobody is named.
    const other = await uploaded(owner.token, await buildPdf([{}]));
    const bad = await tool(client, "send_for_signature", {
      documentId: other.id,
      recipients: [{ key: "s", name: "Sy", email: "sy@mcp-send.test", role: "signer" }],
      fields: [{ recipient: "nobody", type: "signature", page: 1, x: 10, y: 70, width: 30, height: 8 }],
    });
    expect(bad).toMatchObject({ isError: true, data: { error: "invalid_recipients" } });
    await client.close();
  });

  it("list_templates shows a template's roles and named fields; use_template sends a document made from it, no link in the answer", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const made = await json(
      await call("POST", "/api/templates", {
        token: owner.token,
        body: {
          documentId: doc.id,
          name: "Showing agreement",
          roles: [{ key: "buyer", label: "Buyer", role: "signer" }],
          fields: [
            { role: "buyer", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 },
            { role: "buyer", type: "text", name: "address", page: 1, x: 10, y: 20, width: 50, height: 4 },
          ],
        },
      }),
    );
    const client = await connect(owner.token);
    const listed = await tool(client, "list_templates", {});
    expect(listed.isError, listed.text).toBe(false);
    expect(listed.data).toMatchObject({ total: 1, nextCursor: null, templates: [{ id: made.template.id, name: "Showing agreement" }] });
    expect(listed.data.templates[0].fields.map((f: { name: string }) => f.name)).toEqual(["sig", "address"]);
    const used = await tool(client, "use_template", {
      templateId: made.template.id,
      recipients: { buyer: { name: "Bo Buyer", email: "bo@mcp-template.test" } },
      values: { address: { value: "12 Elm Street", lock: true } },
    });
    expect(used.isError, used.text).toBe(false);
    expect(used.data.recipients).toEqual([expect.objectContaining({ key: "buyer", name: "Bo Buyer", role: "signer", order: 1 })]);
    expect(used.text).not.toContain("/sign/");
    expect((await mailTo("bo@mcp-template.test")).length).toBe(1);
    const envelope = await json(await call("GET", `/api/signatures/${used.data.envelopeId}`, { token: owner.token }));
    expect(envelope).toMatchObject({ source: "template", templateId: made.template.id, documentId: used.data.documentId });
    // The route's checks hold through the tool; and a token without templates:read is refused.
    const bad = await tool(client, "use_template", { templateId: made.template.id, recipients: {} });
    expect(bad).toMatchObject({ isError: true, data: { error: "invalid_recipients" } });
    const narrow = await connect((await createApiKey(owner.token, ["envelopes:send"])).key);
    const refused = await tool(narrow, "use_template", {
      templateId: made.template.id,
      recipients: { buyer: { name: "Bo Buyer", email: "bo2@mcp-template.test" } },
    });
    expect(refused).toMatchObject({ isError: true, data: { error: "insufficient_permission" } });
    await client.close();
    await narrow.close();
  });
});
