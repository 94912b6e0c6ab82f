import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { mailTo, publicSign } from "../helpers/documents";
import { erase, newPerson, whereFound } from "../helpers/erasure";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { sealedPdf } from "../helpers/forms";
import { type PlacedWord, pdfTool, placedWords } from "../helpers/pdf-tools";
import { act, buildPdf, fieldIds, linkOf, type SentUpload, uploaded } from "../helpers/uploads";

// Issue 45, parts 1 and 5: templates made from an uploaded PDF, used again and again, and their public links.

const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@template.test`;

const ROLES = [
  { key: "buyer", label: "Buyer", role: "signer", order: 1 },
  { key: "agent", label: "Buyer's agent", role: "signer", order: 2 },
];
const FIELDS = [
  { role: "buyer", type: "signature", name: "buyer_sig", page: 1, x: 10, y: 80, width: 30, height: 6 },
  { role: "buyer", type: "text", name: "price", page: 1, x: 10, y: 20, width: 40, height: 4 },
  { role: "buyer", type: "text", name: "address", page: 1, x: 10, y: 30, width: 60, height: 4 },
  { role: "agent", type: "signature", name: "agent_sig", page: 1, x: 55, y: 80, width: 30, height: 6 },
];

async function template(owner: TestPrincipal, body: Record<string, unknown> = {}) {
  const doc = await uploaded(owner.token, await buildPdf([{ text: "Buyer representation agreement" }]));
  const res = await call("POST", "/api/templates", {
    token: owner.token,
    body: { documentId: doc.id, name: "Buyer rep", roles: ROLES, fields: FIELDS, ...body },
  });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.template as { id: string; version: number; fields: { id: string; name: string }[] };
}

async function use(owner: TestPrincipal, id: string, body: Record<string, unknown>): Promise<SentUpload> {
  const res = await call("POST", `/api/templates/${id}/use`, { token: owner.token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload as SentUpload;
}

/** The words a sealed page shows inside a box given in percent of the page (1 pt of slack). */
function wordsIn(words: PlacedWord[], box: { x: number; y: number; width: number; height: number }) {
  const [w, h] = [612, 792];
  return words
    .filter(
      (word) =>
        word.page === 1 &&
        word.xMin >= (box.x / 100) * w - 1 &&
        word.xMax <= ((box.x + box.width) / 100) * w + 1 &&
        word.yMin >= (box.y / 100) * h - 1 &&
        word.yMax <= ((box.y + box.height) / 100) * h + 1,
    )
    .map((word) => word.text)
    .join(" ");
}

const box = (name: string) => FIELDS.find((f) => f.name === name)!;

/** Signs the buyer's turn (with `fields` by name; `consented`: they are past consent already), then the agent's. */
async function signAll(sent: SentUpload, buyer: Record<string, unknown>, consented = false) {
  const b = linkOf(sent, "buyer");
  const ids = await fieldIds(b);
  const byId = Object.fromEntries(Object.entries(buyer).map(([name, v]) => [ids[name]!, v]));
  const fields = { [ids.buyer_sig!]: "adopted", ...byId };
  const signed = consented ? await publicSign("POST", b, { action: "sign", fields }) : await act(b, "sign", fields);
  expect(signed.status, JSON.stringify(await json(signed.clone()))).toBe(200);
  const a = linkOf(sent, "agent");
  const agentIds = await fieldIds(a);
  expect(await json(await act(a, "sign", { [agentIds.agent_sig!]: "adopted" }))).toMatchObject({ completed: true });
}

describe("templates", () => {
  it("names every problem of the roles and fields at once, and keeps nothing", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const res = await call("POST", "/api/templates", {
      token: owner.token,
      body: {
        documentId: doc.id,
        name: "Broken",
        roles: [...ROLES, { key: "buyer", label: "Again", role: "viewer" }],
        fields: [
          { role: "buyer", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 },
          { role: "nobody", type: "text", name: "sig", page: 2, x: 10, y: 10, width: 20, height: 4 },
        ],
      },
    });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.error).toBe("invalid_template");
    expect(Object.fromEntries((body.issues as { field: string; code: string }[]).map((i) => [i.field, i.code]))).toEqual({
      "roles.2.key": "duplicate_key",
      "fields.1.name": "duplicate_name",
      "fields.1.role": "unknown_role",
      "fields.1.page": "page_out_of_range",
      "roles.1": "signature_field_required",
    });
    expect((await json(await call("GET", "/api/templates", { token: owner.token }))).pagination.total).toBe(0);
  });

  it("is used twice with other recipients and values: each sealed copy shows its own values in their boxes, a locked one unchanged", async () => {
    const owner = await createPrincipal();
    const t = await template(owner);
    const first = await use(owner, t.id, {
      recipients: { buyer: { name: "Bea Buyer", email: email("bea") }, agent: { name: "Al Agent", email: email("al") } },
      values: { price: { value: "USD 500000", lock: true }, address: "12 Elm Street" },
      message: "Please sign by Friday",
    });
    const second = await use(owner, t.id, {
      recipients: { buyer: { name: "Cy Buyer", email: email("cy") }, agent: { name: "Al Agent", email: email("al2") } },
      values: { price: "USD 725000" },
    });
    expect(first.envelope).toMatchObject({ source: "template", templateId: t.id, message: "Please sign by Friday" });
    const firstDoc = await json(
      await call("GET", `/api/documents/${(first.envelope as unknown as { documentId: string }).documentId}`, { token: owner.token }),
    );
    expect(firstDoc).toMatchObject({
      source: "upload",
      status: "OUT_FOR_SIGNATURE",
      title: "Seller disclosure",
      templateId: t.id,
      templateVersion: 1,
    });
    // The buyer may not change a locked value; the one left open they may.
    const b = linkOf(first, "buyer");
    const ids = await fieldIds(b);
    const locked = await act(b, "sign", { [ids.buyer_sig!]: "adopted", [ids.price!]: "USD 1" });
    expect(locked.status).toBe(422);
    expect((await json(locked)).issues).toEqual([expect.objectContaining({ field: `fields.${ids.price}`, code: "read_only" })]);
    await signAll(first, { address: "14 Elm Street" }, true);
    await signAll(second, { address: "9 Oak Avenue" });

    for (const [sent, price, address] of [
      [first, "USD 500000", "14 Elm Street"],
      [second, "USD 725000", "9 Oak Avenue"],
    ] as const) {
      const sealed = await sealedPdf(owner, sent.envelopeId);
      const words = await placedWords(sealed);
      expect(wordsIn(words, box("price"))).toBe(price);
      expect(wordsIn(words, box("address"))).toBe(address);
      expect((await pdfTool("pdfsig", sealed, ["{in}"])).stdout).toContain("Signature is Valid");
    }
  });

  it("refuses a use naming every problem: a role without a recipient, a recipient for no role, an unknown field, a wrong value", async () => {
    const owner = await createPrincipal();
    const t = await template(owner, {
      fields: [...FIELDS, { role: "buyer", type: "number", name: "deposit", page: 1, x: 10, y: 40, width: 20, height: 4 }],
    });
    const res = await call("POST", `/api/templates/${t.id}/use`, {
      token: owner.token,
      body: {
        recipients: { buyer: { name: "Bea Buyer", email: email("bea") }, seller: { name: "Sy Seller", email: email("sy") } },
        values: { deposit: "lots", nothing: "x", buyer_sig: "Bea" },
      },
    });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(Object.fromEntries((body.issues as { field: string; code: string }[]).map((i) => [i.field, i.code]))).toEqual({
      "recipients.agent": "recipient_required",
      "recipients.seller": "unknown_role",
      "values.deposit": "invalid_value",
      "values.nothing": "unknown_field",
      "values.buyer_sig": "invalid_value",
    });
    const docs = await json(await call("GET", "/api/documents", { token: owner.token }));
    expect(docs.documents).toHaveLength(1); // the upload the template came from; the use made none
  });

  it("versions a change; an envelope keeps the fields it was sent with; delete goes to the trash and restore brings it back", async () => {
    const owner = await createPrincipal();
    const t = await template(owner);
    const sent = await use(owner, t.id, {
      recipients: { buyer: { name: "Bea Buyer", email: email("bea") }, agent: { name: "Al Agent", email: email("al") } },
    });
    const stale = await call("PATCH", `/api/templates/${t.id}`, {
      token: owner.token,
      headers: { "If-Match": '"7"' },
      body: { name: "Renamed" },
    });
    expect(stale.status).toBe(412);
    const patched = await call("PATCH", `/api/templates/${t.id}`, {
      token: owner.token,
      body: { fields: FIELDS.filter((f) => f.name !== "address") },
    });
    expect(patched.status).toBe(200);
    expect((await json(patched)).template).toMatchObject({ version: 2, fields: expect.any(Array) });
    expect((await json(await call("GET", `/api/templates/${t.id}`, { token: owner.token }))).template.fields).toHaveLength(3);
    expect(Object.keys(await fieldIds(linkOf(sent, "buyer")))).toContain("address");

    expect((await call("DELETE", `/api/templates/${t.id}`, { token: owner.token })).status).toBe(204);
    expect((await call("GET", `/api/templates/${t.id}`, { token: owner.token })).status).toBe(404);
    const trash = await json(await call("GET", "/v1/trash?kind=template", { token: owner.token }));
    expect(trash.data).toEqual([expect.objectContaining({ id: t.id, kind: "template", label: "Buyer rep" })]);
    const restored = await call("POST", `/api/templates/${t.id}/restore`, { token: owner.token });
    expect(restored.status).toBe(200);
    expect((await json(restored)).template).toMatchObject({ id: t.id, version: 2, name: "Buyer rep" });
  });

  it("is another organization's unknown id", async () => {
    const [owner, other] = [await createPrincipal(), await createPrincipal()];
    const t = await template(owner);
    expect((await call("GET", `/api/templates/${t.id}`, { token: other.token })).status).toBe(404);
    const used = await call("POST", `/api/templates/${t.id}/use`, {
      token: other.token,
      body: { recipients: { buyer: { name: "B", email: email("b") }, agent: { name: "A", email: email("a") } } },
    });
    expect(used.status).toBe(404);
  });
});

describe("a template's public link", () => {
  it("a visitor gives a name and e-mail, proves it with the mailed code, and signs the envelope made for them", async () => {
    const owner = await createPrincipal();
    const t = await template(owner, {
      roles: [
        { key: "visitor", label: "Visitor", role: "signer", order: 1 },
        { key: "host", label: "Listing agent", role: "cc", order: 1 },
      ],
      fields: [{ role: "visitor", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
    });
    const refused = await call("POST", `/api/templates/${t.id}/public-link`, { token: owner.token, body: { role: "host" } });
    expect(Object.fromEntries(((await json(refused)).issues as { field: string; code: string }[]).map((i) => [i.field, i.code]))).toEqual({
      role: "not_a_signer",
      "recipients.visitor": "recipient_required",
    });
    const issued = await call("POST", `/api/templates/${t.id}/public-link`, {
      token: owner.token,
      body: { role: "visitor", recipients: { host: { name: "Lee Lister", email: email("lee") } } },
    });
    expect(issued.status).toBe(201);
    const { url, publicLink } = await json(issued);
    expect(publicLink).toMatchObject({ role: "visitor", enabled: true });
    const slug = url.slice(url.lastIndexOf("/t/") + 3);
    const page = await call("GET", `/t/${slug}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Seller disclosure");
    expect(await json(await call("GET", `/api/public/templates/${slug}`))).toMatchObject({ role: { key: "visitor", label: "Visitor" } });

    const visitor = { name: "Vera Visitor", email: email("vera") };
    expect((await call("POST", `/api/public/templates/${slug}/code`, { body: visitor })).status).toBe(202);
    const mail = (await mailTo(visitor.email)).at(-1)!;
    const code = /code is (\d{6})/.exec(mail.text)![1]!;
    const wrong = await call("POST", `/api/public/templates/${slug}/start`, {
      body: { ...visitor, code: code === "000000" ? "111111" : "000000" },
    });
    expect(await json(wrong)).toMatchObject({ error: "invalid_code", attemptsLeft: 4 });
    const started = await call("POST", `/api/public/templates/${slug}/start`, { body: { ...visitor, code } });
    expect(started.status).toBe(201);
    const { url: signUrl, envelopeId } = await json(started);
    // The code is used once.
    expect(await json(await call("POST", `/api/public/templates/${slug}/start`, { body: { ...visitor, code } }))).toMatchObject({
      error: "code_expired",
    });
    const token = signUrl.slice(signUrl.lastIndexOf("/sign/") + 6);
    // The visitor proved their address with the link's code: their link starts authenticated, no second code.
    const view = await json(await publicSign("GET", token));
    expect(view.signer).toMatchObject({ name: "Vera Visitor", status: "authenticated" });
    const ids = await fieldIds(token);
    expect((await publicSign("POST", token, { action: "consent" })).status).toBe(200);
    expect(await json(await publicSign("POST", token, { action: "sign", fields: { [ids.sig!]: "adopted" } }))).toMatchObject({
      completed: true,
    });
    const trail = await json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: owner.token }));
    expect(trail.events.slice(0, 2)).toMatchObject([
      { event: "sent" },
      { event: "authenticated", data: { method: "email_code", via: "public_link" } },
    ]);
    const envelope = await json(await call("GET", `/api/signatures/${envelopeId}`, { token: owner.token }));
    expect(envelope).toMatchObject({ source: "public_link", templateId: t.id, status: "completed" });
    expect(envelope.signers.map((s: { name: string; role: string }) => [s.name, s.role])).toEqual([
      ["Vera Visitor", "signer"],
      ["Lee Lister", "cc"],
    ]);
    expect((await pdfTool("pdfsig", await sealedPdf(owner, envelopeId), ["{in}"])).stdout).toContain("Signature is Valid");

    // Disabled: the link answers gone, its page says so.
    const off = await call("POST", `/api/templates/${t.id}/public-link`, { token: owner.token, body: { role: "visitor", enabled: false } });
    expect(await json(off)).toMatchObject({ url: null, publicLink: { enabled: false } });
    expect(await json(await call("GET", `/api/public/templates/${slug}`))).toEqual({ state: "gone" });
    expect((await call("GET", `/t/${slug}`)).status).toBe(404);
    expect((await call("POST", `/api/public/templates/${slug}/code`, { body: visitor })).status).toBe(404);
  });

  it("a person's erasure takes them off a link that names them as a recipient, and the link stops", async () => {
    const owner = await createPrincipal();
    const person = newPerson();
    const contact = await createContact(owner.token, { firstName: person.firstName, lastName: person.lastName, email: person.email });
    const t = await template(owner, {
      roles: [
        { key: "visitor", label: "Visitor", role: "signer", order: 1 },
        { key: "host", label: "Listing agent", role: "cc", order: 1 },
      ],
      fields: [{ role: "visitor", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
    });
    const issued = await call("POST", `/api/templates/${t.id}/public-link`, {
      token: owner.token,
      body: { role: "visitor", recipients: { host: { name: person.fullName, email: person.email } } },
    });
    const { url } = await json(issued);
    const res = await erase(owner, contact.id);
    expect(res.status).toBe(200);
    expect((await json(res)).data.erased).toMatchObject({ template_links: 1 });
    expect((await whereFound(person.needles)).filter((hit) => hit.startsWith("template_links."))).toEqual([]);
    expect((await json(await call("GET", `/api/templates/${t.id}`, { token: owner.token }))).template.publicLink).toMatchObject({
      enabled: false,
    });
    expect(await json(await call("GET", `/api/public/templates/${url.slice(url.lastIndexOf("/t/") + 3)}`))).toEqual({ state: "gone" });
  });

  it("two starts with one code at once make one envelope", async () => {
    const owner = await createPrincipal();
    const t = await template(owner, {
      roles: [{ key: "visitor", label: "Visitor", role: "signer", order: 1 }],
      fields: [{ role: "visitor", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
    });
    const { url } = await json(await call("POST", `/api/templates/${t.id}/public-link`, { token: owner.token, body: { role: "visitor" } }));
    const slug = url.slice(url.lastIndexOf("/t/") + 3);
    const visitor = { name: "Rae Racer", email: email("rae") };
    expect((await call("POST", `/api/public/templates/${slug}/code`, { body: visitor })).status).toBe(202);
    const code = /code is (\d{6})/.exec((await mailTo(visitor.email)).at(-1)!.text)![1]!;
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => call("POST", `/api/public/templates/${slug}/start`, { body: { ...visitor, code } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 422, 422, 422]);
    const envelopes = await json(await call("GET", "/api/documents", { token: owner.token }));
    expect(envelopes.documents.filter((d: { status: string }) => d.status === "OUT_FOR_SIGNATURE")).toHaveLength(1);
  });

  it("an unknown slug is gone, alike", async () => {
    expect(await json(await call("GET", "/api/public/templates/tpl_nothing"))).toEqual({ state: "gone" });
    expect((await publicSign("GET", "sign_nothing")).status).toBe(404);
  });
});
