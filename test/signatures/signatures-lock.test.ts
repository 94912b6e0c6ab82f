import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import {
  createDocument,
  freshIp,
  linkIn,
  mailTo,
  openedSigner,
  publicSign,
  sendForSignature,
  signAll,
  signingCodeFor,
  tokenOf,
} from "../helpers/documents";
import { createPrincipal } from "../helpers/factories";
import { envelopeSigner } from "../../src/signatures/signer-client";

// Issue 29, defect 4: 15 wrong codes lock a signer's code verification until the sender sends them a new link with
// POST /api/signatures/{envelopeId}/signers/{signerId}/resend.
const post = (token: string, body: Record<string, unknown>) => publicSign("POST", token, body, freshIp());
const stub = (envelopeId: string) => envelopeSigner(env, envelopeId);
const resendPath = (envelopeId: string, signerId: string) => `/api/signatures/${envelopeId}/signers/${signerId}/resend`;
const wrongFor = (code: string) => (code === "000000" ? "000001" : "000000");

/** The per-minute and per-hour send limits are not under test: forget when the last codes were mailed. */
const forgetSends = (envelopeId: string) =>
  runInDurableObject(stub(envelopeId), (_, state) => {
    const made = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'signer_codes'").one().n > 0;
    if (made) state.storage.sql.exec("UPDATE signer_codes SET sends = '[]'");
  });
const codeMails = async (email: string) => (await mailTo(email)).filter((m) => m.subject.startsWith("Your signing code")).length;

async function expectLocked(res: Response) {
  expect(res.status).toBe(429);
  expect(await json(res)).toEqual({
    error: "verification_locked",
    message: expect.stringContaining("does not end by waiting: ask the sender for a new link"),
  });
  expect(res.headers.get("retry-after")).toBe("86400");
}

const eventsOf = async (ownerToken: string, envelopeId: string) => {
  const trail = await json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: ownerToken }));
  expect(trail.chain.valid).toBe(true);
  return trail.events as { event: string; signerId: string | null; data: Record<string, unknown> | null }[];
};

/** Three codes, five wrong tries on each of the first two and four on the third: 14 failures, the third code still live. */
async function fourteenFailures(s: { envelopeId: string; token: string; email: string }) {
  const before = await codeMails(s.email);
  let code = "";
  for (let n = 1; n <= 3; n++) {
    await forgetSends(s.envelopeId);
    expect((await post(s.token, { action: "send_code" })).status).toBe(200);
    code = await signingCodeFor(s.email, before + n);
    for (let i = 0; i < (n < 3 ? 5 : 4); i++)
      expect((await json(await post(s.token, { action: "authenticate", code: wrongFor(code) }))).error).toBe("code_invalid");
  }
  return code;
}

