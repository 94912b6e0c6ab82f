import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

interface Recorded {
  type: string;
  actor: { type: string; userId: string | null };
  data: { object: Record<string, any>; previousAttributes: Record<string, unknown> | null; changes: string[] | null; tags?: string[] };
}

async function eventsOf(organizationId: string): Promise<Recorded[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT type, actor, data FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at, rowid")
    .bind(organizationId)
    .all<{ type: string; actor: string; data: string }>();
  return results.map((r) => ({ type: r.type, actor: JSON.parse(r.actor), data: JSON.parse(r.data) }));
}

async function newContact(p: TestPrincipal, body: Record<string, unknown> = {}) {
  const res = await call("POST", "/v1/contacts", {
    token: p.token,
    body: { firstName: "Eve", lastName: "Stone", email: `${crypto.randomUUID()}@ev.test`, ...body },
  });
  expect(res.status).toBe(201);
  return (await json(res)).data;
}

describe("contact events", () => {
  it("contact.created carries the object and the acting user", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p);
    const [created, ...rest] = await eventsOf(p.organizationId);
    expect(rest).toEqual([]);
    expect(created).toEqual({
      type: "contact.created",
      actor: { type: "user", userId: p.userId },
      data: { object: contact, previousAttributes: null, changes: null },
    });
  });

  it("a create with tags and an assignee also says contact.tagged and contact.assigned", async () => {
    const p = await createPrincipal();
    await newContact(p, { tags: ["hot"], assignedTo: p.userId });
    expect((await eventsOf(p.organizationId)).map((e) => e.type)).toEqual(["contact.created", "contact.tagged", "contact.assigned"]);
  });

  it("contact.updated lists dotted changes and the prior values of changed attributes", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p, { address: { city: "Ottawa", street: "1 Main St" }, phone: "+1 613 555 0100" });
    const res = await call("PUT", `/v1/contacts/${contact.id}`, {
      token: p.token,
      body: { address: { city: "Toronto", street: "1 Main St" }, status: "INACTIVE" },
    });
    const updated = (await json(res)).data;
    const events = await eventsOf(p.organizationId);
    expect(events.map((e) => e.type)).toEqual(["contact.created", "contact.updated"]);
    const { data } = events[1]!;
    expect(data.object).toEqual(updated);
    expect(data.changes!.sort()).toEqual(["address.city", "status"]);
    expect(data.previousAttributes).toEqual({ address: { city: "Ottawa", street: "1 Main St" }, status: "ACTIVE" });
  });

  it("an update that changes nothing writes no event", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p, { notes: "same" });
    await call("PUT", `/v1/contacts/${contact.id}`, { token: p.token, body: { notes: "same", firstName: "Eve" } });
    expect((await eventsOf(p.organizationId)).map((e) => e.type)).toEqual(["contact.created"]);
  });

  it("tag changes by update say contact.tagged and contact.untagged with the tags concerned", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p, { tags: ["a", "b"] });
    await call("PUT", `/v1/contacts/${contact.id}`, { token: p.token, body: { tags: ["b", "c"] } });
    const events = (await eventsOf(p.organizationId)).slice(2);
    expect(events.map((e) => [e.type, e.data.tags ?? null])).toEqual([
      ["contact.updated", null],
      ["contact.tagged", ["c"]],
      ["contact.untagged", ["a"]],
    ]);
    expect(events[1]!.data.previousAttributes).toEqual({ tags: ["a", "b"] });
  });

  it("the tags route says contact.tagged with only the new tags", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p, { tags: ["a"] });
    await call("POST", `/v1/contacts/${contact.id}/tags`, { token: p.token, body: { tags: ["a", "z"] } });
    const last = (await eventsOf(p.organizationId)).at(-1)!;
    expect(last.type).toBe("contact.tagged");
    expect(last.data.tags).toEqual(["z"]);
    expect(last.data.object.tags).toEqual(["a", "z"]);
  });

  it("reassignment says contact.assigned with the previous assignee", async () => {
    const p = await createPrincipal();
    const colleague = await createPrincipal({ organizationId: p.organizationId });
    const contact = await newContact(p, { assignedTo: p.userId });
    await call("PUT", `/v1/contacts/${contact.id}`, { token: p.token, body: { assignedTo: colleague.userId } });
    const last = (await eventsOf(p.organizationId)).at(-1)!;
    expect(last.type).toBe("contact.assigned");
    expect(last.data.previousAttributes).toEqual({ assignedTo: p.userId });
    expect(last.data.object.assignedTo).toBe(colleague.userId);
  });

  it("contact.deleted carries the id only", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p);
    await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token });
    const last = (await eventsOf(p.organizationId)).at(-1)!;
    expect(last).toMatchObject({ type: "contact.deleted", data: { object: { id: contact.id }, previousAttributes: null, changes: null } });
    expect(Object.keys(last.data.object)).toEqual(["id"]);
  });

  it("bulk update writes one contact.updated per changed contact, none for failed ids", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const a = await newContact(p);
    const b = await newContact(p, { status: "INACTIVE" });
    const foreign = await newContact(other);
    await call("PATCH", "/v1/contacts/bulk", {
      token: p.token,
      body: { contactIds: [a.id, b.id, foreign.id], updates: { status: "INACTIVE" } },
    });
    const updates = (await eventsOf(p.organizationId)).filter((e) => e.type === "contact.updated");
    expect(updates.map((e) => e.data.object.id)).toEqual([a.id]);
    expect((await eventsOf(other.organizationId)).map((e) => e.type)).toEqual(["contact.created"]);
  });

  it("an activity that moves lastContactedAt says contact.updated", async () => {
    const p = await createPrincipal();
    const contact = await newContact(p);
    await call("POST", `/v1/contacts/${contact.id}/activities`, { token: p.token, body: { type: "PHONE_CALL" } });
    const last = (await eventsOf(p.organizationId)).at(-1)!;
    expect(last.type).toBe("contact.updated");
    expect(last.data.changes).toEqual(["lastContactedAt"]);
  });

  it("a refused change writes no event", async () => {
    const p = await createPrincipal();
    const a = await newContact(p);
    const b = await newContact(p);
    expect((await call("PUT", `/v1/contacts/${b.id}`, { token: p.token, body: { email: a.email } })).status).toBe(409);
    expect((await call("POST", "/v1/contacts", { token: p.token, body: { firstName: "x", lastName: "y", email: a.email } })).status).toBe(
      409,
    );
    expect((await eventsOf(p.organizationId)).map((e) => e.type)).toEqual(["contact.created", "contact.created"]);
  });
});
