import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { dispatchEvents } from "../../src/events/consumers";
import type { DomainEvent } from "../../src/events/event";
import { refreshSmartLists, smartListConsumer } from "../../src/smart-lists/membership";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, issuePairs, listPage, logCommunication, updateContact } from "../helpers/contacts";
import { createApiKey } from "../helpers/api-keys";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";

const DAY = 86_400_000;

async function createList(p: TestPrincipal, query: Record<string, unknown>, name = "A list") {
  const res = await call("POST", "/v1/smart-lists", { token: p.token, body: { name, query } });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.data as { id: string; count: number; query: Record<string, string> };
}

const countOf = async (p: TestPrincipal, id: string) => {
  const res = await call("GET", `/v1/smart-lists/${id}`, { token: p.token });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.data.count as number;
};

/** An open (or completed) task on the contact, through the tasks' routes. */
async function addTask(p: TestPrincipal, contactId: string, completed = false) {
  const res = await call("POST", "/v1/tasks", { token: p.token, body: { title: "Call back", type: "call", contactId } });
  expect(res.status).toBe(201);
  const id = (await json(res)).data.id as string;
  if (completed) expect((await call("POST", `/v1/tasks/${id}/complete`, { token: p.token })).status).toBe(200);
  return id;
}

/** The organization's outbox events, oldest first. */
async function outbox(p: TestPrincipal): Promise<DomainEvent[]> {
  const { results } = await (await tenantDb(p.organizationId))
    .prepare("SELECT id, type, organization_id, actor, occurred_at, data FROM outbox_events WHERE organization_id = ? ORDER BY rowid")
    .bind(p.organizationId)
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

/** Runs the membership consumer on every event of the organization so far (as the queue would; claims per event id). */
async function consume(p: TestPrincipal) {
  const retry = await dispatchEvents([smartListConsumer], await outbox(p), env, createDb(await tenantDb(p.organizationId)));
  expect([...retry]).toEqual([]);
}

const membership = async (p: TestPrincipal) =>
  (await outbox(p))
    .filter((e) => e.type.startsWith("smart_list."))
    .map((e) => `${e.type}:${(e.data.object as { contactId: string }).contactId}`);

describe("/v1/smart-lists", () => {
  it("honours If-Match on PATCH and DELETE with the version its reads answer as ETag", async () => {
    // A stale or garbage If-Match was ignored (the ETag was a hash of the answer): a lost update RFC 9110 forbids.
    const p = await createPrincipal();
    const created = await call("POST", "/v1/smart-lists", { token: p.token, body: { name: "Leads", query: { type: "LEAD" } } });
    const id = (await json(created)).data.id as string;
    expect(created.headers.get("etag")).toBe('"1"');
    const read = await call("GET", `/v1/smart-lists/${id}`, { token: p.token });
    expect(read.headers.get("etag")).toBe('"1"');
    const first = await call("PATCH", `/v1/smart-lists/${id}`, {
      token: p.token,
      body: { name: "Leads 2" },
      headers: { "if-match": '"1"' },
    });
    expect(first.status, await first.clone().text()).toBe(200);
    expect(first.headers.get("etag")).toBe('"2"');
    for (const stale of ['"1"', 'W/"junk"']) {
      const again = await call("PATCH", `/v1/smart-lists/${id}`, {
        token: p.token,
        body: { name: "Leads 2" },
        headers: { "if-match": stale },
      });
      expect((await json(again)).error.code).toBe("precondition_failed");
      const gone = await call("DELETE", `/v1/smart-lists/${id}`, { token: p.token, headers: { "if-match": stale } });
      expect(gone.status).toBe(412);
    }
    expect((await call("DELETE", `/v1/smart-lists/${id}`, { token: p.token, headers: { "if-match": '"2"' } })).status).toBe(200);
  });

  it("saves a query checked by the contacts list's parser, listing every problem under query", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/smart-lists", {
      token: p.token,
      body: { name: "Bad", query: { "createdAt[gte]": "-P7X", status: "SLEEPING", bogus: "1", cursor: "x", "customFields.nope": "1" } },
    });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "query.bogus:unknown_field",
      "query.createdAt[gte]:invalid_date_bound",
      "query.cursor:unexpected_field",
      "query.status:invalid_enum_value",
    ]);
    // The custom fields are checked once the rest parses.
    const custom = await call("POST", "/v1/smart-lists", { token: p.token, body: { name: "Bad", query: { "customFields.nope": "1" } } });
    expect(issuePairs(await expectCrmError(custom, 422, "validation_error"))).toEqual(["query.customFields.nope:unknown_field"]);
  });

  it("lists every problem of a query at once, a too-long or non-text value among them", async () => {
    // The body's own check of each value once answered alone, hiding what the contacts list's parser would say.
    const p = await createPrincipal();
    const res = await call("POST", "/v1/smart-lists", {
      token: p.token,
      body: { name: "Bad", query: { tags: "x".repeat(2100), type: "ALIEN", "leadScore[gte]": "abc", assignedTo: { id: 1 }, source: null } },
    });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "query.assignedTo:invalid_type",
      "query.leadScore[gte]:invalid_integer",
      "query.source:invalid_type",
      "query.tags:too_big",
      "query.type:invalid_enum_value",
    ]);
  });

  it("creates, lists with live counts, reads, renames, re-queries and deletes", async () => {
    const p = await createPrincipal();
    const assigned = await createContact(p.token, { assignedTo: p.userId, type: "CLIENT" });
    await createContact(p.token);
    await createContact(p.token, { type: "CLIENT" });
    const unassigned = await createList(p, { assignedTo: "none" }, "Unassigned");
    expect(unassigned).toMatchObject({ count: 2, query: { assignedTo: "none" } });
    const clients = await createList(p, { type: "CLIENT", hasOpenTask: false, "leadScore[gte]": 0 }, "Clients");
    expect(clients).toMatchObject({ count: 0, query: { type: "CLIENT", hasOpenTask: "false", "leadScore[gte]": "0" } });
    const news = await createList(p, { "createdAt[gte]": "-P7D" }, "New this week");

    const page = await json(await call("GET", "/v1/smart-lists?limit=2", { token: p.token }));
    expect(page.data.map((l: { name: string; count: number }) => [l.name, l.count])).toEqual([
      ["New this week", 3],
      ["Clients", 0],
    ]);
    expect(page.pagination).toMatchObject({ hasMore: true, total: 3, limit: 2 });
    const rest = await json(
      await call("GET", `/v1/smart-lists?cursor=${encodeURIComponent(page.pagination.nextCursor)}`, { token: p.token }),
    );
    expect(rest.data.map((l: { id: string }) => l.id)).toEqual([unassigned.id]);

    await updateContact(p.token, assigned.id, { assignedTo: null });
    expect(await countOf(p, unassigned.id)).toBe(3);

    const patched = await json(
      await call("PATCH", `/v1/smart-lists/${clients.id}`, { token: p.token, body: { name: "Clients", query: { type: "CLIENT" } } }),
    );
    expect(patched.data).toMatchObject({ name: "Clients", count: 2, query: { type: "CLIENT" } });
    const bad = await call("PATCH", `/v1/smart-lists/${clients.id}`, { token: p.token, body: { query: { limit: "5" } } });
    expect(issuePairs(await expectCrmError(bad, 422, "validation_error"))).toEqual(["query.limit:unexpected_field"]);

    expect((await call("DELETE", `/v1/smart-lists/${news.id}`, { token: p.token })).status).toBe(200);
    expect((await call("GET", `/v1/smart-lists/${news.id}`, { token: p.token })).status).toBe(404);
    expect((await call("DELETE", `/v1/smart-lists/${news.id}`, { token: p.token })).status).toBe(404);
  });

  it("answers a list's contacts as GET /v1/contacts answers its query, cursor and total included", async () => {
    const p = await createPrincipal();
    for (let i = 0; i < 5; i++) await createContact(p.token, { leadScore: i * 10 });
    const list = await createList(p, { "leadScore[gte]": 10, sort: "leadScore:desc" });
    const direct = await listPage(p.token, "leadScore[gte]=10&sort=leadScore:desc&limit=3&fields=id,leadScore");
    const res = await json(await call("GET", `/v1/smart-lists/${list.id}/contacts?limit=3&fields=id,leadScore`, { token: p.token }));
    expect(res).toEqual({ success: true, ...direct });
    expect(res.pagination.total).toBe(4);
    const next = await json(
      await call("GET", `/v1/smart-lists/${list.id}/contacts?limit=3&cursor=${encodeURIComponent(res.pagination.nextCursor)}`, {
        token: p.token,
      }),
    );
    expect(next.data.map((c: { leadScore: number }) => c.leadScore)).toEqual([10]);
    const unknown = await call("GET", `/v1/smart-lists/${list.id}/contacts?status=ACTIVE`, { token: p.token });
    expect(unknown.status).toBe(422);
  });

  it("keeps one organization's lists from another", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const list = await createList(p, { assignedTo: "none" });
    for (const [method, path] of [
      ["GET", `/v1/smart-lists/${list.id}`],
      ["GET", `/v1/smart-lists/${list.id}/contacts`],
      ["PATCH", `/v1/smart-lists/${list.id}`],
      ["DELETE", `/v1/smart-lists/${list.id}`],
    ] as const)
      expect((await call(method, path, { token: other.token, body: method === "PATCH" ? { name: "x" } : undefined })).status).toBe(404);
    expect((await json(await call("GET", "/v1/smart-lists", { token: other.token }))).data).toEqual([]);
  });
});

