import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Obligations derived from a document's canonical data (spec: Obligation; documents/obligations.ts derives them per
 * form). The id is derived from (document, type), so a re-sync upserts the same rows instead of adding copies.
 * `due_date` is YYYY-MM-DD (a calendar date, compared as text). `sync_count` counts DOCUMENT_SIGNED re-syncs and
 * `sync_event_id` names the event of the last one, so a redelivered event changes nothing. `overdue_noted_at` is
 * set in the batch that adds the OBLIGATION_OVERDUE activity to the linked deal, so it is added once.
 * `due_soon_event_at` and `overdue_event_at` are set in the batch that stages the obligation.due_soon or
 * obligation.overdue webhook event (documents/obligation-notices.ts), so each is emitted once per due date.
 */
export const documentObligations = sqliteTable(
  "document_obligations",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    documentId: text().notNull(),
    dealId: text(),
    type: text().notNull(),
    description: text(),
    dueDate: text().notNull(),
    amountCents: integer(),
    createdAt: text().notNull(),
    syncedAt: text().notNull(),
    syncCount: integer().notNull().default(0),
    syncEventId: text(),
    overdueNotedAt: text(),
    dueSoonEventAt: text(),
    overdueEventAt: text(),
  },
  (t) => [
    // The list: an organization's obligations by due date, up to a horizon.
    index("document_obligations_org_due_idx").on(t.organizationId, t.dueDate, t.id),
    index("document_obligations_document_idx").on(t.documentId),
    // The overdue pass: linked obligations not yet noted on their deal, by due date, across organizations.
    index("document_obligations_overdue_idx").on(t.dueDate, t.id).where(sql`${t.dealId} IS NOT NULL AND ${t.overdueNotedAt} IS NULL`),
    // The notices pass: obligations whose due_soon or overdue event is still to emit, by due date.
    index("document_obligations_due_soon_event_idx").on(t.dueDate, t.id).where(sql`${t.dueSoonEventAt} IS NULL`),
    index("document_obligations_overdue_event_idx").on(t.dueDate, t.id).where(sql`${t.overdueEventAt} IS NULL`),
  ],
);
