// The sparse property filters are served by indexes shaped for them (issue 22): checked on the plan SQLite picks, so an
// index that a query stopped using, or one that no query uses, is caught here rather than on a 100k-listing bench.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { listSql } from "../../src/properties/list";
import { PropertyListQuery } from "../../src/properties/schemas";

async function plan(query: Record<string, string>): Promise<string> {
  const { sql, params } = listSql("org-plans", PropertyListQuery.parse({ limit: "25", ...query }));
  // Every shard has the same schema (migrations/tenant): the plan is the same on any.
  const rows = await env.DB_SHARD_0.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return rows.results.map((r) => r.detail).join("\n");
}

describe("properties list plans", () => {
  it("a zip code with a price sort walks the zip's price index in order: no probe, no sort", async () => {
    for (const direction of ["desc", "asc"]) {
      const details = await plan({ zipCode: "00000", sort: `listPrice:${direction}` });
      expect(details).toMatch(/SEARCH p USING INDEX properties_org_zip_price_idx \(organization_id=\? AND zip_code=\?\)/);
      expect(details).not.toMatch(/USE TEMP B-TREE|properties_org_price_idx|MATERIALIZE probe/);
    }
    // A price bound beside the zip narrows the same range.
    expect(await plan({ zipCode: "00000", sort: "listPrice:desc", "listPrice[lte]": "500000" })).toMatch(
      /properties_org_zip_price_idx \(organization_id=\? AND zip_code=\? AND list_price<\?\)/,
    );
  });

  it("a zip code under the default sort walks the zip's creation index in order", async () => {
    const details = await plan({ zipCode: "00000" });
    expect(details).toMatch(/SEARCH p USING INDEX properties_org_zip_idx \(organization_id=\? AND zip_code=\?\)/);
    expect(details).not.toMatch(/USE TEMP B-TREE|MATERIALIZE probe/);
  });

  it("a radius or a bounding box probes the creation index alone (covering), then falls back on the geo index", async () => {
    for (const query of [{ radius: "39.0997,-94.5786,25" }, { bounds: "30.15,-97.9,30.4,-97.6" }] as Record<string, string>[]) {
      const details = await plan(query);
      expect(details).toMatch(/SEARCH p USING COVERING INDEX properties_org_created_idx \(organization_id=\?\)/);
      expect(details).toMatch(
        /SEARCH p USING (COVERING )?INDEX properties_org_geo_idx \(organization_id=\? AND latitude>\? AND latitude<\?\)/,
      );
    }
  });
});