describe("smart_list.entered / exited", () => {
  it("fire once when a write makes a contact start or stop matching, and counts stay exact", async () => {
    const p = await createPrincipal();
    const before = await createContact(p.token);
    const list = await createList(p, { assignedTo: "none", hasOpenTask: "true" });
    const tasks = await createList(p, { hasOpenTask: "true" });
    expect(list.count).toBe(0);
    const c = await createContact(p.token);
    await addTask(p, c.id);
    await addTask(p, before.id);
    // The tasks' own events (the tasks domain stages them; here written by hand) name their contacts.
    const db = createDb(await tenantDb(p.organizationId));
    const taskEvent = (contactId: string): DomainEvent => ({
      id: crypto.randomUUID(),
      type: "task.created",
      organizationId: p.organizationId,
      actor: { type: "user", userId: p.userId },
      occurredAt: new Date().toISOString(),
      data: { object: { id: "t", contactId }, previousAttributes: null, changes: null },
    });
    await dispatchEvents([smartListConsumer], [taskEvent(c.id), taskEvent(before.id)], env, db);
    await consume(p);
    expect((await membership(p)).sort()).toEqual(
      [
        `smart_list.entered:${c.id}`,
        `smart_list.entered:${c.id}`,
        `smart_list.entered:${before.id}`,
        `smart_list.entered:${before.id}`,
      ].sort(),
    );
    expect(await countOf(p, list.id)).toBe(2);
    expect(await countOf(p, tasks.id)).toBe(2);

    await updateContact(p.token, c.id, { assignedTo: p.userId });
    await consume(p);
    await consume(p);
    const events = await membership(p);
    expect(events.filter((e) => e === `smart_list.exited:${c.id}`)).toHaveLength(1);
    expect(events).toHaveLength(5);
    expect(await countOf(p, list.id)).toBe(1);
    const exited = (await outbox(p)).find((e) => e.type === "smart_list.exited")!;
    expect(exited.data.object).toEqual({ id: list.id, name: "A list", contactId: c.id });
  });

  it("two evaluations of one contact racing stage its entered event once", async () => {
    const p = await createPrincipal();
    await createList(p, { status: "INACTIVE" });
    const c = await createContact(p.token);
    await updateContact(p.token, c.id, { status: "INACTIVE" });
    const events = (await outbox(p)).filter((e) => e.type.startsWith("contact."));
    const db = createDb(await tenantDb(p.organizationId));
    // Two deliveries of different events about the same contact, handled at the same time.
    await Promise.all(events.map((e) => dispatchEvents([smartListConsumer], [e], env, db)));
    expect(await membership(p)).toEqual([`smart_list.entered:${c.id}`]);
  });

  it("through time: the daily pass moves a not-contacted-in-30-days list once a day", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    await logCommunication(p.token, c.id, { type: "call", direction: "outbound", occurredAt: new Date().toISOString() });
    const list = await createList(p, { "lastContactedAt[lte]": "-P30D" }, "Not contacted in 30 days");
    expect(list.count).toBe(0);
    const db = createDb(await tenantDb(p.organizationId));
    const now = Date.now();
    await refreshSmartLists(env, db, new Date(now + DAY));
    expect(await membership(p)).toEqual([]);

    const later = new Date(now + 31 * DAY);
    await refreshSmartLists(env, db, later);
    expect(await membership(p)).toEqual([`smart_list.entered:${c.id}`]);
    // The count at that time (the list's own service, at that now).
    const { getSmartList } = await import("../../src/smart-lists/service");
    const { systemContext } = await import("../../src/shards/tenants");
    const ctx = systemContext(env, db, p.organizationId, "test", () => {});
    expect((await getSmartList(ctx, list.id, later)).count).toBe(1);
    // Once per day: the same day again does nothing, even after a write it would notice.
    await refreshSmartLists(env, db, new Date(later.getTime() + 60_000));
    expect(await membership(p)).toHaveLength(1);

    // Contacted again: the write's consumer (at the time it runs) takes it out, once however often it runs.
    await logCommunication(p.token, c.id, { type: "call", direction: "outbound", occurredAt: new Date().toISOString() });
    await consume(p);
    await consume(p);
    expect(await membership(p)).toEqual([`smart_list.entered:${c.id}`, `smart_list.exited:${c.id}`]);
    // 31 days after that contact, the next day's pass finds it not contacted in 30 days again.
    await refreshSmartLists(env, db, new Date(now + 32 * DAY));
    await refreshSmartLists(env, db, new Date(now + 32 * DAY + 60_000));
    expect(await membership(p)).toEqual([`smart_list.entered:${c.id}`, `smart_list.exited:${c.id}`, `smart_list.entered:${c.id}`]);
    expect((await getSmartList(ctx, list.id, new Date(now + 32 * DAY))).count).toBe(1);
    // The marks of the days done: the first day's is gone (older than two days), the last two stay.
    const marks = await (await tenantDb(p.organizationId))
      .prepare("SELECT event_id FROM processed_events WHERE consumer = 'smart-lists-daily' AND event_id LIKE ? ORDER BY event_id")
      .bind(`${list.id}@%`)
      .all<{ event_id: string }>();
    const dayOf = (ms: number) => `${list.id}@${new Date(ms).toISOString().slice(0, 10)}`;
    expect(marks.results.map((r) => r.event_id)).toEqual([dayOf(now + 31 * DAY), dayOf(now + 32 * DAY)]);
    expect(await countOf(p, list.id)).toBe(0);
  });
});

