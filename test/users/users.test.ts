import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { call, json } from "../helpers/client";
import { mailTo } from "../helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { Browser, type Call, call as pageCall, mailedCode } from "../helpers/oauth";
import { testApp } from "../helpers/test-app";

const invite = (p: TestPrincipal, body: Record<string, unknown>) =>
  call("POST", "/v1/users", { token: p.token, body: { name: "Ivy Invitee", ...body } });
const update = (p: TestPrincipal, id: string, body: unknown) => call("PATCH", `/v1/users/${id}`, { token: p.token, body });
const freshEmail = () => `invitee.${crypto.randomUUID()}@users.test`;

async function eventsOf(organizationId: string, type: string) {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = ? ORDER BY occurred_at, rowid")
    .bind(organizationId, type)
    .all<{ data: string }>();
  return results.map((r) => JSON.parse(r.data));
}

/** The link of the newest invitation mailed to `email`. */
async function invitationLink(email: string): Promise<string> {
  const mail = (await mailTo(email)).filter((m) => m.subject.startsWith("You are invited to")).at(-1);
  const path = mail?.text.match(/\/invite\/inv_[A-Za-z0-9_-]+/)?.[0];
  if (!path) throw new Error(`no invitation was mailed to ${email}`);
  return path;
}

/** Opens the link, has the code mailed, types it: the page that answers the right code. */
async function signInWith(link: string, email: string) {
  const browser = new Browser(link, pageCall);
  expect((await browser.open()).res.status).toBe(200);
  const sent = await browser.post({ step: "send" });
  expect(sent.html).toContain("Enter your code");
  const code = await mailedCode(email);
  const wrong = await browser.post({ step: "code", code: code === "000000" ? "111111" : "000000" });
  expect(wrong.html).toContain("That code is not right. 4 attempts left.");
  return browser.post({ step: "code", code });
}

