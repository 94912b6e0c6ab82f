import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { shardDatabase } from "../../src/shards/bindings";
import { purgeTrash } from "../../src/trash/service";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, getContact, issuePairs, logActivity, logCommunication } from "../helpers/contacts";
import { erase, newPerson } from "../helpers/erasure";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { openMailbox } from "../helpers/receiver";
import { eventsSettled } from "../helpers/shard-rows";
import { subscribe } from "../helpers/webhooks";

// Issue 32: POST|GET /v1/contacts/{id}/communications and include=communications.

interface Recorded {
  type: string;
  data: { object: Record<string, any>; previousAttributes: unknown; changes: unknown };
}

async function eventsOf(organizationId: string): Promise<Recorded[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT type, data FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at, rowid")
    .bind(organizationId)
    .all<{ type: string; data: string }>();
  return results.map((r) => ({ type: r.type, data: JSON.parse(r.data) }));
}

const path = (contactId: string) => `/v1/contacts/${contactId}/communications`;

const shardOf = async (organizationId: string) =>
  (await env.DB.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?").bind(organizationId).first<{ shard: number }>())!
    .shard;

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

describe("POST /v1/contacts/{id}/communications", () => {
  it.each([
    [{ type: "email", direction: "outbound", subject: "Your showing", body: "See you at 5" }, "communication.email_sent"],
    [{ type: "email", direction: "inbound", subject: "Re: Your showing" }, "communication.email_received"],
    [{ type: "sms", direction: "outbound", body: "On my way" }, "communication.sms_sent"],
    [{ type: "sms", direction: "inbound", body: "Thanks!" }, "communication.sms_received"],
    [{ type: "call", direction: "outbound" }, "communication.call_started"],
    [{ type: "call", direction: "inbound" }, "communication.call_started"],
    [{ type: "voicemail", direction: "inbound", durationSeconds: 31, body: "Call me back" }, "communication.voicemail_received"],
  ])("%o emits %s with the communication as data.object", async (body, event) => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const logged = await logCommunication(p.token, contact.id, { ...body, metadata: { via: "test" } });
    expect(logged).toMatchObject({ ...body, contactId: contact.id, metadata: { via: "test" } });
    const events = (await eventsOf(p.organizationId)).filter((e) => e.type.startsWith("communication."));
    expect(events).toEqual([{ type: event, data: { object: logged, previousAttributes: null, changes: null } }]);
  });

  it("a call logged with its duration emits call_started, then call_ended carrying the call with its duration", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const call_ = await logCommunication(p.token, contact.id, {
      type: "call",
      direction: "outbound",
      durationSeconds: 245,
      occurredAt: minutesAgo(10),
    });
    expect(call_.durationSeconds).toBe(245);
    const events = (await eventsOf(p.organizationId)).filter((e) => e.type.startsWith("communication."));
    expect(events.map((e) => e.type)).toEqual(["communication.call_started", "communication.call_ended"]);
    expect(events[0]!.data.object).toEqual({ ...call_, durationSeconds: null });
    expect(events[1]!.data).toEqual({ object: call_, previousAttributes: null, changes: null });
  });

  it("reaches a subscriber as a signed webhook, and subscription filters apply to the communication", async () => {
    const p = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(p, {
      url: box.url,
      events: ["communication.call_ended"],
      filters: { "communication.durationSeconds": { gte: 60 } },
    });
    const contact = await createContact(p.token);
    await logCommunication(p.token, contact.id, { type: "call", direction: "inbound", durationSeconds: 12 });
    const long = await logCommunication(p.token, contact.id, { type: "call", direction: "inbound", durationSeconds: 600 });
    await vi.waitFor(async () => expect(await box.count()).toBe(1), { timeout: 10_000, interval: 50 });
    const [req] = await box.received();
    expect(await verifyWebhook(sub.secret, req!.headers, req!.body)).toMatchObject({ ok: true });
    expect(JSON.parse(req!.body)).toMatchObject({
      event: "communication.call_ended",
      data: { object: long, previousAttributes: null, changes: null },
      organization: { id: p.organizationId },
      user: { id: p.userId },
    });
    // Once every event has been handled, the short call's call_ended is still the one held back by the filter.
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    expect((await json(await call("GET", `/v1/webhooks/${sub.id}/deliveries`, { token: p.token }))).data).toHaveLength(1);
    expect(await box.count()).toBe(1);
  });

  it("moves the contact's lastContactedAt to the latest occurredAt, never backwards, and its version every time", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    expect(contact.lastContactedAt).toBeNull();
    const etagOf = async () => (await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).headers.get("etag");
    const first = await etagOf();

    const recent = await logCommunication(p.token, contact.id, {
      type: "sms",
      direction: "inbound",
      body: "hi",
      occurredAt: minutesAgo(5),
    });
    const afterRecent = await getContact(p.token, contact.id);
    expect(afterRecent.lastContactedAt).toBe(recent.occurredAt);
    const second = await etagOf();
    expect(second).not.toBe(first);
    const updated = (await eventsOf(p.organizationId)).filter((e) => e.type === "contact.updated");
    expect(updated).toHaveLength(1);
    expect(updated[0]!.data).toMatchObject({
      changes: ["lastContactedAt"],
      previousAttributes: { lastContactedAt: null },
      object: { id: contact.id, lastContactedAt: recent.occurredAt },
    });

    // An older one is logged and listed, but the contact was last contacted later: only its version moves.
    await logCommunication(p.token, contact.id, {
      type: "email",
      direction: "outbound",
      subject: "Late entry",
      occurredAt: minutesAgo(60 * 24),
    });
    const afterOlder = await getContact(p.token, contact.id);
    expect(afterOlder.lastContactedAt).toBe(recent.occurredAt);
    expect(afterOlder.updatedAt).toBe(afterRecent.updatedAt);
    expect(await etagOf()).not.toBe(second);
    expect((await eventsOf(p.organizationId)).filter((e) => e.type === "contact.updated")).toHaveLength(1);

    // The default is now, which is later still.
    const now = await logCommunication(p.token, contact.id, { type: "call", direction: "outbound" });
    expect(Date.parse(now.occurredAt)).toBeGreaterThan(Date.parse(recent.occurredAt));
    expect((await getContact(p.token, contact.id)).lastContactedAt).toBe(now.occurredAt);
  });

  it("honours If-Match on the contact (412 when it changed) and Idempotency-Key (one communication, one event)", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const etag = (await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).headers.get("etag")!;
    await logCommunication(p.token, contact.id, { type: "sms", direction: "outbound", body: "one" }, { "if-match": etag });
    await expectCrmError(
      await call("POST", path(contact.id), {
        token: p.token,
        body: { type: "sms", direction: "outbound", body: "two" },
        headers: { "if-match": etag },
      }),
      412,
      "precondition_failed_error",
    );

    const body = { type: "email", direction: "outbound", subject: "Offer" };
    const headers = { "idempotency-key": `comm-${crypto.randomUUID()}` };
    const first = await call("POST", path(contact.id), { token: p.token, body, headers });
    const retry = await call("POST", path(contact.id), { token: p.token, body, headers });
    expect([first.status, retry.status]).toEqual([201, 201]);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect((await json(retry)).data).toEqual((await json(first)).data);
    const page = await json(await call("GET", `${path(contact.id)}?type=email`, { token: p.token }));
    expect(page.pagination.total).toBe(1);
    expect((await eventsOf(p.organizationId)).filter((e) => e.type === "communication.email_sent")).toHaveLength(1);
  });

  it("answers 422 listing every problem of the body, the rules between fields with the others", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const post = (body: unknown) => call("POST", path(contact.id), { token: p.token, body });
    expect(issuePairs(await expectCrmError(await post({}), 422, "validation_error"))).toEqual(["direction:required", "type:required"]);
    expect(
      issuePairs(
        await expectCrmError(
          await post({
            type: "fax",
            direction: "sideways",
            durationSeconds: -1,
            subject: "s".repeat(501),
            body: "x".repeat(10_001),
            occurredAt: "yesterday",
            metadata: { blob: "x".repeat(5000) },
            from: "me",
          }),
          422,
          "validation_error",
        ),
      ),
    ).toEqual([
      "body:too_big",
      "direction:invalid_enum_value",
      "durationSeconds:too_small",
      "from:unknown_field",
      "metadata:too_big",
      "occurredAt:invalid_datetime",
      "subject:too_big",
      "type:invalid_enum_value",
    ]);
    // What a type does not take is named beside the body's other problems, a wrong type of value among them (after
    // which zod would skip an object's own rules).
    const inTwoDays = new Date(Date.now() + 2 * 86_400_000).toISOString();
    expect(
      issuePairs(
        await expectCrmError(
          await post({
            type: "sms",
            direction: "outbound",
            body: "hi",
            subject: "Hello",
            durationSeconds: 5,
            occurredAt: inTwoDays,
            metadata: "none",
            bogus: 1,
          }),
          422,
          "validation_error",
        ),
      ),
    ).toEqual([
      "bogus:unknown_field",
      "durationSeconds:not_allowed",
      "metadata:invalid_type",
      "occurredAt:in_future",
      "subject:not_allowed",
    ]);
    expect(
      issuePairs(
        await expectCrmError(await post({ type: "voicemail", direction: "outbound", subject: "Left a message" }), 422, "validation_error"),
      ),
    ).toEqual(["direction:not_allowed", "subject:not_allowed"]);
    expect(
      issuePairs(
        await expectCrmError(
          await post({ type: "call", direction: "inbound", body: "Notes", occurredAt: "1969-12-31T23:59:59Z" }),
          422,
          "validation_error",
        ),
      ),
    ).toEqual(["body:not_allowed", "occurredAt:too_early"]);
    expect(
      issuePairs(
        await expectCrmError(
          await call("POST", path(contact.id), { token: p.token, rawBody: "[1]", headers: { "content-type": "application/json" } }),
          422,
          "validation_error",
        ),
      ),
    ).toEqual([":invalid_type"]);
    // A few minutes of clock skew pass; nothing was logged by the refusals.
    await logCommunication(p.token, contact.id, {
      type: "call",
      direction: "inbound",
      occurredAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect((await json(await call("GET", path(contact.id), { token: p.token }))).pagination.total).toBe(1);
  });

  it("answers another organization's contact exactly as an unknown one, and a contact in the trash as the contact routes do", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const contact = await createContact(owner.token);
    const body = { type: "email", direction: "outbound" };
    const strip = async (res: Response) => ({ status: res.status, body: await json(res) });
    for (const method of ["GET", "POST"] as const) {
      const theirs = await strip(
        await call(method, path(contact.id), { token: stranger.token, body: method === "POST" ? body : undefined }),
      );
      const unknown = await strip(
        await call(method, path(crypto.randomUUID()), { token: stranger.token, body: method === "POST" ? body : undefined }),
      );
      expect(theirs).toEqual(unknown);
      expect(theirs.status).toBe(404);
    }
    expect((await eventsOf(owner.organizationId)).map((e) => e.type)).toEqual(["contact.created"]);
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: owner.token })).status).toBe(200);
    await expectCrmError(await call("POST", path(contact.id), { token: owner.token, body }), 404, "not_found_error");
    await expectCrmError(await call("GET", path(contact.id), { token: owner.token }), 404, "not_found_error");
  });
});

