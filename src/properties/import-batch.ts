import { and, eq } from "drizzle-orm";
import { properties } from "../db/schema";
import { insertRowsFromJson } from "../db/row-json";
import { expectNoRow, expectVersions, type Statement } from "../db/write";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import type { PropertyRecord } from "./mapping";
import type { PropertyCreate, PropertyUpdate } from "./schemas";
import { applyUpdate, bumpCounters, newPropertyRecord, PROPERTIES, updatePropertyStatement } from "./writes";

/**
 * Properties written many at a time (an import's chunk): new listings built as POST /v1/properties builds
 * them, and listings matched by mlsId skipped, updated (the row's values) or merged (only what is empty), with the
 * counter moved once, and no per-listing event. The caller commits the statements with its progress in one batch.
 */
export async function planPropertyImport(
  ctx: ServiceContext,
  inputs: PropertyCreate[],
  rule: "skip" | "update" | "merge",
): Promise<{ statements: Statement[]; outcomes: ("created" | "updated" | "skipped")[] }> {
  const now = new Date();
  const mlsIds = [...new Set(inputs.flatMap((i) => (i.mlsId ? [i.mlsId] : [])))];
  const found = mlsIds.length
    ? await ctx.db
        .select()
        .from(properties)
        .where(and(eq(properties.organizationId, ctx.organizationId), inJsonList(properties.mlsId, mlsIds)))
    : [];
  const existing = new Map(found.map((p) => [p.mlsId!, p]));
  const seen = new Set<string>();
  const created: PropertyRecord[] = [];
  const updates: { before: PropertyRecord; after: PropertyRecord }[] = [];
  const outcomes = inputs.map((input) => {
    const match = input.mlsId ? existing.get(input.mlsId) : undefined;
    if (input.mlsId && seen.has(input.mlsId)) return "skipped" as const;
    if (input.mlsId) seen.add(input.mlsId);
    if (!match) {
      created.push(newPropertyRecord(ctx, input, now));
      return "created" as const;
    }
    if (rule === "skip") return "skipped" as const;
    const { after } = applyUpdate(match, patchOf(match, input, rule), now);
    if (JSON.stringify({ ...after, updatedAt: "" }) === JSON.stringify({ ...match, updatedAt: "" })) return "skipped" as const;
    updates.push({ before: match, after: { ...after, updatedAt: now.toISOString(), version: match.version + 1 } });
    return "updated" as const;
  });
  const statements: Statement[] = [];
  if (updates.length)
    statements.push(
      expectVersions(
        ctx.db,
        PROPERTIES,
        ctx.organizationId,
        updates.map((u) => u.before),
      ),
    );
  const newIds = created.flatMap((c) => (c.mlsId ? [c.mlsId] : []));
  if (newIds.length)
    statements.push(
      expectNoRow(ctx.db, properties, and(eq(properties.organizationId, ctx.organizationId), inJsonList(properties.mlsId, newIds))),
    );
  if (created.length) statements.push(...insertRowsFromJson(ctx.db, properties, created as unknown as Record<string, unknown>[]));
  statements.push(...updates.map(({ before, after }) => updatePropertyStatement(ctx, before, after)));
  if (created.length || updates.length) statements.push(bumpCounters(ctx, created.length));
  return { statements, outcomes };
}

/** The groups of a row as an update: all its values (`update`), or only those the listing has no value for (`merge`). */
function patchOf(existing: PropertyRecord, input: PropertyCreate, rule: "update" | "merge"): PropertyUpdate {
  const out: Record<string, Record<string, unknown>> = {};
  for (const group of ["address", "details", "listing", "marketing"] as const) {
    const given = input[group] as Record<string, unknown> | undefined;
    if (!given) continue;
    const had = ((existing as unknown as Record<string, unknown>)[group] ?? {}) as Record<string, unknown>;
    const kept = Object.entries(given).filter(
      ([k, v]) => v !== undefined && (rule === "update" || had[k] === undefined || had[k] === null),
    );
    if (kept.length) out[group] = Object.fromEntries(kept);
  }
  return out as PropertyUpdate;
}
