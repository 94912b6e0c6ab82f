import { and, eq, sql } from "drizzle-orm";
import { contactFacetCounts } from "../db/schema";
import type { Statement } from "../db/write";
import type { ServiceContext } from "../service-context";

/**
 * Exact totals of the contact lists filtered on type, status, source and assignedTo without counting rows: the
 * contacts per combination of these four (contact_facet_counts) move in the same batch as every contact write, so a
 * filtered total is the sum of a few rows however many contacts match, also on the first list after a write (a count
 * would walk every matching index entry once per contacts version: 20,000 for type=CLIENT of 100,000 contacts).
 */
export interface Faceted {
  type: string;
  status: string;
  source: string | null;
  assignedTo: string | null;
}

/** The list filters a facet total serves (the query names; the column is the same in snake_case). */
const FACET_COLUMNS = { type: "type", status: "status", source: "source", assignedTo: "assigned_to" } as const;
type FacetFilter = keyof typeof FACET_COLUMNS;

const facetKey = (c: Faceted) => ({ type: c.type, status: c.status, source: c.source ?? "", assignedTo: c.assignedTo ?? "" });

/** The counter moves of a write that turns `before` into `after` (null: the contact is created, or goes away). */
export function facetMoves(ctx: ServiceContext, before: Faceted | null, after: Faceted | null): Statement[] {
  const moves: [ReturnType<typeof facetKey>, number][] = [];
  if (before) moves.push([facetKey(before), -1]);
  if (after) moves.push([facetKey(after), 1]);
  if (moves.length === 2 && JSON.stringify(moves[0]![0]) === JSON.stringify(moves[1]![0])) return [];
  return moves.map(([key, delta]) =>
    ctx.db
      .insert(contactFacetCounts)
      .values({ organizationId: ctx.organizationId, ...key, total: Math.max(0, delta) })
      .onConflictDoUpdate({
        target: [
          contactFacetCounts.organizationId,
          contactFacetCounts.type,
          contactFacetCounts.status,
          contactFacetCounts.source,
          contactFacetCounts.assignedTo,
        ],
        set: { total: sql`${contactFacetCounts.total} + ${delta}` },
      }),
  );
}

/**
 * The counter moves of many writes at once (an import's chunk), summed per combination: one statement however many
 * contacts it files, with the same effect as `facetMoves` of each.
 */
export function facetMovesOfMany(ctx: ServiceContext, changes: { before: Faceted | null; after: Faceted | null }[]): Statement[] {
  const delta = new Map<string, number>();
  const move = (c: Faceted | null, d: number) => {
    if (!c) return;
    const k = facetKey(c);
    const key = JSON.stringify([k.type, k.status, k.source, k.assignedTo]);
    delta.set(key, (delta.get(key) ?? 0) + d);
  };
  for (const { before, after } of changes) move(before, -1), move(after, 1);
  const moved = [...delta].filter(([, d]) => d !== 0).map(([key, d]) => [...(JSON.parse(key) as string[]), d]);
  if (moved.length === 0) return [];
  const list = JSON.stringify(moved);
  const t = contactFacetCounts;
  const of = (i: number) => sql.raw(`json_extract(value, '$[${i}]')`);
  const sameKey = sql`${t.type} = ${of(0)} AND ${t.status} = ${of(1)} AND ${t.source} = ${of(2)} AND ${t.assignedTo} = ${of(3)}`;
  return [
    ctx.db
      .insert(t)
      .select(sql`SELECT ${ctx.organizationId}, ${of(0)}, ${of(1)}, ${of(2)}, ${of(3)}, 0 FROM json_each(${list}) WHERE true`)
      .onConflictDoNothing(),
    ctx.db
      .update(t)
      .set({ total: sql`max(0, ${t.total} + (SELECT ${of(4)} FROM json_each(${list}) WHERE ${sameKey}))` })
      .where(and(eq(t.organizationId, ctx.organizationId), sql`EXISTS (SELECT 1 FROM json_each(${list}) WHERE ${sameKey})`)),
  ];
}

/**
 * The statement that reads the total of a list whose filters (those that change the total) are all facet fields,
 * or null when another filter takes part (that total is counted and cached, crm/list-totals.ts).
 */
export function facetTotalStatement(
  d1: D1Database | D1DatabaseSession,
  organizationId: string,
  filters: Record<string, unknown>,
): D1PreparedStatement | null {
  const set = Object.entries(filters).filter(([, v]) => v !== undefined);
  if (set.length === 0 || !set.every(([k, v]) => k in FACET_COLUMNS && typeof v === "string")) return null;
  const where = set.map(([k]) => ` AND ${FACET_COLUMNS[k as FacetFilter]} = ?`).join("");
  return d1
    .prepare(`SELECT IFNULL(SUM(total), 0) AS total FROM contact_facet_counts WHERE organization_id = ?${where}`)
    .bind(organizationId, ...set.map(([, v]) => v));
}
