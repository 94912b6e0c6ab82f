import { and, asc, eq, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { dealActivities, deals, documentObligations, documents, envelopes } from "../db/schema";
import { guard, type Statement } from "../db/write";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { sha256Hex } from "../lib/crypto";
import { inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { FORMS, type LeaseCanonical } from "./forms";
import type { DerivedObligation, ObligationType } from "./forms/definition";
import { AMENDMENT_FORM, type AmendmentCanonical, foldAmendments } from "./forms/amendment";
import { PURCHASE_FORM, type PurchaseCanonical, type PurchaseChanges, purchaseObligations } from "./forms/purchase";

/**
 * Obligations (spec: Obligation): dated duties a document's canonical data implies, derived per form, stored with
 * the document and re-derived when it is signed (spec: Events, DOCUMENT_SIGNED → obligation re-sync).
 */
export { OBLIGATION_TYPES } from "./forms/definition";
export const URGENCIES = ["pending", "due_soon", "overdue"] as const;

/** Ontario RTA 2006, s. 44: a tenant's notice ending a fixed-term tenancy at its end is due at least 60 days before it. */
export const RENEWAL_NOTICE_DAYS = 60;
/** due_soon: due today or within the next 7 days (UTC); overdue: due before today. */
export const DUE_SOON_DAYS = 7;
/** Obligations one list answer carries at most, the earliest due first. */
export const MAX_LISTED_OBLIGATIONS = 500;

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const dayOf = (d: { year: number; month: number; day: number }) => Date.UTC(d.year, d.month - 1, d.day);
/** Today in UTC, moved by `days`, as YYYY-MM-DD. */
export const utcDay = (days = 0, now = new Date()) =>
  isoDay(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + days * DAY_MS);

function leaseObligations(canonical: Record<string, unknown>): DerivedObligation[] {
  const { term, deposit } = (canonical as LeaseCanonical).lease;
  const out: DerivedObligation[] = [];
  if (deposit?.dueDate)
    out.push({ type: "deposit_due", description: "Rent deposit due", dueDate: isoDay(dayOf(deposit.dueDate)), amountCents: deposit.cents });
  // The commencement (first month's rent) implies no obligation: the spec's type list is closed, and none of its
  // five fits a tenancy's start (closing completes a sale, and amounts are for deposit obligations).
  if (term.end) {
    const end = dayOf(term.end);
    out.push({ type: "expiry", description: "Fixed term ends", dueDate: isoDay(end), amountCents: null });
    out.push({
      type: "renewal",
      description: `Last day for the tenant's notice to end the tenancy at the end of the term (${RENEWAL_NOTICE_DAYS} days before it, RTA s. 44)`,
      dueDate: isoDay(end - RENEWAL_NOTICE_DAYS * DAY_MS),
      amountCents: null,
    });
  }
  return out;
}

/** Per form key (the forms of documents/forms/ bring their own); a form without either implies no obligations. */
const DERIVE: Record<string, (canonical: Record<string, unknown>) => DerivedObligation[]> = { "on/standard-lease": leaseObligations };

/** The obligation id of (document, type[, key]): a UUID-shaped SHA-256, so every derivation names the same row. */
async function derivedId(...parts: string[]): Promise<string> {
  const h = await sha256Hex(parts.join("/"));
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

type ObligationRow = typeof documentObligations.$inferSelect;
type DocumentSource = { id: string; organizationId: string; formKey: string; canonical: Record<string, unknown>; dealId: string | null };

const derive = (doc: DocumentSource) => (DERIVE[doc.formKey] ?? FORMS[doc.formKey]?.obligations)?.(doc.canonical) ?? [];

export async function deriveObligations(
  doc: DocumentSource,
  at: string,
  sync: { eventId: string } | null = null,
  derived = derive(doc),
): Promise<ObligationRow[]> {
  return Promise.all(
    derived.map(async ({ key, ...d }) => ({
      ...d,
      id: await derivedId(doc.id, d.type, ...(key === undefined ? [] : [key])),
      organizationId: doc.organizationId,
      documentId: doc.id,
      dealId: doc.dealId,
      createdAt: at,
      syncedAt: at,
      syncCount: sync ? 1 : 0,
      syncEventId: sync?.eventId ?? null,
      overdueNotedAt: null,
      dueSoonEventAt: null,
      overdueEventAt: null,
    })),
  );
}

/** The inserts of a new document's obligations, for its create batch. */
export const obligationInserts = (db: Db, rows: ObligationRow[]): Statement[] =>
  rows.length ? [db.insert(documentObligations).values(rows)] : [];

/**
 * The statements that bring a document's obligations in line with `rows`, once per event: a row last synced by this
 * very event is left alone, so a redelivery changes nothing even past the consumer's claim. A due date that moved
 * is noted overdue again, and its due_soon and overdue events are emitted again for the new date.
 */
function resyncStatements(db: Db, doc: { id: string; organizationId: string }, rows: ObligationRow[], _eventId: string): Statement[] {
  const c = documentObligations;
  // By id, not type: a waived condition's row goes while the other conditions' rows of the same type stay.
  const stale = db
    .delete(c)
    .where(
      and(
        eq(c.organizationId, doc.organizationId),
        eq(c.documentId, doc.id),
        sql`${c.id} NOT IN (SELECT value FROM json_each(${JSON.stringify(rows.map((r) => r.id))}))`,
      ),
    );
  if (rows.length === 0) return [stale];
  const upsert = db
    .insert(c)
    .values(rows)
    .onConflictDoUpdate({
      target: c.id,
      set: {
        dealId: sql`excluded.deal_id`,
        description: sql`excluded.description`,
        dueDate: sql`excluded.due_date`,
        amountCents: sql`excluded.amount_cents`,
        syncedAt: sql`excluded.synced_at`,
        syncCount: sql`${c.syncCount} + 1`,
        syncEventId: sql`excluded.sync_event_id`,
        overdueNotedAt: sql`CASE WHEN ${c.dueDate} = excluded.due_date THEN ${c.overdueNotedAt} END`,
        dueSoonEventAt: sql`CASE WHEN ${c.dueDate} = excluded.due_date THEN ${c.dueSoonEventAt} END`,
        overdueEventAt: sql`CASE WHEN ${c.dueDate} = excluded.due_date THEN ${c.overdueEventAt} END`,
      },
      setWhere: sql`${c.syncEventId} IS NOT excluded.sync_event_id`,
    });
  return [stale, upsert];
}

/** The signed amendments of a purchase agreement, in order of completion (their envelopes' completedAt). */
const signedAmendments = (organizationId: string, agreementId: string) => sql`
  FROM ${documents} d JOIN ${envelopes} e ON e.document_id = d.id AND e.status = 'completed'
  WHERE d.organization_id = ${organizationId} AND d.form_key = ${AMENDMENT_FORM} AND json_extract(d.canonical, '$.amendment.amends') = ${agreementId}`;

/** What the signed amendments of a purchase agreement changed, folded oldest completion first; and how many there are. */
export async function signedAmendmentChanges(
  db: Db,
  organizationId: string,
  agreementId: string,
): Promise<{ changes: PurchaseChanges; count: number }> {
  const amendments = await db.all<{ canonical: string }>(
    sql`SELECT d.canonical ${signedAmendments(organizationId, agreementId)} ORDER BY e.completed_at, d.id`,
  );
  return { changes: foldAmendments(amendments.map((a) => JSON.parse(a.canonical) as AmendmentCanonical)), count: amendments.length };
}

/**
 * What a DOCUMENT_SIGNED re-syncs: the document's own obligations, except for an amendment, which has none and
 * re-syncs the agreement it amends. A purchase agreement's obligations are derived with every signed amendment
 * applied, oldest completion first (the latest wins), in a batch guarded on that list: an amendment completed
 * meanwhile fails the batch, and the redelivery derives again with it.
 */
async function resyncTarget(
  db: Db,
  doc: DocumentRow,
  at: string,
  eventId: string,
): Promise<{ target: DocumentRow; rows: ObligationRow[]; guards: Statement[] } | null> {
  let target = doc;
  if (doc.formKey === AMENDMENT_FORM) {
    const amended = await db
      .select()
      .from(documents)
      .where(
        and(eq(documents.organizationId, doc.organizationId), eq(documents.id, (doc.canonical as AmendmentCanonical).amendment.amends)),
      )
      .get();
    if (!amended) return null;
    target = amended;
  }
  if (target.formKey !== PURCHASE_FORM) return { target, rows: await deriveObligations(target, at, { eventId }), guards: [] };
  const { changes, count } = await signedAmendmentChanges(db, target.organizationId, target.id);
  const rows = await deriveObligations(target, at, { eventId }, purchaseObligations(target.canonical as PurchaseCanonical, changes));
  return { target, rows, guards: [guard(db, sql`(SELECT COUNT(*) ${signedAmendments(target.organizationId, target.id)}) = ${count}`)] };
}

type DocumentRow = typeof documents.$inferSelect;

/** Re-derives the obligations of the documents `events` name (DOCUMENT_SIGNED), one batch for them all. */
export async function resyncObligations(db: Db, events: DomainEvent[]): Promise<void> {
  const wanted = events.map((e) => ({ event: e, documentId: String((e.data as { documentId?: unknown }).documentId ?? "") }));
  const found = await db
    .select()
    .from(documents)
    .where(
      inJsonList(
        documents.id,
        wanted.map((w) => w.documentId),
      ),
    );
  const at = nowIso();
  const statements: Statement[] = [];
  for (const { event, documentId } of wanted) {
    const doc = found.find((d) => d.id === documentId && d.organizationId === event.organizationId);
    if (!doc) {
      statements.push(...resyncStatements(db, { id: documentId, organizationId: event.organizationId }, [], event.id));
      continue;
    }
    const synced = await resyncTarget(db, doc, at, event.id);
    if (synced) statements.push(...synced.guards, ...resyncStatements(db, synced.target, synced.rows, event.id));
  }
  if (statements.length) await db.batch(statements as [Statement, ...Statement[]]);
}

export const obligationSyncConsumer: EventConsumer = {
  name: "obligation-sync",
  accepts: (type) => type === "DOCUMENT_SIGNED",
  handle: (events, { db }) => resyncObligations(db, events),
};

/** GET /api/documents/obligations: overdue and due within `withinDays` of today (UTC), soonest first, urgency as of now. */
export async function listObligations(ctx: ServiceContext, withinDays: number) {
  const today = utcDay();
  const soon = utcDay(DUE_SOON_DAYS);
  const c = documentObligations;
  const rows = await ctx.db
    .select({
      id: c.id,
      documentId: c.documentId,
      dealId: c.dealId,
      type: c.type,
      description: c.description,
      dueDate: c.dueDate,
      amountCents: c.amountCents,
    })
    .from(c)
    .where(and(eq(c.organizationId, ctx.organizationId), lte(c.dueDate, utcDay(withinDays))))
    .orderBy(asc(c.dueDate), asc(c.id))
    .limit(MAX_LISTED_OBLIGATIONS);
  return rows.map((r) => toObligation(r, today, soon));
}

/** An obligation as GET /api/documents/obligations shows it, its urgency as of `today` (and `soon`, a week on). */
export const toObligation = (
  r: Pick<ObligationRow, "id" | "documentId" | "dealId" | "type" | "description" | "dueDate" | "amountCents">,
  today: string,
  soon: string,
) => ({
  id: r.id,
  documentId: r.documentId,
  dealId: r.dealId,
  type: r.type as ObligationType,
  description: r.description,
  // Stored as a UTC day; shown as the spec's ISO 8601 timestamp (the start of that day, UTC).
  dueDate: `${r.dueDate}T00:00:00.000Z`,
  amountCents: r.amountCents,
  urgency: r.dueDate < today ? ("overdue" as const) : r.dueDate <= soon ? ("due_soon" as const) : ("pending" as const),
});

/**
 * Cron pass: each overdue obligation of a linked deal becomes one OBLIGATION_OVERDUE activity on that deal. The
 * activity, the deal's lastActivityAt and the obligation's `overdue_noted_at` move in one batch, each statement
 * conditional on the obligation not being noted yet: D1 runs batches one at a time, so of concurrent passes only
 * the first writes (the activity id, derived from the obligation and its due date, is a second guard).
 */
export async function noteOverdueObligations(db: Db, { max = 500, now = new Date() } = {}): Promise<number> {
  const c = documentObligations;
  const today = utcDay(0, now);
  const due = await db
    .select({ id: c.id, dueDate: c.dueDate, type: c.type, description: c.description })
    .from(c)
    .where(sql`${c.dealId} IS NOT NULL AND ${c.overdueNotedAt} IS NULL AND ${c.dueDate} < ${today}`)
    .orderBy(asc(c.dueDate), asc(c.id))
    .limit(max);
  if (due.length === 0) return 0;
  const at = nowIso(now);
  const list = JSON.stringify(
    await Promise.all(
      due.map(async (o) => ({
        obligationId: o.id,
        dueDate: o.dueDate,
        activityId: await derivedId(o.id, o.dueDate, "overdue"),
        description: `Obligation overdue: ${o.description ?? o.type} (due ${o.dueDate})`,
      })),
    ),
  );
  // The obligations of `list` still unnoted at their listed due date (WHERE, not ON: SQLite needs a WHERE before
  // the ON CONFLICT of an INSERT … SELECT), with their deal where it still exists in their organization.
  const listed = sql`json_each(${list}) j JOIN ${c} o ON o.id = json_extract(j.value, '$.obligationId')`;
  const unnoted = sql`o.due_date = json_extract(j.value, '$.dueDate') AND o.overdue_noted_at IS NULL AND o.deal_id IS NOT NULL`;
  const withDeal = sql`FROM ${listed} JOIN ${deals} d ON d.id = o.deal_id AND d.organization_id = o.organization_id WHERE ${unnoted}`;
  const [, , noted] = await db.batch([
    // Columns in table order: id, organization_id, deal_id, type, description, user_id, metadata, created_at.
    db
      .insert(dealActivities)
      .select(
        sql`SELECT json_extract(j.value, '$.activityId'), o.organization_id, o.deal_id, 'OBLIGATION_OVERDUE', json_extract(j.value, '$.description'), NULL,
                   json_object('obligationId', o.id, 'documentId', o.document_id, 'type', o.type, 'dueDate', o.due_date), ${at} ${withDeal}`,
      )
      .onConflictDoNothing(),
    db
      .update(deals)
      .set({ lastActivityAt: sql`max(${deals.lastActivityAt}, ${at})`, version: sql`${deals.version} + 1` })
      .where(sql`${deals.id} IN (SELECT d.id ${withDeal})`),
    // Noted also when the deal has gone meanwhile: there is nothing to note it on, and it leaves the pass's scan.
    db.update(c).set({ overdueNotedAt: at }).where(sql`${c.id} IN (SELECT o.id FROM ${listed} WHERE ${unnoted})`).returning({ id: c.id }),
  ]);
  return noted.length;
}
