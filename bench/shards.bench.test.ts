// Issue 24: what the directory and two tenant shards cost an authenticated read, beside today's single database, in
// the same run. The single-database layout is rebuilt here: one database holding the directory's tables and the
// tenant tables, bound as both the directory and the only shard, as every organization lived before the split.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { createApp } from "../src/app";
import type { Env } from "../src/env";
import { newToken, sha256Hex } from "../src/lib/crypto";
import { newId } from "../src/lib/ids";
import { shardDatabase } from "../src/shards/bindings";
import { createOrganization } from "../src/shards/placement";
import { countD1, measureInterleaved, printTable } from "./harness";

const CONTACTS = 10_000;

interface Layout {
  name: string;
  env: Env;
  /** The databases a request may touch, each counted. */
  counters: ReturnType<typeof countD1>[];
}

/** The database before issue 24: the tenant tables (a shard's) plus the directory's, in one. */
async function singleDatabase(): Promise<D1Database> {
  const db = env.DB_SHARD_1;
  for (const migration of env.DIRECTORY_MIGRATIONS) {
    for (const query of migration.queries) {
      // organizations and users are in both sets, and so are the columns both sets add to them (the roles
      // migration, the organization profile): the shard's copy is the single database's table.
      await db
        .prepare(query)
        .run()
        .catch((err: Error) => {
          if (!/already exists|duplicate column name/.test(err.message)) throw err;
        });
    }
  }
  return db;
}

function layout(name: string, bindings: Record<string, D1Database>): Layout {
  const counters: ReturnType<typeof countD1>[] = [];
  const counted: Record<string, unknown> = { ...env, DB_SHARD_1: undefined };
  const seen = new Map<D1Database, D1Database>();
  for (const [binding, db] of Object.entries(bindings) as [string, D1Database][]) {
    // One counter per database, however many bindings name it.
    if (!seen.has(db)) {
      const c = countD1({ db });
      counters.push(c);
      seen.set(db, c.dbs.db);
    }
    counted[binding] = seen.get(db);
  }
  return { name, env: counted as unknown as Env, counters };
}

/** An organization with one member and a live session in `target`'s directory, placed on `shard` there. */
async function principal(target: Env, shard: number) {
  const organizationId = newId();
  const userId = newId();
  const token = newToken("sess");
  const now = new Date().toISOString();
  await createOrganization(
    target,
    { id: organizationId, name: `Bench ${organizationId}`, createdAt: now },
    [{ id: userId, organizationId, email: `${userId}@bench.test`, name: "Bench", createdAt: now }],
    shard,
  );
  await target.DB.prepare(
    "INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
  )
    .bind(newId(), await sha256Hex(token), userId, organizationId, now, new Date(Date.now() + 3600_000).toISOString())
    .run();
  const db = shardDatabase(target, shard);
  await db.batch([
    db
      .prepare(
        `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, type, status, tags, created_at, updated_at)
         WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1)
         SELECT lower(hex(randomblob(16))), ?1, 'First' || n, 'Last' || n, 'c' || n || '@bench.test', 'c' || n || '@bench.test', 'LEAD', 'ACTIVE', '[]',
                strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || n || ' seconds'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || n || ' seconds')
         FROM seq`,
      )
      .bind(organizationId, CONTACTS),
    db
      .prepare("INSERT INTO resource_counters (organization_id, resource, total, version) VALUES (?, 'contacts', ?, 1)")
      .bind(organizationId, CONTACTS),
    db
      .prepare(
        "INSERT INTO contact_facet_counts (organization_id, type, status, source, assigned_to, total) VALUES (?, 'LEAD', 'ACTIVE', '', '', ?)",
      )
      .bind(organizationId, CONTACTS),
  ]);
  const contactId = (await db
    .prepare("SELECT id FROM contacts WHERE organization_id = ? LIMIT 1")
    .bind(organizationId)
    .first<{ id: string }>())!.id;
  return { token, contactId };
}

const app = createApp();

