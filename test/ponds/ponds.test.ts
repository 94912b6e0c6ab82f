import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { reassignSlowLeads, routeExpiredOffers } from "../../src/ponds/service";
import { purgeTrash } from "../../src/trash/service";
import { call, json } from "../helpers/client";
import { uniqueEmail } from "../helpers/contacts";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

const ok = async (res: Response, status = 200) => {
  const body = await res.text();
  expect(res.status, body).toBe(status);
  return JSON.parse(body);
};

async function newPond(p: TestPrincipal, members: string[], name = "Downtown pond"): Promise<string> {
  return (await ok(await call("POST", "/v1/ponds", { token: p.token, body: { name, members } }), 201)).data.id;
}

async function route(p: TestPrincipal, leadRouting: Record<string, unknown>) {
  await ok(await call("PATCH", "/v1/organization", { token: p.token, body: { settings: { leadRouting } } }));
}

/** A new lead through the API: its contact id and assignee. */
async function newLead(p: TestPrincipal, extra: Record<string, unknown> = {}) {
  const res = await ok(
    await call("POST", "/v1/leads", { token: p.token, body: { source: "WEBSITE", person: { emails: [uniqueEmail("pond")] }, ...extra } }),
    201,
  );
  return res.data as { contactId: string; assignedTo: string | null };
}

const routingOf = async (p: TestPrincipal, contactId: string) =>
  (await ok(await call("GET", `/v1/contacts/${contactId}/routing`, { token: p.token }))).data;
const claim = (token: string, contactId: string) => call("POST", `/v1/contacts/${contactId}/claim`, { token });
const eventsFor = async (p: TestPrincipal, type: string, contactId: string) =>
  (await (
    await tenantDb(p.organizationId)
  )
    .prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = ? AND data LIKE ?")
    .bind(p.organizationId, type, `%${contactId}%`)
    .first<{ n: number }>())!.n;
const shardOf = async (p: TestPrincipal) => createDb(await tenantDb(p.organizationId));
const minutesFromNow = (m: number) => new Date(Date.now() + m * 60_000);