describe("GET /v1/contacts/{id}/communications", () => {
  it("pages newest first by occurredAt, filters by type, and refuses a cursor of another list", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const other = await createContact(p.token);
    await logCommunication(p.token, other.id, { type: "sms", direction: "inbound", body: "not theirs" });
    const types = ["email", "sms", "call", "sms", "voicemail", "email", "sms"];
    const logged: Record<string, any>[] = [];
    // Logged out of order: the list follows occurredAt, not the order of logging.
    for (const [i, type] of types.entries()) {
      logged.push(await logCommunication(p.token, contact.id, { type, direction: "inbound", occurredAt: minutesAgo(((i * 3) % 7) + 1) }));
    }
    const newestFirst = [...logged].sort((a, b) => (a.occurredAt < b.occurredAt ? 1 : -1)).map((c) => c.id);
    const walk = async (query: string) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 10; i++) {
        const page: any = await json(
          await call("GET", `${path(contact.id)}?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { token: p.token }),
        );
        ids.push(...page.data.map((c: { id: string }) => c.id));
        if (!page.pagination.hasMore) return { ids, last: page.pagination };
        cursor = page.pagination.nextCursor;
      }
      throw new Error("walk did not end");
    };
    const all = await walk("limit=3");
    expect(all.ids).toEqual(newestFirst);
    expect(all.last).toEqual({ hasMore: false, nextCursor: null, total: 7, limit: 3 });
    const sms = await walk("limit=2&type=sms");
    expect(sms.ids).toEqual(newestFirst.filter((id) => logged.find((c) => c.id === id)!.type === "sms"));
    expect(sms.last.total).toBe(3);
    const first = await json(await call("GET", path(contact.id), { token: p.token }));
    expect(first.pagination).toEqual({ hasMore: false, nextCursor: null, total: 7, limit: 25 });

    await logActivity(p.token, contact.id, { type: "NOTE", description: "a" });
    await logActivity(p.token, contact.id, { type: "NOTE", description: "b" });
    const activityCursor = (await json(await call("GET", `/v1/contacts/${contact.id}/activities?limit=1`, { token: p.token }))).pagination
      .nextCursor;
    expect(
      issuePairs(
        await expectCrmError(
          await call("GET", `${path(contact.id)}?cursor=${encodeURIComponent(activityCursor)}`, { token: p.token }),
          422,
          "validation_error",
        ),
      ),
    ).toEqual(["cursor:invalid_cursor"]);
    expect(
      issuePairs(
        await expectCrmError(
          await call("GET", `${path(contact.id)}?limit=0&type=fax&direction=inbound`, { token: p.token }),
          422,
          "validation_error",
        ),
      ),
    ).toEqual(["direction:unknown_field", "limit:too_small", "type:invalid_enum_value"]);
  });
});

describe("include=communications", () => {
  it("embeds each contact's 20 newest communications on a read and on a list", async () => {
    const p = await createPrincipal();
    const busy = await createContact(p.token, { lastName: "Busy" });
    const quiet = await createContact(p.token, { lastName: "Quiet" });
    const silent = await createContact(p.token, { lastName: "Silent" });
    const logged: Record<string, any>[] = [];
    for (let i = 0; i < 22; i++)
      logged.push(
        await logCommunication(p.token, busy.id, { type: "sms", direction: "outbound", body: `#${i}`, occurredAt: minutesAgo(100 - i) }),
      );
    const only = await logCommunication(p.token, quiet.id, { type: "email", direction: "inbound", subject: "Hello" });
    const newest20 = logged.slice(2).reverse();

    const read = await getContact(p.token, busy.id, "?include=communications");
    expect(read.communications).toEqual(newest20);
    expect((await getContact(p.token, busy.id)).communications).toBeUndefined();

    const list = await json(
      await call("GET", "/v1/contacts?include=communications,activities&fields=lastName&sort=createdAt:asc", { token: p.token }),
    );
    expect(list.data.map((c: { lastName: string; communications: unknown[] }) => [c.lastName, c.communications])).toEqual([
      ["Busy", newest20],
      ["Quiet", [only]],
      ["Silent", []],
    ]);
    expect(silent.id).toEqual(list.data[2].id);
  });
});

