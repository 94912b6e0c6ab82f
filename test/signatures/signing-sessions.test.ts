import { afterEach, describe, expect, it, vi } from "vitest";
import { call, json } from "../helpers/client";
import { freshIp, mailTo, publicSign, signingCodeFor } from "../helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { sealedPdf } from "../helpers/forms";
import { connect, tool } from "../helpers/mcp";
import { pdfTool } from "../helpers/pdf-tools";
import { buildPdf, fieldIds, sendUpload, uploaded } from "../helpers/uploads";

// Issue 45, parts 3 and 4: a recipient who signs inside the sender's application through a single-use view URL, and
// one who signs in person on a host's device through a single-use host session.

const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@session.test`;
const PARTNER = "https://tm.example.test";
const SIG = { type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 } as const;

afterEach(() => void vi.useRealTimers());

/** An uploaded one-page PDF sent to `recipients` (each with a signature field; a viewer without). */
async function sendTo(owner: TestPrincipal, recipients: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  const doc = await uploaded(owner.token, await buildPdf([{ text: "Showing agreement" }]));
  const fields = recipients.filter((r) => r.role === "signer").map((r) => ({ recipient: r.key, ...SIG, name: `sig-${r.key}` }));
  return sendUpload(owner.token, doc.id, { recipients, fields, ...extra });
}

const view = (owner: TestPrincipal, envelopeId: string, signerId: string, body: Record<string, unknown>) =>
  call("POST", `/api/signatures/${envelopeId}/signers/${signerId}/view`, { token: owner.token, body });
const hostSession = (who: TestPrincipal, envelopeId: string, signerId: string) =>
  call("POST", `/api/signatures/${envelopeId}/signers/${signerId}/host-session`, { token: who.token });
/** Opens a session URL from its own client address. */
const open = (url: string) =>
  call("GET", `/sign/session/${url.slice(url.lastIndexOf("/") + 1)}`, {
    headers: { "cf-connecting-ip": freshIp(), "user-agent": "vitest host" },
  });
/** The signing link token a session's page carries for the public signing API. */
const pageToken = (html: string) => /data-token="(sign_[A-Za-z0-9_-]{43})"/.exec(html)?.[1];

async function trail(owner: TestPrincipal, envelopeId: string) {
  return (await json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: owner.token }))) as {
    events: { event: string; signerId: string | null; data: Record<string, unknown> | null }[];
    chain: { valid: boolean };
  };
}

/** Through the page's link: open, attest, consent, sign the signature field. */
async function signThrough(token: string) {
  const [sig] = Object.values(await fieldIds(token));
  expect((await publicSign("POST", token, { action: "authenticate", codeVerified: true })).status).toBe(200);
  expect((await publicSign("POST", token, { action: "consent" })).status).toBe(200);
  return json(await publicSign("POST", token, { action: "sign", fields: { [sig!]: "adopted" } }));
}

async function refusal(res: Response, status: number, error: string) {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body.error).toBe(error);
  return body;
}

describe("sending to embedded and in-person recipients", () => {
  it("mails them nothing, answers no url for them, and shows embedded and inPerson on the envelope", async () => {
    const owner = await createPrincipal();
    const [mailed, embedded, hosted] = [email("mailed"), email("embedded"), email("hosted")];
    const sent = await sendTo(owner, [
      { key: "m", name: "Mia Mailed", email: mailed, role: "signer" },
      { key: "e", name: "Eli Embedded", email: embedded, role: "signer", embedded: true },
      { key: "h", name: "Hal Hosted", email: hosted, role: "signer", inPerson: { hostUserId: owner.userId } },
    ]);
    expect(sent.links.map((l) => [l.key, typeof l.url])).toEqual([
      ["m", "string"],
      ["e", "undefined"],
      ["h", "undefined"],
    ]);
    const signers = (sent.envelope.signers as unknown as Record<string, unknown>[]).map(({ key, status, embedded, inPerson }) => ({
      key,
      status,
      embedded,
      inPerson,
    }));
    expect(signers).toEqual([
      { key: "m", status: "sent", embedded: false, inPerson: null },
      { key: "e", status: "sent", embedded: true, inPerson: null },
      { key: "h", status: "sent", embedded: false, inPerson: { hostUserId: owner.userId } },
    ]);
    await vi.waitFor(async () => expect((await mailTo(mailed)).length).toBe(1));
    expect(await mailTo(embedded)).toEqual([]);
    expect(await mailTo(hosted)).toEqual([]);
    // No link exists for them, and the sender cannot mail one either.
    const db = await tenantDb(owner.organizationId);
    const links = await db.prepare("SELECT signer_id FROM signing_links WHERE envelope_id = ?").bind(sent.envelopeId).all();
    expect(links.results).toHaveLength(1);
    const e = sent.links.find((l) => l.key === "e")!;
    await refusal(
      await call("POST", `/api/signatures/${sent.envelopeId}/signers/${e.signerId}/resend`, { token: owner.token }),
      409,
      "cannot_resend",
    );
    // The envelope's events carry them too.
    const event = await db
      .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = 'envelope.sent'")
      .bind(owner.organizationId)
      .first<{ data: string }>();
    expect(JSON.parse(event!.data).object.signers.map((s: { embedded: boolean }) => s.embedded)).toEqual([false, true, false]);
  });

  it("an agent's send_for_signature says they are up now but not mailed", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const client = await connect(owner.token);
    const sent = await tool(client, "send_for_signature", {
      documentId: doc.id,
      recipients: [
        { key: "m", name: "Mia", email: email("m"), role: "signer" },
        { key: "e", name: "Eli", email: email("e"), role: "signer", embedded: true },
      ],
      fields: [
        { recipient: "m", ...SIG },
        { recipient: "e", ...SIG },
      ],
    });
    expect(sent.isError, sent.text).toBe(false);
    expect(sent.data.envelope.signers.map((s: { key: string; mailed: boolean; upNow: boolean }) => [s.key, s.mailed, s.upNow])).toEqual([
      ["m", true, true],
      ["e", false, true],
    ]);
    await client.close();
  });

  it("names each problem in one 422: both at once, a cc, a host who is not a user of the organization", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const res = await call("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: {
        recipients: [
          { key: "a", name: "Ann", email: email("a"), role: "signer", embedded: true, inPerson: { hostUserId: owner.userId } },
          { key: "b", name: "Bo", email: email("b"), role: "signer", inPerson: { hostUserId: stranger.userId } },
          { key: "c", name: "Cy", email: email("c"), role: "cc", embedded: true },
        ],
        fields: [
          { recipient: "a", ...SIG },
          { recipient: "b", ...SIG },
        ],
      },
    });
    const body = await refusal(res, 422, "invalid_recipients");
    expect((body.issues as { field: string; code: string }[]).map((i) => `${i.field}:${i.code}`).sort()).toEqual(
      [
        "recipients.0.inPerson:embedded_and_in_person",
        "recipients.1.inPerson.hostUserId:unknown_user",
        "recipients.2.embedded:no_link_for_cc",
      ].sort(),
    );
  });

  it("hands the turn to an embedded recipient of a later order without mailing them", async () => {
    const owner = await createPrincipal();
    const [first, later] = [email("first"), email("later")];
    const sent = await sendTo(owner, [
      { key: "f", name: "Fay First", email: first, role: "signer", order: 1 },
      { key: "l", name: "Lou Later", email: later, role: "signer", order: 2, embedded: true },
    ]);
    const l = sent.links.find((x) => x.key === "l")!;
    await refusal(
      await view(owner, sent.envelopeId, l.signerId, { returnUrl: `${PARTNER}/done`, frameAncestors: [PARTNER] }),
      409,
      "not_your_turn",
    );
    const f = sent.links.find((x) => x.key === "f")!;
    const firstToken = f.url.slice(f.url.lastIndexOf("/sign/") + 6);
    expect(await signThrough(firstToken)).toMatchObject({ ok: true, completed: false });
    const envelope = await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }));
    expect(envelope.signers[1]).toMatchObject({ status: "sent", embedded: true });
    expect(await mailTo(later)).toEqual([]);
    expect((await view(owner, sent.envelopeId, l.signerId, { returnUrl: `${PARTNER}/done`, frameAncestors: [PARTNER] })).status).toBe(201);
  });
});

describe("an embedded recipient's view URL", () => {
  it("opens once, framable only by the given origin; signing through it completes and the sealed copy verifies", async () => {
    const owner = await createPrincipal();
    const sent = await sendTo(owner, [{ key: "e", name: "Eli Embedded", email: email("e"), role: "signer", embedded: true }]);
    const signerId = sent.envelope.signers[0]!.id;
    const res = await view(owner, sent.envelopeId, signerId, { returnUrl: `${PARTNER}/deals/42?tab=docs`, frameAncestors: [PARTNER] });
    const created = await json(res);
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(created.url).toMatch(/\/sign\/session\/ses_[A-Za-z0-9_-]{43}$/);
    const ttl = Date.parse(created.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(280_000);
    expect(ttl).toBeLessThanOrEqual(300_000);

    const page = await open(created.url);
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy")!;
    expect(
      csp
        .split(";")
        .map((d) => d.trim())
        .filter((d) => d.startsWith("frame-ancestors")),
    ).toEqual([`frame-ancestors ${PARTNER}`]);
    expect(page.headers.get("x-frame-options")).toBeNull();
    const html = await page.text();
    expect(html).toContain(`data-parent-origin="${PARTNER}"`);
    // Posted to that origin, never to any: the only postMessage of the page names the origin it read from its body.
    expect(html.match(/postMessage\([^)]*\)/g)).toEqual(["postMessage({ type }, parentOrigin)"]);
    const token = pageToken(html)!;
    expect(token).toBeTruthy();
    // Used once: a second open is 410, and the session's token itself is no signing link.
    expect((await open(created.url)).status).toBe(410);
    expect((await publicSign("GET", created.url.slice(created.url.lastIndexOf("/") + 1))).status).toBe(404);

    const db = await tenantDb(owner.organizationId);
    expect(
      (await db.prepare("SELECT via FROM signing_links WHERE signer_id = ?").bind(signerId).all<{ via: string }>()).results.map(
        (r) => r.via,
      ),
    ).toEqual(["embedded"]);
    expect((await publicSign("GET", token)).status).toBe(200);
    expect(await signThrough(token)).toEqual({ ok: true, completed: true });

    const { events, chain } = await trail(owner, sent.envelopeId);
    expect(chain.valid).toBe(true);
    expect(events.map((e) => e.event)).toEqual([
      "sent",
      "view_requested",
      "session_opened",
      "opened",
      "authenticated",
      "consented",
      "signed",
    ]);
    expect(events[1]!.data).toMatchObject({ requestedBy: owner.userId, frameAncestors: [PARTNER] });
    expect(events.at(-1)!.data).toEqual({ via: "embedded", requestedBy: owner.userId });

    const sealed = await sealedPdf(owner, sent.envelopeId);
    const sig = await pdfTool("pdfsig", sealed, ["{in}"]);
    expect(sig.stdout).toContain("Signature is Valid");
    expect(sig.stdout).toContain("Total document signed");
    const text = (await pdfTool("pdftotext", sealed, ["-enc", "UTF-8", "{in}", "-"])).stdout.replace(/\s+/g, " ");
    expect(text).toContain("signed embedded in the sender's application");
  });

  it("answers 410 once its 5 minutes are over", async () => {
    const owner = await createPrincipal();
    const sent = await sendTo(owner, [{ key: "e", name: "Eli", email: email("e"), role: "signer", embedded: true }]);
    const created = await json(
      await view(owner, sent.envelopeId, sent.envelope.signers[0]!.id, { returnUrl: `${PARTNER}/x`, frameAncestors: [PARTNER] }),
    );
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
    vi.setSystemTime(Date.now() + 300_000 + 1_000);
    expect((await open(created.url)).status).toBe(410);
  });

  it("refuses an origin or returnUrl that is not https (422 naming each) and a recipient who is not embedded (409)", async () => {
    const owner = await createPrincipal();
    const sent = await sendTo(owner, [
      { key: "e", name: "Eli", email: email("e"), role: "signer", embedded: true },
      { key: "m", name: "Mo", email: email("m"), role: "signer" },
    ]);
    const [e, m] = sent.envelope.signers;
    const bad = await refusal(
      await view(owner, sent.envelopeId, e!.id, {
        returnUrl: "http://tm.example.test/done",
        frameAncestors: [PARTNER, "http://tm.example.test", "https://tm.example.test/path", "*"],
      }),
      422,
      "invalid_view_request",
    );
    expect((bad.issues as { field: string; code: string }[]).map((i) => `${i.field}:${i.code}`)).toEqual([
      "returnUrl:not_https",
      "frameAncestors.1:not_https",
      "frameAncestors.2:invalid_origin",
      "frameAncestors.3:invalid_origin",
    ]);
    // In development and tests, this machine's own pages may frame it.
    expect(
      (await view(owner, sent.envelopeId, e!.id, { returnUrl: "http://127.0.0.1:4321/back", frameAncestors: ["http://127.0.0.1:4321"] }))
        .status,
    ).toBe(201);
    await refusal(await view(owner, sent.envelopeId, m!.id, { returnUrl: `${PARTNER}/x`, frameAncestors: [PARTNER] }), 409, "not_embedded");
    const other = await createPrincipal();
    expect(
      (
        await call("POST", `/api/signatures/${sent.envelopeId}/signers/${e!.id}/view`, {
          token: other.token,
          body: { returnUrl: `${PARTNER}/x`, frameAncestors: [PARTNER] },
        })
      ).status,
    ).toBe(404);
    expect((await call("DELETE", `/api/signatures/${sent.envelopeId}`, { token: owner.token })).status).toBe(200);
    await refusal(
      await view(owner, sent.envelopeId, e!.id, { returnUrl: `${PARTNER}/x`, frameAncestors: [PARTNER] }),
      409,
      "envelope_not_open",
    );
  });

  it("a URL of a voided envelope no longer opens", async () => {
    const owner = await createPrincipal();
    const sent = await sendTo(owner, [{ key: "e", name: "Eli", email: email("e"), role: "signer", embedded: true }]);
    const created = await json(
      await view(owner, sent.envelopeId, sent.envelope.signers[0]!.id, { returnUrl: `${PARTNER}/x`, frameAncestors: [PARTNER] }),
    );
    expect((await call("DELETE", `/api/signatures/${sent.envelopeId}`, { token: owner.token })).status).toBe(200);
    expect((await open(created.url)).status).toBe(410);
    expect((await open(created.url.replace(/ses_.{10}/, "ses_AAAAAAAAAA"))).status).toBe(410);
  });
});

describe("an in-person recipient's host session", () => {
  it("is the host's alone; the signer's code goes to the signer; the certificate names host and signer", async () => {
    const owner = await createPrincipal();
    const host = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const signerEmail = email("kitchen");
    const sent = await sendTo(
      owner,
      [{ key: "k", name: "Kit Chen", email: signerEmail, role: "signer", inPerson: { hostUserId: host.userId } }],
      { signerVerification: "code" },
    );
    const signerId = sent.envelope.signers[0]!.id;
    await refusal(await hostSession(owner, sent.envelopeId, signerId), 403, "not_the_host");
    await refusal(
      await view(owner, sent.envelopeId, signerId, { returnUrl: `${PARTNER}/x`, frameAncestors: [PARTNER] }),
      409,
      "not_embedded",
    );
    const res = await hostSession(host, sent.envelopeId, signerId);
    const created = await json(res);
    expect(res.status, JSON.stringify(created)).toBe(201);
    const ttl = Date.parse(created.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(880_000);
    expect(ttl).toBeLessThanOrEqual(900_000);

    const page = await open(created.url);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).toContain("Please hand this device to Kit Chen");
    const token = pageToken(html)!;
    expect((await open(created.url)).status).toBe(410);

    // The code goes to the signer's own address, as on any link.
    expect((await publicSign("GET", token)).status).toBe(200);
    expect((await publicSign("POST", token, { action: "send_code" })).status).toBe(200);
    const code = await signingCodeFor(signerEmail);
    expect((await publicSign("POST", token, { action: "authenticate", code })).status).toBe(200);
    expect((await publicSign("POST", token, { action: "consent" })).status).toBe(200);
    const [sig] = Object.values(await fieldIds(token));
    expect(await json(await publicSign("POST", token, { action: "sign", fields: { [sig!]: "adopted" } }))).toEqual({
      ok: true,
      completed: true,
    });

    const { events } = await trail(owner, sent.envelopeId);
    const hostEmail = `${host.userId}@example.test`;
    expect(events.find((e) => e.event === "host_session_started")!.data).toMatchObject({
      hostUserId: host.userId,
      host: { name: "Test Agent", email: hostEmail },
    });
    expect(events.at(-1)).toMatchObject({
      event: "signed",
      signerId,
      data: { via: "in_person", hostUserId: host.userId, host: { name: "Test Agent", email: hostEmail } },
    });
    const sealed = await sealedPdf(owner, sent.envelopeId);
    expect((await pdfTool("pdfsig", sealed, ["{in}"])).stdout).toContain("Signature is Valid");
    const text = (await pdfTool("pdftotext", sealed, ["-enc", "UTF-8", "{in}", "-"])).stdout.replace(/\s+/g, " ");
    expect(text).toContain(`Kit Chen <${signerEmail}>, signer: signed in person, hosted by Test Agent <${hostEmail}>`);
  });
});
