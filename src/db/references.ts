import { and, eq, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";
import type { FieldIssue } from "../lib/errors";
import { inJsonList } from "../lib/sql";
import { contacts } from "./contacts";
import { deals } from "./deals";
import { properties } from "./properties";
import { trashEntries } from "./trash";
import { guard, rowExists, type Statement } from "./write";

/** One organization on its shard: what these guards need of a service context (which has both). */
interface OrganizationDb {
  db: Db;
  organizationId: string;
}

/**
 * References that hold (docs/decisions/0013-trash-and-references-that-hold.md): the one rule for a write that sets a
 * reference to a contact, a deal or a property. The target must be a live row of the caller's organization (a trashed
 * record has left its table, so "not in the trash" needs no filter). The rule is checked twice:
 *
 * - before the write, in the verb's read batch (`referencesRead`, `referenceIssuesOf`), to answer 422
 *   `invalid_reference` naming every field whose target is not there, and
 * - in the write's own batch (`expectReferences`), a guard that aborts the batch when a target went away after the
 *   check. D1 runs a batch as one transaction, so no delete can land between the guard and the write; the verb's
 *   `withRetries` then runs again, and the check names the field.
 *
 * Only a reference the write sets or changes is checked: a reference kept as it was stays valid even when its
 * target has since been deleted (reads then show the target as `{id, deleted: true}`, see `deletedTargets`).
 */
export type ReferenceTarget = "contact" | "deal" | "property";

interface Target {
  table: SQLiteTable;
  id: SQLiteColumn;
  organizationId: SQLiteColumn;
  noun: string;
}

const TARGETS: Record<ReferenceTarget, Target> = {
  contact: { table: contacts, id: contacts.id, organizationId: contacts.organizationId, noun: "contact" },
  deal: { table: deals, id: deals.id, organizationId: deals.organizationId, noun: "deal" },
  property: { table: properties, id: properties.id, organizationId: properties.organizationId, noun: "property" },
};

export interface Reference {
  /** The request field that names the target, as a path (`["contactId"]`). */
  path: (string | number)[];
  target: ReferenceTarget;
  id: string;
}

const live = (ctx: OrganizationDb, r: Reference): SQL => {
  const t = TARGETS[r.target];
  return rowExists(t.table, and(eq(t.id, r.id), eq(t.organizationId, ctx.organizationId)));
};

/**
 * Whether each reference's target is there, as one statement a caller can put in its own read batch (an empty list
 * reads a constant): `referenceIssuesOf` turns its row into issues.
 */
export const referencesRead = (ctx: OrganizationDb, refs: Reference[]) =>
  ctx.db
    .select(refs.length ? Object.fromEntries(refs.map((r, i) => [`r${i}`, sql<number>`${live(ctx, r)}`])) : { none: sql<number>`1` })
    .from(sql`(SELECT 1)`);

/** The issues of the references whose target the row of `referencesRead` says is not there. */
export const referenceIssuesOf = (refs: Reference[], rows: Record<string, number>[] | undefined): FieldIssue[] =>
  refs.flatMap((r, i) =>
    rows?.[0]?.[`r${i}`]
      ? []
      : [
          {
            field: r.path.join("."),
            path: r.path,
            code: "invalid_reference",
            message: `No ${TARGETS[r.target].noun} with this id in your organization`,
          },
        ],
  );

/** The guard for the write's batch: every target is still there when the write lands (none when nothing is set). */
export function expectReferences(ctx: OrganizationDb, refs: Reference[]): Statement[] {
  if (refs.length === 0) return [];
  return [
    guard(
      ctx.db,
      sql.join(
        refs.map((r) => live(ctx, r)),
        sql` AND `,
      ),
    ),
  ];
}

/** The references of `refs` whose id is set (null and undefined name no target). */
export const references = (...refs: { path: (string | number)[]; target: ReferenceTarget; id: string | null | undefined }[]): Reference[] =>
  refs.flatMap((r) => (r.id ? [{ path: r.path, target: r.target, id: r.id }] : []));

/**
 * How a reference to a record that is gone is shown: `{id, deleted: true, deletedAt}`, from its trash entry or
 * tombstone (`deletedAt` null for a record deleted before the trash existed). One query for a page of ids.
 */
export interface DeletedTarget {
  id: string;
  deleted: true;
  deletedAt: string | null;
}

export async function deletedTargets(ctx: OrganizationDb, ids: string[]): Promise<Map<string, DeletedTarget>> {
  const unique = [...new Set(ids)];
  const out = new Map<string, DeletedTarget>(unique.map((id) => [id, { id, deleted: true, deletedAt: null }]));
  if (unique.length === 0) return out;
  const rows = await ctx.db
    .select({ id: trashEntries.recordId, deletedAt: trashEntries.deletedAt })
    .from(trashEntries)
    .where(and(eq(trashEntries.organizationId, ctx.organizationId), inJsonList(trashEntries.recordId, unique)))
    .all();
  for (const r of rows) out.set(r.id, { id: r.id, deleted: true, deletedAt: r.deletedAt });
  return out;
}
