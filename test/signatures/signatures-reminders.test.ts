import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { call, json } from "../helpers/client";
import {
  allOnShards,
  createDocument,
  linkIn,
  mailTo,
  publicSign,
  runOnShards,
  sendForSignature,
  signAll,
  tokenOf,
} from "../helpers/documents";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";

// Reminders and expiry notices (issue 20): mailed by the minute cron, each once however many passes overlap, each in
// the audit trail, never after the envelope ends.
async function cronPasses(n: number) {
  await Promise.all(
    Array.from({ length: n }, async () => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    }),
  );
}

const signersOf = async (envelopeId: string) => ({
  results: await allOnShards<{ id: string; email: string; remind_at: string | null }>(
    "SELECT id, email, remind_at FROM envelope_signers WHERE envelope_id = ? ORDER BY position",
    envelopeId,
  ),
});
const due = (envelopeId: string) =>
  runOnShards(
    "UPDATE envelope_signers SET remind_at = ? WHERE envelope_id = ? AND remind_at IS NOT NULL",
    new Date(Date.now() - 1000).toISOString(),
    envelopeId,
  );
const mailsOf = async (to: string, subject: RegExp) => (await mailTo(to)).filter((m) => subject.test(m.subject));
const audit = async (owner: TestPrincipal, envelopeId: string) =>
  (await json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: owner.token }))).events as {
    event: string;
    signerId: string;
  }[];

async function envelope(body: Record<string, unknown>, n = 2) {
  const owner = await createPrincipal();
  const doc = await createDocument(owner.token);
  const signers = Array.from({ length: n }, (_, i) => ({
    name: `Signer ${i}`,
    email: `${crypto.randomUUID()}@remind.test`,
    role: i ? "tenant" : "landlord",
  }));
  const sent = await sendForSignature(owner.token, doc.id, { signers, ...body });
  return { owner, sent, emails: signers.map((s) => s.email) };
}