describe("a relative bound's count as time goes", () => {
  it("stays exact with no write between: the total counted once, then only the rows the bound crossed", async () => {
    const p = await createPrincipal();
    const now = Date.now();
    for (const daysAgo of [40, 35, 29, 20, 10]) {
      const c = await createContact(p.token, { type: "LEAD" });
      await logCommunication(p.token, c.id, {
        type: "call",
        direction: "outbound",
        occurredAt: new Date(now - daysAgo * DAY).toISOString(),
      });
    }
    const stale = await createList(p, { "lastContactedAt[lte]": "-P30D", type: "LEAD" }, "Not contacted in 30 days");
    const fresh = await createList(p, { "createdAt[gte]": "-P7D" }, "New this week");
    const db = createDb(await tenantDb(p.organizationId));
    const { getSmartList } = await import("../../src/smart-lists/service");
    const { systemContext } = await import("../../src/shards/tenants");
    const ctx = systemContext(env, db, p.organizationId, "test", () => {});
    const d1 = await tenantDb(p.organizationId);
    const counted = async (at: number) => ({
      stale: (await d1
        .prepare("SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND type = 'LEAD' AND last_contacted_at <= ?")
        .bind(p.organizationId, new Date(at - 30 * DAY).toISOString())
        .first<number>("n"))!,
      fresh: (await d1
        .prepare("SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND created_at >= ?")
        .bind(p.organizationId, new Date(at - 7 * DAY).toISOString())
        .first<number>("n"))!,
    });
    const cachedAt = async () =>
      (
        await d1
          .prepare("SELECT as_of FROM list_totals WHERE organization_id = ? AND resource = 'contacts' AND as_of IS NOT NULL ORDER BY as_of")
          .bind(p.organizationId)
          .all<{ as_of: string }>()
      ).results.map((r) => r.as_of);
    const shown = async (at: number) => ({
      stale: (await getSmartList(ctx, stale.id, new Date(at))).count,
      fresh: (await getSmartList(ctx, fresh.id, new Date(at))).count,
    });
    expect(await shown(now)).toEqual({ stale: 2, fresh: 5 });
    const first = await cachedAt();
    expect(first).toHaveLength(2);
    // Forward past one contact, then past two more; back before the first count; past the week of the creations.
    for (const at of [now + 2 * DAY, now + 11 * DAY, now - 6 * DAY, now + 8 * DAY, now + 60_000]) {
      expect(await shown(at)).toEqual(await counted(at));
    }
    expect(await shown(now + 11 * DAY)).toEqual({ stale: 4, fresh: 0 });
    // No write since: every figure came from the first counts and the bounds' drift, none counted again.
    expect(await cachedAt()).toEqual(first);
    // A write moves the version: the next read counts again, as of its own time.
    await createContact(p.token);
    expect(await shown(now + 3 * DAY)).toEqual(await counted(now + 3 * DAY));
    expect(await cachedAt()).not.toEqual(first);
  });
});

