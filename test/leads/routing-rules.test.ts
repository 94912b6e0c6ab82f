import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { drainLeadInbox } from "../../src/leads/inbox";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { uniqueEmail } from "../helpers/contacts";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

const ok = async (res: Response, status = 200) => {
  const body = await res.text();
  expect(res.status, body).toBe(status);
  return JSON.parse(body);
};
const settle = (p: TestPrincipal, leadRouting: Record<string, unknown>) =>
  call("PATCH", "/v1/organization", { token: p.token, body: { settings: { leadRouting } } });
const body = (extra: Record<string, unknown> = {}) => ({ source: "WEBSITE", person: { emails: [uniqueEmail("rules")] }, ...extra });
const lead = async (p: TestPrincipal, extra: Record<string, unknown> = {}) =>
  (await ok(await call("POST", "/v1/leads", { token: p.token, body: body(extra) }), 201)).data as {
    contactId: string;
    assignedTo: string | null;
  };
const preview = async (p: TestPrincipal, extra: Record<string, unknown> = {}) =>
  (await ok(await call("POST", "/v1/leads/route-preview", { token: p.token, body: body(extra) }))).data;
const routing = async (p: TestPrincipal, contactId: string) =>
  (await ok(await call("GET", `/v1/contacts/${contactId}/routing`, { token: p.token }))).data;

