import { createDb } from "../../src/db/client";
import { purgeTrash } from "../../src/trash/service";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb } from "../helpers/factories";
import {
  createProperty,
  getProperty,
  JPEG_HEAD,
  photoForm,
  PNG_1X1,
  soldListing,
  updateProperty,
  VALUATION_SUBJECT,
} from "../helpers/properties";
import { testApp } from "../helpers/test-app";

const errorOf = async (res: Response) => (await json(res)).error as { code: string; errors: { field: string; code: string }[] };
const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;
const eventsOf = async (organizationId: string, type: string) =>
  (
    await (
      await tenantDb(organizationId)
    )
      .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = ? ORDER BY occurred_at, rowid")
      .bind(organizationId, type)
      .all<{ data: string }>()
  ).results.map((r) => JSON.parse(r.data));
const filesUnder = async (prefix: string) => (await env.FILES.list({ prefix })).objects.map((o) => o.key);

async function pdfText(url: string): Promise<string> {
  const download = await call("GET", pathOf(url));
  expect(download.status).toBe(200);
  expect(download.headers.get("content-type")).toBe("application/pdf");
  const { extractText, getDocumentProxy } = await import("unpdf");
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(await download.arrayBuffer())), { mergePages: true });
  return text as string;
}

describe("photos", () => {
  it("uploads several files with captions and order, checks them by content, and serves them by signed link", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const res = await call("POST", `/v1/properties/${property.id}/photos`, {
      token: p.token,
      // The declared types are wrong on purpose: the bytes decide.
      body: photoForm(
        [
          { bytes: PNG_1X1, name: "front.jpg", type: "image/jpeg" },
          { bytes: JPEG_HEAD, name: "back.png", type: "text/plain" },
        ],
        { captions: ["Front", "Back"] },
      ),
    });
    expect(res.status).toBe(201);
    const photos = (await json(res)).data;
    expect(photos).toEqual([
      {
        id: expect.any(String),
        url: expect.stringContaining("/api/public/files/"),
        caption: "Front",
        order: 0,
        uploadedAt: expect.any(String),
      },
      {
        id: expect.any(String),
        url: expect.stringContaining("/api/public/files/"),
        caption: "Back",
        order: 1,
        uploadedAt: expect.any(String),
      },
    ]);
    const png = await call("GET", pathOf(photos[0].url));
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await png.arrayBuffer())).toEqual(PNG_1X1);
    expect((await call("GET", pathOf(photos[1].url))).headers.get("content-type")).toBe("image/jpeg");
    const read = await getProperty(p.token, property.id);
    expect(read.media.photos.map((x: { id: string }) => x.id)).toEqual(photos.map((x: { id: string }) => x.id));
    const [event] = await eventsOf(p.organizationId, "property.photos_uploaded");
    expect(event).toMatchObject({
      object: { id: property.id },
      changes: ["media.photos"],
      photos: [
        { id: photos[0].id, caption: "Front" },
        { id: photos[1].id, caption: "Back" },
      ],
    });
    // More uploads go after the existing ones unless an order is given.
    const more = await json(
      await call("POST", `/v1/properties/${property.id}/photos`, { token: p.token, body: photoForm([{ bytes: PNG_1X1 }]) }),
    );
    expect(more.data[0].order).toBe(2);
    // Lists sign photo links only when asked.
    const listed = await json(await call("GET", "/v1/properties", { token: p.token }));
    expect(listed.data[0].media.photos).toBeUndefined();
    const withPhotos = await json(await call("GET", "/v1/properties?include=photos", { token: p.token }));
    expect(withPhotos.data[0].media.photos).toHaveLength(3);
  });

  it("refuses files that are not images (whatever their name), and stores nothing", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const html = new TextEncoder().encode("<html><script>alert(1)</script></html>");
    const res = await call("POST", `/v1/properties/${property.id}/photos`, {
      token: p.token,
      body: photoForm([{ bytes: PNG_1X1 }, { bytes: html, name: "x.jpg", type: "image/jpeg" }]),
    });
    expect(res.status).toBe(422);
    expect((await errorOf(res)).errors).toEqual([expect.objectContaining({ field: "photos.1", code: "unsupported_image_type" })]);
    expect(await filesUnder(`properties/${p.organizationId}/`)).toEqual([]);
    expect((await getProperty(p.token, property.id)).media.photos).toEqual([]);
    const empty = await call("POST", `/v1/properties/${property.id}/photos`, { token: p.token, body: new FormData() });
    expect(empty.status).toBe(422);
  });

  it("answers 413 for a file over 10 MiB and for a request over 25 MiB", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const big = new Uint8Array(10 * 1024 * 1024 + 1);
    big.set(JPEG_HEAD);
    const one = await call("POST", `/v1/properties/${property.id}/photos`, { token: p.token, body: photoForm([{ bytes: big }]) });
    expect(one.status).toBe(413);
    const nine = new Uint8Array(9 * 1024 * 1024);
    nine.set(JPEG_HEAD);
    const three = await call("POST", `/v1/properties/${property.id}/photos`, {
      token: p.token,
      body: photoForm([{ bytes: nine }, { bytes: nine }, { bytes: nine }]),
    });
    expect(three.status).toBe(413);
    expect(await filesUnder(`properties/${p.organizationId}/`)).toEqual([]);
  });

  it("reorders photos; unknown ids are a 422; a deleted property's files go", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const photos = (
      await json(
        await call("POST", `/v1/properties/${property.id}/photos`, {
          token: p.token,
          body: photoForm([{ bytes: PNG_1X1 }, { bytes: PNG_1X1 }, { bytes: PNG_1X1 }]),
        }),
      )
    ).data;
    const res = await call("PUT", `/v1/properties/${property.id}/photos/order`, {
      token: p.token,
      body: {
        photoOrder: [
          { id: photos[2].id, order: 0 },
          { id: photos[0].id, order: 5 },
        ],
      },
    });
    expect(res.status).toBe(200);
    const ordered = (await json(res)).data;
    expect(ordered.map((x: { id: string; order: number }) => [x.id, x.order])).toEqual([
      [photos[2].id, 0],
      [photos[1].id, 1],
      [photos[0].id, 5],
    ]);
    expect((await getProperty(p.token, property.id)).media.photos.map((x: { id: string }) => x.id)).toEqual(
      ordered.map((x: { id: string }) => x.id),
    );
    const unknown = await call("PUT", `/v1/properties/${property.id}/photos/order`, {
      token: p.token,
      body: { photoOrder: [{ id: "nope", order: 1 }] },
    });
    expect(unknown.status).toBe(422);
    expect(await filesUnder(`properties/${p.organizationId}/${property.id}/`)).toHaveLength(3);
    // Removing a photo from media.photos deletes its file; deleting the property keeps the rest for a restore, and the
    // purge of the trash deletes them.
    await updateProperty(p.token, property.id, { media: { photos: ordered.slice(0, 2).map((x: { id: string }) => ({ id: x.id })) } });
    await vi.waitFor(async () => expect(await filesUnder(`properties/${p.organizationId}/${property.id}/`)).toHaveLength(2));
    expect((await call("DELETE", `/v1/properties/${property.id}`, { token: p.token })).status).toBe(200);
    expect(await filesUnder(`properties/${p.organizationId}/${property.id}/`)).toHaveLength(2);
    const db = await tenantDb(p.organizationId);
    await db
      .prepare("UPDATE trash_entries SET restorable_until = ? WHERE record_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), property.id)
      .run();
    await purgeTrash(env, createDb(db));
    expect(await filesUnder(`properties/${p.organizationId}/${property.id}/`)).toEqual([]);
  });
});

