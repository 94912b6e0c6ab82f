import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { sha256Hex } from "../../src/lib/crypto";
import { turnstile } from "../../src/platform/bot-challenge";
import { everyShard, shardDatabase } from "../../src/shards/bindings";
import { envelopeSigner } from "../../src/signatures/signer-client";
import { call, json } from "../helpers/client";
import {
  createDocument,
  freshIp,
  leaseCanonical,
  linkIn,
  mailTo,
  publicSign,
  sendForSignature,
  signAll,
  tokenOf,
} from "../helpers/documents";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";
import { receiverUrl } from "../helpers/receiver";
import { testApp } from "../helpers/test-app";

const GONE = { state: "gone" };
const two = leaseCanonical({
  landlords: [{ name: "Lars Landlord", email: "lars@landlord.test" }],
  tenants: [{ name: "Tess Tenant", email: "tess@tenant.test" }],
});

async function envelopeOf(owner: TestPrincipal, envelopeId: string) {
  const res = await call("GET", `/api/signatures/${envelopeId}`, { token: owner.token });
  expect(res.status).toBe(200);
  return json(res);
}
const auditOf = async (owner: TestPrincipal, envelopeId: string) =>
  json(await call("GET", `/api/signatures/${envelopeId}/audit`, { token: owner.token }));
const events = async (organizationId: string, type: string) =>
  (
    await (
      await tenantDb(organizationId)
    )
      .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = ?")
      .bind(organizationId, type)
      .all<{ data: string }>()
  ).results.map((r) => JSON.parse(r.data));
const stub = (envelopeId: string) => envelopeSigner(env, envelopeId);
const action = (token: string, body: Record<string, unknown>) => publicSign("POST", token, body);

async function sent(mode: "parallel" | "sequential" = "parallel", extra: Record<string, unknown> = {}) {
  const owner = await createPrincipal();
  const doc = await createDocument(owner.token, two);
  const envelope = await sendForSignature(owner.token, doc.id, { mode, ...extra });
  return { owner, doc, envelope, tokens: envelope.links.map((l) => tokenOf(l.url)) };
}