/** Rows of the organization's shard that intake writes, to tell that a preview wrote none. */
async function footprint(p: TestPrincipal) {
  const db = await tenantDb(p.organizationId);
  const n = async (table: string) =>
    (await db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE organization_id = ?`).bind(p.organizationId).first<{ n: number }>())!.n;
  const turn = await db
    .prepare("SELECT turn FROM lead_routing_cursors WHERE organization_id = ?")
    .bind(p.organizationId)
    .first<{ turn: number }>();
  return {
    contacts: await n("contacts"),
    activities: await n("contact_activities"),
    routing: await n("contact_routing"),
    events: await n("outbox_events"),
    intakes: await n("lead_intakes"),
    turn: turn?.turn ?? 0,
  };
}

describe("lead routing mode rules (settings.leadRouting)", () => {
  it("tries the rules in order, then the default; the preview says the same and why", async () => {
    const p = await createPrincipal();
    const [a, b] = (await Promise.all([1, 2].map(() => createPrincipal({ organizationId: p.organizationId, role: "agent" })))).map(
      (x) => x.userId,
    );
    const ring = [a!, b!].sort();
    const pond = (await ok(await call("POST", "/v1/ponds", { token: p.token, body: { name: "Zillow", members: [a!] } }), 201)).data.id;
    await ok(
      await settle(p, {
        mode: "rules",
        rules: [
          { match: { source: "zillow", tag: "luxury" }, target: { userId: a } },
          { match: { source: "ZILLOW" }, target: { pondId: pond } },
          { match: { zipPrefix: "941", type: "showing_request" }, target: { roundRobin: [a, b] } },
        ],
        default: { userId: p.userId },
      }),
    );
    const luxury = { source: "Zillow", tags: ["Luxury"] };
    expect(await preview(p, luxury)).toEqual({
      target: { type: "user", id: a },
      reason: expect.stringMatching(/^rules\.0 matched source ZILLOW, tag luxury/),
    });
    const first = await lead(p, luxury);
    expect(first.assignedTo).toBe(a);
    expect((await ok(await call("GET", `/v1/contacts/${first.contactId}`, { token: p.token }))).data.tags).toEqual(["Luxury"]);
    expect((await routing(p, first.contactId)).trail).toEqual([
      { at: expect.any(String), event: "routed", target: { type: "user", id: a }, reason: expect.stringContaining("rules.0") },
    ]);

    expect((await preview(p, { source: "zillow" })).target).toEqual({ type: "pond", id: pond });
    expect((await lead(p, { source: "zillow" })).assignedTo).toBeNull();

    // Both keys of a match must hold: a showing request from 941… takes turns, an inquiry from there goes to the default.
    const showing = () => ({ type: "showing_request", person: { emails: [uniqueEmail("z")], address: { zipCode: "94110" } } });
    expect((await preview(p, showing())).target).toEqual({ type: "user", id: ring[0] });
    expect([(await lead(p, showing())).assignedTo, (await lead(p, showing())).assignedTo]).toEqual(ring);
    const inquiry = { type: "inquiry", person: { emails: [uniqueEmail("z")], address: { zipCode: "94110" } } };
    expect(await preview(p, inquiry)).toEqual({ target: { type: "user", id: p.userId }, reason: expect.stringContaining("default") });
    expect((await lead(p, inquiry)).assignedTo).toBe(p.userId);
  });

  it("lists every user or pond the routing names that is none of the organization's", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const theirPond = (await ok(await call("POST", "/v1/ponds", { token: other.token, body: { name: "Not yours" } }), 201)).data.id;
    const stranger = other.userId;
    const res = await settle(p, {
      mode: "rules",
      rules: [
        { match: { source: "ZILLOW" }, target: { pondId: theirPond } },
        { match: {}, target: { firstToClaim: { userIds: [p.userId, stranger], fallback: { userId: stranger } } } },
      ],
      default: { roundRobin: [stranger] },
      speedToLead: { minutes: 5, reassignTo: { pondId: "no-such-pond" } },
    });
    expect(res.status).toBe(422);
    expect((await json(res)).error.errors.map((e: { field: string; code: string }) => e.field)).toEqual([
      "settings.leadRouting.rules.0.target.pondId",
      "settings.leadRouting.rules.1.target.firstToClaim.userIds.1",
      "settings.leadRouting.rules.1.target.firstToClaim.fallback.userId",
      "settings.leadRouting.default.roundRobin.0",
      "settings.leadRouting.speedToLead.reassignTo.pondId",
    ]);
    const noDefault = await settle(p, { mode: "rules", rules: [] });
    expect((await json(noDefault)).error.errors).toEqual([
      expect.objectContaining({ field: "settings.leadRouting.default", code: "default_target_required" }),
    ]);
    // The existing modes keep their shape: no rules keys appear.
    expect((await ok(await call("GET", "/v1/organization", { token: p.token }))).data.settings.leadRouting).toEqual({
      mode: "round_robin",
      zipRules: [],
    });
  });

  it("refuses a match no lead can meet: a source or tag intake would refuse (line breaks, bidi overrides, a comma, no letter)", async () => {
    // Such rules were saved and silently never applied; an override in a tag also shows reversed wherever it is read.
    const p = await createPrincipal();
    const res = await settle(p, {
      mode: "rules",
      rules: [
        { match: { source: "!!!", tag: "vip\r\nx" }, target: { userId: p.userId } },
        { match: { source: " ", tag: "\u202eabc" }, target: { userId: p.userId } },
        { match: { tag: "a,b" }, target: { userId: p.userId } },
      ],
      default: { userId: p.userId },
    });
    expect(res.status).toBe(422);
    expect((await json(res)).error.errors.map((e: { field: string; code: string }) => `${e.field}:${e.code}`).sort()).toEqual(
      [
        "settings.leadRouting.rules.0.match.source:invalid_format",
        "settings.leadRouting.rules.0.match.tag:invalid_character",
        "settings.leadRouting.rules.1.match.source:invalid_format",
        "settings.leadRouting.rules.1.match.tag:invalid_character",
        "settings.leadRouting.rules.2.match.tag:invalid_character",
      ].sort(),
    );
    const fine = await settle(p, {
      mode: "rules",
      rules: [{ match: { source: "open-house", tag: "🏠 Luxury" }, target: { userId: p.userId } }],
      default: { userId: p.userId },
    });
    expect((await ok(fine)).data.settings.leadRouting.rules[0].match).toEqual({ source: "OPEN_HOUSE", tag: "🏠 Luxury" });
    expect((await preview(p, { source: "Open House", tags: ["🏠 luxury"] })).target).toEqual({ type: "user", id: p.userId });
  });

  it("previews without creating anything: no contact, activity, routing row, event, kept answer or round robin turn", async () => {
    const p = await createPrincipal();
    await lead(p);
    const before = await footprint(p);
    const answer = await preview(p, { sourceEventId: "evt-preview", message: "hi" });
    expect(answer).toEqual({ target: { type: "user", id: p.userId }, reason: "round robin over the users who accept leads" });
    expect(await footprint(p)).toEqual(before);
    // Bad input is refused as intake refuses it; a form's key (no contacts:read) may not preview.
    expect((await call("POST", "/v1/leads/route-preview", { token: p.token, body: body({ person: { phones: ["abc"] } }) })).status).toBe(
      422,
    );
    const form = await createApiKey(p.token, ["leads:write"]);
    expect((await call("POST", "/v1/leads/route-preview", { token: form.key, body: body() })).status).toBe(403);
  });

  it("routes a stored lead (a form's key, drained by the cron) by the rules in the batch that creates it", async () => {
    const p = await createPrincipal();
    const pond = (await ok(await call("POST", "/v1/ponds", { token: p.token, body: { name: "Web", members: [p.userId] } }), 201)).data.id;
    await ok(
      await settle(p, { mode: "rules", rules: [{ match: { source: "IDX" }, target: { pondId: pond } }], default: { userId: p.userId } }),
    );
    const form = await createApiKey(p.token, ["leads:write"]);
    const email = uniqueEmail("form");
    expect((await call("POST", "/v1/leads", { token: form.key, body: { source: "idx", person: { emails: [email] } } })).status).toBe(202);
    await drainLeadInbox(env, createDb(await tenantDb(p.organizationId)), new Date(Date.now() + 5 * 60_000));
    await expect
      .poll(async () => (await ok(await call("GET", `/v1/ponds/${pond}/contacts`, { token: p.token }))).pagination.total, {
        timeout: 10_000,
      })
      .toBe(1);
    const [waiting] = (await ok(await call("GET", `/v1/ponds/${pond}/contacts`, { token: p.token }))).data;
    expect(waiting).toMatchObject({ email, assignedTo: null });
    expect((await routing(p, waiting.id)).state).toBe("pond");
  });
});
