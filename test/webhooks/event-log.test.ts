import { describe, expect, it, vi } from "vitest";
import { CATALOGUE } from "../../src/webhooks/catalogue";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createDeal, moveDeal } from "../helpers/deals";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

/**
 * GET /v1/events (issue 32): the organization's catalogue events of the last 30 days, each item the payload its
 * deliveries carried, newest first, keyset-paginated, filtered by type and by delivery success.
 */
const events = async (owner: TestPrincipal, query = "") => {
  const res = await call("GET", `/v1/events${query}`, { token: owner.token });
  return { status: res.status, body: await json(res) };
};

async function allPages(owner: TestPrincipal, query: string) {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const page = await events(owner, `?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(page.status).toBe(200);
    items.push(...page.body.data);
    cursor = page.body.pagination.nextCursor;
  } while (cursor);
  return items;
}

const outboxTypes = async (owner: TestPrincipal) =>
  (
    await (
      await tenantDb(owner.organizationId)
    )
      .prepare("SELECT type FROM outbox_events WHERE organization_id = ?")
      .bind(owner.organizationId)
      .all<{ type: string }>()
  ).results.map((r) => r.type);

describe("GET /v1/events", { timeout: 60_000 }, () => {
  it("lists each catalogue event as it was delivered, newest first, without internal events; keyset pages; type filter", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    await subscribe(owner, { url: box.url, events: [...CATALOGUE] });
    const contact = await createContact(owner.token);
    const deal = await createDeal(owner.token, { contactId: contact.id });
    await moveDeal(owner.token, deal.id, "CLOSED");
    // The close emitted the internal DEAL_WON beside the catalogue's deal.won: it is in the outbox, not in the log.
    await vi.waitFor(async () => expect(await outboxTypes(owner)).toContain("DEAL_WON"));
    const catalogue = (await outboxTypes(owner)).filter((t) => (CATALOGUE as readonly string[]).includes(t));
    await vi.waitFor(async () => expect(await box.count()).toBe(catalogue.length), { timeout: 20_000, interval: 100 });
    const delivered = new Map((await box.received()).map((r) => [JSON.parse(r.body).id as string, JSON.parse(r.body)]));

    const listed = await events(owner, "?limit=100");
    expect(listed.status).toBe(200);
    expect(listed.body.pagination).toMatchObject({ hasMore: false, nextCursor: null, total: catalogue.length, limit: 100 });
    const items = listed.body.data as any[];
    expect(items).toHaveLength(catalogue.length);
    for (const item of items) expect(item).toEqual(delivered.get(item.id));
    expect(items.map((i) => i.event)).not.toContain("DEAL_WON");
    expect(items.map((i) => i.event)).toEqual(
      expect.arrayContaining(["contact.created", "deal.created", "deal.won", "deal.closed", "deal.stage_changed"]),
    );
    const order = items.map((i) => [i.createdAt, i.id].join(" "));
    expect(order).toEqual([...order].sort().reverse());

    // Pages of 2 walk the same list, no item twice.
    expect((await allPages(owner, "limit=2")).map((i) => i.id)).toEqual(items.map((i) => i.id));
    const won = await events(owner, "?type=deal.won");
    expect(won.body.data.map((i: any) => i.event)).toEqual(["deal.won"]);
    expect(won.body.data[0]).toEqual(delivered.get(won.body.data[0].id));
    expect(won.body.pagination.total).toBe(1);

    for (const bad of [
      "?type=DEAL_WON",
      "?type=nope.nothing",
      "?limit=101",
      "?limit=0",
      "?deliverySuccess=maybe",
      "?cursor=garbage",
      "?since=2026-01-01",
    ]) {
      expect((await events(owner, bad)).status, bad).toBe(422);
    }
    // Another organization sees none of it.
    expect((await events(await createPrincipal())).body.data).toEqual([]);
  });

  it("deliverySuccess=false keeps the events with a delivery that has not succeeded; true those delivered everywhere", async () => {
    const owner = await createPrincipal();
    const ok = await openMailbox();
    const failing = await openMailbox({ fallback: 500 });
    await subscribe(owner, { url: ok.url, events: ["contact.created", "contact.updated"] });
    await subscribe(owner, { url: failing.url, events: ["contact.updated"] });
    const contact = await createContact(owner.token);
    expect((await call("PUT", `/v1/contacts/${contact.id}`, { token: owner.token, body: { notes: "changed" } })).status).toBe(200);
    const db = await tenantDb(owner.organizationId);
    await vi.waitFor(
      async () => {
        const { results } = await db
          .prepare("SELECT status FROM webhook_deliveries WHERE organization_id = ? ORDER BY status")
          .bind(owner.organizationId)
          .all<{ status: string }>();
        expect(results.map((r) => r.status)).toEqual(["delivered", "delivered", "retrying"]);
      },
      { timeout: 20_000, interval: 100 },
    );
    const unsuccessful = await events(owner, "?deliverySuccess=false");
    expect(unsuccessful.body.data.map((i: any) => i.event)).toEqual(["contact.updated"]);
    expect(unsuccessful.body.pagination.total).toBe(1);
    expect((await events(owner, "?deliverySuccess=true")).body.data.map((i: any) => i.event)).toEqual(["contact.created"]);
    expect((await events(owner, "?deliverySuccess=false&type=contact.created")).body.data).toEqual([]);
  });

  it("reaches 30 days back", async () => {
    const owner = await createPrincipal();
    const db = await tenantDb(owner.organizationId);
    const at = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
    const insert = (id: string, occurredAt: string) =>
      db
        .prepare(
          "INSERT INTO outbox_events (id, organization_id, type, actor, occurred_at, data, sent_at) VALUES (?, ?, 'contact.created', ?, ?, ?, ?)",
        )
        .bind(
          id,
          owner.organizationId,
          JSON.stringify({ type: "user", userId: owner.userId }),
          occurredAt,
          JSON.stringify({ object: { id: "c1" } }),
          occurredAt,
        );
    const kept = crypto.randomUUID();
    await db.batch([insert(kept, at(29)), insert(crypto.randomUUID(), at(31))]);
    const listed = await events(owner);
    expect(listed.body.data.map((i: any) => i.id)).toEqual([kept]);
    expect(listed.body.data[0]).toMatchObject({
      event: "contact.created",
      user: { id: owner.userId, email: `${owner.userId}@example.test` },
      organization: { id: owner.organizationId },
    });
  });

  it("shows a caller only the events whose objects it may read elsewhere: an agent no integration, a key with events:read no contact it may not read", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    await createApiKey(owner.token, ["contacts:read"]);
    await createContact(owner.token);
    await vi.waitFor(async () =>
      expect(await outboxTypes(owner)).toEqual(expect.arrayContaining(["integration.connected", "contact.created"])),
    );
    // The owner sees both; the agent, whose role does not allow integrations:read (GET /v1/integrations is a 403), the contact only.
    expect((await events(owner)).body.data.map((i: any) => i.event).sort()).toEqual(["contact.created", "integration.connected"]);
    const seen = await events(agent);
    expect(seen.body.data.map((i: any) => i.event)).toEqual(["contact.created"]);
    expect(seen.body.pagination.total).toBe(1);
    const asked = await events(agent, "?type=integration.connected");
    expect(asked.status).toBe(403);
    expect(asked.body.error.code).toBe("insufficient_role");
    // A key granted events:read alone reads no contact through the log.
    const key = await createApiKey(owner.token, ["events:read"]);
    const byKey = await call("GET", "/v1/events?type=contact.created", { token: key.key });
    expect(byKey.status).toBe(403);
    expect((await json(byKey)).error.code).toBe("insufficient_permission");
    expect((await json(await call("GET", "/v1/events", { token: key.key }))).data).toEqual([]);
  });
});
