import { env } from "cloudflare:workers";
import { decryptText, encryptText } from "../../src/lib/secret-box";
import { describe, expect, it } from "vitest";
import { everyShard } from "../../src/shards/bindings";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError } from "../helpers/contacts";
import { createDocument, tokenOf } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { createSurveyTemplate } from "../helpers/surveys";

/** Every row of idempotency_keys on every shard, every column, as one string: what a dump of the tables would show. */
const idempotencyDump = async () =>
  JSON.stringify(
    await Promise.all(everyShard(env).map(async ({ db }) => (await db.prepare("SELECT * FROM idempotency_keys").all()).results)),
  );
const contactsOf = async (organizationId: string) =>
  (await tenantDb(organizationId))
    .prepare("SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?")
    .bind(organizationId)
    .first<number>("n");
const body = (email: string) => ({ firstName: "Idem", lastName: "Potent", email });

describe("Idempotency-Key", () => {
  it("runs a request once and replays its answer to a retry with the same key and body", async () => {
    const { token, organizationId } = await createPrincipal();
    const headers = { "idempotency-key": "create-1" };
    const first = await call("POST", "/v1/contacts", { token, body: body("idem@example.test"), headers });
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const retry = await call("POST", "/v1/contacts", { token, body: body("idem@example.test"), headers });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(await retry.text()).toBe(firstBody);
    expect(await contactsOf(organizationId)).toBe(1);
    // Without the key the same body is a new request: the e-mail now conflicts.
    expect((await call("POST", "/v1/contacts", { token, body: body("idem@example.test") })).status).toBe(409);
  });

  it("replays a contact update whose answer was kept in the batch of its write, as it was answered", async () => {
    const { token, organizationId } = await createPrincipal();
    const contact = await createContact(token, { email: "kept@example.test" });
    const headers = { "idempotency-key": "update-1" };
    const first = await call("PUT", `/v1/contacts/${contact.id}`, { token, body: { notes: "once" }, headers });
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const kept = await (await tenantDb(organizationId))
      .prepare(
        "SELECT state, response_status, response_headers, response_body FROM idempotency_keys WHERE organization_id = ? AND key = 'update-1'",
      )
      .bind(organizationId)
      .first<{ state: string; response_status: number; response_headers: string; response_body: string }>();
    expect(kept).toMatchObject({ state: "done", response_status: 200, response_body: firstBody });
    expect(JSON.parse(kept!.response_headers)).toEqual({
      "content-type": first.headers.get("content-type"),
      etag: first.headers.get("etag"),
    });
    // Another write in between: the replay still answers what the first request answered.
    expect((await call("PUT", `/v1/contacts/${contact.id}`, { token, body: { notes: "later" } })).status).toBe(200);
    const retry = await call("PUT", `/v1/contacts/${contact.id}`, { token, body: { notes: "once" }, headers });
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(await retry.text()).toBe(firstBody);
    // A refused update is kept by the middleware as before.
    const unknown = `/v1/contacts/${crypto.randomUUID()}`;
    expect((await call("PUT", unknown, { token, body: { notes: "x" }, headers: { "idempotency-key": "update-404" } })).status).toBe(404);
    const replayed404 = await call("PUT", unknown, { token, body: { notes: "x" }, headers: { "idempotency-key": "update-404" } });
    expect(replayed404.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed404.status).toBe(404);
  });

  it("answers 422 when the key is reused for another body or another route", async () => {
    const { token, organizationId } = await createPrincipal();
    const headers = { "idempotency-key": "reused" };
    expect((await call("POST", "/v1/contacts", { token, body: body("one@example.test"), headers })).status).toBe(201);
    const other = await call("POST", "/v1/contacts", { token, body: body("two@example.test"), headers });
    expect(other.status).toBe(422);
    expect((await json(other)).error).toMatchObject({ type: "validation_error", detail: expect.stringContaining("Idempotency-Key") });
    expect(
      (
        await call("POST", "/v1/webhooks", {
          token,
          body: { url: "http://127.0.0.1:9/h", events: ["contact.created"], enabled: false },
          headers,
        })
      ).status,
    ).toBe(422);
    expect(await contactsOf(organizationId)).toBe(1);
  });

  it("answers 409 while the first request with the key is still running", async () => {
    const { token, organizationId } = await createPrincipal();
    const now = new Date();
    // The first request holds the key (it claimed it a moment ago and has not answered yet).
    const { sha256Hex } = await import("../../src/lib/crypto");
    const fingerprint = await sha256Hex(JSON.stringify(["POST", "/v1/contacts", "", JSON.stringify(body("slow@example.test"))]));
    await (await tenantDb(organizationId))
      .prepare(
        "INSERT INTO idempotency_keys (organization_id, key, fingerprint, state, created_at, expires_at) VALUES (?, 'slow', ?, 'in_flight', ?, ?)",
      )
      .bind(organizationId, fingerprint, now.toISOString(), new Date(now.getTime() + 86_400_000).toISOString())
      .run();
    const res = await call("POST", "/v1/contacts", { token, body: body("slow@example.test"), headers: { "idempotency-key": "slow" } });
    await expectCrmError(res, 409, "conflict_error");
    expect(await contactsOf(organizationId)).toBe(0);
  });

  it("lets concurrent retries with one key create one contact", async () => {
    const { token, organizationId } = await createPrincipal();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        call("POST", "/v1/contacts", { token, body: body("race@example.test"), headers: { "idempotency-key": "burst" } }),
      ),
    );
    for (const a of answers) expect([201, 409]).toContain(a.status);
    expect(answers.filter((a) => a.status === 201).length).toBeGreaterThan(0);
    expect(await contactsOf(organizationId)).toBe(1);
  });

  it("keeps keys per organization, replays a DELETE, and forgets a key after 24 hours", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const headers = { "idempotency-key": "shared-name" };
    expect((await call("POST", "/v1/contacts", { token: a.token, body: body("a@example.test"), headers })).status).toBe(201);
    expect((await call("POST", "/v1/contacts", { token: b.token, body: body("b@example.test"), headers })).status).toBe(201);

    const id = (await json(await call("POST", "/v1/contacts", { token: a.token, body: body("del@example.test") }))).data.id;
    const del = { "idempotency-key": "delete-once" };
    expect((await call("DELETE", `/v1/contacts/${id}`, { token: a.token, headers: del })).status).toBe(200);
    const again = await call("DELETE", `/v1/contacts/${id}`, { token: a.token, headers: del });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");

    await (await tenantDb(a.organizationId))
      .prepare("UPDATE idempotency_keys SET expires_at = ? WHERE organization_id = ? AND key = 'shared-name'")
      .bind(new Date(Date.now() - 1000).toISOString(), a.organizationId)
      .run();
    // Expired: the request runs again (and now conflicts on the e-mail).
    expect((await call("POST", "/v1/contacts", { token: a.token, body: body("a@example.test"), headers })).status).toBe(409);
  });

  it("refuses a malformed key with 400, and ignores the header on reads", async () => {
    const { token } = await createPrincipal();
    for (const key of ["", "x".repeat(256), "with space", "del\x7f"]) {
      expect(
        (await call("POST", "/v1/contacts", { token, body: body("k@example.test"), headers: { "idempotency-key": key } })).status,
        JSON.stringify(key),
      ).toBe(400);
    }
    expect((await call("GET", "/v1/contacts", { token, headers: { "idempotency-key": "read" } })).status).toBe(200);
  });

  it("does not keep a 5xx answer, so the request can be retried under the same key", async () => {
    const { token, organizationId } = await createPrincipal();
    const { testApp } = await import("../helpers/test-app");
    const { app, fetch } = testApp();
    let fail = true;
    app.post("/v1/events/flaky", (c) => {
      if (fail) throw new Error("boom");
      return c.json({ success: true, data: { ok: true } }, 201);
    });
    const headers = { "idempotency-key": "flaky", "content-type": "application/json" };
    const { vi } = await import("vitest");
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await fetch("POST", "/v1/events/flaky", { token, body: "{}", headers })).status).toBe(500);
    quiet.mockRestore();
    fail = false;
    expect((await fetch("POST", "/v1/events/flaky", { token, body: "{}", headers })).status).toBe(201);
    expect(
      await (await tenantDb(organizationId))
        .prepare("SELECT state FROM idempotency_keys WHERE organization_id = ? AND key = 'flaky'")
        .bind(organizationId)
        .first("state"),
    ).toBe("done");
  });

  it("does not keep a lost race (409 concurrent_modification): the retry under the same key runs again", async () => {
    const { token } = await createPrincipal();
    const { testApp } = await import("../helpers/test-app");
    const { Conflict } = await import("../../src/lib/errors");
    const { app, fetch } = testApp();
    let contended = true;
    app.post("/v1/events/contended", (c) => {
      if (contended) throw new Conflict("The resource is being changed by other requests; try again", "concurrent_modification");
      return c.json({ success: true, data: { ok: true } }, 201);
    });
    const headers = { "idempotency-key": "contended", "content-type": "application/json" };
    expect((await fetch("POST", "/v1/events/contended", { token, body: "{}", headers })).status).toBe(409);
    contended = false;
    const retry = await fetch("POST", "/v1/events/contended", { token, body: "{}", headers });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
  });

  it("never keeps a webhook's signing secret: a replay answers without it", async () => {
    const { token, organizationId } = await createPrincipal();
    const headers = { "idempotency-key": "hook-1" };
    const body = { url: "http://127.0.0.1:9/hooks/idem", events: ["contact.created"], enabled: false };
    const first = await json(await call("POST", "/v1/webhooks", { token, body, headers }));
    expect(first.data.secret).toMatch(/^whsec_/);
    const replay = await call("POST", "/v1/webhooks", { token, body, headers });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const replayed = await json(replay);
    expect(replayed.data.id).toBe(first.data.id);
    expect(replayed.data).not.toHaveProperty("secret");
    const stored = await (await tenantDb(organizationId))
      .prepare("SELECT response_body FROM idempotency_keys WHERE organization_id = ?")
      .bind(organizationId)
      .all<{ response_body: string }>();
    expect(JSON.stringify(stored.results)).not.toContain(first.data.secret);
  });

  it("never keeps a raw signing link: a replay of sending for signature answers the envelope without urls", async () => {
    const { token } = await createPrincipal();
    const document = await createDocument(token);
    const headers = { "idempotency-key": "send-once" };
    const firstRes = await call("POST", `/api/documents/${document.id}/signature`, { token, body: {}, headers });
    expect(firstRes.status).toBe(201);
    const first = await json(firstRes);
    const tokens = first.links.map((l: { url: string }) => tokenOf(l.url));
    expect(tokens).toHaveLength(2);
    for (const t of tokens) expect(t).toMatch(/^sign_/);

    const replay = await call("POST", `/api/documents/${document.id}/signature`, { token, body: {}, headers });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const replayed = await json(replay);
    expect(replayed.envelopeId).toBe(first.envelopeId);
    // Who was asked to sign stays; only the capability goes.
    expect(replayed.links).toEqual(first.links.map(({ url: _url, ...rest }: { url: string }) => rest));
    expect(JSON.stringify(replayed)).not.toContain("/sign/");
    const dump = await idempotencyDump();
    expect(dump).toContain(first.envelopeId);
    for (const t of tokens) expect(dump).not.toContain(t);
  });

  it("never keeps a survey's access token: replays of scheduling and re-issuing answer the survey without it", async () => {
    const owner = await createPrincipal();
    const template = await createSurveyTemplate(owner);
    const recipientPersonId = (await createContact(owner.token)).id;
    const body = { agentUserId: owner.userId, templateId: template.id, channel: "LINK", recipientPersonId };
    const create = () =>
      call("POST", "/api/reputation/surveys", { token: owner.token, body, headers: { "idempotency-key": "survey-once" } });
    const firstRes = await create();
    expect(firstRes.status).toBe(201);
    const first = await json(firstRes);
    expect(first.surveyUrl).toContain(first.accessToken);
    const replay = await create();
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const replayed = await json(replay);
    expect(replayed.id).toBe(first.id);
    expect(replayed).not.toHaveProperty("accessToken");
    expect(replayed).not.toHaveProperty("surveyUrl");

    const reissue = () =>
      call("POST", `/api/reputation/surveys/${first.id}/reissue`, { token: owner.token, headers: { "idempotency-key": "reissue-once" } });
    const reissuedRes = await reissue();
    expect(reissuedRes.status).toBe(200);
    const reissued = await json(reissuedRes);
    expect(reissued.accessToken).not.toBe(first.accessToken);
    const again = await reissue();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const replayedReissue = await json(again);
    expect(replayedReissue.id).toBe(first.id);
    expect(replayedReissue).not.toHaveProperty("accessToken");
    expect(replayedReissue).not.toHaveProperty("surveyUrl");

    const dump = await idempotencyDump();
    expect(dump).toContain(first.id);
    for (const t of [first.accessToken, reissued.accessToken]) expect(dump).not.toContain(t);
  });

  it("replays an answer without a body (204) as it was", async () => {
    const { token } = await createPrincipal();
    const { testApp } = await import("../helpers/test-app");
    const { app, fetch } = testApp();
    let runs = 0;
    app.delete("/v1/events/nothing", (c) => (runs++, c.body(null, 204)));
    const headers = { "idempotency-key": "empty" };
    expect((await fetch("DELETE", "/v1/events/nothing", { token, headers })).status).toBe(204);
    const again = await fetch("DELETE", "/v1/events/nothing", { token, headers });
    expect(again.status).toBe(204);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(runs).toBe(1);
  });
});