describe("permissions and the MCP tool", () => {
  it("reads need smart-lists:read, writes smart-lists:write, a list's contacts contacts:read too", async () => {
    const p = await createPrincipal();
    const list = await createList(p, { assignedTo: "none" });
    const reader = await createApiKey(p.token, ["smart-lists:read"]);
    expect((await call("GET", "/v1/smart-lists", { token: reader.key })).status).toBe(200);
    expect((await call("GET", `/v1/smart-lists/${list.id}`, { token: reader.key })).status).toBe(200);
    await expectCrmError(await call("GET", `/v1/smart-lists/${list.id}/contacts`, { token: reader.key }), 403, "permission_error");
    await expectCrmError(
      await call("POST", "/v1/smart-lists", { token: reader.key, body: { name: "x", query: {} } }),
      403,
      "permission_error",
    );
    const both = await createApiKey(p.token, ["smart-lists:read", "contacts:read"]);
    expect((await call("GET", `/v1/smart-lists/${list.id}/contacts`, { token: both.key })).status).toBe(200);
    const contactsOnly = await createApiKey(p.token, ["contacts:read"]);
    await expectCrmError(await call("GET", "/v1/smart-lists", { token: contactsOnly.key }), 403, "permission_error");
    // An agent saves and reads lists like anyone on the team.
    const agent = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    expect(
      (await call("POST", "/v1/smart-lists", { token: agent.token, body: { name: "Mine", query: { assignedTo: agent.userId } } })).status,
    ).toBe(201);
  });

  it("smart_list_counts answers each list's live count, read-only", async () => {
    const p = await createPrincipal();
    await createContact(p.token);
    const c = await createContact(p.token, { type: "CLIENT" });
    await createList(p, { type: "CLIENT" }, "Clients");
    await createList(p, { lastContactedAt: "never" }, "Never contacted");
    await logCommunication(p.token, c.id, { type: "sms", direction: "outbound", occurredAt: new Date().toISOString() });
    const client = await connect(p.token);
    const answer = await tool(client, "smart_list_counts");
    expect(answer.isError, answer.text).toBe(false);
    expect(answer.data.smartLists.map((l: { name: string; count: number }) => [l.name, l.count])).toEqual([
      ["Never contacted", 1],
      ["Clients", 1],
    ]);
    expect(answer.data.pagination).toMatchObject({ total: 2, hasMore: false });
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "smart_list_counts")!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    await client.close();
  });
});

