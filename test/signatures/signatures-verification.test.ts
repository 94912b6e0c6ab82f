import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { call, json } from "../helpers/client";
import {
  createDocument,
  freshIp,
  leaseCanonical,
  mailTo,
  openedSigner as opened,
  publicSign,
  sendForSignature,
  signingCodeFor as codeFor,
  tokenOf,
} from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { envelopeSigner } from "../../src/signatures/signer-client";

// Server-verified signers (issue 20): send_code mails a 6-digit code, authenticate checks it; an envelope whose
// signerVerification is `code` refuses the spec's client attestation.
const post = (token: string, body: Record<string, unknown>, ip = freshIp()) => publicSign("POST", token, body, ip);
const stub = (envelopeId: string) => envelopeSigner(env, envelopeId);

async function refusal(res: Response, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(await json(res)).toEqual({ error, message: expect.any(String) });
}

describe("send_code and authenticate with code", () => {
  it("mails a 6-digit code to the signer, answers the masked address, and authenticates with it once", async () => {
    const { owner, token, email, envelopeId } = await opened();
    const res = await post(token, { action: "send_code" });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toEqual({ ok: true, sentTo: expect.stringMatching(/^[a-z0-9]\*+@s\*+\.test$/), expiresInSeconds: 600 });
    expect(body.sentTo).not.toContain(email.split("@")[0]);
    const code = await codeFor(email);
    expect(await json(await post(token, { action: "authenticate", code }))).toEqual({ ok: true });
    const read = await json(await call("GET", `/api/signatures/${envelopeId}`, { token: owner.token }));
    expect(read.signers[0]).toMatchObject({ status: "authenticated", verification: "email_code" });
    const trail = await json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: owner.token }));
    expect(trail.events.map((e: { event: string }) => e.event)).toEqual(["sent", "opened", "code_sent", "authenticated"]);
    expect(trail.events[2].data).toEqual({ sentTo: body.sentTo });
    expect(trail.events[3].data).toEqual({ method: "email_code" });
    // Used once: the signer is authenticated now, and the code opens nothing more.
    await refusal(await post(token, { action: "authenticate", code }), 409, "invalid_state");
  });

  it("on a code envelope, codeVerified alone is 409 verification_required: the sender holding the links cannot pass", async () => {
    const { token } = await opened("code");
    await refusal(await post(token, { action: "authenticate", codeVerified: true }), 409, "verification_required");
    await refusal(await post(token, { action: "consent" }), 409, "invalid_state");
  });

  it("an attested envelope takes codeVerified (spec rule 2) and records client_attested; a code works there too", async () => {
    const a = await opened("attested");
    expect(await json(await post(a.token, { action: "authenticate", codeVerified: true }))).toEqual({ ok: true });
    const trail = await json(await call("GET", `/api/signatures/${a.envelopeId}/audit`, { token: a.owner.token }));
    expect(trail.events.at(-1)).toMatchObject({ event: "authenticated", data: { method: "client_attested" } });
    const b = await opened("attested");
    await post(b.token, { action: "send_code" });
    expect((await post(b.token, { action: "authenticate", code: await codeFor(b.email) })).status).toBe(200);
    expect((await json(await call("GET", `/api/signatures/${b.envelopeId}`, { token: b.owner.token }))).signers[0].verification).toBe(
      "email_code",
    );
  });

  it("refuses a wrong code (code_invalid), a code asked for nowhere, a malformed one (400), and ends a code after 5 wrong tries", async () => {
    const { token, email } = await opened();
    await refusal(await post(token, { action: "authenticate", code: "123456" }), 422, "code_invalid");
    expect((await post(token, { action: "authenticate", code: "12ab56" })).status).toBe(400);
    await post(token, { action: "send_code" });
    const right = await codeFor(email);
    const wrong = right === "000000" ? "000001" : "000000";
    for (let i = 0; i < 5; i++) await refusal(await post(token, { action: "authenticate", code: wrong }), 422, "code_invalid");
    // The right code no longer works: that code is ended.
    await refusal(await post(token, { action: "authenticate", code: right }), 422, "code_attempts_exceeded");
  });

  it("an expired code is code_expired", async () => {
    const { token, email, envelopeId } = await opened();
    await post(token, { action: "send_code" });
    const code = await codeFor(email);
    await runInDurableObject(
      stub(envelopeId),
      (_, state) => void state.storage.sql.exec("UPDATE signer_codes SET expires_at = ?", Date.now() - 1),
    );
    await refusal(await post(token, { action: "authenticate", code }), 422, "code_expired");
  });

  it("throttles resends per signer: one a minute (429 code_resend_too_soon with Retry-After), five an hour", async () => {
    const { token, envelopeId } = await opened();
    expect((await post(token, { action: "send_code" })).status).toBe(200);
    const again = await post(token, { action: "send_code" });
    expect(again.status).toBe(429);
    expect(await json(again)).toEqual({ error: "code_resend_too_soon", message: expect.any(String) });
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThan(50);
    // Four more sends spread over the hour are allowed; the sixth within the hour is not, however long after the fifth.
    const past = (minutes: number[]) => JSON.stringify(minutes.map((m) => Date.now() - m * 60_000));
    await runInDurableObject(
      stub(envelopeId),
      (_, state) => void state.storage.sql.exec("UPDATE signer_codes SET sends = ?", past([50, 40, 30, 20])),
    );
    expect((await post(token, { action: "send_code" })).status).toBe(200);
    await runInDurableObject(
      stub(envelopeId),
      (_, state) => void state.storage.sql.exec("UPDATE signer_codes SET sends = ?", past([50, 40, 30, 20, 10])),
    );
    const sixth = await post(token, { action: "send_code" });
    expect(sixth.status).toBe(429);
    expect(Number(sixth.headers.get("retry-after"))).toBeGreaterThan(9 * 60);
  });

  it("50 authentications race with one right code among wrong ones: one success, the attempt limit exact", async () => {
    const { owner, token, email, envelopeId } = await opened();
    await post(token, { action: "send_code" });
    const right = await codeFor(email);
    const wrong = right === "999999" ? "999998" : "999999";
    // Four wrong guesses first leave the code one wrong try from its end; then 50 race, one of them right.
    for (let i = 0; i < 4; i++) await post(token, { action: "authenticate", code: wrong });
    const bodies = Array.from({ length: 50 }, (_, i) => (i === 25 ? right : wrong));
    const answers = await Promise.all(bodies.map((code) => post(token, { action: "authenticate", code })));
    const errors = await Promise.all(answers.map(async (a) => (a.status === 200 ? "ok" : (await json(a)).error)));
    const ok = errors.filter((e) => e === "ok").length;
    const invalid = errors.filter((e) => e === "code_invalid").length;
    // Exactly five wrong tries are counted in all: either the right code came before the fifth wrong one and won
    // (one success; the rest find the signer authenticated), or the fifth wrong one came first and ended the code.
    if (ok === 1) expect(errors.filter((e) => e === "invalid_state").length + invalid).toBe(49);
    else expect([ok, invalid, errors.filter((e) => e === "code_attempts_exceeded").length]).toEqual([0, 1, 49]);
    expect(invalid).toBeLessThanOrEqual(1);
    const status = (await json(await call("GET", `/api/signatures/${envelopeId}`, { token: owner.token }))).signers[0].status;
    expect(status).toBe(ok === 1 ? "authenticated" : "opened");
  });

  it("50 authentications race, all with the right code: exactly one authenticates", async () => {
    const { owner, token, email, envelopeId } = await opened();
    await post(token, { action: "send_code" });
    const code = await codeFor(email);
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(token, { action: "authenticate", code })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(49);
    const trail = await json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: owner.token }));
    expect(trail.events.filter((e: { event: string }) => e.event === "authenticated")).toHaveLength(1);
  });

  it("a code envelope shows the document, and lets the signer decline, only once the code is verified", async () => {
    const { token, email } = await opened("code");
    const before = await json(await publicSign("GET", token));
    expect(before.document).toEqual({
      title: expect.stringMatching(/Lease/),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      pdfUrl: null,
      text: null,
    });
    await refusal(await post(token, { action: "decline", reason: "not me" }), 409, "verification_required");
    await post(token, { action: "send_code" });
    await post(token, { action: "authenticate", code: await codeFor(email) });
    const after = await json(await publicSign("GET", token));
    expect(after.document.text.sections.length).toBeGreaterThan(0);
    expect(after.document.pdfUrl).toMatch(/\/api\/public\/files\//);
    expect(await json(await post(token, { action: "decline", reason: "Wrong unit" }))).toEqual({ ok: true });
  });

  it("the sixth code in an hour is refused in its own words", async () => {
    const { token, envelopeId } = await opened();
    await post(token, { action: "send_code" });
    await runInDurableObject(
      stub(envelopeId),
      (_, state) =>
        void state.storage.sql.exec(
          "UPDATE signer_codes SET sends = ?",
          JSON.stringify([50, 40, 30, 20, 10].map((m) => Date.now() - m * 60_000)),
        ),
    );
    const res = await post(token, { action: "send_code" });
    expect(res.status).toBe(429);
    expect((await json(res)).message).toMatch(/Five codes were sent in the last hour/);
  });

  it("send_code is for an opened signer only, and a dead link answers gone", async () => {
    const { token, email } = await opened("attested");
    await post(token, { action: "authenticate", codeVerified: true });
    await refusal(await post(token, { action: "send_code" }), 409, "invalid_state");
    await post(token, { action: "decline" });
    expect((await post(token, { action: "send_code" })).status).toBe(404);
    expect((await mailTo(email)).filter((m) => m.subject.startsWith("Your signing code"))).toEqual([]);
  });
});