/** A page without its per-response nonces, to compare two answers. */
const withoutNonces = (html: string) => html.replace(/nonce-[^']+'|nonce="[^"]+"/g, "");
const sessionTokenIn = (html: string) => html.match(/<code id="session-token">(sess_[A-Za-z0-9_-]+)<\/code>/)?.[1];

describe("users (/v1/users)", () => {
  it("invites a user: 201 as an agent, invited, in both databases, user.created once, a link mailed", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    const res = await invite(owner, { email: email.toUpperCase() });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    const user = (await json(res)).data;
    expect(user).toMatchObject({ email, name: "Ivy Invitee", role: "agent", acceptsLeads: true, status: "invited" });
    expect(Date.parse(user.invitationExpiresAt) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);

    expect(await eventsOf(owner.organizationId, "user.created")).toEqual([{ object: user, previousAttributes: null, changes: null }]);
    const directory = await env.DB.prepare("SELECT email, role, version FROM users WHERE id = ?").bind(user.id).first();
    expect(directory).toEqual({ email, role: "agent", version: 1 });
    expect((await json(await call("GET", `/v1/users/${user.id}`, { token: owner.token }))).data).toEqual(user);
    const listed = await json(await call("GET", "/v1/users", { token: owner.token }));
    expect(listed.data.map((u: { id: string }) => u.id)).toEqual([user.id, owner.userId]);
    expect(listed.data[1]).toMatchObject({ role: "owner", status: "active", invitationExpiresAt: null });
    expect(listed.pagination).toMatchObject({ total: 2, hasMore: false });
    expect(await invitationLink(email)).toMatch(/^\/invite\/inv_/);
    // Only the SHA-256 of the link's token is kept.
    const token = (await invitationLink(email)).slice("/invite/".length);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM user_invitations WHERE token_hash = ?").bind(token).first("n")).toBe(0);
  });

  it("pages the list newest first with a cursor", async () => {
    const owner = await createPrincipal();
    for (let i = 0; i < 3; i++) await invite(owner, { email: freshEmail() });
    const first = await json(await call("GET", "/v1/users?limit=2", { token: owner.token }));
    const second = await json(
      await call("GET", `/v1/users?limit=2&cursor=${encodeURIComponent(first.pagination.nextCursor)}`, { token: owner.token }),
    );
    const ids = [...first.data, ...second.data].map((u: { id: string }) => u.id);
    expect(new Set(ids).size).toBe(4);
    expect(second.pagination).toMatchObject({ hasMore: false, total: 4 });
  });

  it("refuses a second user with the same e-mail, whatever its case (409 duplicate_email)", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    expect((await invite(owner, { email })).status).toBe(201);
    for (const again of [email, email.toUpperCase(), `${owner.userId}@example.test`]) {
      const res = await invite(owner, { email: again });
      expect(res.status).toBe(409);
      expect((await json(res)).error.code).toBe("duplicate_email");
    }
    // Another organization may have its own user with this address.
    expect((await invite(await createPrincipal(), { email })).status).toBe(201);
  });

  it("answers 422 listing every problem of the body", async () => {
    const owner = await createPrincipal();
    const res = await call("POST", "/v1/users", { token: owner.token, body: { email: "not-an-address", role: "boss", team: "x" } });
    expect(res.status).toBe(422);
    const errors = (await json(res)).error.errors as { field: string; code: string }[];
    expect(errors.map((e) => `${e.field} ${e.code}`).sort()).toEqual([
      "email invalid_email",
      "name required",
      "role invalid_enum_value",
      "team unknown_field",
    ]);
  });

  it("lets only an owner make or unmake an owner", async () => {
    const owner = await createPrincipal();
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    const refused = await invite(admin, { email: freshEmail(), role: "owner" });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.code).toBe("insufficient_role");
    const made = (await json(await invite(admin, { email: freshEmail(), role: "admin" }))).data;
    expect((await update(admin, made.id, { role: "owner" })).status).toBe(403);
    expect((await update(admin, owner.userId, { role: "admin" })).status).toBe(403);
    expect((await update(admin, owner.userId, { name: "Renamed by an admin" })).status).toBe(200);
    expect((await update(owner, made.id, { role: "owner" })).status).toBe(200);
  });

  it("changes name, role and acceptsLeads with user.updated; the role reaches authentication", async () => {
    const owner = await createPrincipal();
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    expect((await invite(admin, { email: freshEmail() })).status).toBe(201);
    const res = await update(owner, admin.userId, { name: "Ada Admin", role: "agent", acceptsLeads: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"2"');
    const user = (await json(res)).data;
    expect(user).toMatchObject({ name: "Ada Admin", role: "agent", acceptsLeads: false, status: "active" });
    const [event, ...more] = await eventsOf(owner.organizationId, "user.updated");
    expect(more).toEqual([]);
    expect({ ...event, changes: event.changes.sort() }).toEqual({
      object: user,
      previousAttributes: { name: "Test Agent", role: "admin", acceptsLeads: true },
      changes: ["acceptsLeads", "name", "role"],
    });
    expect(
      await env.DB.prepare("SELECT name, role, accepts_leads AS acceptsLeads, version FROM users WHERE id = ?").bind(admin.userId).first(),
    ).toEqual({ name: "Ada Admin", role: "agent", acceptsLeads: 0, version: 2 });
    // Now an agent: managing users is out of reach.
    const refused = await invite(admin, { email: freshEmail() });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.code).toBe("insufficient_role");
    // If-Match: the version it was at no longer matches.
    expect(
      (await call("PATCH", `/v1/users/${admin.userId}`, { token: owner.token, body: { name: "Stale" }, headers: { "if-match": '"1"' } }))
        .status,
    ).toBe(412);
  });

  it("keeps at least one owner (409 last_owner), also when two owners demote each other at once", async () => {
    const solo = await createPrincipal();
    const last = await update(solo, solo.userId, { role: "admin" });
    expect(last.status).toBe(409);
    expect((await json(last)).error.code).toBe("last_owner");
    for (let trial = 0; trial < 4; trial++) {
      const a = await createPrincipal();
      const b = await createPrincipal({ organizationId: a.organizationId, role: "owner" });
      const answers = await Promise.all([
        update(a, b.userId, { role: "admin" }),
        update(b, a.userId, { role: "admin" }),
        update(a, a.userId, { role: "agent" }),
        update(b, b.userId, { role: "agent" }),
      ]);
      // One owner is demoted, the other's demotions are refused (403 once no longer an owner, 409 as the last one);
      // who then loses their owner role may still be moved between admin and agent.
      expect(answers.some((r) => r.status === 200)).toBe(true);
      for (const r of answers) expect([200, 403, 409]).toContain(r.status);
      const owners = await (await tenantDb(a.organizationId))
        .prepare("SELECT COUNT(*) AS n FROM users WHERE organization_id = ? AND role = 'owner'")
        .bind(a.organizationId)
        .first("n");
      expect(owners).toBe(1);
      expect(
        await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE organization_id = ? AND role = 'owner'")
          .bind(a.organizationId)
          .first("n"),
      ).toBe(1);
    }
  });

  it("answers another organization's user exactly as an unknown one (404)", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    expect((await call("GET", `/v1/users/${owner.userId}`, { token: owner.token })).status).toBe(200);
    const unknown = crypto.randomUUID();
    for (const [theirs, nobodys] of [
      [
        await call("GET", `/v1/users/${stranger.userId}`, { token: owner.token }),
        await call("GET", `/v1/users/${unknown}`, { token: owner.token }),
      ],
      [await update(owner, stranger.userId, { name: "Mine now" }), await update(owner, unknown, { name: "Mine now" })],
    ]) {
      expect(theirs!.status).toBe(404);
      expect(await theirs!.text()).toBe(await nobodys!.text());
    }
    expect((await json(await call("GET", `/v1/users/${stranger.userId}`, { token: stranger.token }))).data.name).toBe("Test Agent");
  });
});