describe("sending for signature", () => {
  it("parallel: every signer's link at once, mailed; the envelope starts partially_signed with signers sent", async () => {
    const { owner, doc, envelope, tokens } = await sent("parallel");
    expect(envelope.links.map((l) => [l.name, l.role])).toEqual([
      ["Lars Landlord", "landlord"],
      ["Tess Tenant", "tenant"],
    ]);
    for (const l of envelope.links) expect(l.url).toMatch(/^http:\/\/127\.0\.0\.1:8787\/sign\/sign_[A-Za-z0-9_-]{43}$/);
    const read = await envelopeOf(owner, envelope.envelopeId);
    expect(read).toMatchObject({
      id: envelope.envelopeId,
      documentId: doc.id,
      status: "partially_signed",
      mode: "parallel",
      completedAt: null,
      expiresAt: null,
      certificate: { status: "not_applicable", url: null },
    });
    for (const s of read.signers)
      expect(s).toEqual({
        id: expect.any(String),
        name: expect.any(String),
        email: expect.any(String),
        role: expect.any(String),
        order: 1,
        status: "sent",
        sentAt: expect.any(String),
        embedded: false,
        inPerson: null,
      });
    expect((await json(await call("GET", `/api/documents/${doc.id}`, { token: owner.token }))).status).toBe("OUT_FOR_SIGNATURE");
    await vi.waitFor(async () => {
      for (const l of envelope.links) expect((await mailTo(l.email)).map((m) => linkIn(m.text))).toContain(l.url);
    });
    expect(tokens).toHaveLength(2);
  });

  it("sequential: only the first link now; the next is minted and mailed when the previous signer has signed", async () => {
    const { owner, envelope, tokens } = await sent("sequential", {
      signers: [
        { name: "First", email: "first@seq.test", role: "seller" },
        { name: "Second", email: "second@seq.test", role: "buyer" },
      ],
    });
    expect(envelope.links.map((l) => l.email)).toEqual(["first@seq.test"]);
    const before = await envelopeOf(owner, envelope.envelopeId);
    expect(before.signers.map((s: { status: string }) => s.status)).toEqual(["sent", "pending"]);
    expect(before.signers[1]).not.toHaveProperty("sentAt");
    expect(await mailTo("second@seq.test")).toEqual([]);
    expect(await signAll(tokens[0]!)).toEqual({ ok: true, completed: false });
    let second: string | null = null;
    await vi.waitFor(async () => {
      second = linkIn((await mailTo("second@seq.test"))[0]?.text ?? "");
      expect(second).not.toBeNull();
    });
    expect((await envelopeOf(owner, envelope.envelopeId)).signers.map((s: { status: string }) => s.status)).toEqual(["signed", "sent"]);
    expect(await signAll(tokenOf(second!))).toEqual({ ok: true, completed: true });
    expect((await envelopeOf(owner, envelope.envelopeId)).status).toBe("completed");
  });

  it("refuses with 409 cannot_send_for_signature, each refusal in its own words", async () => {
    const owner = await createPrincipal();
    const expectRefusal = async (documentId: string, body: Record<string, unknown>, words: RegExp) => {
      const res = await call("POST", `/api/documents/${documentId}/signature`, { token: owner.token, body });
      expect(res.status).toBe(409);
      expect(await json(res)).toEqual({ error: "cannot_send_for_signature", message: expect.stringMatching(words) });
    };
    const doc = await createDocument(owner.token, two);
    await expectRefusal(doc.id, { signers: [] }, /no signing parties/);
    const open = await sendForSignature(owner.token, doc.id);
    await expectRefusal(doc.id, {}, /not GENERATED: an envelope for it is still open/);
    for (const l of open.links) await signAll(tokenOf(l.url));
    await expectRefusal(doc.id, {}, /not GENERATED: it is SIGNED/);
    const letter = await createDocument(owner.token, {
      schemaVersion: 1,
      formKey: "generic/free-form",
      title: "A letter",
      body: "Dear tenant",
      provenance: { aiDrafted: false },
    });
    await expectRefusal(letter.id, {}, /not a typed standard-form document \(generic\/free-form\)/);
    // Two signers on one address (an explicit list, or a lease whose landlord and tenant share one) cannot both sign.
    const other = await createDocument(
      owner.token,
      leaseCanonical({
        landlords: [{ name: "Lou Landlord", email: "same@x.test" }],
        tenants: [{ name: "Tia Tenant", email: "SAME@x.test" }],
      }),
    );
    await expectRefusal(other.id, {}, /more than one signer has same@x\.test/);
    await expectRefusal(
      other.id,
      {
        signers: [
          { name: "A", email: "a@x.test", role: "r" },
          { name: "B", email: "A@x.test", role: "r" },
        ],
      },
      /more than one signer has a@x\.test/,
    );
  });

  it("lists a document's envelopes newest first; a voided one lets the document be sent again", async () => {
    const owner = await createPrincipal();
    const doc = await createDocument(owner.token, two);
    const first = await sendForSignature(owner.token, doc.id);
    expect(await json(await call("DELETE", `/api/signatures/${first.envelopeId}?reason=wrong%20rent`, { token: owner.token }))).toEqual({
      voided: true,
    });
    const second = await sendForSignature(owner.token, doc.id);
    const list = await json(await call("GET", `/api/documents/${doc.id}/signatures`, { token: owner.token }));
    expect(list.envelopes.map((e: { id: string; status: string }) => [e.id, e.status])).toEqual([
      [second.envelopeId, "partially_signed"],
      [first.envelopeId, "voided"],
    ]);
  });
});