describe("organization settings", () => {
  it("signerVerification defaults to attested; set to code, new envelopes need a code unless the request says otherwise", async () => {
    const owner = await createPrincipal();
    expect(await json(await call("GET", "/api/signatures/settings", { token: owner.token }))).toEqual({
      signerVerification: "attested",
      reminders: null,
    });
    const put = await call("PUT", "/api/signatures/settings", {
      token: owner.token,
      body: { signerVerification: "code", reminders: { firstAfterDays: 2, everyDays: 3 } },
    });
    expect(await json(put)).toEqual({ signerVerification: "code", reminders: { firstAfterDays: 2, everyDays: 3 } });
    // A partial update keeps the rest.
    expect(await json(await call("PUT", "/api/signatures/settings", { token: owner.token, body: { reminders: null } }))).toEqual({
      signerVerification: "code",
      reminders: null,
    });
    const doc = await createDocument(owner.token);
    const sent = await sendForSignature(owner.token, doc.id);
    expect((await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: owner.token }))).signerVerification).toBe("code");
    const token = tokenOf(sent.links[0]!.url);
    await publicSign("GET", token);
    await refusal(await post(token, { action: "authenticate", codeVerified: true }), 409, "verification_required");
    const bad = await call("PUT", "/api/signatures/settings", {
      token: owner.token,
      body: { signerVerification: "sms", reminders: { firstAfterDays: 0 } },
    });
    expect(bad.status).toBe(400);
    expect((await json(bad)).issues.map((i: { path: string[] }) => i.path.join("."))).toEqual(
      expect.arrayContaining(["signerVerification", "reminders.firstAfterDays"]),
    );
    // Another organization's settings are its own.
    const other = await createPrincipal();
    expect((await json(await call("GET", "/api/signatures/settings", { token: other.token }))).signerVerification).toBe("attested");
  });

  // Issue 40: an agent switched the organization's default from code to attested.
  it("are the organization's to change: an agent reads them but cannot weaken them", async () => {
    const owner = await createPrincipal();
    expect((await call("PUT", "/api/signatures/settings", { token: owner.token, body: { signerVerification: "code" } })).status).toBe(200);
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    expect((await json(await call("GET", "/api/signatures/settings", { token: agent.token }))).signerVerification).toBe("code");
    const refused = await call("PUT", "/api/signatures/settings", { token: agent.token, body: { signerVerification: "attested" } });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(await json(refused))).toContain("insufficient_role");
    expect((await json(await call("GET", "/api/signatures/settings", { token: owner.token }))).signerVerification).toBe("code");
  });
});

