import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { createProperty, getProperty, listProperties, propertyBody, updateProperty } from "../helpers/properties";
import { openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TODAY = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

interface Recorded {
  type: string;
  data: Record<string, any>;
}
async function eventsOf(organizationId: string): Promise<Recorded[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT type, data FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at, rowid")
    .bind(organizationId)
    .all<{ type: string; data: string }>();
  return results.map((r) => ({ type: r.type, data: JSON.parse(r.data) }));
}

const errorOf = async (res: Response) =>
  (await json(res)).error as { code: string; status: number; errors: { field: string; code: string }[] };

const FULL = {
  mlsId: "MLS-1001",
  address: {
    street: "1 Harbor Way",
    unit: "4B",
    city: "Sausalito",
    state: "CA",
    zipCode: "94965",
    county: "Marin",
    country: "US",
    coordinates: { latitude: 37.859, longitude: -122.485 },
  },
  details: {
    propertyType: "SINGLE_FAMILY",
    propertySubType: "Detached",
    bedrooms: 4,
    bathrooms: 2.5,
    halfBaths: 1,
    squareFootage: 2400,
    lotSize: 6000,
    yearBuilt: 1998,
    stories: 2,
    garage: true,
    parking: { spaces: 2, type: "ATTACHED" },
    pool: true,
    waterfront: true,
    view: "Bay",
  },
  listing: {
    listPrice: 2_450_000,
    originalPrice: 2_500_000,
    listDate: daysAgo(10),
    listingAgent: { name: "Lena Agent", email: "lena@brokerage.test", phone: "+1 415 555 0100" },
    coListingAgent: { name: "Co Agent", email: "co@brokerage.test" },
    commission: { buyerAgent: 0.025, listingAgent: 0.025 },
  },
  features: { interior: ["Hardwood floors"], exterior: ["Deck"], appliances: ["Range", "Dishwasher"] },
  media: {
    virtualTour: "https://tours.example.test/1",
    videos: [{ url: "https://video.example.test/1", type: "WALKTHROUGH" }],
    photos: [{ url: "https://cdn.example.test/a.jpg", caption: "Front", order: 0 }],
  },
  marketing: {
    description: "Waterfront home.\nBay views.",
    keywordTags: ["waterfront"],
    showingInstructions: "Call first",
    virtualShowings: true,
    openHouses: [{ date: "2030-05-01T13:00:00Z", endTime: "2030-05-01T16:00:00Z", type: "PUBLIC" }],
  },
  hoa: { monthlyFee: 150, includes: ["Landscaping"], restrictions: ["No short-term rentals"] },
  taxes: { annualAmount: 21000, taxYear: 2025, exemptions: ["Homeowner"] },
  disclosure: { floodZone: "AE", environmental: ["None known"], structural: [], other: [] },
};

describe("POST /v1/properties", () => {
  it("creates an ACTIVE listing: daysOnMarket 0, listDate today, one LISTED price entry, property.created", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/properties", { token: p.token, body: propertyBody() });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    const created = (await json(res)).data;
    expect(created).toMatchObject({
      id: expect.any(String),
      organizationId: p.organizationId,
      mlsId: null,
      listing: {
        status: "ACTIVE",
        listPrice: 650000,
        originalPrice: 650000,
        listDate: TODAY(),
        daysOnMarket: 0,
        priceHistory: [{ price: 650000, event: "LISTED", date: expect.stringMatching(ISO) }],
      },
      details: { propertyType: "CONDO", garage: false, pool: false, waterfront: false },
      media: { photos: [] },
      valuation: null,
      createdAt: expect.stringMatching(ISO),
    });
    expect(created.updatedAt).toBe(created.createdAt);
    expect(await getProperty(p.token, created.id)).toEqual(created);
    const [event, ...rest] = await eventsOf(p.organizationId);
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      type: "property.created",
      data: { object: { id: created.id, listing: { status: "ACTIVE" } }, previousAttributes: null, changes: null },
    });
    // Event objects leave out photo links, which would expire before a receiver reads them.
    expect(event!.data.object.media.photos).toBeUndefined();
  });

  it("stores every group and reads it back; a past listDate counts days on market; the commission total is derived", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, FULL);
    expect(created).toMatchObject({
      ...FULL,
      listing: { ...FULL.listing, commission: { buyerAgent: 0.025, listingAgent: 0.025, total: 0.05 }, daysOnMarket: 10 },
      media: { ...FULL.media, photos: [expect.objectContaining({ url: "https://cdn.example.test/a.jpg", caption: "Front", order: 0 })] },
    });
    expect(await getProperty(p.token, created.id)).toEqual(created);
  });

  it("lists every problem of a bad body in one 422 and writes nothing", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/properties", {
      token: p.token,
      body: {
        address: { street: "", city: "X" },
        details: { propertyType: "CASTLE", bedrooms: -1, bathrooms: 2.3 },
        listing: {
          listPrice: 0,
          status: "SOLD",
          commission: { buyerAgent: 0.03, listingAgent: 0.03, total: 0.07 },
          listDate: "2999-01-01",
        },
        media: { photos: [{ url: "http://insecure.test/a.jpg" }] },
        hoa: { monthlyFee: -5 },
        surprise: 1,
      },
    });
    expect(res.status).toBe(422);
    const fields = (await errorOf(res)).errors.map((e) => e.field);
    for (const f of [
      "address.street",
      "address.state",
      "address.zipCode",
      "details.propertyType",
      "details.bedrooms",
      "details.bathrooms",
      "listing.listPrice",
      "listing.status",
      "listing.commission.total",
      "listing.listDate",
      "media.photos.0.url",
      "hoa.monthlyFee",
      "surprise",
    ]) {
      expect(fields, f).toContain(f);
    }
    expect((await listProperties(p.token)).pagination.total).toBe(0);
    expect(await eventsOf(p.organizationId)).toEqual([]);
  });

  it("requires address, details and listing", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/properties", { token: p.token, body: {} });
    expect(res.status).toBe(422);
    expect((await errorOf(res)).errors).toEqual(
      expect.arrayContaining(["address", "details", "listing"].map((field) => expect.objectContaining({ field, code: "required" }))),
    );
  });

  it("a listing agent named by id must be a user of the organization; their name and e-mail fill the gaps", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const bad = await call("POST", "/v1/properties", {
      token: p.token,
      body: propertyBody({ listing: { listPrice: 1, listingAgent: { id: stranger.userId } } }),
    });
    expect(bad.status).toBe(422);
    expect((await errorOf(bad)).errors).toEqual([expect.objectContaining({ field: "listing.listingAgent.id", code: "invalid_reference" })]);
    const created = await createProperty(p.token, { listing: { listPrice: 500000, listingAgent: { id: p.userId, phone: "+1 555 0100" } } });
    const user = await env.DB.prepare("SELECT name, email FROM users WHERE id = ?")
      .bind(p.userId)
      .first<{ name: string | null; email: string }>();
    expect(created.listing.listingAgent).toEqual({
      id: p.userId,
      phone: "+1 555 0100",
      name: user!.name ?? user!.email,
      email: user!.email,
    });
    const withAgent = await getProperty(p.token, created.id, "?include=agent,analytics,comparables");
    expect(withAgent.agent).toEqual({
      id: p.userId,
      name: user!.name,
      email: user!.email,
      profileSlug: null,
      averageRating: null,
      totalReviews: 0,
    });
    expect(withAgent.analytics).toEqual({ views: 0, inquiries: 0, showings: 0, offers: 0, saveCount: 0, averageTimeOnSite: null });
    expect(withAgent.comparables).toEqual([]);
  });

  it("an mlsId is unique within the organization (409), not across organizations", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    await createProperty(p.token, { mlsId: "A-1" });
    const again = await call("POST", "/v1/properties", { token: p.token, body: propertyBody({ mlsId: "A-1" }) });
    expect(again.status).toBe(409);
    expect((await errorOf(again)).code).toBe("duplicate_mls_id");
    await createProperty(other.token, { mlsId: "A-1" });
  });

  it("POST /v1/properties/search is not served (spec rule 3)", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/properties/search", { token: p.token, body: { query: "x" } });
    expect(res.status).toBe(404);
  });
});