describe("the data lifecycle of communications", () => {
  it("go to the trash with their contact, come back with it, and go for good when it is purged", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const kept = await createContact(p.token);
    for (const id of [contact.id, kept.id])
      await logCommunication(p.token, id, { type: "call", direction: "outbound", durationSeconds: 60 });
    await logCommunication(p.token, contact.id, { type: "email", direction: "inbound", subject: "Re: offer", metadata: { thread: "t-1" } });
    const before = await json(await call("GET", path(contact.id), { token: p.token }));
    const db = await tenantDb(p.organizationId);
    const rows = async (id: string) =>
      (await db.prepare("SELECT COUNT(*) AS n FROM contact_communications WHERE contact_id = ?").bind(id).first<{ n: number }>())!.n;

    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    expect(await rows(contact.id)).toBe(0);
    expect((await call("POST", `/v1/contacts/${contact.id}/restore`, { token: p.token })).status).toBe(200);
    expect(await json(await call("GET", path(contact.id), { token: p.token }))).toEqual(before);
    expect((await getContact(p.token, contact.id, "?include=communications")).communications).toEqual(before.data);

    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    const kept_ = async () =>
      (await db
        .prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ? AND table_name = 'contact_communications'")
        .bind(contact.id)
        .first<{ n: number }>())!.n;
    expect(await kept_()).toBe(2);
    expect(await purgeTrash(env, createDb(db), { now: new Date(Date.now() + 31 * 86_400_000), max: 1000 })).toBeGreaterThanOrEqual(1);
    expect(await kept_()).toBe(0);
    expect(await rows(contact.id)).toBe(0);
    // The other contact's stay.
    expect(await rows(kept.id)).toBe(1);
  });

  it("an erasure deletes the person's communications, empties them in event payloads, and rewrites other contacts' that name them", async () => {
    const p = await createPrincipal();
    const person = newPerson();
    const contact = await createContact(p.token, {
      firstName: person.firstName,
      lastName: person.lastName,
      email: person.email,
      phone: person.phone,
    });
    const theirs = await logCommunication(p.token, contact.id, {
      type: "email",
      direction: "inbound",
      subject: "About the condo",
      body: "I can pay the deposit on Friday",
      metadata: { from: "mobile" },
    });
    const neighbour = await createContact(p.token);
    const aboutThem = await logCommunication(p.token, neighbour.id, {
      type: "sms",
      direction: "outbound",
      body: `Did ${person.fullName} call you? ${person.phone}`,
    });

    const res = await erase(p, contact.id);
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await json(res)).data.erased).toMatchObject({ contacts: 1, communications: 1, communication_texts: 1 });
    const db = await tenantDb(p.organizationId);
    expect(await db.prepare("SELECT COUNT(*) AS n FROM contact_communications WHERE contact_id = ?").bind(contact.id).first()).toEqual({
      n: 0,
    });
    const event = await db
      .prepare("SELECT data FROM outbox_events WHERE type = 'communication.email_received' AND json_extract(data, '$.object.id') = ?")
      .bind(theirs.id)
      .first<{ data: string }>();
    expect(JSON.parse(event!.data).object).toEqual({ ...theirs, subject: "[erased]", body: "[erased]", metadata: null });
    const [rewritten] = (await json(await call("GET", path(neighbour.id), { token: p.token }))).data;
    expect(rewritten).toEqual({ ...aboutThem, body: "Did [erased] call you? [erased]" });
  });

  it("move with their organization to another shard", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    await logCommunication(p.token, contact.id, { type: "voicemail", direction: "inbound", durationSeconds: 20, body: "Please call back" });
    await logCommunication(p.token, contact.id, { type: "sms", direction: "outbound", body: "Calling now" });
    const before = await json(await call("GET", path(contact.id), { token: p.token }));
    const from = await shardOf(p.organizationId);
    let res: Response | undefined;
    for (let i = 0; i < 200; i++) {
      res = await exports.default.fetch(
        new Request("http://api.test/admin/shards/moves", {
          method: "POST",
          headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ organizationId: p.organizationId, to: 1 - from, drainSeconds: 0 }),
        }),
      );
      if (res.status !== 202) break;
    }
    expect(res!.status, await res!.clone().text()).toBe(200);
    const count = (shard: number) =>
      shardDatabase(env, shard)
        .prepare("SELECT COUNT(*) AS n FROM contact_communications WHERE organization_id = ?")
        .bind(p.organizationId)
        .first<{ n: number }>();
    expect([await count(from), await count(1 - from)]).toEqual([{ n: 0 }, { n: 2 }]);
    expect(await json(await call("GET", path(contact.id), { token: p.token }))).toEqual(before);
    // And it takes new ones there.
    await logCommunication(p.token, contact.id, { type: "call", direction: "inbound" });
    expect(await count(1 - from)).toEqual({ n: 3 });
  });
});