// Issue 40: an admin sent 21 invitation mails to one address in seconds.
describe("invitation mails per address", () => {
  it("mails one address at most 3 invitations a day from one organization; beyond, 429 with Retry-After and nothing written", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    const user = (await json(await invite(owner, { email }))).data;
    for (let i = 0; i < 2; i++) expect((await call("POST", `/v1/users/${user.id}/invitation`, { token: owner.token })).status).toBe(200);
    const link = await invitationLink(email);
    const refused = await call("POST", `/v1/users/${user.id}/invitation`, { token: owner.token });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(80_000);
    expect((await json(refused)).error).toMatchObject({ code: "rate_limited" });
    expect((await mailTo(email)).filter((m) => m.subject.startsWith("You are invited to"))).toHaveLength(3);
    // The link mailed last still works: a refused resend replaced nothing.
    expect((await pageCall("GET", link)).status).toBe(200);
    // The same inbox by a "+tag" counts as the address, and a refused invitation writes no user.
    const [local, domain] = email.split("@");
    const tagged = `${local}+again@${domain}`;
    expect((await invite(owner, { email: tagged })).status).toBe(429);
    expect((await json(await call("GET", "/v1/users", { token: owner.token }))).data.map((u: { email: string }) => u.email)).not.toContain(
      tagged,
    );
    // Other addresses are not held up.
    expect((await invite(owner, { email: freshEmail() })).status).toBe(201);
    // At Gmail, dots and googlemail.com reach the same inbox too.
    const name = `inv${crypto.randomUUID().slice(0, 8)}`;
    for (let i = 0; i < 3; i++) expect((await invite(owner, { email: `${name}+${i}@gmail.com` })).status).toBe(201);
    for (const variant of [`${name.slice(0, 3)}.${name.slice(3)}@gmail.com`, `${name}@googlemail.com`])
      expect((await invite(owner, { email: variant })).status, variant).toBe(429);
  });

  it("does not let one organization spend another's invitations; all of them together mail an address at most 10 a day", async () => {
    const email = freshEmail();
    const orgs = await Promise.all(Array.from({ length: 4 }, () => createPrincipal()));
    // The first organization spends its three; the second still invites (the adversarial pass: one tenant blocked another's onboarding).
    const first = (await json(await invite(orgs[0]!, { email }))).data;
    for (let i = 0; i < 2; i++)
      expect((await call("POST", `/v1/users/${first.id}/invitation`, { token: orgs[0]!.token })).status).toBe(200);
    const statuses: number[] = [];
    for (const org of orgs.slice(1)) {
      const user = await invite(org, { email });
      statuses.push(user.status);
      const id = (await json(user)).data?.id;
      for (let i = 0; i < 2 && id; i++) statuses.push((await call("POST", `/v1/users/${id}/invitation`, { token: org.token })).status);
    }
    // 3 + 9 asked for: the last two past the ten a day.
    expect(statuses).toEqual([201, 200, 200, 201, 200, 200, 201, 429, 429]);
    expect((await mailTo(email)).filter((m) => m.subject.startsWith("You are invited to"))).toHaveLength(10);
  });
});