describe("the signer lock", () => {
  it("locks at the 15th wrong code across codes: send_code and authenticate answer 429 verification_locked, the right code too; audited once", async () => {
    const s = await openedSigner("code");
    const live = await fourteenFailures(s);
    await expectLocked(await post(s.token, { action: "authenticate", code: wrongFor(live) }));
    // The code that was live is refused now, and no new one can be asked for.
    await expectLocked(await post(s.token, { action: "authenticate", code: live }));
    await forgetSends(s.envelopeId);
    await expectLocked(await post(s.token, { action: "send_code" }));
    await expectLocked(await post(s.token, { action: "authenticate", codeVerified: true }));
    expect((await mailTo(s.email)).filter((m) => m.subject.startsWith("Your signing code"))).toHaveLength(3);
    const events = await eventsOf(s.owner.token, s.envelopeId);
    expect(events.filter((e) => e.event === "verification_locked")).toEqual([
      expect.objectContaining({ signerId: s.sent.links[0]!.signerId, data: { failedTries: 15 } }),
    ]);
    expect((await json(await call("GET", `/api/signatures/${s.envelopeId}`, { token: s.owner.token }))).signers[0].status).toBe("opened");
  });

  it("counts parallel wrong tries exactly: of 10 at once on the third code, 4 are wrong, the 5th locks, and the lock is audited once", async () => {
    const s = await openedSigner("code");
    for (let n = 1; n <= 3; n++) {
      await forgetSends(s.envelopeId);
      expect((await post(s.token, { action: "send_code" })).status).toBe(200);
      const code = await signingCodeFor(s.email, n);
      const tries = n < 3 ? 5 : 10;
      const answers = await Promise.all(
        Array.from({ length: tries }, () => post(s.token, { action: "authenticate", code: wrongFor(code) })),
      );
      const errors = await Promise.all(answers.map(async (a) => (await json(a)).error as string));
      if (n < 3) expect(errors).toEqual(Array(5).fill("code_invalid"));
      else expect(errors.sort()).toEqual([...Array(4).fill("code_invalid"), ...Array(6).fill("verification_locked")]);
    }
    expect((await eventsOf(s.owner.token, s.envelopeId)).filter((e) => e.event === "verification_locked")).toHaveLength(1);
  });

  it("a resend unlocks with a new link: the old link is gone, the signer verifies with a new code and signs", async () => {
    const s = await openedSigner("code");
    await fourteenFailures(s);
    await expectLocked(await post(s.token, { action: "authenticate", code: "123456" }));
    const signerId = s.sent.links[0]!.signerId;

    const res = await call("POST", resendPath(s.envelopeId, signerId), { token: s.owner.token });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toEqual({
      signerId,
      name: "Sam Signer",
      email: s.email,
      role: "tenant",
      order: 1,
      url: expect.stringMatching(/\/sign\/sign_[\w-]{43}$/),
    });
    const fresh = tokenOf(body.url);
    expect(fresh).not.toBe(s.token);

    // The old link answers the uniform 404 gone, whatever is asked of it.
    for (const res of [await publicSign("GET", s.token), await post(s.token, { action: "send_code" })]) {
      expect(res.status).toBe(404);
      expect(await json(res)).toEqual({ state: "gone" });
    }
    // The signer was mailed the new link, and told the old ones are dead.
    const mail = (await mailTo(s.email)).find((m) => m.subject === "A new link to sign your document")!;
    expect(linkIn(mail.text)).toBe(body.url);
    expect(mail.text).toContain("no longer work");

    // The lock and its count are gone: a new code verifies, and the signature completes the envelope.
    expect((await publicSign("GET", fresh)).status).toBe(200);
    expect((await post(fresh, { action: "send_code" })).status).toBe(200);
    expect((await post(fresh, { action: "authenticate", code: await signingCodeFor(s.email, 4) })).status).toBe(200);
    expect((await post(fresh, { action: "consent" })).status).toBe(200);
    expect(await json(await post(fresh, { action: "sign" }))).toEqual({ ok: true, completed: true });

    const events = await eventsOf(s.owner.token, s.envelopeId);
    const locked = events.findIndex((e) => e.event === "verification_locked");
    const resent = events.findIndex((e) => e.event === "resent");
    expect(locked).toBeGreaterThan(0);
    expect(resent).toBeGreaterThan(locked);
    expect(events[resent]).toMatchObject({ signerId, data: { userId: s.owner.userId, unlocked: true } });
  });

  it("a resend after a lock starts the count again: 14 more wrong codes do not lock, the 15th does", async () => {
    const s = await openedSigner("code");
    await fourteenFailures(s);
    await expectLocked(await post(s.token, { action: "authenticate", code: "123456" }));
    const fresh = tokenOf(
      (await json(await call("POST", resendPath(s.envelopeId, s.sent.links[0]!.signerId), { token: s.owner.token }))).url,
    );
    await publicSign("GET", fresh);
    const live = await fourteenFailures({ envelopeId: s.envelopeId, token: fresh, email: s.email });
    // 28 wrong codes in all, 14 since the resend: the 15th since then locks again.
    await expectLocked(await post(fresh, { action: "authenticate", code: wrongFor(live) }));
    expect((await eventsOf(s.owner.token, s.envelopeId)).filter((e) => e.event === "verification_locked")).toHaveLength(2);
  });
});

