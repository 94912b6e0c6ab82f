// What an adversarial pass over HTTP found in the properties routes (issue 9), each pinned by a test.
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { createProperty, getProperty, JPEG_HEAD, photoForm, PNG_1X1, propertyBody, updateProperty } from "../helpers/properties";

const errorOf = async (res: Response) => (await json(res)).error as { code: string; errors: { field: string; code: string }[] };
const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;

describe("properties under adversarial input", () => {
  it("a photo upload with an Idempotency-Key stores the file byte for byte, and a retry with a new boundary replays it", async () => {
    const p = await createPrincipal();
    const { id } = await createProperty(p.token);
    const headers = { "idempotency-key": "upload-1" };
    const first = await call("POST", `/v1/properties/${id}/photos`, {
      token: p.token,
      body: photoForm([{ bytes: PNG_1X1 }], { captions: ["Front"] }),
      headers,
    });
    expect(first.status, await first.clone().text()).toBe(201);
    const [photo] = (await json(first)).data;
    const download = await call("GET", pathOf(photo.url));
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(PNG_1X1);
    // A client retrying builds a new FormData: a new multipart boundary, the same parts.
    const retry = await call("POST", `/v1/properties/${id}/photos`, {
      token: p.token,
      body: photoForm([{ bytes: PNG_1X1 }], { captions: ["Front"] }),
      headers,
    });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect((await getProperty(p.token, id)).media.photos).toHaveLength(1);
    // Other bytes under the same key are another request.
    const other = await call("POST", `/v1/properties/${id}/photos`, {
      token: p.token,
      body: photoForm([{ bytes: JPEG_HEAD }], { captions: ["Front"] }),
      headers,
    });
    expect(other.status).toBe(422);
    expect((await errorOf(other)).code).toBe("idempotency_key_reused");
  });

  it("a listing sheet whose cover photo only starts like a JPEG still renders, without the cover", async () => {
    const p = await createPrincipal();
    const { id } = await createProperty(p.token);
    const fake = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, ...Array.from({ length: 100 }, (_, i) => i), 0xff, 0xd9]);
    expect(
      (await call("POST", `/v1/properties/${id}/photos`, { token: p.token, body: photoForm([{ bytes: fake, name: "c.jpg" }]) })).status,
    ).toBe(201);
    const res = await call("POST", `/v1/properties/${id}/reports`, { token: p.token, body: { reportType: "LISTING_SHEET" } });
    expect(res.status, await res.clone().text()).toBe(201);
    const report = (await json(res)).data;
    const pdf = await call("GET", pathOf(report.url));
    expect(new TextDecoder().decode((await pdf.arrayBuffer()).slice(0, 5))).toBe("%PDF-");
  });

  it("takes this year's and next years' builds (the bound is judged per request, not at module load)", async () => {
    const p = await createPrincipal();
    const year = new Date().getUTCFullYear();
    const built = await createProperty(p.token, { details: { propertyType: "CONDO", yearBuilt: year + 1 } });
    expect(built.details.yearBuilt).toBe(year + 1);
    const res = await call("POST", "/v1/properties", {
      token: p.token,
      body: propertyBody({ details: { propertyType: "CONDO", yearBuilt: year + 6 } }),
    });
    expect(res.status).toBe(422);
    expect((await errorOf(res)).errors).toContainEqual(expect.objectContaining({ field: "details.yearBuilt", code: "too_big" }));
  });

  it("refuses the same photo twice in media.photos, and an upload order a PUT could not send back", async () => {
    const p = await createPrincipal();
    const { id } = await createProperty(p.token);
    const [photo] = (
      await json(await call("POST", `/v1/properties/${id}/photos`, { token: p.token, body: photoForm([{ bytes: PNG_1X1 }]) }))
    ).data;
    const twice = await call("PUT", `/v1/properties/${id}`, {
      token: p.token,
      body: { media: { photos: [{ id: photo.id }, { id: photo.id }] } },
    });
    expect(twice.status).toBe(422);
    expect((await errorOf(twice)).errors).toContainEqual(expect.objectContaining({ field: "media.photos", code: "duplicate_photo" }));
    const far = await call("POST", `/v1/properties/${id}/photos`, {
      token: p.token,
      body: photoForm([{ bytes: PNG_1X1 }], { order: ["99999"] }),
    });
    expect(far.status).toBe(422);
    // What a read shows can be sent back as it is.
    const read = await getProperty(p.token, id);
    expect((await call("PUT", `/v1/properties/${id}`, { token: p.token, body: read })).status).toBe(200);
    expect((await getProperty(p.token, id)).media.photos).toHaveLength(1);
  });

  it("refuses commission parts that add up to more than the price, so every read stays within its schema", async () => {
    const p = await createPrincipal();
    const { id } = await createProperty(p.token);
    const res = await call("PUT", `/v1/properties/${id}`, {
      token: p.token,
      body: { listing: { commission: { buyerAgent: 0.7, listingAgent: 0.7 } } },
    });
    expect(res.status).toBe(422);
    expect((await errorOf(res)).errors).toContainEqual(
      expect.objectContaining({ field: "listing.commission", code: "invalid_commission" }),
    );
    const ok = await updateProperty(p.token, id, { listing: { commission: { buyerAgent: 0.03, listingAgent: 0.025 } } });
    expect(ok.listing.commission).toEqual({ buyerAgent: 0.03, listingAgent: 0.025, total: 0.055 });
  });

  it("a listing back on the market loses its old sale figures, and a new sale defaults to the new price", async () => {
    const p = await createPrincipal();
    const { id } = await createProperty(p.token);
    await updateProperty(p.token, id, { listing: { status: "SOLD", soldPrice: 490000 } });
    const back = await updateProperty(p.token, id, { listing: { status: "ACTIVE", listPrice: 700000 } });
    expect(back.listing.soldPrice).toBeUndefined();
    expect(back.listing.soldDate).toBeUndefined();
    const resold = await updateProperty(p.token, id, { listing: { status: "SOLD" } });
    expect(resold.listing.soldPrice).toBe(700000);
  });

  it("reports referrers by host or name only: other schemes and broken URLs count as other", async () => {
    const p = await createPrincipal();
    const { id } = await createProperty(p.token);
    for (const referrer of ["javascript:alert(1)", "https://evil.example:99999/", "%%%", "https://www.Zillow.com/homes/1", "newsletter"]) {
      expect(
        (await call("POST", `/v1/properties/${id}/signals`, { token: p.token, body: { type: "VIEW", visitorId: referrer, referrer } }))
          .status,
      ).toBe(201);
    }
    const analytics = (await json(await call("GET", `/v1/properties/${id}/analytics`, { token: p.token }))).data;
    expect(Object.fromEntries(analytics.topReferrers.map((r: { source: string; views: number }) => [r.source, r.views]))).toEqual({
      other: 3,
      "zillow.com": 1,
      newsletter: 1,
    });
  });

  it("refuses one-line text that is invisible or reorders itself, and dates before 1900", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/properties", {
      token: p.token,
      body: propertyBody({
        address: { street: "1 Main \u202Egnp.exe", city: "\u200B\u200B", state: "FL", zipCode: "33139" },
        listing: { listPrice: 500000, listDate: "0000-01-01" },
      }),
    });
    expect(res.status).toBe(422);
    const fields = (await errorOf(res)).errors.map((e) => `${e.field}:${e.code}`);
    expect(fields).toEqual(
      expect.arrayContaining(["address.street:invalid_character", "address.city:invalid_character", "listing.listDate:invalid_date"]),
    );
    // Right-to-left text without control characters is fine.
    const arabic = await createProperty(p.token, { address: { street: "شارع النخيل 12", city: "دبي", state: "DU", zipCode: "00000" } });
    expect(arabic.address.city).toBe("دبي");
  });
});