describe("invitation links (/invite/<token>)", () => {
  it("signs the invited user in by mailed code: a 30-day session shown once that works on /v1; the link is then dead", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    const user = (await json(await invite(owner, { email }))).data;
    const link = await invitationLink(email);
    const page = await new Browser(link, pageCall).open();
    expect(page.html).toContain(`Org ${owner.organizationId}`);
    expect(page.html).toContain(email);

    const done = await signInWith(link, email);
    expect(done.res.status).toBe(200);
    const token = sessionTokenIn(done.html);
    expect(token).toBeDefined();
    const session = await env.DB.prepare("SELECT user_id AS userId, expires_at AS expiresAt FROM sessions WHERE token_hash = ?")
      .bind(await sha256Hex(token!))
      .first<{ userId: string; expiresAt: string }>();
    expect(session!.userId).toBe(user.id);
    expect(Date.parse(session!.expiresAt) - Date.now()).toBeGreaterThan(29.9 * 86_400_000);

    const me = await call("GET", `/v1/users/${user.id}`, { token });
    expect((await json(me)).data).toMatchObject({ status: "active", invitationExpiresAt: null });
    expect((await call("GET", "/v1/contacts", { token })).status).toBe(200);
    // Turning active is a change integrators hear of, once, by the user themself.
    const activations = (await eventsOf(owner.organizationId, "user.updated")).filter((e) => e.object.id === user.id);
    expect(activations).toEqual([
      expect.objectContaining({
        object: expect.objectContaining({ id: user.id, status: "active", invitationExpiresAt: null }),
        previousAttributes: { status: "invited", invitationExpiresAt: user.invitationExpiresAt },
        changes: ["status", "invitationExpiresAt"],
      }),
    ]);

    // Used: the link answers as an unknown one, on the page and on its forms.
    const unknown = await pageCall("GET", "/invite/inv_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    const reused = await pageCall("GET", link);
    expect(reused.status).toBe(404);
    expect(withoutNonces(await reused.text())).toBe(withoutNonces(await unknown.text()));
    expect((await new Browser(link, pageCall).post({ step: "send" })).res.status).toBe(404);
  });

  it("refuses an expired link; a new invitation mails a link that works", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    const user = (await json(await invite(owner, { email }))).data;
    const link = await invitationLink(email);
    await env.DB.prepare("UPDATE user_invitations SET expires_at = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), user.id)
      .run();
    const res = await pageCall("GET", link);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain("This invitation link does not work");
    expect((await json(await call("GET", `/v1/users/${user.id}`, { token: owner.token }))).data.status).toBe("invited");

    // A new invitation: a new link, and the old one stays dead.
    const resent = await call("POST", `/v1/users/${user.id}/invitation`, { token: owner.token });
    expect(resent.status).toBe(200);
    expect(Date.parse((await json(resent)).data.invitationExpiresAt)).toBeGreaterThan(Date.now());
    const fresh = await invitationLink(email);
    expect(fresh).not.toBe(link);
    expect((await pageCall("GET", link)).status).toBe(404);
    expect((await pageCall("GET", fresh)).status).toBe(200);
    // Nobody is invited who has signed in.
    const active = await call("POST", `/v1/users/${owner.userId}/invitation`, { token: owner.token });
    expect(active.status).toBe(409);
    expect((await json(active)).error.code).toBe("user_active");
  });

  it("keeps the OAuth sign-in's lock: a locked address gets no code through its invitation either", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    await invite(owner, { email });
    const now = new Date();
    await env.DB.prepare("INSERT INTO oauth_sign_in_locks (email_hash, locked_at, locked_until) VALUES (?, ?, ?)")
      .bind(await sha256Hex(email), now.toISOString(), new Date(now.getTime() + 3_600_000).toISOString())
      .run();
    const browser = new Browser(await invitationLink(email), pageCall);
    await browser.open();
    const sent = await browser.post({ step: "send" });
    expect(sent.html).toContain("Sign-in is locked for this address");
    await new Promise((r) => setTimeout(r, 200));
    expect((await mailTo(email)).filter((m) => m.subject === "Your sign-in code")).toEqual([]);
  });

  it("asks for the bot challenge before it mails a code, where one is configured", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    await invite(owner, { email });
    const app = testApp(
      { invitations: { botChallenge: () => ({ verify: async (token) => token === "human" }) } },
      { BOT_CHALLENGE_SECRET: "secret", BOT_CHALLENGE_SITE_KEY: "site-key" },
    );
    const send: Call = (method, path, opts = {}) => app.fetch(method, path, { headers: opts.headers, body: opts.rawBody });
    const browser = new Browser(await invitationLink(email), send);
    const page = await browser.open();
    expect(page.html).toContain('class="cf-turnstile" data-sitekey="site-key"');
    expect(page.res.headers.get("content-security-policy")).toContain("script-src 'nonce-");
    for (const token of [undefined, "robot"]) {
      const refused = await browser.post({ step: "send", ...(token ? { "cf-turnstile-response": token } : {}) });
      expect(refused.html).toContain("Complete the check above");
    }
    expect((await mailTo(email)).filter((m) => m.subject === "Your sign-in code")).toEqual([]);
    expect((await browser.post({ step: "send", "cf-turnstile-response": "human" })).html).toContain("Enter your code");
    expect(await mailedCode(email)).toMatch(/^\d{6}$/);
  });

  it("refuses a form without this browser's CSRF token, and input over its bounds", async () => {
    const owner = await createPrincipal();
    const email = freshEmail();
    await invite(owner, { email });
    const browser = new Browser(await invitationLink(email), pageCall);
    await browser.open();
    expect((await browser.post({ step: "send" }, "forged")).res.status).toBe(403);
    expect((await mailTo(email)).filter((m) => m.subject === "Your sign-in code")).toEqual([]);
    // Over their bounds: a page, never a JSON body.
    expect((await browser.post({ step: "code", code: "1".repeat(30) })).res.status).toBe(400);
    const long = await pageCall("GET", `/invite/inv_${"A".repeat(300)}`);
    expect(long.status).toBe(404);
    expect(long.headers.get("content-type")).toContain("text/html");
  });
});