describe("the public signer flow (spec: Signer state table)", () => {
  it("walks sent → opened → authenticated → consented → signed, recording each step", async () => {
    const { owner, envelope, tokens } = await sent();
    const token = tokens[0]!;
    const opened = await publicSign("GET", token);
    expect(opened.status).toBe(200);
    expect(await json(opened)).toMatchObject({
      state: "active",
      signer: { name: "Lars Landlord", role: "landlord", status: "opened", documentId: expect.any(String) },
      signerVerification: "attested",
    });
    // Opening again changes nothing and records nothing more.
    expect((await json(await publicSign("GET", token))).signer.status).toBe("opened");
    expect(await json(await action(token, { action: "authenticate", codeVerified: true }))).toEqual({ ok: true });
    expect(await json(await action(token, { action: "consent" }))).toEqual({ ok: true });
    expect(await json(await action(token, { action: "sign" }))).toEqual({ ok: true, completed: false });
    const trail = await auditOf(owner, envelope.envelopeId);
    const signerId = envelope.links[0]!.signerId;
    expect(trail.events.filter((e: { signerId: string }) => e.signerId === signerId).map((e: { event: string }) => e.event)).toEqual([
      "sent",
      "opened",
      "authenticated",
      "consented",
      "signed",
    ]);
    const signed = trail.events.find((e: { event: string }) => e.event === "signed");
    expect(signed).toMatchObject({ ip: expect.stringMatching(/^10\./), userAgent: "vitest signer" });
    const read = await envelopeOf(owner, envelope.envelopeId);
    expect(read.status).toBe("partially_signed");
    expect(read.signers[0]).toMatchObject({ status: "signed", signedAt: expect.any(String) });
  });

  it("refuses actions out of order with 409 invalid_state and changes nothing", async () => {
    const { owner, envelope, tokens } = await sent();
    const token = tokens[0]!;
    const refused = async (body: Record<string, unknown>) => {
      const res = await action(token, body);
      expect(res.status, JSON.stringify(body)).toBe(409);
      expect(await json(res)).toEqual({ error: "invalid_state", message: expect.any(String) });
    };
    await refused({ action: "authenticate", codeVerified: true }); // before opening
    await publicSign("GET", token);
    await refused({ action: "consent" });
    await refused({ action: "sign" });
    await refused({ action: "authenticate", codeVerified: false });
    await refused({ action: "authenticate" });
    await action(token, { action: "authenticate", codeVerified: true });
    await refused({ action: "authenticate", codeVerified: true });
    await refused({ action: "sign" });
    expect((await envelopeOf(owner, envelope.envelopeId)).signers[0].status).toBe("authenticated");
    const bad = await action(token, { action: "dance", extra: 1 });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error).toBe("invalid_request");
  });

  it.each(["sent", "opened", "authenticated", "consented"])(
    "a signer can decline from %s: the envelope is declined and every other link dies",
    async (from) => {
      const { owner, doc, envelope, tokens } = await sent();
      const [mine, theirs] = tokens as [string, string];
      if (from !== "sent") await publicSign("GET", mine);
      if (from === "authenticated" || from === "consented") await action(mine, { action: "authenticate", codeVerified: true });
      if (from === "consented") await action(mine, { action: "consent" });
      const reason = "'; DROP TABLE envelopes; -- <script>alert(1)</script>";
      expect(await json(await action(mine, { action: "decline", reason }))).toEqual({ ok: true });
      const read = await envelopeOf(owner, envelope.envelopeId);
      expect(read.status).toBe("declined");
      expect(read.signers.map((s: { status: string }) => s.status)).toEqual(["declined", "sent"]);
      for (const t of [mine, theirs]) {
        const res = await publicSign("GET", t);
        expect(res.status).toBe(404);
        expect(await json(res)).toEqual(GONE);
      }
      const trail = await auditOf(owner, envelope.envelopeId);
      expect(trail.events.at(-1)).toMatchObject({ event: "declined", data: { reason } });
      expect((await json(await call("GET", `/api/documents/${doc.id}`, { token: owner.token }))).status).toBe("GENERATED");
    },
  );

  it("the last signature completes the envelope once: completed true, completedAt, DOCUMENT_SIGNED, document SIGNED", async () => {
    const { owner, doc, envelope, tokens } = await sent();
    expect(await signAll(tokens[0]!)).toEqual({ ok: true, completed: false });
    expect(await signAll(tokens[1]!)).toEqual({ ok: true, completed: true });
    const read = await envelopeOf(owner, envelope.envelopeId);
    expect(read).toMatchObject({ status: "completed", completedAt: expect.any(String) });
    const signed = await events(owner.organizationId, "DOCUMENT_SIGNED");
    expect(signed).toEqual([
      { envelopeId: envelope.envelopeId, documentId: doc.id, completedAt: read.completedAt, signers: expect.any(Array) },
    ]);
    expect((await json(await call("GET", `/api/documents/${doc.id}`, { token: owner.token }))).status).toBe("SIGNED");
  });

  it("answers 404 {state: gone} alike for unknown, already-signed, voided and expired links", async () => {
    const { owner, envelope, tokens } = await sent();
    const bodies: string[] = [];
    const goneText = async (token: string) => {
      const get = await publicSign("GET", token);
      const post = await action(token, { action: "consent" });
      expect([get.status, post.status]).toEqual([404, 404]);
      bodies.push(await get.text(), await post.text());
    };
    await goneText("sign_unknown");
    await signAll(tokens[0]!);
    await goneText(tokens[0]!);
    await call("DELETE", `/api/signatures/${envelope.envelopeId}`, { token: owner.token });
    await goneText(tokens[1]!);
    const expiring = await sent("parallel", { expiresInDays: 1 });
    await (await tenantDb(expiring.owner.organizationId))
      .prepare("UPDATE envelopes SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), expiring.envelope.envelopeId)
      .run();
    await goneText(expiring.tokens[0]!);
    expect(new Set(bodies)).toEqual(new Set([JSON.stringify(GONE)]));
    expect((await envelopeOf(expiring.owner, expiring.envelope.envelopeId)).status).toBe("expired");
  });
});