describe("reminders", () => {
  it("mails each signer still to sign once per due reminder across overlapping cron passes, with a link that works beside the first", async () => {
    const { owner, sent, emails } = await envelope({ reminders: { firstAfterDays: 1, everyDays: 2 } });
    const first = (await signersOf(sent.envelopeId)).results;
    for (const s of first) expect(Date.parse(s.remind_at!) - Date.now()).toBeGreaterThan(0.99 * 86_400_000);
    // The first signer signs; the second has not. The reminder falls due, and four cron passes run at once.
    await signAll(tokenOf(sent.links[0]!.url));
    await due(sent.envelopeId);
    await cronPasses(4);
    expect(await mailsOf(emails[0]!, /Reminder/)).toEqual([]);
    const reminders = await mailsOf(emails[1]!, /Reminder/);
    expect(reminders).toHaveLength(1);
    const trail = await audit(owner, sent.envelopeId);
    expect(trail.filter((e) => e.event === "reminded").map((e) => e.signerId)).toEqual([sent.links[1]!.signerId]);
    const next = (await signersOf(sent.envelopeId)).results[1]!.remind_at!;
    expect(Date.parse(next) - Date.now()).toBeGreaterThan(1.99 * 86_400_000);
    // Both the reminder's link and the first mail's work; one signature kills both.
    const reminderToken = tokenOf(linkIn(reminders[0]!.text)!);
    expect(reminderToken).not.toBe(tokenOf(sent.links[1]!.url));
    expect((await publicSign("GET", tokenOf(sent.links[1]!.url))).status).toBe(200);
    expect(await signAll(reminderToken)).toEqual({ ok: true, completed: true });
    expect((await publicSign("GET", tokenOf(sent.links[1]!.url))).status).toBe(404);
    // Done: nothing is due any more, whatever the cron does.
    expect((await signersOf(sent.envelopeId)).results.map((s) => s.remind_at)).toEqual([null, null]);
    await cronPasses(1);
    expect(await mailsOf(emails[1]!, /Reminder/)).toHaveLength(1);
  });

  it("never reminds after the envelope ends, nor a sequential signer before their turn; off without a plan", async () => {
    const voided = await envelope({ reminders: { firstAfterDays: 1, everyDays: null } });
    await due(voided.sent.envelopeId);
    await call("DELETE", `/api/signatures/${voided.sent.envelopeId}`, { token: voided.owner.token });
    await cronPasses(1);
    for (const to of voided.emails) expect(await mailsOf(to, /Reminder/)).toEqual([]);

    const sequential = await envelope({ mode: "sequential", reminders: { firstAfterDays: 1, everyDays: null } });
    expect((await signersOf(sequential.sent.envelopeId)).results.map((s) => s.remind_at === null)).toEqual([false, true]);
    await due(sequential.sent.envelopeId);
    await cronPasses(2);
    expect(await mailsOf(sequential.emails[0]!, /Reminder/)).toHaveLength(1);
    expect(await mailsOf(sequential.emails[1]!, /Reminder/)).toEqual([]);
    // everyDays null: one reminder, then none.
    expect((await signersOf(sequential.sent.envelopeId)).results[0]!.remind_at).toBeNull();

    const plain = await envelope({});
    expect((await signersOf(plain.sent.envelopeId)).results.map((s) => s.remind_at)).toEqual([null, null]);
    // An organization that reminds by default can still send one envelope without: reminders null.
    await call("PUT", "/api/signatures/settings", { token: plain.owner.token, body: { reminders: { firstAfterDays: 2, everyDays: 2 } } });
    const doc = await createDocument(plain.owner.token);
    const quiet = await sendForSignature(plain.owner.token, doc.id, { reminders: null });
    const defaulted = await sendForSignature(plain.owner.token, (await createDocument(plain.owner.token)).id);
    expect((await signersOf(quiet.envelopeId)).results.every((s) => s.remind_at === null)).toBe(true);
    expect((await signersOf(defaulted.envelopeId)).results.every((s) => s.remind_at !== null)).toBe(true);
    expect((await json(await call("GET", `/api/signatures/${quiet.envelopeId}`, { token: plain.owner.token }))).reminders).toBeNull();
  });
});

describe("expiry notices", () => {
  it("a day before expiry, each signer still to sign is told once, in the audit trail", async () => {
    const { owner, sent, emails } = await envelope({ expiresInDays: 3 });
    const shard = await tenantDb(owner.organizationId);
    const row = await shard
      .prepare("SELECT expires_at, expiry_notice_at FROM envelopes WHERE id = ?")
      .bind(sent.envelopeId)
      .first<{ expires_at: string; expiry_notice_at: string }>();
    expect(Date.parse(row!.expires_at) - Date.parse(row!.expiry_notice_at)).toBe(86_400_000);
    await signAll(tokenOf(sent.links[0]!.url));
    await shard
      .prepare("UPDATE envelopes SET expiry_notice_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), sent.envelopeId)
      .run();
    await cronPasses(3);
    expect(await mailsOf(emails[0]!, /expires tomorrow/)).toEqual([]);
    const notices = await mailsOf(emails[1]!, /expires tomorrow/);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.text).toContain(row!.expires_at);
    expect((await audit(owner, sent.envelopeId)).filter((e) => e.event === "expiry_notice").map((e) => e.signerId)).toEqual([
      sent.links[1]!.signerId,
    ]);
    expect(
      (await shard
        .prepare("SELECT expiry_notice_at FROM envelopes WHERE id = ?")
        .bind(sent.envelopeId)
        .first<{ expiry_notice_at: string | null }>())!.expiry_notice_at,
    ).toBeNull();
    // An envelope of one day has no notice: it would come at once.
    const short = await envelope({ expiresInDays: 1 });
    expect(
      (await (
        await tenantDb(short.owner.organizationId)
      )
        .prepare("SELECT expiry_notice_at FROM envelopes WHERE id = ?")
        .bind(short.sent.envelopeId)
        .first<{ expiry_notice_at: string | null }>())!.expiry_notice_at,
    ).toBeNull();
  });
});
