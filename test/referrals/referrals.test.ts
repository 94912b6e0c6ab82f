import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { dispatchEvents } from "../../src/events/consumers";
import type { DomainEvent } from "../../src/events/event";
import { referralLeadConsumer } from "../../src/referrals/service";
import { call, json } from "../helpers/client";
import { createContact, uniqueEmail } from "../helpers/contacts";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";
import { receiverUrl } from "../helpers/receiver";
import { publishedProfile } from "../helpers/profiles";
import { testApp } from "../helpers/test-app";
import { turnstile } from "../../src/platform/bot-challenge";

const freshIp = () => `10.91.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
const submit = (slug: string, body: unknown, ip = freshIp()) =>
  call("POST", `/api/public/referral/${slug}`, { body, headers: { "cf-connecting-ip": ip } });
const form = (overrides: Record<string, unknown> = {}) => ({
  referrerName: "Rita Referrer",
  referrerEmail: uniqueEmail("referrer"),
  referredName: "Lee Lead",
  referredEmail: uniqueEmail("lead"),
  notes: "Looking for a condo",
  ...overrides,
});

/** The REFERRAL_RECEIVED events of an organization, oldest first, as the outbox holds them. */
async function receivedEvents(organizationId: string): Promise<DomainEvent[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare(
      "SELECT id, type, organization_id, actor, occurred_at, data FROM outbox_events WHERE organization_id = ? AND type = 'REFERRAL_RECEIVED' ORDER BY occurred_at, rowid",
    )
    .bind(organizationId)
    .all<{ id: string; type: string; organization_id: string; actor: string; occurred_at: string; data: string }>();
  return results.map((r) => ({
    id: r.id,
    type: r.type,
    organizationId: r.organization_id,
    actor: JSON.parse(r.actor),
    occurredAt: r.occurred_at,
    data: JSON.parse(r.data),
  }));
}

/** Runs the lead workflow on every REFERRAL_RECEIVED of the organization, through the dispatcher (claims per event id). */
async function runWorkflow(organizationId: string) {
  const events = await receivedEvents(organizationId);
  const retry = await dispatchEvents([referralLeadConsumer], events, env, createDb(await tenantDb(organizationId)));
  expect([...retry]).toEqual([]);
  return events;
}

const contactsWith = async (owner: TestPrincipal, email: string) =>
  (
    await (
      await tenantDb(owner.organizationId)
    )
      .prepare(
        "SELECT id, type, source, assigned_to AS assignedTo, first_name AS firstName, last_name AS lastName FROM contacts WHERE organization_id = ? AND email_key = ?",
      )
      .bind(owner.organizationId, email.toLowerCase())
      .all<Record<string, string>>()
  ).results;
const referralsOf = async (owner: TestPrincipal) => json(await call("GET", "/api/reputation/referrals", { token: owner.token }));

describe("referrals (spec: Referral, Rules 2)", () => {
  it("logs a referral with reward tracking, RECEIVED, and emits REFERRAL_RECEIVED; references must be of the organization", async () => {
    const owner = await createPrincipal();
    const referrer = await createContact(owner.token);
    const res = await call("POST", "/api/reputation/referrals", {
      token: owner.token,
      body: {
        agentUserId: owner.userId,
        referrerPersonId: referrer.id,
        channel: "EMAIL",
        referredName: "Sam Buyer",
        referredContact: uniqueEmail("sam"),
        notes: "First home",
        rewardType: "GIFT_CARD",
        rewardValue: 50,
      },
    });
    const created = await json(res);
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(created).toMatchObject({
      status: "RECEIVED",
      channel: "EMAIL",
      referrerPersonId: referrer.id,
      rewardType: "GIFT_CARD",
      rewardStatus: "PENDING",
      rewardValue: 50,
      leadContactId: null,
    });
    expect(await receivedEvents(owner.organizationId)).toHaveLength(1);

    const list = await referralsOf(owner);
    expect(list.referrals.map((r: { id: string }) => r.id)).toEqual([created.id]);
    expect(
      (await json(await call("GET", `/api/reputation/referrals?agentUserId=${crypto.randomUUID()}`, { token: owner.token }))).referrals,
    ).toEqual([]);

    const stranger = await createPrincipal();
    const foreign = await createContact(stranger.token);
    const bad = await call("POST", "/api/reputation/referrals", {
      token: owner.token,
      body: { agentUserId: stranger.userId, referrerPersonId: foreign.id, referredName: "X" },
    });
    expect(bad.status).toBe(400);
    expect((await json(bad)).issues.map((i: { path: string[] }) => i.path.join(".")).sort()).toEqual(["agentUserId", "referrerPersonId"]);

    // A reward's status or value needs its type.
    const untyped = await call("POST", "/api/reputation/referrals", {
      token: owner.token,
      body: { agentUserId: owner.userId, referredName: "Y", rewardStatus: "PAID", rewardValue: 10 },
    });
    expect(untyped.status).toBe(400);
    expect((await json(untyped)).issues.map((i: { path: string[] }) => i.path.join(".")).sort()).toEqual(["rewardStatus", "rewardValue"]);
  });

  it("turns referrals into one lead per e-mail: source REFERRAL, assigned to the agent; an existing contact is linked", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const leadEmail = uniqueEmail("lead");
    const referrerEmail = uniqueEmail("referrer");
    expect((await submit(slug, form({ referrerEmail, referredEmail: leadEmail }))).status).toBe(202);
    // Another person referred by the same referrer: the referrer is recorded once, linked by both referrals.
    expect(
      (
        await submit(
          slug,
          form({ referrerEmail: referrerEmail.toUpperCase(), referredEmail: uniqueEmail("other"), referredName: "Other Person" }),
        )
      ).status,
    ).toBe(202);
    const referrers = await contactsWith(owner, referrerEmail);
    expect(referrers).toHaveLength(1);

    await runWorkflow(owner.organizationId);
    const leads = await contactsWith(owner, leadEmail);
    expect(leads).toEqual([
      expect.objectContaining({ type: "LEAD", source: "REFERRAL", assignedTo: owner.userId, firstName: "Lee", lastName: "Lead" }),
    ]);
    const { referrals } = await referralsOf(owner);
    expect(referrals).toHaveLength(2);
    for (const r of referrals)
      expect(r).toMatchObject({
        status: "RECEIVED",
        channel: "PUBLIC_PROFILE",
        agentUserId: owner.userId,
        referrerPersonId: referrers[0]!.id,
      });
    expect(referrals.find((r: { referredContact: string }) => r.referredContact === leadEmail).leadContactId).toBe(leads[0]!.id);

    // A manual referral of a person who already is a contact links that contact.
    const existing = await createContact(owner.token);
    const manual = await json(
      await call("POST", "/api/reputation/referrals", {
        token: owner.token,
        body: { agentUserId: owner.userId, referredName: "Known Person", referredContact: existing.email },
      }),
    );
    await runWorkflow(owner.organizationId);
    expect(await contactsWith(owner, existing.email)).toHaveLength(1);
    const after = (await referralsOf(owner)).referrals.find((r: { id: string }) => r.id === manual.id);
    expect(after.leadContactId).toBe(existing.id);
  });

  it("the workflow is idempotent on the event id: the same event twice makes one contact", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const leadEmail = uniqueEmail("lead");
    expect((await submit(slug, form({ referredEmail: leadEmail }))).status).toBe(202);
    const [event] = await receivedEvents(owner.organizationId);
    const db = createDb(await tenantDb(owner.organizationId));
    await dispatchEvents([referralLeadConsumer], [event!, event!], env, db);
    await dispatchEvents([referralLeadConsumer], [event!], env, db);
    // Past the dispatcher's claim too: the handler itself links once.
    await referralLeadConsumer.handle([event!, event!], { env, db });
    expect(await contactsWith(owner, leadEmail)).toHaveLength(1);
    const created = await (await tenantDb(owner.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = 'contact.created'")
      .bind(owner.organizationId)
      .first<number>("n");
    expect(created).toBe(2); // the referrer and the lead
  });

  it("keeps organizations apart: the same e-mail in two organizations makes a lead in each, and lists show only one's own", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const [slugA, slugB] = [await publishedProfile(a), await publishedProfile(b)];
    const leadEmail = uniqueEmail("shared");
    expect((await submit(slugA, form({ referredEmail: leadEmail }))).status).toBe(202);
    expect((await submit(slugB, form({ referredEmail: leadEmail }))).status).toBe(202);
    await runWorkflow(a.organizationId);
    await runWorkflow(b.organizationId);
    const [leadA, leadB] = [await contactsWith(a, leadEmail), await contactsWith(b, leadEmail)];
    expect(leadA).toHaveLength(1);
    expect(leadB).toHaveLength(1);
    expect(leadA[0]!.id).not.toBe(leadB[0]!.id);
    const listA = (await referralsOf(a)).referrals;
    expect(listA).toHaveLength(1);
    expect(listA[0].leadContactId).toBe(leadA[0]!.id);
    expect((await referralsOf(b)).referrals[0].leadContactId).toBe(leadB[0]!.id);
  });

  it("public form: unknown and unpublished profiles answer the same 404 and record nothing", async () => {
    const owner = await createPrincipal();
    const put = await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig: { displayName: "Draft Only" } } });
    const { slug } = await json(put);
    const draft = await submit(slug, form());
    const unknown = await submit(`no-such-${crypto.randomUUID().slice(0, 8)}`, form());
    expect(draft.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(await json(draft)).toEqual(await json(unknown));
    expect((await referralsOf(owner)).referrals).toEqual([]);
  });

  it("public form: every problem in one 400; a body over 32 KB is 413; nothing recorded", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const bad = await submit(slug, {
      referrerName: "",
      referrerEmail: "not-mail",
      referredName: "Line\nbreak",
      referredEmail: 42,
      notes: 7,
      extra: true,
    });
    expect(bad.status).toBe(400);
    const paths = [...new Set((await json(bad)).issues.map((i: { path: (string | number)[] }) => i.path.join(".")))].sort();
    expect(paths).toEqual(["extra", "notes", "referredEmail", "referredName", "referrerEmail", "referrerName"]);
    const missing = await submit(slug, {});
    expect((await json(missing)).issues.map((i: { path: string[] }) => i.path.join(".")).sort()).toEqual([
      "referredEmail",
      "referredName",
      "referrerEmail",
      "referrerName",
    ]);

    const big = await submit(slug, form({ notes: "x".repeat(33 * 1024) }));
    expect(big.status).toBe(413);
    expect((await referralsOf(owner)).referrals).toEqual([]);
  });

  it("public form: the 11th POST within a minute from one address is 429, and it is not recorded", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const ip = freshIp();
    const answers = await Promise.all(Array.from({ length: 11 }, () => submit(slug, form(), ip)));
    expect(answers.filter((r) => r.status === 202)).toHaveLength(10);
    const limited = answers.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    expect(await json(limited[0]!)).toMatchObject({ error: "rate_limited" });
    expect((await referralsOf(owner)).referrals).toHaveLength(10);
    expect((await submit(slug, form())).status).toBe(202);
  });

  it("public form: the same person referred to the same agent within 30 days answers the first referral and records nothing more", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const leadEmail = uniqueEmail("dup");
    const first = await submit(slug, form({ referredEmail: leadEmail }));
    expect(first.status).toBe(202);
    const { referralId } = await json(first);
    expect(referralId).toEqual(expect.any(String));
    // Another referrer, other words, the address in other case: the same answer, the same referral.
    const again = await submit(
      slug,
      form({
        referrerEmail: uniqueEmail("second-referrer"),
        referredName: "Lee Again",
        referredEmail: leadEmail.toUpperCase(),
        notes: "again",
      }),
    );
    expect(again.status).toBe(202);
    expect(await json(again)).toEqual({ received: true, referralId });
    expect((await referralsOf(owner)).referrals.map((r: { id: string }) => r.id)).toEqual([referralId]);
    expect(await receivedEvents(owner.organizationId)).toHaveLength(1);
    await runWorkflow(owner.organizationId);
    expect(await contactsWith(owner, leadEmail)).toHaveLength(1);
    // The duplicate's referrer was not recorded either: only the first referrer and the lead are contacts.
    expect(
      await (await tenantDb(owner.organizationId))
        .prepare("SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?")
        .bind(owner.organizationId)
        .first<number>("n"),
    ).toBe(2);

    // Once the 30 days are over, the same person makes a new referral (and keeps the one lead contact).
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE referral_keys SET expires_at = ? WHERE referral_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), referralId)
      .run();
    const later = await json(await submit(slug, form({ referredEmail: leadEmail })));
    expect(later.referralId).not.toBe(referralId);
    expect((await referralsOf(owner)).referrals).toHaveLength(2);
    await runWorkflow(owner.organizationId);
    expect(await contactsWith(owner, leadEmail)).toHaveLength(1);
    // And that one now holds the window.
    expect((await json(await submit(slug, form({ referredEmail: leadEmail })))).referralId).toBe(later.referralId);
  });

  it("public form: with BOT_CHALLENGE_SECRET set, a Turnstile token that siteverify accepts is required; the per-address limit stays", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const verifyUrl = `${receiverUrl()}/turnstile/siteverify`;
    const { fetch } = testApp(
      { referrals: { botChallenge: (secret) => turnstile(secret, globalThis.fetch, verifyUrl) } },
      { BOT_CHALLENGE_SECRET: "turnstile-test-secret" },
    );
    const post = (body: unknown, ip = freshIp()) =>
      fetch("POST", `/api/public/referral/${slug}`, {
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", "cf-connecting-ip": ip },
      });

    const missing = await post(form());
    expect(missing.status).toBe(400);
    expect((await json(missing)).issues.map((i: { path: string[] }) => i.path.join("."))).toEqual(["challengeToken"]);
    const refused = await post(form({ challengeToken: "fail" }));
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "challenge_failed" });
    expect((await referralsOf(owner)).referrals).toEqual([]);

    const passed = await post(form({ challengeToken: "pass" }));
    expect(passed.status, await passed.clone().text()).toBe(202);
    expect((await referralsOf(owner)).referrals).toHaveLength(1);

    // Ten a minute per address whatever the token: the eleventh is 429 before siteverify is asked.
    const ip = freshIp();
    const answers = await Promise.all(Array.from({ length: 11 }, () => post(form({ challengeToken: "pass" }), ip)));
    expect(answers.filter((r) => r.status === 429)).toHaveLength(1);

    // Without the secret (development, tests) the form needs no token.
    expect((await submit(slug, form())).status).toBe(202);
  });
});
