import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { organizationSettings } from "../../src/organization/service";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

const DEFAULT_SETTINGS = { defaultPhoneRegion: "US", leadRouting: { mode: "round_robin", zipRules: [] } };

const patch = (p: TestPrincipal, body: unknown, headers: Record<string, string> = {}) =>
  call("PATCH", "/v1/organization", { token: p.token, body, headers });

async function eventsOf(organizationId: string, type: string) {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT actor, data FROM outbox_events WHERE organization_id = ? AND type = ? ORDER BY occurred_at, rowid")
    .bind(organizationId, type)
    .all<{ actor: string; data: string }>();
  return results.map((r) => ({ actor: JSON.parse(r.actor), data: JSON.parse(r.data) }));
}

/** The directory's copy of the organization (what `npm run token` and sign-in read). */
const directoryRow = (id: string) =>
  env.DB.prepare("SELECT display_name AS displayName, time_zone AS timeZone, settings, version FROM organizations WHERE id = ?")
    .bind(id)
    .first<{ displayName: string | null; timeZone: string; settings: string; version: number }>();

describe("the organization (/v1/organization)", () => {
  it("reads the caller's organization with its defaults and version ETag", async () => {
    const p = await createPrincipal();
    const res = await call("GET", "/v1/organization", { token: p.token });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"1"');
    expect((await json(res)).data).toMatchObject({
      id: p.organizationId,
      name: `Org ${p.organizationId}`,
      displayName: null,
      timeZone: "UTC",
      settings: DEFAULT_SETTINGS,
    });
  });

  it("changes displayName, timeZone and settings, emits organization.updated once, and the directory's copy follows", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    const res = await patch(p, {
      displayName: "Acme Realty Downtown",
      timeZone: "america/new_york",
      settings: { defaultPhoneRegion: "CA", leadRouting: { mode: "zip", zipRules: [{ zipPrefix: "m5v", userId: other.userId }] } },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"2"');
    const org = (await json(res)).data;
    expect(org).toMatchObject({
      name: `Org ${p.organizationId}`,
      displayName: "Acme Realty Downtown",
      timeZone: "America/New_York",
      settings: { defaultPhoneRegion: "CA", leadRouting: { mode: "zip", zipRules: [{ zipPrefix: "M5V", userId: other.userId }] } },
    });
    expect((await json(await call("GET", "/v1/organization", { token: p.token }))).data).toEqual(org);

    const [event, ...more] = await eventsOf(p.organizationId, "organization.updated");
    expect(more).toEqual([]);
    expect(event!.actor).toEqual({ type: "user", userId: p.userId });
    expect(event!.data.object).toEqual(org);
    expect(event!.data.changes.sort()).toEqual([
      "displayName",
      "settings.defaultPhoneRegion",
      "settings.leadRouting.mode",
      "settings.leadRouting.zipRules",
      "timeZone",
    ]);
    expect(event!.data.previousAttributes).toEqual({ displayName: null, timeZone: "UTC", settings: DEFAULT_SETTINGS });

    const copy = await directoryRow(p.organizationId);
    expect({ ...copy, settings: JSON.parse(copy!.settings) }).toEqual({
      displayName: "Acme Realty Downtown",
      timeZone: "America/New_York",
      settings: org.settings,
      version: 2,
    });
  });

  it("changes one setting without touching the others, and a change that changes nothing emits nothing", async () => {
    const p = await createPrincipal();
    await patch(p, { settings: { leadRouting: { mode: "zip" } } });
    const res = await patch(p, { settings: { defaultPhoneRegion: "GB" } });
    expect((await json(res)).data.settings).toEqual({ defaultPhoneRegion: "GB", leadRouting: { mode: "zip", zipRules: [] } });
    const same = await patch(p, { settings: { defaultPhoneRegion: "GB" }, timeZone: "UTC" });
    expect(same.status).toBe(200);
    expect(same.headers.get("etag")).toBe('"3"');
    expect(await eventsOf(p.organizationId, "organization.updated")).toHaveLength(2);
  });

  it("brings a directory copy left behind up to the shard's version when the change is sent again, without a second event", async () => {
    const p = await createPrincipal();
    await patch(p, { displayName: "Behind" });
    // As if the write to the directory had failed after the shard's batch committed.
    await env.DB.prepare("UPDATE organizations SET display_name = NULL, version = 1 WHERE id = ?").bind(p.organizationId).run();
    expect((await patch(p, { displayName: "Behind" })).status).toBe(200);
    expect(await directoryRow(p.organizationId)).toMatchObject({ displayName: "Behind", version: 2 });
    expect(await eventsOf(p.organizationId, "organization.updated")).toHaveLength(1);
  });

  it("hands lead intake (issue 33) the settings, defaults filled in", async () => {
    const p = await createPrincipal();
    const read = async () => organizationSettings({ db: createDb(await tenantDb(p.organizationId)), organizationId: p.organizationId });
    expect(await read()).toEqual(DEFAULT_SETTINGS);
    await patch(p, { settings: { defaultPhoneRegion: "MX" } });
    expect(await read()).toEqual({ ...DEFAULT_SETTINGS, defaultPhoneRegion: "MX" });
  });

  it("honours If-Match", async () => {
    const p = await createPrincipal();
    expect((await patch(p, { displayName: "One" }, { "if-match": '"1"' })).status).toBe(200);
    const stale = await patch(p, { displayName: "Two" }, { "if-match": '"1"' });
    expect(stale.status).toBe(412);
    expect((await json(stale)).error.code).toBe("precondition_failed");
    expect((await json(await call("GET", "/v1/organization", { token: p.token }))).data.displayName).toBe("One");
  });

  it("answers 422 listing every problem: name, an unknown zone, region, mode, setting and user, a duplicate prefix", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const member = await createPrincipal({ organizationId: p.organizationId });
    const res = await patch(p, {
      name: "Renamed",
      timeZone: "Mars/Olympus",
      settings: {
        defaultPhoneRegion: "XX",
        colour: "blue",
        leadRouting: {
          mode: "nearest",
          zipRules: [
            { zipPrefix: "941", userId: member.userId },
            { zipPrefix: "941", userId: stranger.userId },
            { zipPrefix: "9-4", userId: crypto.randomUUID() },
          ],
        },
      },
    });
    expect(res.status).toBe(422);
    const errors = (await json(res)).error.errors as { field: string; code: string }[];
    expect(errors.map((e) => `${e.field} ${e.code}`).sort()).toEqual([
      "name unknown_field",
      "settings.colour unknown_field",
      "settings.defaultPhoneRegion invalid_region",
      "settings.leadRouting.mode invalid_enum_value",
      "settings.leadRouting.zipRules.1.userId invalid_reference",
      "settings.leadRouting.zipRules.2.userId invalid_reference",
      "settings.leadRouting.zipRules.2.zipPrefix invalid_format",
      "timeZone invalid_time_zone",
    ]);
    // A body the schema takes is still refused for a user of another organization, and nothing changed.
    const foreign = await patch(p, {
      settings: { leadRouting: { mode: "zip", zipRules: [{ zipPrefix: "10", userId: stranger.userId }] } },
    });
    expect(foreign.status).toBe(422);
    expect((await json(foreign)).error.errors).toEqual([
      expect.objectContaining({ field: "settings.leadRouting.zipRules.0.userId", code: "invalid_reference" }),
    ]);
    expect((await patch(p, {})).status).toBe(422);
    expect(await eventsOf(p.organizationId, "organization.updated")).toEqual([]);
  });

  it("lets admins change it and refuses agents (403 insufficient_role), who may still read it", async () => {
    const owner = await createPrincipal();
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    expect((await patch(admin, { displayName: "By admin" })).status).toBe(200);
    const refused = await patch(agent, { displayName: "By agent" });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.code).toBe("insufficient_role");
    expect((await json(await call("GET", "/v1/organization", { token: agent.token }))).data.displayName).toBe("By admin");
  });

  it("delivers organization.updated to a subscribed receiver, signed", { timeout: 30_000 }, async () => {
    const p = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(p, { url: box.url, events: ["organization.updated"] });
    await patch(p, { timeZone: "Europe/Berlin" });
    await vi.waitFor(async () => expect(await box.count()).toBe(1), { timeout: 20_000, interval: 200 });
    const [req] = await box.received();
    expect(await verifyWebhook(sub.secret, req!.headers, req!.body)).toMatchObject({ ok: true });
    expect(JSON.parse(req!.body)).toMatchObject({
      event: "organization.updated",
      data: { object: { id: p.organizationId, timeZone: "Europe/Berlin" }, previousAttributes: { timeZone: "UTC" }, changes: ["timeZone"] },
      organization: { id: p.organizationId },
    });
  });
});
