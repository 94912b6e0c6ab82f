import { env } from "cloudflare:workers";

/**
 * The plan SQLite picks for a drizzle query (its `EXPLAIN QUERY PLAN` details, a line each). Every shard has the same
 * schema (migrations/tenant): the plan is the same on any.
 */
export async function queryPlan(query: { toSQL(): { sql: string; params: unknown[] } }): Promise<string> {
  const { sql, params } = query.toSQL();
  const rows = await env.DB_SHARD_0.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return rows.results.map((r) => r.detail).join("\n");
}