describe("valuation", () => {
  it("values a property from the comparable sales built for it, weighted by similarity, and keeps the latest", async () => {
    const p = await createPrincipal();
    const comps = [
      await soldListing(p.token, { lat: 30.275, lng: -97.74, sqft: 1900, price: 1900 * 300, soldDaysAgo: 20, street: "1 Near St" }),
      await soldListing(p.token, { lat: 30.26, lng: -97.745, sqft: 2100, price: 2100 * 300, soldDaysAgo: 40, street: "2 Near St" }),
      await soldListing(p.token, { lat: 30.28, lng: -97.73, sqft: 2000, price: 2000 * 300, soldDaysAgo: 60, street: "3 Near St" }),
      await soldListing(p.token, { lat: 30.27, lng: -97.75, sqft: 2200, price: 2200 * 300, soldDaysAgo: 80, street: "4 Near St" }),
    ];
    // Not comparable: another type, too far (about 70 miles), too big, sold too long ago.
    await soldListing(p.token, { lat: 30.27, lng: -97.741, sqft: 2000, price: 900000, soldDaysAgo: 10, type: "CONDO" });
    await soldListing(p.token, { lat: 31.27, lng: -97.74, sqft: 2000, price: 100000, soldDaysAgo: 10 });
    await soldListing(p.token, { lat: 30.27, lng: -97.742, sqft: 5000, price: 5000 * 100, soldDaysAgo: 10 });
    await soldListing(p.token, { lat: 30.27, lng: -97.743, sqft: 2000, price: 10, soldDaysAgo: 800 });
    const subject = await createProperty(p.token, VALUATION_SUBJECT);
    expect((await call("GET", `/v1/properties/${subject.id}/valuation`, { token: p.token })).status).toBe(404);

    const res = await call("POST", `/v1/properties/${subject.id}/valuation`, { token: p.token });
    expect(res.status).toBe(201);
    const v = (await json(res)).data;
    // Every comparable sold at $300 a square foot in the last months: the estimate is 2000 x 300, the range ±3%.
    expect(v).toMatchObject({ estimatedValue: 600000, pricePerSquareFoot: 300, priceRange: { low: 582000, high: 618000 } });
    expect(v.comparables.map((c: { id: string }) => c.id).sort()).toEqual(comps.map((c) => c.id).sort());
    expect(v.comparables[0]).toMatchObject({
      address: expect.stringContaining("Near St, Austin, TX 78701"),
      soldPrice: expect.any(Number),
      soldDate: expect.any(String),
      similarity: expect.any(Number),
    });
    expect(v.comparables.map((c: { similarity: number }) => c.similarity)).toEqual(
      [...v.comparables.map((c: { similarity: number }) => c.similarity)].sort((a, b) => b - a),
    );
    expect(v.confidence).toBeGreaterThan(40);
    expect(v.confidence).toBeLessThanOrEqual(85);
    for (const f of Object.values(v.factors) as number[]) expect(f).toBeGreaterThan(0);
    expect(v.marketTrends).toEqual({ appreciation: null, averageDaysOnMarket: 30, pricePerSquareFoot: 300 });

    expect((await json(await call("GET", `/v1/properties/${subject.id}/valuation`, { token: p.token }))).data).toEqual(v);
    const read = await getProperty(p.token, subject.id, "?include=comparables");
    expect(read.valuation).toMatchObject({
      estimatedValue: 600000,
      confidence: v.confidence,
      comparables: expect.arrayContaining([expect.objectContaining({ squareFootage: 2000 })]),
    });
    expect(read.comparables).toEqual(v.comparables);
  });

  it("the cheaper, more similar sales pull the estimate; the spread widens the range and lowers confidence", async () => {
    const p = await createPrincipal();
    await soldListing(p.token, { lat: 30.2701, lng: -97.7401, sqft: 2000, price: 2000 * 280, soldDaysAgo: 5 });
    await soldListing(p.token, { lat: 30.2702, lng: -97.7402, sqft: 2000, price: 2000 * 290, soldDaysAgo: 6 });
    await soldListing(p.token, { lat: 30.33, lng: -97.8, sqft: 1500, price: 1500 * 400, soldDaysAgo: 200, yearBuilt: 1960 });
    const subject = await createProperty(p.token, VALUATION_SUBJECT);
    const v = (await json(await call("POST", `/v1/properties/${subject.id}/valuation`, { token: p.token }))).data;
    expect(v.estimatedValue).toBeGreaterThan(2000 * 280);
    expect(v.estimatedValue).toBeLessThan(2000 * 340); // below the plain mean of the three price levels
    expect(v.priceRange.low).toBeLessThan(v.estimatedValue);
    expect(v.priceRange.high - v.priceRange.low).toBeGreaterThan(0.06 * v.estimatedValue);
  });

  it("with too few comparables it says so (422 insufficient_comparables) and stores nothing", async () => {
    const p = await createPrincipal();
    await soldListing(p.token, { lat: 30.27, lng: -97.74, sqft: 2000, price: 600000, soldDaysAgo: 10 });
    const subject = await createProperty(p.token, VALUATION_SUBJECT);
    const res = await call("POST", `/v1/properties/${subject.id}/valuation`, { token: p.token });
    expect(res.status).toBe(422);
    const error = await errorOf(res);
    expect(error.code).toBe("insufficient_comparables");
    expect((await getProperty(p.token, subject.id)).valuation).toBeNull();
    // Another organization's sales never count.
    const other = await createPrincipal();
    for (let i = 0; i < 4; i++) await soldListing(other.token, { lat: 30.27, lng: -97.74, sqft: 2000, price: 600000, soldDaysAgo: 10 + i });
    expect((await call("POST", `/v1/properties/${subject.id}/valuation`, { token: p.token })).status).toBe(422);
  });
});