describe("nothing raw at rest", () => {
  it("a dump of every table holds no raw code, token, link or seal key, after idempotent replays and reminders too", async () => {
    const owner = await createPrincipal();
    const doc = await createDocument(owner.token, leaseCanonical());
    const signers = [0, 1].map((i) => ({ name: `Dump ${i}`, email: `${crypto.randomUUID()}@dump.test`, role: "tenant" }));
    const body = { signerVerification: "code", signers, reminders: { firstAfterDays: 1, everyDays: 1 } };
    const headers = { "idempotency-key": `dump-${crypto.randomUUID()}` };
    const first = await call("POST", `/api/documents/${doc.id}/signature`, { token: owner.token, body, headers });
    const replay = await call("POST", `/api/documents/${doc.id}/signature`, { token: owner.token, body, headers });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const sent = await json(first);
    expect((await json(replay)).links.map((l: { url?: string }) => l.url)).toEqual([undefined, undefined]);
    const handedOut: string[] = sent.links.map((l: { url: string }) => tokenOf(l.url));
    const codes: string[] = [];
    for (const [i, link] of sent.links.entries()) {
      const token = tokenOf(link.url);
      await publicSign("GET", token);
      await post(token, { action: "send_code" });
      codes.push(await codeFor(signers[i]!.email));
    }
    // A reminder mints another link for each.
    const shard = await tenantDb(owner.organizationId);
    await shard
      .prepare("UPDATE envelope_signers SET remind_at = ? WHERE envelope_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), sent.envelopeId)
      .run();
    await runInDurableObject(
      stub(sent.envelopeId),
      async (instance) =>
        void (await (instance as unknown as { remind(id: string, organizationId: string): Promise<number> }).remind(
          sent.envelopeId,
          owner.organizationId,
        )),
    );
    for (const s of signers) {
      await vi.waitFor(async () => expect((await mailTo(s.email)).some((m) => m.subject.startsWith("Reminder"))).toBe(true));
      const reminder = (await mailTo(s.email)).find((m) => m.subject.startsWith("Reminder"))!;
      handedOut.push(tokenOf(reminder.text.match(/https?:\/\/\S+\/sign\/\S+/)![0]));
    }
    expect(new Set(handedOut).size).toBe(4);
    const key = env
      .SEAL_PRIVATE_KEY!.replaceAll("\\n", "\n")
      .split("\n")
      .filter((l) => !l.startsWith("-----"))
      .join("");
    // The directory (public_keys holds the links' hashes) and the organization's shard.
    const seen: string[] = [];
    for (const db of [env.DB, shard]) {
      const tables = (
        await db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
          .all<{ name: string }>()
      ).results.map((r) => r.name);
      seen.push(...tables);
      for (const table of tables) {
        const dump = JSON.stringify((await db.prepare(`SELECT * FROM "${table}"`).all()).results);
        for (const t of handedOut) expect(dump.includes(t.slice(5)), `${table} holds a raw signing token`).toBe(false);
        for (const c of codes)
          expect(new RegExp(`(?<![0-9A-Za-z])${c}(?![0-9A-Za-z])`).test(dump), `${table} holds a raw code`).toBe(false);
        expect(dump.includes(key.slice(40, 100)), `${table} holds the seal key`).toBe(false);
      }
    }
    expect(seen).toEqual(
      expect.arrayContaining([
        "public_keys",
        "signing_links",
        "envelope_signers",
        "envelope_audit",
        "mail_outbox",
        "outbox_events",
        "idempotency_keys",
        "signature_settings",
      ]),
    );
  });
});
