import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardDatabase } from "../../src/shards/bindings";

// Rebuilds this file's shard 0 table to its old shape: the file has its own storage, no other test sees it.
const db = shardDatabase(env, 0);
const run = async (queries: string[]) => {
  for (const q of queries) await db.prepare(q).run();
};
const migration = (prefix: string) => env.TENANT_MIGRATIONS.find((m) => m.name.startsWith(prefix))!.queries;
const aboutTrashRows = (q: string) => q.includes("`trash_rows`");

describe("migration 0004: trash_rows keyed across shards", () => {
  it("keeps every kept row, numbered per record in the old order, with its organization, the fence triggers and the indexes restore and moves use", async () => {
    // trash_rows as 0000 and 0003 made it: a per-database AUTOINCREMENT seq.
    await run(["DROP TABLE trash_rows", ...migration("0000").filter(aboutTrashRows), ...migration("0003").filter(aboutTrashRows)]);
    expect((await db.prepare("SELECT sql FROM sqlite_master WHERE name = 'trash_rows'").first<{ sql: string }>())!.sql).toMatch(
      /AUTOINCREMENT/,
    );
    const org = crypto.randomUUID();
    const [x, y, orphan] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const at = new Date().toISOString();
    const entry = db.prepare(
      "INSERT INTO trash_entries (record_id, organization_id, kind, state, deleted_at, restorable_until) VALUES (?, ?, 'contact', 'trashed', ?, ?)",
    );
    const kept = db.prepare("INSERT INTO trash_rows (record_id, table_name, row) VALUES (?, ?, ?)");
    // Interleaved, as two deletes in turn would leave them.
    await db.batch([
      entry.bind(x, org, at, at),
      entry.bind(y, org, at, at),
      kept.bind(x, "contacts", '{"n":1}'),
      kept.bind(y, "contacts", '{"n":2}'),
      kept.bind(x, "contact_activities", '{"n":3}'),
      kept.bind(x, "contact_activities", '{"n":4}'),
      kept.bind(orphan, "contacts", '{"n":5}'),
    ]);

    await run(migration("0004"));

    // A kept row without its entry could never be restored or purged: it does not survive the rebuild.
    const rows = await db
      .prepare(
        "SELECT organization_id AS organizationId, record_id AS recordId, seq, table_name AS tableName, row FROM trash_rows WHERE record_id IN (?, ?, ?) ORDER BY record_id = ?, seq",
      )
      .bind(x, y, orphan, y)
      .all();
    expect(rows.results).toEqual([
      { organizationId: org, recordId: x, seq: 1, tableName: "contacts", row: '{"n":1}' },
      { organizationId: org, recordId: x, seq: 2, tableName: "contact_activities", row: '{"n":3}' },
      { organizationId: org, recordId: x, seq: 3, tableName: "contact_activities", row: '{"n":4}' },
      { organizationId: org, recordId: y, seq: 1, tableName: "contacts", row: '{"n":2}' },
    ]);
    const schema = (
      await db
        .prepare("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'trash_rows'")
        .all<{ type: string; name: string; sql: string | null }>()
    ).results;
    expect(schema.find((s) => s.type === "table")!.sql).not.toMatch(/AUTOINCREMENT/);
    expect(schema.map((s) => s.name).sort()).toEqual([
      "sqlite_autoindex_trash_rows_1",
      "trash_rows",
      "trash_rows_fence_delete",
      "trash_rows_fence_insert",
      "trash_rows_fence_update",
      "trash_rows_org_idx",
      "trash_rows_record_idx",
    ]);
    expect(
      (
        await db
          .prepare("EXPLAIN QUERY PLAN SELECT row FROM trash_rows WHERE record_id = ? AND table_name = 'contacts' ORDER BY seq")
          .bind(x)
          .all<{ detail: string }>()
      ).results
        .map((r) => r.detail)
        .join(),
    ).toContain("trash_rows_record_idx");
    expect(
      (
        await db
          .prepare("EXPLAIN QUERY PLAN SELECT row FROM trash_rows WHERE organization_id = ? ORDER BY record_id, seq LIMIT 100")
          .bind(org)
          .all<{ detail: string }>()
      ).results
        .map((r) => r.detail)
        .join(),
    ).toContain("trash_rows_org_idx");
    // The fence still holds on the rebuilt table, by the row's own organization.
    await db.prepare("INSERT INTO shard_fences (organization_id, fenced_at) VALUES (?, ?)").bind(org, at).run();
    await expect(
      db
        .prepare("INSERT INTO trash_rows (organization_id, record_id, seq, table_name, row) VALUES (?, ?, 9, 'contacts', '{}')")
        .bind(org, x)
        .run(),
    ).rejects.toThrow(/organization_moving/);
    await expect(db.prepare("DELETE FROM trash_rows WHERE record_id = ?").bind(x).run()).rejects.toThrow(/organization_moving/);
  });
});