describe("analytics from recorded signals", () => {
  it("counts views, unique visitors, time on site, referrers and the rest over the period; inquiries, showings and offers go out as events", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const contact = (
      await json(
        await call("POST", "/v1/contacts", {
          token: p.token,
          body: { firstName: "Buyer", lastName: "One", email: `${crypto.randomUUID()}@b.test` },
        }),
      )
    ).data;
    const signals = [
      { type: "VIEW", visitorId: "v1", referrer: "https://www.zillow.com/homedetails/1" },
      { type: "VIEW", visitorId: "v1", referrer: "https://zillow.com/x" },
      { type: "VIEW", visitorId: "v1", referrer: "https://www.zillow.com/y" },
      { type: "VIEW", visitorId: "v2", referrer: "newsletter", timeOnSiteSeconds: 60 },
      { type: "VIEW", visitorId: "v3", timeOnSiteSeconds: 120 },
      { type: "SAVE", visitorId: "v1" },
      { type: "SHARE", visitorId: "v2" },
      { type: "INQUIRY", contactId: contact.id, message: "Is it available?" },
      { type: "SHOWING", contactId: contact.id, scheduledAt: "2030-01-01T15:00:00Z" },
      { type: "OFFER", contactId: contact.id, amount: 640000 },
    ];
    for (const body of signals) {
      const res = await call("POST", `/v1/properties/${property.id}/signals`, { token: p.token, body });
      expect(res.status, await res.clone().text()).toBe(201);
    }
    const res = await call("GET", `/v1/properties/${property.id}/analytics?period=7d`, { token: p.token });
    expect(res.status).toBe(200);
    const a = (await json(res)).data;
    expect(a).toMatchObject({
      period: "7d",
      views: 5,
      uniqueViews: 3,
      inquiries: 1,
      showings: 1,
      offers: 1,
      saveCount: 1,
      shareCount: 1,
      averageTimeOnSite: 90,
      conversionRate: 33.33,
    });
    expect(a.topReferrers).toEqual([
      { source: "zillow.com", views: 3, percentage: 60 },
      { source: "direct", views: 1, percentage: 20 },
      { source: "newsletter", views: 1, percentage: 20 },
    ]);
    expect(a.viewsByDay).toHaveLength(7);
    expect(a.viewsByDay.at(-1)).toEqual({ date: new Date().toISOString().slice(0, 10), views: 5 });
    expect(a.viewsByDay.slice(0, 6).every((d: { views: number }) => d.views === 0)).toBe(true);
    expect((await json(await call("GET", `/v1/properties/${property.id}/analytics`, { token: p.token }))).data.viewsByDay).toHaveLength(30);
    expect((await getProperty(p.token, property.id, "?include=analytics")).analytics).toEqual({
      views: 5,
      inquiries: 1,
      showings: 1,
      offers: 1,
      saveCount: 1,
      averageTimeOnSite: 90,
    });
    const [inquiry] = await eventsOf(p.organizationId, "property.inquiry_received");
    expect(inquiry).toMatchObject({
      object: { id: property.id },
      signal: { type: "INQUIRY", contactId: contact.id, message: "Is it available?" },
    });
    expect(await eventsOf(p.organizationId, "property.showing_scheduled")).toHaveLength(1);
    expect((await eventsOf(p.organizationId, "property.offer_received"))[0].signal.amount).toBe(640000);
    // A visitor id is kept only as a hash.
    const stored = await (await tenantDb(p.organizationId))
      .prepare("SELECT visitor_hash FROM property_daily_visitors WHERE property_id = ?")
      .bind(property.id)
      .all<{ visitor_hash: string }>();
    expect(stored.results.map((r) => r.visitor_hash)).not.toContain("v1");
  });

  it("a signal retried with its Idempotency-Key counts once; bad references and unknown properties are refused", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const property = await createProperty(p.token);
    const key = crypto.randomUUID();
    for (let i = 0; i < 3; i++) {
      expect(
        (
          await call("POST", `/v1/properties/${property.id}/signals`, {
            token: p.token,
            body: { type: "VIEW" },
            headers: { "idempotency-key": key },
          })
        ).status,
      ).toBe(201);
    }
    expect((await json(await call("GET", `/v1/properties/${property.id}/analytics`, { token: p.token }))).data.views).toBe(1);
    const foreignContact = (
      await json(
        await call("POST", "/v1/contacts", {
          token: stranger.token,
          body: { firstName: "S", lastName: "T", email: `${crypto.randomUUID()}@s.test` },
        }),
      )
    ).data;
    const bad = await call("POST", `/v1/properties/${property.id}/signals`, {
      token: p.token,
      body: { type: "INQUIRY", contactId: foreignContact.id },
    });
    expect(bad.status).toBe(422);
    expect((await call("POST", `/v1/properties/${property.id}/signals`, { token: stranger.token, body: { type: "VIEW" } })).status).toBe(
      404,
    );
    expect((await call("GET", `/v1/properties/${property.id}/analytics?period=1y`, { token: p.token })).status).toBe(422);
  });

  it("honours If-Match: a stale version is a 412 that counts nothing and emits nothing; the current one or * counts", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    await updateProperty(p.token, property.id, { details: { bedrooms: 3 } });
    const signal = (body: unknown, ifMatch: string) =>
      call("POST", `/v1/properties/${property.id}/signals`, { token: p.token, body, headers: { "if-match": ifMatch } });
    const views = async () =>
      (await json(await call("GET", `/v1/properties/${property.id}/analytics`, { token: p.token }))).data.views as number;

    const stale = await signal({ type: "VIEW", visitorId: "v1" }, '"1"');
    expect(stale.status).toBe(412);
    expect((await errorOf(stale)).code).toBe("precondition_failed");
    expect((await signal({ type: "INQUIRY", message: "Still available?" }, '"1"')).status).toBe(412);
    expect((await signal({ type: "VIEW" }, 'W/"2"')).status).toBe(412);
    expect(await views()).toBe(0);
    expect(await eventsOf(p.organizationId, "property.inquiry_received")).toEqual([]);

    expect((await signal({ type: "VIEW", visitorId: "v1" }, '"2"')).status).toBe(201);
    expect((await signal({ type: "INQUIRY", message: "Still available?" }, '"1", "2"')).status).toBe(201);
    expect((await signal({ type: "VIEW" }, "*")).status).toBe(201);
    expect(await views()).toBe(2);
    expect(await eventsOf(p.organizationId, "property.inquiry_received")).toHaveLength(1);
    // A signal is no change of the property: its version (the ETag a client holds) stays where it was.
    expect((await call("GET", `/v1/properties/${property.id}`, { token: p.token })).headers.get("etag")).toBe('"2"');
    const stranger = await createPrincipal();
    expect(
      (
        await call("POST", `/v1/properties/${property.id}/signals`, {
          token: stranger.token,
          body: { type: "VIEW" },
          headers: { "if-match": '"2"' },
        })
      ).status,
    ).toBe(404);
  });

  it("is rate-limited per listing of the organization", async () => {
    const keys: string[] = [];
    const app = testApp({
      rateLimiter: { consume: async (key) => (keys.push(key), { allowed: false, remaining: 0, retryAfterSeconds: 30 }) },
    });
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const res = await app.fetch("POST", `/v1/properties/${property.id}/signals`, {
      token: p.token,
      body: JSON.stringify({ type: "VIEW" }),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("30");
    expect(keys).toEqual([`property-signals:post:${p.organizationId}:${property.id}`]);
  });
});