async function get(target: Env, path: string, token: string) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://bench.test${path}`, { headers: { authorization: `Bearer ${token}` } }), target, ctx);
  await waitOnExecutionContext(ctx);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return res.arrayBuffer();
}

let layouts: { layout: Layout; token: string; contactId: string }[];

beforeAll(async () => {
  const single = await singleDatabase();
  const before = layout("single database (directory = the only shard)", { DB: single, DB_SHARD_0: single });
  const sharded = layout("directory + 2 shards", { DB: env.DB, DB_SHARD_0: env.DB_SHARD_0, DB_SHARD_1: env.DB_SHARD_1 });
  layouts = [
    { layout: before, ...(await principal(before.env, 0)) },
    { layout: { ...sharded, name: `${sharded.name}, organization on shard 0` }, ...(await principal(sharded.env, 0)) },
    { layout: { ...sharded, name: `${sharded.name}, organization on shard 1` }, ...(await principal(sharded.env, 1)) },
  ];
});

it("an authenticated read costs the same round trips and time on two shards as on one database", async () => {
  const reads = [
    ["GET /v1/contacts/{id}", (c: string) => `/v1/contacts/${c}`],
    ["GET /v1/contacts?limit=25", () => "/v1/contacts?limit=25"],
    ["GET /v1/contacts?limit=25&type=LEAD", () => "/v1/contacts?limit=25&type=LEAD"],
  ] as const;
  const trips: Record<string, number> = {};
  for (const [read, path] of reads) {
    for (const { layout: l, token, contactId } of layouts) {
      await get(l.env, path(contactId), token);
      for (const c of l.counters) c.reset();
      await get(l.env, path(contactId), token);
      trips[`${read}, ${l.name}`] = l.counters.reduce((n, c) => n + c.trips(), 0);
    }
    const figures = await measureInterleaved(
      layouts.map(({ layout: l, token, contactId }) => ({ name: `${read}, ${l.name}`, fn: () => get(l.env, path(contactId), token) })),
    );
    printTable(`${read} on ${CONTACTS.toLocaleString("en")} contacts: two shards beside one database`, figures, figures[0]);
  }
  console.log("D1 round trips per request (directory + shard, or the one database):", JSON.stringify(trips, null, 1));
  for (const n of Object.values(trips)) expect(n).toBe(2);
});

it("a one-row write: the row read rides beside the directory lookup, on the shard the token last lived on", async () => {
  const put = async (target: Env, token: string, contactId: string, n: number) => {
    const ctx = createExecutionContext();
    const init = {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ notes: `n${n}` }),
    };
    const res = await app.fetch(new Request(`http://bench.test/v1/contacts/${contactId}`, init), target, ctx);
    await waitOnExecutionContext(ctx);
    if (res.status !== 200) throw new Error(`PUT: ${res.status} ${await res.text()}`);
    return res.arrayBuffer();
  };
  let n = 0;
  const trips: Record<string, number> = {};
  for (const { layout: l, token, contactId } of layouts) {
    await put(l.env, token, contactId, n++);
    for (const c of l.counters) c.reset();
    await put(l.env, token, contactId, n++);
    trips[l.name] = l.counters.reduce((sum, c) => sum + c.trips(), 0);
  }
  const figures = await measureInterleaved(
    layouts.map(({ layout: l, token, contactId }) => ({
      name: `PUT /v1/contacts/{id}, ${l.name}`,
      fn: () => put(l.env, token, contactId, n++),
    })),
    { rounds: 20 },
  );
  printTable("PUT /v1/contacts/{id}: two shards beside one database", figures, figures[0]);
  // The session lookup (directory) and the row read (shard) go side by side, then the write: 3 trips in 2 waves, also
  // where the directory and the shard are one database (before issue 24 the read joined the lookup's batch: 2).
  console.log("D1 round trips per PUT (the two side by side count apart):", JSON.stringify(trips, null, 1));
  for (const { layout: l } of layouts) expect(trips[l.name]).toBe(3);
});