describe("ponds (/v1/ponds)", () => {
  it("honours If-Match on PATCH and DELETE with the version its reads answer as ETag", async () => {
    // A stale or garbage If-Match was ignored (the ETag was a hash of the answer): a lost update RFC 9110 forbids.
    const p = await createPrincipal();
    const created = await call("POST", "/v1/ponds", { token: p.token, body: { name: "North" } });
    const id = (await json(created)).data.id as string;
    expect(created.headers.get("etag")).toBe('"1"');
    const read = await call("GET", `/v1/ponds/${id}`, { token: p.token });
    expect(read.headers.get("etag")).toBe('"1"');
    const first = await call("PATCH", `/v1/ponds/${id}`, { token: p.token, body: { name: "North 2" }, headers: { "if-match": '"1"' } });
    expect(first.status, await first.clone().text()).toBe(200);
    expect(first.headers.get("etag")).toBe('"2"');
    for (const stale of ['"1"', 'W/"junk"']) {
      const again = await call("PATCH", `/v1/ponds/${id}`, { token: p.token, body: { name: "North 2" }, headers: { "if-match": stale } });
      expect((await json(again)).error.code).toBe("precondition_failed");
      const gone = await call("DELETE", `/v1/ponds/${id}`, { token: p.token, headers: { "if-match": stale } });
      expect(gone.status).toBe(412);
    }
    expect((await call("DELETE", `/v1/ponds/${id}`, { token: p.token, headers: { "if-match": '"2"' } })).status).toBe(200);
  });

  it("creates, lists, reads, renames and deletes a pond; members must be users of the organization", async () => {
    const p = await createPrincipal();
    const agent = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    const made = await ok(
      await call("POST", "/v1/ponds", { token: p.token, body: { name: "Buyers", members: [agent.userId, p.userId] } }),
      201,
    );
    expect(made.data).toMatchObject({ name: "Buyers", members: [agent.userId, p.userId].sort(), contactCount: 0 });
    const id = made.data.id;

    const bad = await call("POST", "/v1/ponds", { token: p.token, body: { name: "X", members: ["nobody-1", p.userId, "nobody-2"] } });
    expect(bad.status).toBe(422);
    expect((await json(bad)).error.errors.map((e: { field: string; code: string }) => `${e.field}:${e.code}`)).toEqual([
      "members.0:invalid_reference",
      "members.2:invalid_reference",
    ]);

    // Agents read ponds (contacts:read) but only owners and admins manage them.
    const page = await ok(await call("GET", "/v1/ponds", { token: agent.token }));
    expect(page.pagination).toMatchObject({ total: 1, hasMore: false });
    expect((await call("POST", "/v1/ponds", { token: agent.token, body: { name: "Mine" } })).status).toBe(403);
    expect((await call("PATCH", `/v1/ponds/${id}`, { token: agent.token, body: { name: "Mine" } })).status).toBe(403);

    const renamed = await ok(await call("PATCH", `/v1/ponds/${id}`, { token: p.token, body: { name: "Sellers", members: [p.userId] } }));
    expect(renamed.data).toMatchObject({ name: "Sellers", members: [p.userId] });
    expect((await ok(await call("GET", `/v1/ponds/${id}`, { token: agent.token }))).data.name).toBe("Sellers");

    await ok(await call("DELETE", `/v1/ponds/${id}`, { token: p.token }));
    expect((await call("GET", `/v1/ponds/${id}`, { token: p.token })).status).toBe(404);
  });

  it("keeps a lead routed to a pond unassigned and visible there; a member claims it, once", async () => {
    const p = await createPrincipal();
    const member = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    const outsider = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    const pond = await newPond(p, [member.userId]);
    await route(p, { mode: "rules", rules: [], default: { pondId: pond } });

    const lead = await newLead(p);
    expect(lead.assignedTo).toBeNull();
    const waiting = await ok(await call("GET", `/v1/ponds/${pond}/contacts`, { token: member.token }));
    expect(waiting.data.map((c: { id: string }) => c.id)).toEqual([lead.contactId]);
    expect(waiting.pagination.total).toBe(1);
    expect(await routingOf(p, lead.contactId)).toMatchObject({
      state: "pond",
      pondId: pond,
      trail: [{ event: "routed", target: { type: "pond", id: pond }, reason: expect.stringContaining("default") }],
    });
    // A pond with leads in it, or that the routing names, stays.
    expect((await json(await call("DELETE", `/v1/ponds/${pond}`, { token: p.token }))).error.code).toBe("pond_in_use");
    await route(p, { mode: "round_robin", zipRules: [] });
    expect((await json(await call("DELETE", `/v1/ponds/${pond}`, { token: p.token }))).error.code).toBe("pond_in_use");
    await route(p, { mode: "rules", rules: [], default: { pondId: pond } });

    expect((await claim(outsider.token, lead.contactId)).status).toBe(403);
    const claimed = await ok(await claim(member.token, lead.contactId));
    expect(claimed.data).toMatchObject({ id: lead.contactId, assignedTo: member.userId });
    expect((await json(await claim(member.token, lead.contactId))).error.code).toBe("already_claimed");
    expect((await ok(await call("GET", `/v1/ponds/${pond}/contacts`, { token: member.token }))).pagination.total).toBe(0);
    const trail = (await routingOf(p, lead.contactId)).trail;
    expect(trail.map((s: { event: string }) => s.event)).toEqual(["routed", "claimed"]);
    expect(trail[1].target).toEqual({ type: "user", id: member.userId });
    expect(await eventsFor(p, "contact.claimed", lead.contactId)).toBe(1);

    // A lead someone assigns by hand while it waits leaves the pond's list and cannot be claimed over them.
    const handed = await newLead(p);
    await ok(await call("PUT", `/v1/contacts/${handed.contactId}`, { token: p.token, body: { assignedTo: outsider.userId } }));
    expect((await ok(await call("GET", `/v1/ponds/${pond}/contacts`, { token: member.token }))).pagination.total).toBe(0);
    expect((await json(await claim(member.token, handed.contactId))).error.code).toBe("not_claimable");
  });

  it("20 simultaneous claims: exactly one wins, 19 answer 409, one contact.claimed", async () => {
    const p = await createPrincipal();
    const members = [
      p,
      ...(await Promise.all(Array.from({ length: 3 }, () => createPrincipal({ organizationId: p.organizationId, role: "agent" })))),
    ];
    const pond = await newPond(
      p,
      members.map((m) => m.userId),
    );
    await route(p, { mode: "rules", rules: [], default: { pondId: pond } });
    const lead = await newLead(p);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => claim(members[i % members.length]!.token, lead.contactId)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    const winner = await json(answers.find((a) => a.status === 200)!);
    expect(await eventsFor(p, "contact.claimed", lead.contactId)).toBe(1);
    expect((await routingOf(p, lead.contactId)).trail.filter((s: { event: string }) => s.event === "claimed")).toEqual([
      expect.objectContaining({ target: { type: "user", id: winner.data.assignedTo } }),
    ]);
  });

  it("offers a lead first-to-claim; unclaimed after its timeout it goes to the fallback, once however many passes run", async () => {
    const p = await createPrincipal();
    const [a, b] = await Promise.all([1, 2].map(() => createPrincipal({ organizationId: p.organizationId, role: "agent" })));
    const pond = await newPond(p, [p.userId]);
    await route(p, {
      mode: "rules",
      rules: [{ match: { source: "ZILLOW" }, target: { firstToClaim: { userIds: [a!.userId, b!.userId], fallback: { pondId: pond } } } }],
      default: { userId: p.userId },
    });
    const lead = await newLead(p, { source: "zillow" });
    expect(lead.assignedTo).toBeNull();
    const offered = await routingOf(p, lead.contactId);
    expect(offered).toMatchObject({
      state: "offered",
      offeredTo: [a!.userId, b!.userId],
      trail: [{ target: { type: "claim_group", id: "rules.0" } }],
    });
    // The default timeout: 30 minutes.
    const expires = Date.parse(offered.offerExpiresAt);
    expect(expires - Date.parse(offered.trail[0].at)).toBe(30 * 60_000);
    // Only those it was offered to may claim it.
    expect((await claim(p.token, lead.contactId)).status).toBe(403);

    const db = await shardOf(p);
    await routeExpiredOffers(env, db, minutesFromNow(29));
    expect((await routingOf(p, lead.contactId)).state).toBe("offered");
    // Two passes at once, 31 minutes on: the lead moves to the fallback pond once.
    await Promise.all([routeExpiredOffers(env, db, minutesFromNow(31)), routeExpiredOffers(env, db, minutesFromNow(31))]);
    const after = await routingOf(p, lead.contactId);
    expect(after).toMatchObject({ state: "pond", pondId: pond, offeredTo: null });
    expect(after.trail.map((s: { event: string }) => s.event)).toEqual(["routed", "offer_expired"]);
    expect(after.trail[1].target).toEqual({ type: "pond", id: pond });
    // It waits in the pond for its members now; the offer's users can no longer claim it.
    expect((await claim(a!.token, lead.contactId)).status).toBe(403);
    await ok(await claim(p.token, lead.contactId));

    // A lead claimed in time is not moved by the pass.
    const quick = await newLead(p, { source: "zillow" });
    await ok(await claim(b!.token, quick.contactId));
    await routeExpiredOffers(env, db, minutesFromNow(31));
    expect(await routingOf(p, quick.contactId)).toMatchObject({ state: "claimed" });
    expect((await ok(await call("GET", `/v1/contacts/${quick.contactId}`, { token: p.token }))).data.assignedTo).toBe(b!.userId);
  });

  it("speed to lead: a lead not contacted within N minutes of its assignment is reassigned, once; a contacted one stays", async () => {
    const p = await createPrincipal();
    const slow = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    await route(p, {
      mode: "rules",
      rules: [],
      default: { userId: slow.userId },
      speedToLead: { minutes: 15, reassignTo: { userId: p.userId } },
    });
    const cold = await newLead(p);
    const called = await newLead(p);
    expect([cold.assignedTo, called.assignedTo]).toEqual([slow.userId, slow.userId]);
    await ok(await call("POST", `/v1/contacts/${called.contactId}/activities`, { token: slow.token, body: { type: "PHONE_CALL" } }), 201);

    const db = await shardOf(p);
    await reassignSlowLeads(env, db, minutesFromNow(10));
    expect((await ok(await call("GET", `/v1/contacts/${cold.contactId}`, { token: p.token }))).data.assignedTo).toBe(slow.userId);
    await Promise.all([reassignSlowLeads(env, db, minutesFromNow(16)), reassignSlowLeads(env, db, minutesFromNow(16))]);
    expect((await ok(await call("GET", `/v1/contacts/${cold.contactId}`, { token: p.token }))).data.assignedTo).toBe(p.userId);
    expect((await ok(await call("GET", `/v1/contacts/${called.contactId}`, { token: p.token }))).data.assignedTo).toBe(slow.userId);
    const trail = (await routingOf(p, cold.contactId)).trail;
    expect(trail.map((s: { event: string }) => s.event)).toEqual(["routed", "speed_to_lead"]);
    expect(await eventsFor(p, "contact.assigned", cold.contactId)).toBe(2);
    // Once: no deadline follows the reassignment.
    expect((await routingOf(p, cold.contactId)).speedDueAt).toBeNull();
    expect((await routingOf(p, called.contactId)).speedDueAt).toBeNull();
    await reassignSlowLeads(env, db, minutesFromNow(120));
    expect((await routingOf(p, cold.contactId)).trail).toHaveLength(2);
  });

  it("the scheduled handler runs the offer pass with its scheduled time (npm run cron -- --at)", async () => {
    const p = await createPrincipal();
    const agent = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    await route(p, {
      mode: "rules",
      rules: [],
      default: { firstToClaim: { userIds: [agent.userId], timeoutMinutes: 5, fallback: { userId: p.userId } } },
    });
    const lead = await newLead(p);
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: minutesFromNow(6).getTime(), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect((await ok(await call("GET", `/v1/contacts/${lead.contactId}`, { token: p.token }))).data.assignedTo).toBe(p.userId);
    expect((await routingOf(p, lead.contactId)).trail.map((s: { event: string }) => s.event)).toEqual(["routed", "offer_expired"]);
  });

  it("the routing row goes with the person's erasure, and with the trash's purge", async () => {
    const p = await createPrincipal();
    const pond = await newPond(p, [p.userId]);
    await route(p, { mode: "rules", rules: [], default: { pondId: pond } });
    const lead = await newLead(p);
    const erased = await ok(await call("DELETE", `/v1/contacts/${lead.contactId}?erase=true`, { token: p.token }));
    expect(erased.data.erased).toMatchObject({ lead_routing: 1 });
    const left = await (await tenantDb(p.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM contact_routing WHERE contact_id = ?")
      .bind(lead.contactId)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);

    // A routed contact in the trash keeps its routing for a restore; the purge takes it with the contact.
    const trashed = await newLead(p);
    await ok(await call("DELETE", `/v1/contacts/${trashed.contactId}`, { token: p.token }));
    const routed = () =>
      tenantDb(p.organizationId).then((db) =>
        db.prepare("SELECT COUNT(*) AS n FROM contact_routing WHERE contact_id = ?").bind(trashed.contactId).first<{ n: number }>(),
      );
    expect((await routed())!.n).toBe(1);
    await purgeTrash(env, await shardOf(p), { now: new Date(Date.now() + 31 * 86_400_000) });
    expect((await routed())!.n).toBe(0);
  });
});