describe("envelope moves (spec: Envelope state table)", () => {
  it("void ends a partially signed envelope with its reason in the audit trail; a terminal one answers 409 cannot_void", async () => {
    const { owner, envelope, tokens } = await sent();
    await signAll(tokens[0]!);
    const voided = await call("DELETE", `/api/signatures/${envelope.envelopeId}?reason=Rent%20was%20wrong`, { token: owner.token });
    expect(await json(voided)).toEqual({ voided: true });
    expect((await envelopeOf(owner, envelope.envelopeId)).status).toBe("voided");
    expect((await auditOf(owner, envelope.envelopeId)).events.at(-1)).toMatchObject({
      event: "voided",
      signerId: null,
      data: { reason: "Rent was wrong", userId: owner.userId },
    });
    const again = await call("DELETE", `/api/signatures/${envelope.envelopeId}`, { token: owner.token });
    expect(again.status).toBe(409);
    expect(await json(again)).toEqual({ error: "cannot_void", message: "The envelope is already voided" });

    const completed = await sent();
    for (const t of completed.tokens) await signAll(t);
    expect(await json(await call("DELETE", `/api/signatures/${completed.envelope.envelopeId}`, { token: completed.owner.token }))).toEqual({
      error: "cannot_void",
      message: "The envelope is already completed",
    });
    const declined = await sent();
    await action(declined.tokens[0]!, { action: "decline" });
    expect(
      await json(await call("DELETE", `/api/signatures/${declined.envelope.envelopeId}`, { token: declined.owner.token })),
    ).toMatchObject({ error: "cannot_void" });
    // The default reason.
    const plain = await sent();
    await call("DELETE", `/api/signatures/${plain.envelope.envelopeId}`, { token: plain.owner.token });
    expect((await auditOf(plain.owner, plain.envelope.envelopeId)).events.at(-1).data.reason).toBe("voided by agent");
  });

  it("expires by its Durable Object alarm at expiresInDays: the alarm is set, and firing it ends the envelope", async () => {
    const { owner, envelope, tokens } = await sent("parallel", { expiresInDays: 3 });
    const read = await envelopeOf(owner, envelope.envelopeId);
    const due = Date.parse(read.expiresAt);
    expect(due - Date.now()).toBeGreaterThan(2.9 * 86_400_000);
    expect(await runInDurableObject(stub(envelope.envelopeId), (_, state) => state.storage.getAlarm())).toBe(due);
    // An early alarm leaves it alone (and sets itself again).
    await runDurableObjectAlarm(stub(envelope.envelopeId));
    expect((await envelopeOf(owner, envelope.envelopeId)).status).toBe("partially_signed");
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE envelopes SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), envelope.envelopeId)
      .run();
    await runInDurableObject(stub(envelope.envelopeId), (_, state) => state.storage.setAlarm(Date.now() + 60_000));
    expect(await runDurableObjectAlarm(stub(envelope.envelopeId))).toBe(true);
    expect((await envelopeOf(owner, envelope.envelopeId)).status).toBe("expired");
    expect((await auditOf(owner, envelope.envelopeId)).events.at(-1)).toMatchObject({ event: "expired" });
    expect((await publicSign("GET", tokens[0]!)).status).toBe(404);
    expect((await call("DELETE", `/api/signatures/${envelope.envelopeId}`, { token: owner.token })).status).toBe(409);
  });
});