describe("erasure", () => {
  it("an erased person's memberships go, without an exit event", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    await createList(p, { lastContactedAt: "never" });
    const members = async () =>
      (await (
        await tenantDb(p.organizationId)
      )
        .prepare("SELECT COUNT(*) AS n FROM smart_list_members WHERE organization_id = ? AND contact_id = ?")
        .bind(p.organizationId, c.id)
        .first<{ n: number }>())!.n;
    expect(await members()).toBe(1);
    const res = await call("DELETE", `/v1/contacts/${c.id}?erase=true`, { token: p.token });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    expect(await members()).toBe(0);
    await consume(p);
    expect(await membership(p)).toEqual([]);
  });
});

describe("imports", () => {
  it("contacts an import brings in enter the lists they match (the import writes no event per contact)", async () => {
    const p = await createPrincipal();
    await createList(p, { source: "IMPORTED_BOOK" });
    const res = await call("POST", "/v1/imports", {
      token: p.token,
      body: {
        kind: "contacts",
        rows: [
          { firstName: "Ada", lastName: "One", email: `${crypto.randomUUID()}@import.test`, source: "IMPORTED_BOOK" },
          { firstName: "Bo", lastName: "Two", email: `${crypto.randomUUID()}@import.test`, source: "WEBSITE" },
        ],
      },
    });
    expect(res.status, await res.clone().text()).toBe(202);
    await vi.waitFor(async () => expect((await outbox(p)).some((e) => e.type === "import.completed")).toBe(true), {
      timeout: 30_000,
      interval: 200,
    });
    await consume(p);
    await consume(p);
    const entered = await membership(p);
    expect(entered).toHaveLength(1);
    const ada = (await listPage(p.token, "source=IMPORTED_BOOK")).data[0]!;
    expect(entered).toEqual([`smart_list.entered:${ada.id}`]);
  });
});