describe("D1 sessions (X-D1-Bookmark)", () => {
  it("answers with an encrypted bookmark, takes it back for read-your-writes, and refuses a malformed one", async () => {
    const { token } = await createPrincipal();
    const write = await call("POST", "/v1/contacts", { token, body: body("bm@example.test") });
    const bookmark = write.headers.get("x-d1-bookmark")!;
    // Encrypted: the D1 bookmark inside counts the shard's writes, which is nobody's business.
    expect(bookmark).toMatch(/^v1\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
    const [shard, inside] = (await decryptText(env.BOOKMARK_KEY!, "d1-bookmark", "", bookmark)).split(":");
    expect(shard).toMatch(/^\d+$/);
    expect(inside).toMatch(/^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/);
    const read = await call("GET", "/v1/contacts", { token, headers: { "x-d1-bookmark": bookmark } });
    expect(read.status).toBe(200);
    expect((await json(read)).pagination.total).toBe(1);
    const [, after] = (await decryptText(env.BOOKMARK_KEY!, "d1-bookmark", "", read.headers.get("x-d1-bookmark")!)).split(":");
    expect(after! >= inside!).toBe(true);
    // The same position encrypted twice reads differently: answers cannot be compared to count writes.
    const again = await call("GET", "/v1/contacts", { token, headers: { "x-d1-bookmark": bookmark } });
    expect(again.headers.get("x-d1-bookmark")).not.toBe(read.headers.get("x-d1-bookmark"));
    for (const raw of ["latest please", inside!]) {
      const bad = await call("GET", "/v1/contacts", { token, headers: { "x-d1-bookmark": raw } });
      await expectCrmError(bad, 400, "invalid_request_error");
    }
    // One encrypted under another key (a key rotated since) is ignored, not refused.
    const foreign = await encryptText("another-key", "d1-bookmark", "", `${shard}:${inside}`);
    expect((await call("GET", "/v1/contacts", { token, headers: { "x-d1-bookmark": foreign } })).status).toBe(200);
  });
});