describe("links across shards (issue 24)", () => {
  it("a signing link of an organization on shard 1 works, and so does one of an organization on shard 0", async () => {
    for (const shard of [1, 0]) {
      const owner = await createPrincipal({ shard });
      const doc = await createDocument(owner.token, two);
      const envelope = await sendForSignature(owner.token, doc.id, { mode: "parallel" });
      const [first, second] = envelope.links.map((l) => tokenOf(l.url)) as [string, string];
      // The directory names the link's organization (by the token's hash); the rows stay on the organization's shard.
      const key = await env.DB.prepare("SELECT organization_id FROM public_keys WHERE kind = 'signing_link' AND key = ?")
        .bind(await sha256Hex(first))
        .first<string>("organization_id");
      expect(key).toBe(owner.organizationId);
      const opened = await publicSign("GET", first);
      expect(opened.status).toBe(200);
      expect((await json(opened)).signer).toMatchObject({ name: "Lars Landlord", status: "opened" });
      expect(await signAll(first)).toEqual({ ok: true, completed: false });
      expect(await signAll(second)).toEqual({ ok: true, completed: true });
      expect((await envelopeOf(owner, envelope.envelopeId)).status).toBe("completed");
      const onShard = await shardDatabase(env, shard)
        .prepare("SELECT status FROM envelopes WHERE id = ?")
        .bind(envelope.envelopeId)
        .first<string>("status");
      expect(onShard).toBe("completed");
    }
  });
});

describe("expiry without an alarm", () => {
  it("the cron pass hands an overdue envelope whose alarm was never set to its object, which expires it", async () => {
    const { owner, envelope } = await sent("parallel", { expiresInDays: 1 });
    await runInDurableObject(stub(envelope.envelopeId), (_, state) => state.storage.deleteAlarm());
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE envelopes SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), envelope.envelopeId)
      .run();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await runDurableObjectAlarm(stub(envelope.envelopeId));
    expect((await envelopeOf(owner, envelope.envelopeId)).status).toBe("expired");
  });
});

