import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { createProperty, listProperties, updateProperty, walkIds } from "../helpers/properties";

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const at = (latitude: number, longitude: number, extra: Record<string, unknown> = {}) => ({
  address: { street: "1 Geo St", city: "Somewhere", state: "XX", zipCode: "00001", coordinates: { latitude, longitude } },
  ...extra,
});
const ids = (page: { data: { id: string }[] }) => page.data.map((p) => p.id).sort();

describe("GET /v1/properties filters", () => {
  it("filters on type, status, city (any case), state, zip, rooms, size, price, flags and days on market", async () => {
    const p = await createPrincipal();
    const a = await createProperty(p.token, {
      address: { street: "1 A St", city: "Austin", state: "TX", zipCode: "78701" },
      details: { propertyType: "SINGLE_FAMILY", bedrooms: 4, bathrooms: 3, squareFootage: 2600, pool: true, garage: true },
      listing: { listPrice: 750000, listDate: daysAgo(40) },
    });
    const b = await createProperty(p.token, {
      address: { street: "2 B St", city: "Austin", state: "TX", zipCode: "78702" },
      details: { propertyType: "CONDO", bedrooms: 2, bathrooms: 1.5, squareFootage: 1100, waterfront: true },
      listing: { listPrice: 400000, listDate: daysAgo(3) },
    });
    const c = await createProperty(p.token, {
      address: { street: "3 C St", city: "Dallas", state: "TX", zipCode: "75201" },
      details: { propertyType: "SINGLE_FAMILY", bedrooms: 3, bathrooms: 2, squareFootage: 1900, garage: true },
      listing: { listPrice: 520000 },
    });
    await updateProperty(p.token, c.id, { listing: { status: "PENDING" } });
    const cases: [string, string[]][] = [
      ["propertyType=SINGLE_FAMILY", [a.id, c.id]],
      ["status=PENDING", [c.id]],
      ["city=austin", [a.id, b.id]],
      ["state=tx", [a.id, b.id, c.id]],
      ["zipCode=78702", [b.id]],
      ["bedrooms[gte]=3", [a.id, c.id]],
      ["bathrooms[gte]=1.5", [a.id, b.id, c.id]],
      ["bathrooms[gte]=2.5", [a.id]],
      ["squareFootage[gte]=1900", [a.id, c.id]],
      ["listPrice[gte]=450000&listPrice[lte]=760000", [a.id, c.id]],
      ["listPrice[lte]=400000", [b.id]],
      ["pool=true", [a.id]],
      ["pool=false", [b.id, c.id]],
      ["garage=true&propertyType=SINGLE_FAMILY&city=Dallas", [c.id]],
      ["waterfront=true", [b.id]],
      ["daysOnMarket[lte]=5", [b.id, c.id]],
      ["daysOnMarket[lte]=40", [a.id, b.id, c.id]],
    ];
    for (const [query, expected] of cases) {
      const page = await listProperties(p.token, query);
      expect(ids(page), query).toEqual([...expected].sort());
      expect(page.pagination.total, query).toBe(expected.length);
    }
  });

  it("sorts by listPrice and listDate and walks every page exactly once", async () => {
    const p = await createPrincipal();
    const prices = [300000, 100000, 500000, 200000, 400000, 200000];
    const made = [];
    for (const [i, listPrice] of prices.entries())
      made.push(await createProperty(p.token, { listing: { listPrice, listDate: daysAgo(i) } }));
    const byPrice = [...made].sort((x, y) => x.listing.listPrice - y.listing.listPrice || x.id.localeCompare(y.id)).map((x) => x.id);
    expect(await walkIds(p.token, "sort=listPrice:asc")).toEqual(byPrice);
    expect(await walkIds(p.token, "sort=listPrice:desc")).toEqual([...byPrice].reverse());
    expect(await walkIds(p.token, "sort=listDate:asc,listPrice:desc", 4)).toHaveLength(6);
    expect(await walkIds(p.token, "")).toEqual([...made].reverse().map((x) => x.id));
  });

  it("keeps organizations apart", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    await createProperty(other.token);
    const mine = await createProperty(p.token);
    const page = await listProperties(p.token);
    expect(ids(page)).toEqual([mine.id]);
    expect(page.pagination.total).toBe(1);
  });

  it("refuses bad parameters with every problem named, and unknown ones", async () => {
    const p = await createPrincipal();
    const res = await call(
      "GET",
      "/v1/properties?bounds=1,2,3&radius=0,0,0&bedrooms[gte]=x&sort=price&include=everything&pool=yes&color=red",
      { token: p.token },
    );
    expect(res.status).toBe(422);
    const fields = ((await json(res)).error.errors as { field: string }[]).map((e) => e.field.replace(/\.\d+$/, ""));
    for (const f of ["bounds", "radius", "bedrooms[gte]", "sort", "include", "pool", "color"]) expect(fields, f).toContain(f);
    for (const query of [
      "bounds=10,0,5,1",
      "bounds=0,0,91,1",
      "radius=0,181,1",
      "radius=0,0,501",
      "listPrice[gte]=5&listPrice[lte]=1",
      "limit=101",
    ]) {
      expect((await call("GET", `/v1/properties?${query}`, { token: p.token })).status, query).toBe(422);
    }
  });
});

