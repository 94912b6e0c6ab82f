import { and, asc, eq, lte, or, sql } from "drizzle-orm";
import { type ContactRecord, nameIsShared, personOf } from "../contacts/service";
import { type BeginWrite, type Counted, type Kept, RETAINED_KINDS, type RetainedKind, scrubOf, type Subject } from "../crm/erasure";
import { decodeRow } from "../crm/trash";
import type { Db } from "../db/client";
import { contacts, erasures, trashEntries, trashRows } from "../db/schema";
import { expectVersionMatch, type Statement, withRetries } from "../db/write";
import type { Env } from "../env";
import { commit } from "../events/commit";
import { NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { createLogger, loggableError } from "../lib/log";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { ERASABLES } from "./domains";
import type { Erasure } from "./schemas";

// The steps of an erasure, in order: `begin`, then each domain's later step (envelopes, documents, the copies in
// every domain's tables, the trash, the export zips), then `finish`. Each domain erases its own tables through one
// interface (crm/erasure.ts `Erasable`), called in the order of domains.ts. `begin` is one atomic batch; each later
// step is idempotent and made of bounded rounds, so a run that stops anywhere is finished by the next: the retry of
// the request, or the cron (`resumeErasures`).

/** Why each kind of record an erasure keeps is kept (the answer's `retainedRecords`). */
const RETAINED_REASONS: Record<RetainedKind, string> = {
  signed_envelopes:
    "A completed envelope is a signed, sealed record: its signers' names and addresses, its audit trail, the document they signed and its PDFs are part of what was signed and stay as signed",
  clickwrap_acceptances:
    "A clickwrap acceptance is an immutable record of who accepted which terms, when and from where (spec: immutable acceptances)",
  documents_by_name:
    "Unsigned documents and envelopes that never completed which mention the name alone, without the person's e-mail or phone: a name alone does not tell whose they are, so they are not deleted, nor rewritten (a document's SHA-256 identifies the text that was reviewed); review them and delete those that are this person's",
  name_mentions:
    "Mentions by name alone: another contact has the same name, so texts that name only the name may be about them and are kept as written (the person's e-mail and phone were taken out)",
};

/** A run that has not touched a pending erasure for this long has stopped: the cron takes it up. */
export const ERASURE_LEASE_MS = 2 * 60_000;

type ErasureRow = typeof erasures.$inferSelect;

interface Found {
  live: ContactRecord | null;
  trashed: ContactRecord | null;
  pending: ErasureRow | null;
  /** Contacts merged into this one (merge/merge.ts), the same person, not erased yet or not to the end. */
  merged: string[];
}

/** The person to erase: the live contact, one waiting in the trash, or an erasure of theirs that stopped half-way. */
export async function findPerson(ctx: ServiceContext, id: string): Promise<Found> {
  const org = ctx.organizationId;
  const [live, kept, pending, mergedRows] = await ctx.db.batch([
    ctx.db
      .select()
      .from(contacts)
      .where(and(eq(contacts.organizationId, org), eq(contacts.id, id))),
    ctx.db
      .select({ row: trashRows.row })
      .from(trashRows)
      .innerJoin(trashEntries, eq(trashEntries.recordId, trashRows.recordId))
      .where(
        and(
          eq(trashRows.recordId, id),
          eq(trashRows.tableName, "contacts"),
          eq(trashEntries.organizationId, org),
          eq(trashEntries.kind, "contact"),
          eq(trashEntries.state, "trashed"),
        ),
      ),
    ctx.db
      .select()
      .from(erasures)
      .where(and(eq(erasures.organizationId, org), eq(erasures.contactId, id), eq(erasures.state, "pending"))),
    ctx.db
      .select({ id: trashEntries.recordId })
      .from(trashEntries)
      .where(
        and(
          eq(trashEntries.organizationId, org),
          eq(trashEntries.mergedInto, id),
          // Waiting in the trash, or erased by a run that stopped half-way (this request's earlier try): finished now.
          or(
            eq(trashEntries.state, "trashed"),
            sql`EXISTS (SELECT 1 FROM ${erasures} e WHERE e.organization_id = ${org} AND e.contact_id = ${trashEntries.recordId} AND e.state = 'pending')`,
          ),
        ),
      ),
  ]);
  const merged = mergedRows.map((m) => m.id);
  if (live[0]) return { live: live[0], trashed: null, pending: null, merged };
  if (kept[0]) return { live: null, trashed: decodeRow<ContactRecord>(contacts, kept[0].row), pending: null, merged };
  if (pending[0]) return { live: null, trashed: null, pending: pending[0], merged };
  throw new NotFound("Contact");
}

/**
 * The contacts merged into this one are the same person: each is erased first (its own erasure, without the
 * request's If-Match or kept answer), once the request is known to go ahead, so that a run stopping anywhere leaves
 * either the target live (the retry erases the rest) or every merged contact's erasure begun (the cron ends it).
 */
async function eraseMerged(ctx: ServiceContext, found: Found): Promise<void> {
  if (found.merged.length === 0) return;
  if (!found.pending) expectVersionMatch(ctx, (found.live ?? found.trashed)!.version);
  const inner: ServiceContext = { ...ctx, ifMatch: undefined, keepAnswer: undefined };
  for (const id of found.merged) await eraseContact(inner, id);
}

/**
 * DELETE /v1/contacts/{id}?erase=true (docs/decisions/0014-erasure.md): the person erased now, without the trash. `begin` removes
 * the contact (live or in the trash), its activities and communications, clears what is found by their id, e-mail or phone
 * (testimonial author display, referrals that name them, unsent survey invitations and the respondent's address,
 * the mail log, the referral form's keys), leaves a tombstone, and records the erasure `pending` with the strings
 * it searches for. The later steps (`runErasure`) delete the envelopes that name them and never completed and the
 * unsigned documents that name them, and rewrite every other copy of their name, e-mail and phone, the trash
 * included. Kept as they are and named in `retained`: completed envelopes and clickwrap acceptances. A request that
 * finds its erasure pending (a retry after a failure) finishes it and answers the same. Contacts merged into this
 * one are erased with it (`eraseMerged`).
 */
export async function eraseContact(ctx: ServiceContext, id: string): Promise<Erasure> {
  let committed: BeginWrite["committed"][] = [];
  const first = await findPerson(ctx, id);
  await eraseMerged(ctx, first);
  const row = await withRetries(async (n) => {
    const { live, trashed, pending } = n === 1 && first.merged.length === 0 ? first : await findPerson(ctx, id);
    if (pending) {
      // A retry of an erasure that stopped half-way: this run finishes it (the cron leaves a touched one alone).
      await ctx.db.update(erasures).set({ touchedAt: new Date().toISOString() }).where(eq(erasures.id, pending.id));
      return pending;
    }
    const contact = (live ?? trashed)!;
    expectVersionMatch(ctx, contact.version);
    const person = personOf(contact);
    const subject: Subject = { id, contact, live: live !== null, person, at: new Date().toISOString() };
    const writes = await begin(ctx, subject);
    const started: ErasureRow = {
      id: newId(),
      organizationId: ctx.organizationId,
      contactId: id,
      actorUserId: ctx.actor.userId ?? null,
      erased: countsOnly(Object.assign({}, ...writes.map((w) => w.erased ?? {}))),
      retained: [],
      at: subject.at,
      state: "pending",
      subject: person,
      retainedCounts: null,
      touchedAt: subject.at,
    };
    await commit(
      ctx,
      [...writes.flatMap((w) => w.statements ?? []), ctx.db.insert(erasures).values(started)],
      writes.flatMap((w) => w.events ?? []),
    );
    committed = writes.map((w) => w.committed);
    return started;
  });
  // The public feeds of the agents they reviewed show the author no more from the next read on.
  for (const done of committed) done?.();
  return runErasure(ctx, row);
}

/**
 * Each domain's part of `begin` (`Erasable.begin`, in order: one may refuse first), their reads in one batch, then
 * their writes from what was read (one may act first: the signing links close before the batch commits).
 */
async function begin(ctx: ServiceContext, subject: Subject): Promise<BeginWrite[]> {
  const parts = [];
  for (const domain of ERASABLES) if (domain.begin) parts.push(await domain.begin(ctx, subject));
  const reads = parts.flatMap((p) => p.reads ?? []);
  const results = reads.length ? ((await ctx.db.batch(reads as [Statement, ...Statement[]])) as unknown[][]) : [];
  const writes: BeginWrite[] = [];
  let at = 0;
  for (const part of parts) {
    const count = part.reads?.length ?? 0;
    writes.push(await part.write(results.slice(at, at + count)));
    at += count;
  }
  return writes;
}

/**
 * The steps after `begin`, each idempotent (a second run finds nothing left and counts nothing), then `finish`:
 * what was kept is counted, the erasure is `done` and its search strings are cleared. Answers the erasure.
 */
export async function runErasure(ctx: ServiceContext, row: ErasureRow): Promise<Erasure> {
  const person = row.subject;
  if (row.state === "done" || !person) return answerOf(row);
  const counted: Counted = (kind) =>
    ctx.db
      .update(erasures)
      // changes(): the rows the statement just before this one in the batch changed (a batch runs in order, on one connection).
      .set({
        erased: sql`json_set(${erasures.erased}, ${`$.${kind}`}, coalesce(json_extract(${erasures.erased}, ${`$.${kind}`}), 0) + changes())`,
      })
      .where(eq(erasures.id, row.id));
  // Every step below looks at everything again, so what each counts as kept is complete for this run.
  const scrub = scrubOf(person, !(await nameIsShared(ctx, person)), ERASABLES);
  const kept = Object.fromEntries(RETAINED_KINDS.map((kind) => [kind, 0])) as Record<RetainedKind, number>;
  for (const domain of ERASABLES) {
    if (!domain.erase) continue;
    const theirs: Kept = await domain.erase(ctx, scrub, counted);
    for (const kind of RETAINED_KINDS) kept[kind] += theirs[kind] ?? 0;
  }
  const retainedCounts = countsOnly(kept);
  const finished = {
    state: "done" as const,
    subject: null,
    retained: Object.keys(retainedCounts),
    retainedCounts,
    touchedAt: new Date().toISOString(),
  };
  // The request's answer is kept in the batch that finishes (a retry after a reply lost there replays it: nothing is
  // left to find by then). The counts are the ones the steps above added up.
  const counts = await ctx.db.select({ erased: erasures.erased }).from(erasures).where(eq(erasures.id, row.id)).get();
  const [done] = (await commit(
    ctx,
    [
      ctx.db
        .update(erasures)
        .set(finished)
        .where(and(eq(erasures.id, row.id), eq(erasures.state, "pending")))
        .returning(),
    ],
    [],
    {
      answer: answerOf({ ...row, ...finished, erased: counts?.erased ?? row.erased }),
    },
  )) as ErasureRow[][];
  // A concurrent run (the cron and a retry) finished first: answer what it recorded.
  return answerOf(done?.[0] ?? (await ctx.db.select().from(erasures).where(eq(erasures.id, row.id)).get())!);
}

function answerOf(row: ErasureRow): Erasure {
  const counts = row.retainedCounts ?? {};
  const retained = RETAINED_KINDS.filter((k) => row.retained.includes(k));
  return {
    id: row.contactId,
    deleted: true as const,
    erased: countsOnly(row.erased),
    retained,
    retainedRecords: retained
      .filter((kind) => (counts[kind] ?? 0) > 0)
      .map((kind) => ({ kind, count: counts[kind]!, reason: RETAINED_REASONS[kind] })),
  };
}

/**
 * Cron: finishes erasures that stopped half-way (a failed step, a request that ended) and that no run has touched
 * for ERASURE_LEASE_MS, a few a pass. Each is claimed first (a compare-and-set on `touched_at`), so two passes do
 * not run one erasure side by side; a run that fails again is logged and taken up by a later pass.
 */
export async function resumeErasures(env: Env, db: Db, { now = new Date(), max = 5 } = {}): Promise<number> {
  const due = await db
    .select()
    .from(erasures)
    .where(and(eq(erasures.state, "pending"), lte(erasures.touchedAt, new Date(now.getTime() - ERASURE_LEASE_MS).toISOString())))
    .orderBy(asc(erasures.touchedAt))
    .limit(max);
  let finished = 0;
  for (const row of due) {
    const claimed = await db
      .update(erasures)
      .set({ touchedAt: now.toISOString() })
      .where(and(eq(erasures.id, row.id), eq(erasures.state, "pending"), eq(erasures.touchedAt, row.touchedAt!)))
      .returning({ id: erasures.id });
    if (claimed.length === 0) continue;
    const deferred: Promise<unknown>[] = [];
    try {
      await runErasure(
        systemContext(env, db, row.organizationId, `cron:erasure:${row.id}`, (work) => deferred.push(work)),
        row,
      );
      finished++;
    } catch (err) {
      createLogger().warn("erasure not finished; a later cron pass resumes it", { erasureId: row.id, error: loggableError(err) });
    }
    await Promise.allSettled(deferred);
  }
  return finished;
}

const countsOnly = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