describe("serialization and evidence", () => {
  it("50 concurrent signs of the last signer: one signature, one completion, one DOCUMENT_SIGNED, no 5xx", async () => {
    const { owner, envelope, tokens } = await sent();
    await signAll(tokens[0]!);
    const last = tokens[1]!;
    await publicSign("GET", last);
    await action(last, { action: "authenticate", codeVerified: true });
    await action(last, { action: "consent" });
    const answers = await Promise.all(Array.from({ length: 50 }, () => action(last, { action: "sign" })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 404)).toHaveLength(49);
    expect(await json(answers[statuses.indexOf(200)]!)).toEqual({ ok: true, completed: true });
    expect(await events(owner.organizationId, "DOCUMENT_SIGNED")).toHaveLength(1);
    const trail = await auditOf(owner, envelope.envelopeId);
    expect(trail.events.filter((e: { event: string }) => e.event === "signed")).toHaveLength(2);
    expect(trail.chain).toMatchObject({ valid: true, brokenAt: null, length: trail.events.length });
  });

  it("the audit chain verifies, and a row changed behind the API's back is detected", async () => {
    const { owner, envelope, tokens } = await sent();
    await signAll(tokens[0]!);
    const trail = await auditOf(owner, envelope.envelopeId);
    expect(trail.chain).toEqual({
      valid: true,
      head: trail.events.at(-1).hash,
      length: trail.events.length,
      brokenAt: null,
      seal: "not_applicable",
    });
    for (const [i, e] of trail.events.entries()) expect(e.prevHash).toBe(i === 0 ? "0".repeat(64) : trail.events[i - 1].hash);
    // The table refuses changes; someone with database access removes the guard and edits one IP.
    const shard = await tenantDb(owner.organizationId);
    await expect(
      shard.prepare("UPDATE envelope_audit SET ip = '6.6.6.6' WHERE envelope_id = ? AND seq = 3").bind(envelope.envelopeId).run(),
    ).rejects.toThrow(/append-only/);
    await shard.batch([
      shard.prepare("DROP TRIGGER envelope_audit_no_update"),
      shard.prepare("UPDATE envelope_audit SET ip = '6.6.6.6' WHERE envelope_id = ? AND seq = 3").bind(envelope.envelopeId),
      shard.prepare(
        "CREATE TRIGGER envelope_audit_no_update BEFORE UPDATE ON envelope_audit BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END",
      ),
    ]);
    expect((await auditOf(owner, envelope.envelopeId)).chain).toMatchObject({ valid: false, brokenAt: 3 });
  });

  it("no table holds a raw signing token: a dump of every table is searched for the tokens handed out", async () => {
    const { tokens } = await sent("sequential", {
      signers: [
        { name: "A", email: "a@dump.test", role: "seller" },
        { name: "B", email: "b@dump.test", role: "buyer" },
      ],
    });
    await signAll(tokens[0]!);
    let handedOut = [...tokens];
    await vi.waitFor(async () => {
      const next = linkIn((await mailTo("b@dump.test"))[0]?.text ?? "");
      expect(next).not.toBeNull();
      handedOut = [...tokens, tokenOf(next!)];
    });
    // The directory (public_keys holds the links' hashes) and every shard.
    const databases = [env.DB, ...everyShard(env).map((s) => s.db)];
    const seen: string[] = [];
    for (const db of databases) {
      const tables = (
        await db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
          .all<{ name: string }>()
      ).results.map((r) => r.name);
      seen.push(...tables);
      for (const table of tables) {
        const rows = await db.prepare(`SELECT * FROM "${table}"`).all();
        const dump = JSON.stringify(rows.results);
        for (const t of handedOut) expect(dump.includes(t.slice(5)), `${table} holds a raw token`).toBe(false);
      }
    }
    expect(seen).toEqual(
      expect.arrayContaining(["public_keys", "envelope_signers", "envelope_audit", "mail_outbox", "outbox_events", "idempotency_keys"]),
    );
  });
});