describe("PUT /v1/properties/{id}", () => {
  it("merges partial groups field by field; null clears a field or an optional group", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, FULL);
    const updated = await updateProperty(p.token, created.id, {
      address: { unit: null, city: "Tiburon" },
      details: { bedrooms: 5 },
      hoa: null,
      marketing: { keywordTags: ["view"] },
    });
    expect(updated.address).toEqual({ ...FULL.address, unit: undefined, city: "Tiburon" });
    expect(updated.address).not.toHaveProperty("unit");
    expect(updated.details).toEqual({ ...FULL.details, bedrooms: 5 });
    expect(updated.hoa).toBeNull();
    expect(updated.marketing).toEqual({ ...FULL.marketing, keywordTags: ["view"] });
    expect(updated.listing).toEqual(created.listing);
  });

  it("a price cut appends PRICE_REDUCTION and emits property.price_changed with the change; a rise PRICE_INCREASE", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, { listing: { listPrice: 500000 } });
    await updateProperty(p.token, created.id, { listing: { listPrice: 475000 } });
    const after = await updateProperty(p.token, created.id, { listing: { listPrice: 490000 } });
    expect(after.listing.priceHistory.map((h: { event: string; price: number }) => [h.event, h.price])).toEqual([
      ["LISTED", 500000],
      ["PRICE_REDUCTION", 475000],
      ["PRICE_INCREASE", 490000],
    ]);
    expect(after.listing.originalPrice).toBe(500000);
    const priced = (await eventsOf(p.organizationId)).filter((e) => e.type === "property.price_changed");
    expect(priced.map((e) => e.data.priceChange)).toEqual([
      { previousPrice: 500000, newPrice: 475000, changeAmount: -25000, changePercentage: -5 },
      { previousPrice: 475000, newPrice: 490000, changeAmount: 15000, changePercentage: 3.16 },
    ]);
    expect(priced[0]!.data).toMatchObject({
      object: { id: created.id, listing: { listPrice: 475000 } },
      previousAttributes: { listing: { listPrice: 500000 } },
      changes: ["listing.listPrice"],
    });
  });

  it("a status change emits property.status_changed; into SOLD it records the sale and freezes days on market", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, { listing: { listPrice: 800000, listDate: daysAgo(30) } });
    const pending = await updateProperty(p.token, created.id, { listing: { status: "PENDING" } });
    expect(pending.listing).toMatchObject({ status: "PENDING", daysOnMarket: 30 });
    const sold = await updateProperty(p.token, created.id, { listing: { status: "SOLD", soldPrice: 790000 } });
    expect(sold.listing).toMatchObject({ status: "SOLD", soldPrice: 790000, soldDate: TODAY(), daysOnMarket: 30 });
    expect(sold.listing.priceHistory.at(-1)).toMatchObject({ event: "SOLD", price: 790000 });
    const events = await eventsOf(p.organizationId);
    expect(events.map((e) => e.type)).toEqual([
      "property.created",
      "property.updated",
      "property.status_changed",
      "property.updated",
      "property.status_changed",
    ]);
    expect(events[2]!.data).toMatchObject({
      previousAttributes: { listing: { status: "ACTIVE" } },
      changes: ["listing.status"],
      object: { listing: { status: "PENDING" } },
    });
    // The frozen count survives in lists too: daysOnMarket[lte] reads it.
    expect((await listProperties(p.token, "daysOnMarket[lte]=29")).data).toEqual([]);
    expect((await listProperties(p.token, "daysOnMarket[lte]=30")).data.map((x) => x.id)).toEqual([created.id]);
  });

  it("refuses soldPrice on a listing that is not SOLD, and a soldDate before listDate", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, { listing: { listPrice: 800000, listDate: daysAgo(5) } });
    const early = await call("PUT", `/v1/properties/${created.id}`, { token: p.token, body: { listing: { soldPrice: 1 } } });
    expect(early.status).toBe(422);
    expect((await errorOf(early)).errors[0]).toMatchObject({ code: "invalid_state" });
    const before = await call("PUT", `/v1/properties/${created.id}`, {
      token: p.token,
      body: { listing: { status: "SOLD", soldDate: daysAgo(9) } },
    });
    expect(before.status).toBe(422);
    expect(await getProperty(p.token, created.id)).toEqual(created);
  });

  it("a fetched property sent back changes nothing and emits nothing", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, FULL);
    const echoed = await updateProperty(p.token, created.id, created);
    expect(echoed).toEqual(created);
    expect((await eventsOf(p.organizationId)).map((e) => e.type)).toEqual(["property.created"]);
  });

  it("honours If-Match: 412 on a stale version, and the write lands with the current one", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token);
    await updateProperty(p.token, created.id, { details: { bedrooms: 3 } });
    const stale = await call("PUT", `/v1/properties/${created.id}`, {
      token: p.token,
      body: { details: { bedrooms: 4 } },
      headers: { "if-match": '"1"' },
    });
    expect(stale.status).toBe(412);
    const fresh = await call("PUT", `/v1/properties/${created.id}`, {
      token: p.token,
      body: { details: { bedrooms: 4 } },
      headers: { "if-match": '"2"' },
    });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("etag")).toBe('"3"');
  });

  it("media.photos is the whole list: ids keep a photo (new caption), new entries link one, left-out ones go", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token, {
      media: { photos: [{ url: "https://cdn.example.test/1.jpg" }, { url: "https://cdn.example.test/2.jpg" }] },
    });
    const [first, second] = created.media.photos;
    const updated = await updateProperty(p.token, created.id, {
      media: {
        photos: [
          { id: second.id, caption: "Kitchen", order: 0 },
          { url: "https://cdn.example.test/3.jpg", order: 1 },
        ],
      },
    });
    expect(updated.media.photos.map((x: { url: string; caption: string | null }) => [x.url, x.caption])).toEqual([
      ["https://cdn.example.test/2.jpg", "Kitchen"],
      ["https://cdn.example.test/3.jpg", null],
    ]);
    expect(updated.media.photos.map((x: { id: string }) => x.id)).not.toContain(first.id);
    const unknown = await call("PUT", `/v1/properties/${created.id}`, { token: p.token, body: { media: { photos: [{ id: first.id }] } } });
    expect(unknown.status).toBe(422);
    expect((await errorOf(unknown)).errors).toEqual([expect.objectContaining({ field: "media.photos.0.id", code: "invalid_reference" })]);
  });
});