describe("POST /api/signatures/{envelopeId}/signers/{signerId}/resend", () => {
  it("serves a signer who lost the mail, unlocked or not; an Idempotency-Key replay leaves the url out and mints nothing", async () => {
    const owner = await createPrincipal();
    const email = `${crypto.randomUUID()}@signer.test`;
    const sent = await sendForSignature(owner.token, (await createDocument(owner.token)).id, {
      signers: [{ name: "Lost Mail", email, role: "tenant" }],
    });
    const signerId = sent.links[0]!.signerId;
    const headers = { "idempotency-key": `resend-${crypto.randomUUID()}` };
    const first = await call("POST", resendPath(sent.envelopeId, signerId), { token: owner.token, headers });
    const replay = await call("POST", resendPath(sent.envelopeId, signerId), { token: owner.token, headers });
    expect(first.status).toBe(200);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const url = (await json(first)).url as string;
    expect(await json(replay)).toEqual({ signerId, name: "Lost Mail", email, role: "tenant", order: 1 });
    expect((await publicSign("GET", tokenOf(sent.links[0]!.url))).status).toBe(404);
    expect(await signAll(tokenOf(url))).toEqual({ ok: true, completed: true });
    const events = await eventsOf(owner.token, sent.envelopeId);
    expect(events.filter((e) => e.event === "resent")).toEqual([
      expect.objectContaining({ signerId, data: { userId: owner.userId, unlocked: false } }),
    ]);
    expect((await mailTo(email)).filter((m) => m.subject === "A new link to sign your document")).toHaveLength(1);
  });

  it("a signer who had verified verifies again on the new link: the sender, who gets the url in the answer, cannot consent or sign for them", async () => {
    const s = await openedSigner("code");
    expect((await post(s.token, { action: "send_code" })).status).toBe(200);
    expect((await post(s.token, { action: "authenticate", code: await signingCodeFor(s.email) })).status).toBe(200);
    expect((await post(s.token, { action: "consent" })).status).toBe(200);
    const res = await call("POST", resendPath(s.envelopeId, s.sent.links[0]!.signerId), { token: s.owner.token });
    expect(res.status).toBe(200);
    const resent = tokenOf((await json(res)).url);
    // What the sender can do with the url: read the title, not the document; consent and sign need the signer's code.
    const read = await json(await publicSign("GET", resent));
    expect(read.document?.text ?? null).toBeNull();
    expect((await post(resent, { action: "consent" })).status).toBe(409);
    expect((await post(resent, { action: "sign" })).status).toBe(409);
    // The signer, with a new code from their mailbox, signs as before.
    await forgetSends(s.envelopeId);
    expect((await post(resent, { action: "send_code" })).status).toBe(200);
    expect((await post(resent, { action: "authenticate", code: await signingCodeFor(s.email, 2) })).status).toBe(200);
    expect((await post(resent, { action: "consent" })).status).toBe(200);
    expect(await json(await post(resent, { action: "sign" }))).toMatchObject({ ok: true, completed: true });
  });

  it("answers another organization's envelope exactly as an unknown one, and an unknown signer 404", async () => {
    const owner = await createPrincipal();
    const sent = await sendForSignature(owner.token, (await createDocument(owner.token)).id);
    const signerId = sent.links[0]!.signerId;
    const stranger = await createPrincipal();
    const foreign = await call("POST", resendPath(sent.envelopeId, signerId), { token: stranger.token });
    const unknown = await call("POST", resendPath("00000000-0000-4000-8000-0000000e0e0e", signerId), { token: stranger.token });
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).toBe(await unknown.text());
    // Another envelope's signer is not this envelope's.
    const other = await sendForSignature(owner.token, (await createDocument(owner.token)).id);
    const mixed = await call("POST", resendPath(other.envelopeId, signerId), { token: owner.token });
    expect(mixed.status).toBe(404);
    expect(await json(mixed)).toEqual({ error: "not_found", message: expect.any(String) });
    // The stranger's tries changed nothing: the owner's link still works.
    expect((await publicSign("GET", tokenOf(sent.links[0]!.url))).status).toBe(200);
    expect((await eventsOf(owner.token, sent.envelopeId)).some((e) => e.event === "resent")).toBe(false);
    // The same ids with the owner's token: the resend is there, and it is the owner's alone.
    expect((await call("POST", resendPath(sent.envelopeId, signerId), { token: owner.token })).status).toBe(200);
    expect((await eventsOf(owner.token, sent.envelopeId)).filter((e) => e.event === "resent")).toHaveLength(1);
  });

  it("refuses with 409 cannot_resend a signer who signed or declined, an envelope no longer open, and a sequential signer whose turn has not come", async () => {
    const owner = await createPrincipal();
    const signers = [1, 2].map((i) => ({ name: `Signer ${i}`, email: `${crypto.randomUUID()}@signer.test`, role: "tenant" }));
    const cannot = async (envelopeId: string, signerId: string, why: RegExp) => {
      const res = await call("POST", resendPath(envelopeId, signerId), { token: owner.token });
      expect(res.status).toBe(409);
      expect(await json(res)).toEqual({ error: "cannot_resend", message: expect.stringMatching(why) });
    };
    const parallel = await sendForSignature(owner.token, (await createDocument(owner.token)).id, { signers });
    await signAll(tokenOf(parallel.links[0]!.url));
    await cannot(parallel.envelopeId, parallel.links[0]!.signerId, /already signed/);

    const sequential = await sendForSignature(owner.token, (await createDocument(owner.token)).id, { signers, mode: "sequential" });
    const second = (await json(await call("GET", `/api/signatures/${sequential.envelopeId}`, { token: owner.token }))).signers[1];
    expect(second.status).toBe("pending");
    await cannot(sequential.envelopeId, second.id, /turn/);

    await call("DELETE", `/api/signatures/${parallel.envelopeId}`, { token: owner.token });
    await cannot(parallel.envelopeId, parallel.links[1]!.signerId, /voided/);

    const declined = await sendForSignature(owner.token, (await createDocument(owner.token)).id, {
      signers,
      signerVerification: "attested",
    });
    const token = tokenOf(declined.links[0]!.url);
    await publicSign("GET", token);
    expect((await post(token, { action: "decline" })).status).toBe(200);
    await cannot(declined.envelopeId, declined.links[0]!.signerId, /declined/);
    // No link was minted by any refusal.
    for (const e of [parallel, sequential, declined])
      expect((await eventsOf(owner.token, e.envelopeId)).some((x) => x.event === "resent")).toBe(false);
  });
});