describe("certificate of completion", () => {
  it("is a PDF naming every signer and the document hash, behind a signed, expiring link", async () => {
    const { owner, doc, envelope, tokens } = await sent();
    for (const t of tokens) await signAll(t);
    await vi.waitFor(async () => expect((await envelopeOf(owner, envelope.envelopeId)).certificate.status).toBe("ready"), {
      timeout: 15_000,
      interval: 100,
    });
    const read = await envelopeOf(owner, envelope.envelopeId);
    expect(read.certificate.url).toBe(`/api/signatures/${envelope.envelopeId}/certificate`);
    const link = await json(await call("GET", read.certificate.url, { token: owner.token }));
    expect(Date.parse(link.expiresAt) - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    const download = await call("GET", new URL(link.url).pathname + new URL(link.url).search);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/pdf");
    const { extractText, getDocumentProxy } = await import("unpdf");
    const pdf = await getDocumentProxy(new Uint8Array(await download.arrayBuffer()));
    const { text } = await extractText(pdf, { mergePages: true });
    const flat = (text as string).replace(/\s+/g, "");
    for (const name of ["Lars Landlord", "Tess Tenant", "lars@landlord.test", "tess@tenant.test"]) expect(text).toContain(name);
    expect(flat).toContain(doc.sha256);
    expect(flat).toContain((await auditOf(owner, envelope.envelopeId)).chain.head);
    // A forged or expired link finds nothing.
    const forged = new URL(link.url);
    forged.searchParams.set("signature", "0".repeat(64));
    expect((await call("GET", forged.pathname + forged.search)).status).toBe(404);
    forged.searchParams.set("expires", String(Math.floor(Date.now() / 1000) - 10));
    expect((await call("GET", forged.pathname + forged.search)).status).toBe(404);
    // Not completed: no certificate.
    const open = await sent();
    expect(
      await json(await call("GET", `/api/signatures/${open.envelope.envelopeId}/certificate`, { token: open.owner.token })),
    ).toMatchObject({ error: "certificate_unavailable" });
  });
});

describe("bot challenge, rate limits and the signing page", () => {
  it("with BOT_CHALLENGE_SECRET set, sign and decline need a Turnstile token that siteverify accepts", async () => {
    const { tokens } = await sent();
    const verifyUrl = `${receiverUrl()}/turnstile/siteverify`;
    const { fetch } = testApp(
      { signing: { botChallenge: (secret) => turnstile(secret, globalThis.fetch, verifyUrl) } },
      { BOT_CHALLENGE_SECRET: "turnstile-test-secret" },
    );
    const post = (body: Record<string, unknown>) =>
      fetch("POST", `/api/public/sign/${tokens[0]}`, {
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", "cf-connecting-ip": freshIp() },
      });
    await publicSign("GET", tokens[0]!);
    expect((await post({ action: "authenticate", codeVerified: true })).status).toBe(200);
    expect((await post({ action: "consent" })).status).toBe(200);
    const missing = await post({ action: "sign" });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({
      error: "invalid_request",
      issues: [{ field: "challengeToken", path: ["challengeToken"], code: "required", message: expect.any(String) }],
    });
    const refused = await post({ action: "sign", challengeToken: "fail" });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: "challenge_failed" });
    expect(await (await post({ action: "sign", challengeToken: "pass" })).json()).toEqual({ ok: true, completed: false });
  });

  it("limits GET to 60 and POST to 30 per client address per minute (429 with Retry-After)", async () => {
    const { tokens } = await sent();
    const ip = freshIp();
    const gets = await Promise.all(Array.from({ length: 61 }, () => publicSign("GET", tokens[0]!, undefined, ip)));
    expect(gets.filter((r) => r.status === 429)).toHaveLength(1);
    const posts = await Promise.all(Array.from({ length: 31 }, () => publicSign("POST", "sign_unknown", { action: "consent" }, ip)));
    const limited = posts.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    expect(limited[0]!.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await limited[0]!.json()).toEqual({ error: "rate_limited" });
  });

  it("serves the signing page with strict headers; the token never leaves through the referrer", async () => {
    const { tokens } = await sent();
    const res = await call("GET", `/sign/${tokens[0]}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await res.text();
    expect(html).toContain('<html lang="en">');
    expect(html).not.toContain(tokens[0]);
    const nonce = csp.match(/'nonce-([^']+)'/)![1];
    expect(html).toContain(`<script nonce="${nonce}">`);
  });
});

describe("query strings (the strict parser of every other route)", () => {
  it("the envelope list and the audit trail refuse an unknown parameter with the same 400 as the document list", async () => {
    const { owner, doc, envelope } = await sent();
    const refusal = {
      error: "invalid_request",
      issues: [{ field: "colour", path: ["colour"], code: "unknown_field", message: "Unknown field 'colour'" }],
    };
    const elsewhere = await call("GET", "/api/documents?colour=red", { token: owner.token });
    expect(elsewhere.status).toBe(400);
    expect(await json(elsewhere)).toEqual(refusal);
    for (const path of [`/api/documents/${doc.id}/signatures`, `/api/signatures/${envelope.envelopeId}/audit`]) {
      const res = await call("GET", `${path}?colour=red`, { token: owner.token });
      expect(res.status, path).toBe(400);
      expect(await json(res), path).toEqual(refusal);
      expect((await call("GET", path, { token: owner.token })).status, path).toBe(200);
    }
  });
});
