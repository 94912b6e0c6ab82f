// An organization's rows by id (src/lib/sql.ts idsOf) are looked up by primary key, not walked through one of the
// organization's indexes: checked on the plan SQLite picks for the tables with the most rows and indexes.
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { queryPlan } from "../helpers/query-plan";
import { createDb } from "../../src/db/client";
import { contacts, properties } from "../../src/db/schema";
import { idsOf, inJsonList } from "../../src/lib/sql";

const db = createDb(env.DB_SHARD_0);

describe("idsOf", () => {
  it("reads contacts and properties by primary key, where the organization's term alone picks an index led by it", async () => {
    for (const table of [contacts, properties]) {
      const wanted = ["a", "b", "c"];
      const byId = await queryPlan(
        db
          .select()
          .from(table)
          .where(idsOf(table, "org", wanted)),
      );
      expect(byId).toMatch(/USING INDEX sqlite_autoindex_\w+_1 \(id=\?\)|USING INTEGER PRIMARY KEY|USING PRIMARY KEY/);
      expect(byId).not.toMatch(/_org_\w+ \(organization_id=\?\)/);
      // What it replaces: the organization's term on its indexes walks the organization (this test's reason to be).
      const naive = await queryPlan(
        db
          .select()
          .from(table)
          .where(and(eq(table.organizationId, "org"), inJsonList(table.id, wanted))),
      );
      expect(naive).toMatch(/\(organization_id=\?\)/);
    }
  });
});