describe("geo filters", () => {
  it("bounds: inside the box, not outside; properties without coordinates never match", async () => {
    const p = await createPrincipal();
    const miami = await createProperty(p.token, at(25.7617, -80.1918));
    const beach = await createProperty(p.token, at(25.7907, -80.13));
    await createProperty(p.token, at(26.1224, -80.1373)); // Fort Lauderdale, north of the box
    await createProperty(p.token, { address: { street: "No Geo", city: "Miami", state: "FL", zipCode: "33101" } });
    expect(ids(await listProperties(p.token, "bounds=25.70,-80.30,25.85,-80.10"))).toEqual([miami.id, beach.id].sort());
    expect(ids(await listProperties(p.token, "bounds=25.70,-80.30,25.85,-80.15"))).toEqual([miami.id]);
  });

  it("bounds across the antimeridian (west above east)", async () => {
    const p = await createPrincipal();
    const fiji = await createProperty(p.token, at(-17.7, 178.4));
    const samoa = await createProperty(p.token, at(-13.8, -171.8));
    await createProperty(p.token, at(-17.7, 170)); // west of the box
    expect(ids(await listProperties(p.token, "bounds=-20,175,-10,-170"))).toEqual([fiji.id, samoa.id].sort());
    // The same corners the other way round are the box around the rest of the world.
    expect(ids(await listProperties(p.token, "bounds=-20,-170,-10,175")).length).toBe(1);
  });

  it("radius: great-circle distance, known cities in and out", async () => {
    const p = await createPrincipal();
    // From Times Square: Brooklyn Bridge is 3.64 miles, Newark airport 10.97, Philadelphia 83.4 (haversine).
    const bridge = await createProperty(p.token, at(40.7061, -73.9969));
    const newark = await createProperty(p.token, at(40.6895, -74.1745));
    const philly = await createProperty(p.token, at(39.9526, -75.1652));
    const center = "40.758,-73.9855";
    expect(ids(await listProperties(p.token, `radius=${center},3.6`))).toEqual([]);
    expect(ids(await listProperties(p.token, `radius=${center},3.7`))).toEqual([bridge.id]);
    expect(ids(await listProperties(p.token, `radius=${center},10.9`))).toEqual([bridge.id]);
    expect(ids(await listProperties(p.token, `radius=${center},11`))).toEqual([bridge.id, newark.id].sort());
    expect(ids(await listProperties(p.token, `radius=${center},83.3`))).toEqual([bridge.id, newark.id].sort());
    expect(ids(await listProperties(p.token, `radius=${center},83.5`))).toEqual([bridge.id, newark.id, philly.id].sort());
    expect((await listProperties(p.token, `radius=${center},11&sort=listPrice:asc`)).pagination.total).toBe(2);
  });

  it("radius across the antimeridian and near the pole", async () => {
    const p = await createPrincipal();
    // Two points 0.2 degrees of longitude either side of 180 at 65 N: about 5.8 miles apart.
    const east = await createProperty(p.token, at(65, 179.9));
    const west = await createProperty(p.token, at(65, -179.9));
    const far = await createProperty(p.token, at(65, 178));
    expect(ids(await listProperties(p.token, "radius=65,179.95,5"))).toEqual([east.id, west.id].sort());
    expect(ids(await listProperties(p.token, "radius=65,-179.95,5"))).toEqual([east.id, west.id].sort());
    expect(ids(await listProperties(p.token, "radius=65,179.95,60"))).toEqual([east.id, west.id, far.id].sort());
    // Near the North Pole every longitude is close: two points on opposite meridians, 89.9 N, are ~14 miles apart.
    const a = await createProperty(p.token, at(89.9, 0));
    const b = await createProperty(p.token, at(89.9, 180));
    await createProperty(p.token, at(89, 90)); // ~69 miles from the pole
    expect(ids(await listProperties(p.token, "radius=89.95,0,20"))).toEqual([a.id, b.id].sort());
    expect(ids(await listProperties(p.token, "radius=90,0,10"))).toEqual([a.id, b.id].sort());
  });
});
