// Figures the write path keeps beside the rows they summarize (issue 22): after any sequence of writes, also racing
// ones, they equal what a scan of the rows gives. Used by the facet and rollup tests and after every race of the race table.
import { expect } from "vitest";
import { backfillRollupsSql } from "../../src/deals/rollups";
import { tenantDb } from "./factories";

type Row = Record<string, number | string>;

/** The stored counts equal a GROUP BY over the organization's contacts (zero rows left by moves aside). */
export async function expectFacetsExact(organizationId: string) {
  const db = await tenantDb(organizationId);
  const grouped = await db
    .prepare(
      `SELECT type, status, IFNULL(source, '') AS source, IFNULL(assigned_to, '') AS assigned_to, COUNT(*) AS total FROM contacts WHERE organization_id = ?
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    )
    .bind(organizationId)
    .all();
  const stored = await db
    .prepare(
      "SELECT type, status, source, assigned_to, total FROM contact_facet_counts WHERE organization_id = ? AND total <> 0 ORDER BY 1, 2, 3, 4",
    )
    .bind(organizationId)
    .all();
  expect(stored.results).toEqual(grouped.results);
}

/** The stored rollups of an organization equal the ones rebuilt from its deals (rows whose count went back to 0 aside). */
export async function expectRollupsExact(organizationId: string) {
  const [createdSql, decidedSql] = backfillRollupsSql("organization_id = ?").map((s) => s.slice(s.indexOf("WITH RECURSIVE")));
  const tables = [
    ["deal_created_rollups", createdSql!, "type, assigned_to, level, bucket", ["n", "value"]],
    ["deal_decided_rollups", decidedSql!, "type, level, bucket, stage, assigned_to", ["n", "value", "days"]],
  ] as const;
  const db = await tenantDb(organizationId);
  for (const [table, rebuilt, key, figures] of tables) {
    const columns = `${key}, ${figures.join(", ")}`;
    const stored = await db
      .prepare(`SELECT ${columns} FROM ${table} WHERE organization_id = ? AND n <> 0 ORDER BY ${key}`)
      .bind(organizationId)
      .all<Row>();
    const expected = await db
      .prepare(`SELECT * FROM (${rebuilt}) ORDER BY 2, 3, 4, 5${table === "deal_decided_rollups" ? ", 6" : ""}`)
      .bind(organizationId)
      .all<Row>();
    const shape = (rows: Row[]) => rows.map((r) => Object.values(r).slice(-(key.split(",").length + figures.length)));
    const got = shape(stored.results);
    const want = shape(expected.results);
    expect(got.length, table).toBe(want.length);
    got.forEach((row, i) => {
      const w = want[i]!;
      for (const [j, v] of row.entries()) {
        if (typeof v === "number" && !Number.isInteger(v)) expect(v).toBeCloseTo(w[j] as number, 6);
        else expect(v, `${table} row ${i}`).toEqual(w[j]);
      }
    });
  }
}

/** Both, for an organization a test wrote to. */
export async function expectDerivedFiguresExact(organizationId: string): Promise<void> {
  await expectFacetsExact(organizationId);
  await expectRollupsExact(organizationId);
}