describe("reports", () => {
  it("a market analysis is a PDF naming the property, with comparables and market trends, behind a signed link", async () => {
    const p = await createPrincipal();
    for (let i = 0; i < 3; i++)
      await soldListing(p.token, {
        lat: 30.27 + i * 0.001,
        lng: -97.74,
        sqft: 2000,
        price: 600000 + i * 10000,
        soldDaysAgo: 10 + i,
        street: `${i + 1} Comparable Ave`,
      });
    const subject = await createProperty(p.token, VALUATION_SUBJECT);
    const res = await call("POST", `/v1/properties/${subject.id}/reports`, {
      token: p.token,
      body: { reportType: "MARKET_ANALYSIS", format: "PDF", includeComparables: true, includeMarketTrends: true },
    });
    expect(res.status).toBe(201);
    const report = (await json(res)).data;
    expect(report).toMatchObject({
      reportId: expect.any(String),
      reportType: "MARKET_ANALYSIS",
      format: "PDF",
      url: expect.stringContaining("/api/public/files/"),
      generatedAt: expect.any(String),
    });
    expect(Date.parse(report.expiresAt) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const text = await pdfText(report.url);
    for (const s of [
      "Market analysis",
      "500 Subject St",
      "Austin",
      "Comparable sales",
      "1 Comparable Ave",
      "Market trends",
      "Estimated value",
    ])
      expect(text).toContain(s);
  });

  it("a listing sheet carries the cover photo and description; a market analysis without comparables says why", async () => {
    const p = await createPrincipal();
    const subject = await createProperty(p.token, { ...VALUATION_SUBJECT, marketing: { description: "Sunny corner lot with a big oak." } });
    await call("POST", `/v1/properties/${subject.id}/photos`, { token: p.token, body: photoForm([{ bytes: PNG_1X1 }]) });
    const sheet = (
      await json(await call("POST", `/v1/properties/${subject.id}/reports`, { token: p.token, body: { reportType: "LISTING_SHEET" } }))
    ).data;
    const text = await pdfText(sheet.url);
    expect(text).toContain("Listing sheet");
    expect(text).toContain("Sunny corner lot with a big oak.");
    const analysis = (
      await json(await call("POST", `/v1/properties/${subject.id}/reports`, { token: p.token, body: { reportType: "MARKET_ANALYSIS" } }))
    ).data;
    expect(await pdfText(analysis.url)).toContain("at least 3 are needed");
    const bad = await call("POST", `/v1/properties/${subject.id}/reports`, {
      token: p.token,
      body: { reportType: "HOROSCOPE", format: "DOCX" },
    });
    expect(bad.status).toBe(422);
    expect((await errorOf(bad)).errors.map((e) => e.field).sort()).toEqual(["format", "reportType"]);
  });
});
