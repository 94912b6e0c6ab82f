import { describe, expect, it, vi } from "vitest";
import { pdfLib } from "../../src/files/pdf-lib";
import { call, json } from "../helpers/client";
import { linkIn, mailTo, publicSign } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { sealedPdf } from "../helpers/forms";
import { type PlacedWord, pdfTool, placedWords } from "../helpers/pdf-tools";
import { act, buildPdf, DRAWN_PNG, fieldIds, linkOf, sendUpload, uploaded } from "../helpers/uploads";

// Issue 44, parts 2 to 5: recipients and fields on an uploaded PDF, signing order and roles, what a signer submits,
// and the sealed copy with every value inside its box, checked with poppler's tools.

const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@upload.test`;

/** Two pages plus a rotated third, and the PDF's own text field and checkbox. */
const disclosure = () =>
  buildPdf([{ text: "Seller property disclosure" }, { text: "Page two: systems" }, { rotate: 90, text: "Page three: rotated schedule" }], {
    text: [{ name: "seller.name", page: 1, rect: [61.2, 633.6, 244.8, 20] }],
    checkbox: [{ name: "septic", page: 1, rect: [61.2, 554.4, 18, 18] }],
  });

/** The words a sealed page shows inside a box given in percent of that page as displayed (1 pt of slack). */
function wordsIn(
  words: PlacedWord[],
  page: number,
  size: { width: number; height: number },
  box: { x: number; y: number; width: number; height: number },
) {
  const left = (box.x / 100) * size.width - 1;
  const top = (box.y / 100) * size.height - 1;
  const right = ((box.x + box.width) / 100) * size.width + 1;
  const bottom = ((box.y + box.height) / 100) * size.height + 1;
  return words
    .filter((w) => w.page === page && w.xMin >= left && w.xMax <= right && w.yMin >= top && w.yMax <= bottom)
    .map((w) => w.text)
    .join(" ");
}

async function envelope(owner: TestPrincipal, id: string) {
  return json(await call("GET", `/api/signatures/${id}`, { token: owner.token }));
}

describe("sending an uploaded document", () => {
  it("names every problem of the recipients and fields in one 422, and writes nothing", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await disclosure());
    const res = await call("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: {
        recipients: [
          { key: "s", name: "Sam Seller", email: email("sam"), role: "signer" },
          { key: "v", name: "Val Viewer", email: email("val"), role: "viewer" },
          { key: "c", name: "Cy Copy", email: email("cy"), role: "cc" },
        ],
        fields: [
          { recipient: "s", type: "text", page: 1, x: 90, y: 10, width: 20, height: 5 },
          { recipient: "s", type: "text", page: 9, x: 10, y: 10, width: 20, height: 5 },
          { recipient: "nobody", type: "text", page: 1, x: 10, y: 10, width: 20, height: 5 },
          { recipient: "v", type: "checkbox", page: 1, x: 10, y: 10, width: 5, height: 5 },
          { recipient: "s", type: "dropdown", page: 1, x: 10, y: 30, width: 20, height: 5 },
        ],
        formValues: { "no.such.field": "x" },
      },
    });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.error).toBe("invalid_recipients");
    const codes = (body.issues as { field: string; code: string }[]).map((i) => `${i.field}:${i.code}`).sort();
    expect(codes).toEqual(
      [
        "fields.0.width:outside_page",
        "fields.1.page:page_out_of_range",
        "fields.2.recipient:unknown_recipient",
        "fields.3.recipient:no_fields_for_role",
        "fields.4.options:options_required",
        "formValues.no.such.field:unknown_form_field",
        "recipients.0:signature_field_required",
      ].sort(),
    );
    expect(await json(await call("GET", `/api/documents/${doc.id}`, { token: owner.token }))).toMatchObject({ status: "GENERATED" });
    expect((await json(await call("GET", `/api/documents/${doc.id}/signatures`, { token: owner.token }))).envelopes).toEqual([]);
  });

  it("keeps typed forms to their parties: recipients are for uploads", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const res = await call("POST", `/api/documents/${doc.id}/signature`, { token: owner.token, body: {} });
    expect(res.status).toBe(422);
    expect((await json(res)).issues).toEqual([expect.objectContaining({ field: "recipients", code: "required" })]);
  });
});

describe("signing order and roles", () => {
  it("sends order 2 only once both recipients of order 1 are done; before that its link answers not_your_turn", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}, {}]));
    const [a, b, c] = [email("a"), email("b"), email("c")];
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [
        { key: "a", name: "Ann First", email: a, role: "signer", order: 1 },
        { key: "b", name: "Ben First", email: b, role: "approver", order: 1 },
        { key: "c", name: "Cat Second", email: c, role: "signer", order: 2 },
      ],
      fields: [
        { recipient: "a", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 },
        { recipient: "c", type: "signature", page: 2, x: 10, y: 80, width: 30, height: 8 },
      ],
    });
    expect(sent.links.map((l) => [l.key, l.order])).toEqual([
      ["a", 1],
      ["b", 1],
      ["c", 2],
    ]);
    expect(sent.envelope.signers.map((s) => [s.key, s.role, s.order, s.status])).toEqual([
      ["a", "signer", 1, "sent"],
      ["b", "approver", 1, "sent"],
      ["c", "signer", 2, "pending"],
    ]);
    const third = linkOf(sent, "c");
    const early = await publicSign("GET", third);
    expect(early.status).toBe(409);
    expect(await json(early)).toMatchObject({ error: "not_your_turn" });

    expect((await act(linkOf(sent, "a"), "sign", { [Object.values(await fieldIds(linkOf(sent, "a")))[0]!]: "adopted" })).status).toBe(200);
    expect((await publicSign("GET", third)).status).toBe(409);
    expect(await mailTo(c)).toEqual([]);
    // An approver approves; signing is not theirs.
    const ben = linkOf(sent, "b");
    expect((await act(ben, "sign")).status).toBe(409);
    expect(await json(await publicSign("POST", ben, { action: "approve" }))).toMatchObject({ ok: true, completed: false });

    await vi.waitFor(async () => expect((await mailTo(c)).some((m) => linkIn(m.text))).toBe(true), { timeout: 10_000 });
    expect((await envelope(owner, sent.envelopeId)).signers.map((s: { status: string }) => s.status)).toEqual([
      "signed",
      "approved",
      "sent",
    ]);
    const signature = Object.values(await fieldIds(third))[0]!;
    expect(await json(await act(third, "sign", { [signature]: "adopted" }))).toMatchObject({ ok: true, completed: true });
  });

  it("an approver's rejection, with its reason, declines the envelope", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [
        { key: "s", name: "Sue Signer", email: email("sue"), role: "signer" },
        { key: "m", name: "Max Manager", email: email("max"), role: "approver" },
      ],
      fields: [{ recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    });
    const max = linkOf(sent, "m");
    expect((await publicSign("GET", max)).status).toBe(200);
    expect((await publicSign("POST", max, { action: "authenticate", codeVerified: true })).status).toBe(200);
    expect(await json(await publicSign("POST", max, { action: "reject" }))).toMatchObject({ error: "reason_required" });
    expect((await publicSign("POST", max, { action: "reject", reason: "Commission split is wrong" })).status).toBe(200);
    const e = await envelope(owner, sent.envelopeId);
    expect(e.status).toBe("declined");
    const audit = await json(await call("GET", `/api/signatures/${sent.envelopeId}/audit`, { token: owner.token }));
    expect(audit.events.at(-1)).toMatchObject({ event: "rejected", data: { reason: "Commission split is wrong" } });
    expect((await publicSign("GET", linkOf(sent, "s"))).status).toBe(404);
    // The document can be sent again.
    expect(await json(await call("GET", `/api/documents/${doc.id}`, { token: owner.token }))).toMatchObject({ status: "GENERATED" });
  });

  it("a viewer is done once they open the document; a cc gets no link and is mailed the sealed copy", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const cc = email("cc");
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [
        { key: "s", name: "Sol Signer", email: email("sol"), role: "signer" },
        { key: "v", name: "Vic Viewer", email: email("vic"), role: "viewer" },
        { key: "c", name: "Cora Copy", email: cc, role: "cc" },
      ],
      fields: [{ recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    });
    expect(sent.links.map((l) => l.key)).toEqual(["s", "v"]);
    expect(sent.envelope.signers.find((s) => s.key === "c")).toMatchObject({ role: "cc", status: "pending" });
    const viewer = await json(await publicSign("GET", linkOf(sent, "v")));
    expect(viewer.signer).toMatchObject({ role: "viewer", status: "viewed" });
    expect(viewer.document.pdfUrl).toEqual(expect.any(String));
    // The link they were handed serves them the PDF, though the open already made them viewed.
    const pdfLink = new URL(viewer.document.pdfUrl);
    const pdf = await call("GET", pdfLink.pathname + pdfLink.search);
    expect(pdf.status).toBe(200);
    expect(new TextDecoder().decode((await pdf.arrayBuffer()).slice(0, 5))).toBe("%PDF-");
    const sig = Object.values(await fieldIds(linkOf(sent, "s")))[0]!;
    expect(await json(await act(linkOf(sent, "s"), "sign", { [sig]: "adopted" }))).toMatchObject({ completed: true });
    const done = await envelope(owner, sent.envelopeId);
    expect(done.signers.map((s: { key: string; status: string }) => [s.key, s.status])).toEqual([
      ["s", "signed"],
      ["v", "viewed"],
      ["c", "copied"],
    ]);
    await vi.waitFor(async () => expect((await mailTo(cc)).map((m) => m.subject)).toContain("Signed by every party: Seller disclosure"), {
      timeout: 20_000,
    });
    const { text } = await pdfText(await sealedPdf(owner, sent.envelopeId));
    expect(text).toContain("Cora Copy");
  });
});

async function pdfText(pdf: Uint8Array) {
  const r = await pdfTool("pdftotext", pdf, ["-enc", "UTF-8", "{in}", "-"]);
  return { text: r.stdout.replace(/\s+/g, " ") };
}

describe("what a signer submits", () => {
  it("names each field that is missing, of the wrong type, not an option, or read-only and changed", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [{ key: "s", name: "Ida Signer", email: email("ida"), role: "signer" }],
      fields: [
        { recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8, name: "sig" },
        { recipient: "s", type: "date", page: 1, x: 10, y: 10, width: 20, height: 4, name: "date", required: true },
        { recipient: "s", type: "number", page: 1, x: 10, y: 20, width: 20, height: 4, name: "price", validation: { min: 1 } },
        { recipient: "s", type: "dropdown", page: 1, x: 10, y: 30, width: 20, height: 4, name: "heat", options: ["Gas", "Oil"] },
        { recipient: "s", type: "text", page: 1, x: 10, y: 40, width: 20, height: 4, name: "mls", readOnly: true, value: "W123" },
      ],
    });
    const token = linkOf(sent, "s");
    const ids = await fieldIds(token);
    const view = await json(await publicSign("GET", token));
    expect(view.document.pages).toEqual([{ width: 612, height: 792, rotation: 0 }]);
    expect(view.fields).toHaveLength(5);
    expect(view.fields.find((f: { name: string }) => f.name === "mls")).toMatchObject({ readOnly: true, value: "W123" });
    const bad = await act(token, "sign", { [ids.date!]: "06/12/2026", [ids.price!]: "ten", [ids.heat!]: "Wood", [ids.mls!]: "W999" });
    expect(bad.status).toBe(422);
    const body = await json(bad);
    expect(body.error).toBe("invalid_fields");
    expect(Object.fromEntries((body.issues as { field: string; code: string }[]).map((i) => [i.field, i.code]))).toEqual({
      [`fields.${ids.sig}`]: "required",
      [`fields.${ids.date}`]: "wrong_type",
      [`fields.${ids.price}`]: "wrong_type",
      [`fields.${ids.heat}`]: "not_an_option",
      [`fields.${ids.mls}`]: "read_only",
    });
    // Nothing was kept: the signer still stands where they were, and signs once it is right.
    expect((await envelope(owner, sent.envelopeId)).signers[0].status).toBe("consented");
    const big = `data:image/png;base64,${"A".repeat(140_000)}`;
    const tooBig = await json(await publicSign("POST", token, { action: "sign", fields: { [ids.sig!]: big, [ids.date!]: "2026-12-06" } }));
    expect(tooBig.issues).toEqual([expect.objectContaining({ field: `fields.${ids.sig}`, code: "invalid_signature" })]);
    const good = await publicSign("POST", token, {
      action: "sign",
      fields: { [ids.sig!]: DRAWN_PNG, [ids.date!]: "2026-12-06", [ids.price!]: 950000, [ids.heat!]: "Gas" },
    });
    expect(await json(good)).toMatchObject({ ok: true, completed: true });
  });
});

describe("a field submit racing a void", () => {
  it("lands whole or not at all: a signed, completed envelope the void cannot end, or a voided one whose link is gone", async () => {
    for (let round = 0; round < 3; round++) {
      const owner = await createPrincipal();
      const doc = await uploaded(owner.token, await buildPdf([{}]));
      const sent = await sendUpload(owner.token, doc.id, {
        recipients: [{ key: "s", name: "Rae Racer", email: email("rae"), role: "signer" }],
        fields: [
          { recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8, name: "sig" },
          { recipient: "s", type: "text", page: 1, x: 10, y: 10, width: 30, height: 4, name: "note" },
        ],
      });
      const token = linkOf(sent, "s");
      const ids = await fieldIds(token);
      expect((await publicSign("POST", token, { action: "authenticate", codeVerified: true })).status).toBe(200);
      expect((await publicSign("POST", token, { action: "consent" })).status).toBe(200);
      const [signed, voided] = await Promise.all([
        publicSign("POST", token, { action: "sign", fields: { [ids.sig!]: DRAWN_PNG, [ids.note!]: "raced" } }),
        call("DELETE", `/api/signatures/${sent.envelopeId}`, { token: owner.token }),
      ]);
      const e = await envelope(owner, sent.envelopeId);
      if (signed.status === 200) {
        expect(voided.status).toBe(409);
        expect(e.status).toBe("completed");
      } else {
        expect(signed.status).toBe(404);
        expect(voided.status).toBe(200);
        expect(e).toMatchObject({ status: "voided", signers: [expect.objectContaining({ status: "consented" })] });
      }
    }
  });
});

describe("the sealed copy of an uploaded document", () => {
  it("draws every value inside its box, on rotated pages too, fills and flattens the form, prints any script, and verifies", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await disclosure());
    const [yamada, eleni] = [email("yamada"), email("eleni")];
    const fields = {
      check: { page: 2, x: 10, y: 20, width: 4, height: 3 },
      rotated: { page: 3, x: 20, y: 30, width: 40, height: 6 },
      yamadaSig: { page: 2, x: 10, y: 70, width: 35, height: 8 },
      eleniSig: { page: 2, x: 55, y: 70, width: 35, height: 8 },
      eleniName: { page: 1, x: 50, y: 50, width: 40, height: 5 },
    };
    const sent = await sendUpload(owner.token, doc.id, {
      recipients: [
        { key: "y", name: "山田太郎", email: yamada, role: "signer" },
        { key: "e", name: "Ελένη Παπαδοπούλου", email: eleni, role: "signer" },
      ],
      fields: [
        { recipient: "y", type: "checkbox", name: "check", ...fields.check },
        { recipient: "y", type: "text", name: "rotated", ...fields.rotated },
        { recipient: "y", type: "signature", name: "sig", ...fields.yamadaSig },
        { recipient: "e", type: "signature", name: "sig", ...fields.eleniSig },
        { recipient: "e", type: "name", name: "name", ...fields.eleniName },
      ],
      formValues: { "seller.name": "Ελένη Π.", septic: true },
    });
    const y = linkOf(sent, "y");
    const yIds = await fieldIds(y);
    expect((await act(y, "sign", { [yIds.check!]: true, [yIds.rotated!]: "Furnace 2019", [yIds.sig!]: "adopted" })).status).toBe(200);
    const e = linkOf(sent, "e");
    const eIds = await fieldIds(e);
    expect(await json(await act(e, "sign", { [eIds.sig!]: "adopted" }))).toMatchObject({ completed: true });

    const sealed = await sealedPdf(owner, sent.envelopeId);
    const words = await placedWords(sealed);
    const page = (n: number) => doc.pages[n - 1]!;
    expect(wordsIn(words, 2, page(2), fields.check)).toBe("✓");
    expect(wordsIn(words, 3, page(3), fields.rotated)).toBe("Furnace 2019");
    expect(wordsIn(words, 2, page(2), fields.yamadaSig)).toBe("山田太郎");
    expect(wordsIn(words, 2, page(2), fields.eleniSig)).toBe("Ελένη Παπαδοπούλου");
    expect(wordsIn(words, 1, page(1), fields.eleniName)).toBe("Ελένη Παπαδοπούλου");
    // The PDF's own form: filled, then flattened (its value is page text, no field remains).
    const { text } = await pdfText(sealed);
    expect(text).toContain("Ελένη Π.");
    const { PDFDocument } = await pdfLib();
    // The one field left is the seal's own signature.
    const remaining = (await PDFDocument.load(sealed)).getForm().getFields();
    expect(remaining.map((f) => f.constructor.name)).toEqual(["PDFSignature"]);
    expect(remaining.map((f) => f.getName())).not.toContain("seller.name");
    const fonts = await pdfTool("pdffonts", sealed, ["{in}"]);
    expect(fonts.stdout).toMatch(/[A-Z]{6}\+IPAGothic\s.*yes\s+yes\s+yes/);
    expect(fonts.stdout).toMatch(/[A-Z]{6}\+DejaVuSans\s.*yes\s+yes\s+yes/);
    const sig = await pdfTool("pdfsig", sealed, ["{in}"]);
    expect(sig.stdout).toContain("Signature is Valid");
    expect(sig.stdout).toContain("Total document signed");
  });
});
