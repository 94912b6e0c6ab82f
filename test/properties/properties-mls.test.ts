import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { refuseConnections } from "../helpers/outbound";
import { createProperty, getProperty, mlsListedProperty, mlsVars, RESO_TOKEN, resoListing } from "../helpers/properties";
import { openResoFeed } from "../helpers/receiver";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const sync = (owner: TestPrincipal, id: string, vars: Record<string, string> | undefined) =>
  call("POST", `/v1/properties/${id}/mls-sync`, { token: owner.token, vars });

async function eventTypes(organizationId: string): Promise<string[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT type FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at, rowid")
    .bind(organizationId)
    .all<{ type: string }>();
  return results.map((r) => r.type);
}

/** A property and a feed serving `listing` for it, with the sync's configuration. */
async function syncable(owner: TestPrincipal, listing?: (mlsId: string) => Record<string, unknown>) {
  const p = await mlsListedProperty(owner.token, listing);
  return { ...p, vars: mlsVars({ feed: p.feed }) };
}

describe("POST /v1/properties/{id}/mls-sync (RESO Web API)", () => {
  it("applies the MLS listing like a PUT: mapped fields, price history, the change list and the events", async () => {
    const owner = await createPrincipal();
    const { id, mlsId, feed, vars } = await syncable(owner);
    const res = await sync(owner, id, vars);
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({ mlsId, syncStatus: "COMPLETED" });
    expect(body.data.syncedAt).toMatch(ISO);
    // Only what the MLS changed, with both values (the city and the coordinates it sent are the same as ours).
    const changes = Object.fromEntries(
      (body.data.changes as { field: string; oldValue: unknown; newValue: unknown }[]).map((c) => [c.field, [c.oldValue, c.newValue]]),
    );
    expect(changes).toEqual({
      "listing.status": ["ACTIVE", "PENDING"],
      "listing.listPrice": [650000, 625000],
      "details.propertySubType": [null, "Condominium"],
      "details.bedrooms": [2, 3],
      "details.squareFootage": [1200, 1250],
      "details.pool": [false, true],
      "marketing.description": [null, "Ocean views from every room."],
      "hoa.monthlyFee": [null, 400],
      "taxes.annualAmount": [null, 9100.5],
      "taxes.taxYear": [null, 2025],
    });
    const property = await getProperty(owner.token, id);
    expect(property.listing.status).toBe("PENDING");
    expect(property.listing.listPrice).toBe(625000);
    expect(property.listing.priceHistory.map((h: { event: string; price: number }) => [h.event, h.price])).toEqual([
      ["LISTED", 650000],
      ["PRICE_REDUCTION", 625000],
    ]);
    expect(property.details).toMatchObject({
      propertyType: "CONDO",
      propertySubType: "Condominium",
      bedrooms: 3,
      squareFootage: 1250,
      pool: true,
    });
    expect(property.hoa.monthlyFee).toBe(400);
    expect(await eventTypes(owner.organizationId)).toEqual([
      "property.created",
      "property.updated",
      "property.status_changed",
      "property.price_changed",
    ]);
    // The request the MLS saw: our bearer token and an OData filter on the listing's key.
    const [request] = await feedRequests(feed);
    expect(request!.headers.authorization).toBe(`Bearer ${RESO_TOKEN}`);
    expect(decodeURIComponent(request!.url)).toContain(`$filter=ListingKey eq '${mlsId}' or ListingId eq '${mlsId}'`);
  });

  it("a second sync with nothing new changes nothing and emits nothing", async () => {
    const owner = await createPrincipal();
    const { id, vars } = await syncable(owner);
    expect((await sync(owner, id, vars)).status).toBe(200);
    const before = await getProperty(owner.token, id);
    const events = await eventTypes(owner.organizationId);
    const again = await json(await sync(owner, id, vars));
    expect(again.data.changes).toEqual([]);
    expect(await getProperty(owner.token, id)).toEqual(before);
    expect(await eventTypes(owner.organizationId)).toEqual(events);
  });

  it("finds the listing by its ListingId when no ListingKey matches", async () => {
    const owner = await createPrincipal();
    const byId = await syncable(owner, (mlsId) => resoListing(`KEY-${mlsId}`, { ListingId: mlsId, ListPrice: 700000 }));
    expect((await json(await sync(owner, byId.id, byId.vars))).data.changes).toContainEqual({
      field: "listing.listPrice",
      oldValue: 650000,
      newValue: 700000,
    });
    expect((await getProperty(owner.token, byId.id)).listing.priceHistory.at(-1)).toMatchObject({ event: "PRICE_INCREASE", price: 700000 });
  });

  it("a SOLD listing closes the property with its close price and date", async () => {
    const owner = await createPrincipal();
    const { id, vars } = await syncable(owner, (mlsId) =>
      resoListing(mlsId, { StandardStatus: "Closed", ListingContractDate: "2026-09-01", ClosePrice: 640000, CloseDate: "2026-11-01" }),
    );
    const res = await sync(owner, id, vars);
    expect(res.status, await res.clone().text()).toBe(200);
    const property = await getProperty(owner.token, id);
    expect(property.listing).toMatchObject({ status: "SOLD", listDate: "2026-09-01", soldPrice: 640000, soldDate: "2026-11-01" });
  });

  describe("when it cannot sync, it says why and writes nothing", () => {
    const unchanged = async (owner: TestPrincipal, id: string, attempt: () => Promise<Response>) => {
      const before = await getProperty(owner.token, id);
      const events = await eventTypes(owner.organizationId);
      const res = await attempt();
      const body = await json(res);
      expect(body.success).toBe(false);
      expect(await getProperty(owner.token, id)).toEqual(before);
      expect(await eventTypes(owner.organizationId)).toEqual(events);
      return { status: res.status, code: body.error.code as string, message: body.error.detail as string };
    };

    it("503 when this deployment has no MLS configured", async () => {
      const owner = await createPrincipal();
      const { id } = await syncable(owner);
      expect(await unchanged(owner, id, () => sync(owner, id, undefined))).toMatchObject({
        status: 503,
        code: "not_configured",
        message: expect.stringContaining("MLS_API_URL"),
      });
      // Another organization's property is unknown before anything else is said about it.
      expect((await sync(await createPrincipal(), id, undefined)).status).toBe(404);
    });

    it("409 when the property has no mlsId", async () => {
      const owner = await createPrincipal();
      const { id } = await createProperty(owner.token);
      expect(await unchanged(owner, id, () => sync(owner, id, mlsVars({})))).toMatchObject({ status: 409, code: "mls_id_missing" });
    });

    it("422 when the MLS has no such listing", async () => {
      const owner = await createPrincipal();
      const { id, vars } = await syncable(owner, () => resoListing("SOMEONE-ELSE"));
      expect(await unchanged(owner, id, () => sync(owner, id, vars))).toMatchObject({ status: 422, code: "mls_listing_not_found" });
    });

    it("502 when the MLS refuses our token, fails, cannot be reached or sends values we cannot take", async () => {
      const owner = await createPrincipal();
      const { id, feed } = await syncable(owner);
      expect(await unchanged(owner, id, () => sync(owner, id, { MLS_API_URL: feed, MLS_API_TOKEN: "wrong" }))).toMatchObject({
        status: 502,
        code: "mls_rejected",
      });

      const failing = await openResoFeed([], { token: RESO_TOKEN, status: 500 });
      expect(await unchanged(owner, id, () => sync(owner, id, mlsVars({ feed: failing.url })))).toMatchObject({
        status: 502,
        code: "mls_error",
      });

      const refused = refuseConnections(mlsVars({}).MLS_API_URL);
      expect(await unchanged(owner, id, () => sync(owner, id, mlsVars({})))).toMatchObject({ status: 502, code: "mls_unreachable" });
      expect(refused).toHaveLength(1);

      const mlsId = (await getProperty(owner.token, id)).mlsId as string;
      const absurd = await openResoFeed([resoListing(mlsId, { ListPrice: -5, BedroomsTotal: 5000 })], { token: RESO_TOKEN });
      const invalid = await unchanged(owner, id, () => sync(owner, id, mlsVars({ feed: absurd.url })));
      expect(invalid).toMatchObject({ status: 502, code: "mls_invalid_data" });
      expect(invalid.message).toMatch(/listing\.listPrice/);
      expect(invalid.message).toMatch(/details\.bedrooms/);
    });
  });

  it("concurrent syncs of one property apply the listing once: one change list, each event once", async () => {
    const owner = await createPrincipal();
    const { id, vars } = await syncable(owner);
    const answers = await Promise.all(Array.from({ length: 6 }, async () => json(await sync(owner, id, vars))));
    for (const a of answers) expect(a.success, JSON.stringify(a)).toBe(true);
    expect(answers.filter((a) => a.data.changes.length > 0)).toHaveLength(1);
    expect(await eventTypes(owner.organizationId)).toEqual([
      "property.created",
      "property.updated",
      "property.status_changed",
      "property.price_changed",
    ]);
    expect((await getProperty(owner.token, id)).listing.priceHistory).toHaveLength(2);
  });
});

/** The requests a feed (by its URL) received. */
async function feedRequests(feedUrl: string) {
  return ((await (await fetch(`${feedUrl}/requests`)).json()) as { requests: { url: string; headers: Record<string, string> }[] }).requests;
}