describe("DELETE /v1/properties/{id}", () => {
  it("deletes the property and its figures, emits property.deleted with the id, and the total drops", async () => {
    const p = await createPrincipal();
    const created = await createProperty(p.token);
    await createProperty(p.token);
    await call("POST", `/v1/properties/${created.id}/signals`, { token: p.token, body: { type: "VIEW", visitorId: "v1" } });
    const res = await call("DELETE", `/v1/properties/${created.id}`, { token: p.token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true, message: "Property deleted", data: { id: created.id, deleted: true } });
    expect((await call("GET", `/v1/properties/${created.id}`, { token: p.token })).status).toBe(404);
    expect((await call("DELETE", `/v1/properties/${created.id}`, { token: p.token })).status).toBe(404);
    expect((await listProperties(p.token)).pagination.total).toBe(1);
    const leftovers = await (await tenantDb(p.organizationId))
      .prepare(
        "SELECT (SELECT COUNT(*) FROM property_stats WHERE property_id = ?1) + (SELECT COUNT(*) FROM property_daily_stats WHERE property_id = ?1) + (SELECT COUNT(*) FROM property_daily_visitors WHERE property_id = ?1) AS n",
      )
      .bind(created.id)
      .first<{ n: number }>();
    expect(leftovers!.n).toBe(0);
    expect((await eventsOf(p.organizationId)).filter((e) => e.type === "property.deleted").map((e) => e.data)).toEqual([
      { object: { id: created.id }, previousAttributes: null, changes: null },
    ]);
  });
});

describe("property events reach a subscribed receiver, signed", { timeout: 30_000 }, () => {
  it("property.created and property.status_changed", async () => {
    const owner: TestPrincipal = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: ["property.created", "property.status_changed"] });
    const created = await createProperty(owner.token);
    await updateProperty(owner.token, created.id, { listing: { status: "PENDING" }, details: { bedrooms: 3 } });
    await vi.waitFor(async () => expect(await box.count()).toBe(2), { timeout: 20_000, interval: 200 });
    const received = await box.received();
    for (const r of received) expect(await verifyWebhook(sub.secret, r.headers, r.body)).toMatchObject({ ok: true });
    const payloads = received.map((r) => JSON.parse(r.body)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    expect(payloads.map((x) => x.event).sort()).toEqual(["property.created", "property.status_changed"]);
    const changed = payloads.find((x) => x.event === "property.status_changed");
    expect(changed.data).toMatchObject({
      object: { id: created.id, listing: { status: "PENDING" } },
      previousAttributes: { listing: { status: "ACTIVE" } },
      changes: ["listing.status"],
    });
  });
});
