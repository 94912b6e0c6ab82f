import { and, eq, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { contacts, dealActivities, dealDocuments, deals, dealStageChanges, tasks } from "../db/schema";
import { checkCustomFields, withCustomFields } from "../crm/custom-fields";
import { expectRow, expectVersion, type Statement, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { tasksMoveContacts } from "../crm/list-totals";
import { newEvent } from "../events/outbox";
import { Conflict, NotFound } from "../lib/errors";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { dealWriteReads } from "./preload";
import { expectReferences } from "../db/references";
import { archiveRows, readTrashed, restoreFrame, restoreRows, trashEntry } from "../crm/trash";
import { type DealRecord, fromRow, type TaskRecord, toDeal, toTask } from "./mapping";
import { present } from "./present";
import type { Deal, DealCreate, DealMove, DealUpdate, Include } from "./schemas";
import {
  activityRow,
  applyUpdate,
  bumpCounters,
  changeEvents,
  checkReferences,
  DEALS,
  dealReferences,
  newDealRecord,
  pipelineMoves,
  replaceDeal,
  stageChangeStatements,
  touchDeal,
  writableInput,
} from "./writes";
export { dealsErasable } from "./erasure";

export { dealExportWalk, listDeals } from "./list";

const byId = (ctx: ServiceContext, id: string) => and(eq(deals.id, id), eq(deals.organizationId, ctx.organizationId));

/** The deal of the caller's organization, or 404 exactly as for an id that exists nowhere. */
export async function findDeal(ctx: ServiceContext, id: string): Promise<DealRecord> {
  const row = await ctx.db.select().from(deals).where(byId(ctx, id)).get();
  if (!row) throw new NotFound("Deal");
  return row;
}

/** The deal a write starts from (read with the authentication, once, if it was): 404 when gone, 412 when If-Match names another version. */
export async function readDealForWrite(ctx: ServiceContext, id: string): Promise<DealRecord> {
  const [[before]] = await dealWriteReads.read(ctx, id);
  return before!;
}

export async function getDeal(ctx: ServiceContext, id: string, include: readonly Include[] = []): Promise<Deal> {
  const [shown] = await present(ctx, [await findDeal(ctx, id)], include);
  return shown!;
}

/** POST /v1/deals: ACTIVE, LEAD unless an open stage is given; the contact (and property) must be the organization's. */
export async function createDeal(ctx: ServiceContext, raw: DealCreate): Promise<Deal> {
  const input = writableInput(raw);
  return withRetries(async () => {
    const [, custom] = await Promise.all([checkReferences(ctx, input), checkCustomFields(ctx, "deal", input.customFields)]);
    const now = new Date();
    const record = withCustomFields(newDealRecord(ctx, input, now), custom);
    const at = now.toISOString();
    const event = newEvent(ctx, "deal.created", { object: toDeal(record), previousAttributes: null, changes: null });
    const answer = versioned(toDeal(record), record.version);
    await commit(
      ctx,
      [
        ...expectReferences(ctx, dealReferences(input)),
        ...(custom?.guard ?? []),
        ctx.db.insert(deals).values(record),
        ctx.db
          .insert(dealActivities)
          .values(activityRow(ctx, record.id, "DEAL_CREATED", `Deal created in ${record.stage}`, { stage: record.stage }, at)),
        ...stageChangeStatements(ctx, null, record, undefined, at),
        ...pipelineMoves(ctx, null, record),
        bumpCounters(ctx, 1),
        tasksMoveContacts(ctx.db, ctx.organizationId),
      ],
      [event],
      { answer },
    );
    return answer;
  });
}

/**
 * PUT /v1/deals/{id} and POST /v1/deals/{id}/move: the change applied to the deal as it is at commit time (so
 * concurrent updates of different fields all land), guarded on the version read; a stage change is recorded once,
 * since of two concurrent moves only one commits from the stage they both read.
 */
async function changeDeal(ctx: ServiceContext, id: string, input: DealUpdate, opts: { move: boolean }): Promise<Deal> {
  return withRetries(async () => {
    const before = await readDealForWrite(ctx, id);
    if (opts.move && before.stage === input.stage) throw new Conflict(`The deal is already in ${before.stage}`, "already_in_stage");
    const [, custom] = await Promise.all([
      opts.move ? undefined : checkReferences(ctx, input, before),
      checkCustomFields(ctx, "deal", input.customFields),
    ]);
    const now = new Date();
    const at = now.toISOString();
    const changed = withCustomFields(applyUpdate(before, input, now), custom);
    const won = changed.stage === "CLOSED" && before.stage !== "CLOSED" ? await contactAtWin(ctx, changed.contactId) : undefined;
    const events = changeEvents(ctx, before, { ...changed, updatedAt: at }, input.reason, won?.key);
    if (events.length === 0) return versioned(toDeal(before), before.version);
    const after = { ...changed, updatedAt: at, lastActivityAt: at, version: before.version + 1 };
    const answer = versioned(toDeal(after), after.version);
    const statements = [
      ...expectReferences(ctx, dealReferences(input, before)),
      ...(custom?.guard ?? []),
      ...(won?.guard ?? []),
      ...replaceDeal(ctx, before, after),
      ...stageChangeStatements(ctx, before, after, input.reason, at),
      ...pipelineMoves(ctx, before, after),
    ];
    await commit(ctx, statements, events, { answer, markSent: false });
    return answer;
  });
}

/**
 * The won deal's contact's e-mail key, for the DEAL_WON event (the survey is mailed to the client as they were when
 * the deal was won), and the guard that holds it to the batch: a change of the address racing the win
 * makes the move read it again.
 */
async function contactAtWin(
  ctx: ServiceContext,
  contactId: string | null,
): Promise<{ key: string | null; guard: Statement[] } | undefined> {
  if (!contactId) return undefined;
  const mine = and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.id, contactId));
  const row = await ctx.db.select({ emailKey: contacts.emailKey }).from(contacts).where(mine).get();
  if (!row) return { key: null, guard: [] };
  return { key: row.emailKey, guard: [expectRow(ctx.db, contacts, and(mine, eq(contacts.emailKey, row.emailKey)))] };
}

export async function updateDeal(ctx: ServiceContext, id: string, raw: DealUpdate): Promise<Deal> {
  return changeDeal(ctx, id, writableInput(raw), { move: false });
}

/** POST /v1/deals/{id}/move: 409 already_in_stage when the deal is in that stage (also when another move got there first). */
export const moveDeal = (ctx: ServiceContext, id: string, input: DealMove): Promise<Deal> => changeDeal(ctx, id, input, { move: true });

/**
 * DELETE /v1/deals/{id}: the deal goes to the trash with its tasks, documents, activities and history, guarded on the
 * version read (of concurrent deletes one wins and emits deal.deleted). Its files stay in R2 until the purge.
 */
export async function deleteDeal(ctx: ServiceContext, id: string): Promise<void> {
  await withRetries(async () => {
    const before = await readDealForWrite(ctx, id);
    const org = ctx.organizationId;
    const under = (t: { organizationId: SQLiteColumn; dealId: SQLiteColumn }) => and(eq(t.organizationId, org), eq(t.dealId, id));
    await commit(
      ctx,
      [
        expectVersion(ctx.db, DEALS, org, before),
        ...DEAL_CHILDREN.flatMap((t) => archiveRows(ctx, id, t, under(t))),
        ...archiveRows(ctx, id, deals, byId(ctx, id)),
        trashEntry(ctx, "deal", id, before.title),
        ...pipelineMoves(ctx, before, null),
        bumpCounters(ctx, -1),
        // Its tasks leave with it: a contact's open task among them changes who has one.
        tasksMoveContacts(ctx.db, org),
      ],
      [newEvent(ctx, "deal.deleted", { object: { id }, previousAttributes: null, changes: null })],
    );
  });
}

/** What a deal takes to the trash and brings back. */
const DEAL_CHILDREN = [tasks, dealDocuments, dealActivities, dealStageChanges];

/** POST /v1/deals/{id}/restore: the deal back from the trash as it was, with its children and files; emits deal.restored. */
export async function restoreDeal(ctx: ServiceContext, id: string): Promise<Deal> {
  return withRetries(async () => {
    const { record } = await readTrashed<DealRecord>(ctx, "deal", id, deals, "Deal");
    const frame = restoreFrame(ctx, "deal", id);
    const answer = versioned(toDeal(record), record.version);
    await commit(
      ctx,
      [
        frame.guard,
        restoreRows(ctx.db, id, deals),
        ...DEAL_CHILDREN.map((t) => restoreRows(ctx.db, id, t)),
        ...frame.clear,
        ...pipelineMoves(ctx, null, record),
        bumpCounters(ctx, 1),
        tasksMoveContacts(ctx.db, ctx.organizationId),
      ],
      [newEvent(ctx, "deal.restored", { object: toDeal(record), previousAttributes: null, changes: null })],
      { answer },
    );
    return answer;
  });
}

/** Deals a contact carries with include=deals (newest first); the whole list is GET /v1/deals. */
export const INCLUDED_DEALS = 20;

/** The deals of a page of contacts (contacts' include=deals), in one query, the newest INCLUDED_DEALS of each. */
export async function dealsOfContacts(ctx: ServiceContext, contactIds: string[]): Promise<Map<string, Deal[]>> {
  const out = new Map<string, Deal[]>(contactIds.map((id) => [id, []]));
  if (contactIds.length === 0) return out;
  const rows = await ctx.db.all<Record<string, unknown>>(sql`
    SELECT * FROM (
      SELECT d.*, ROW_NUMBER() OVER (PARTITION BY d.contact_id ORDER BY d.created_at DESC, d.id DESC) AS n
      FROM deals d
      WHERE d.organization_id = ${ctx.organizationId} AND ${inJsonList(sql`d.contact_id`, contactIds)}
    ) WHERE n <= ${INCLUDED_DEALS} ORDER BY created_at DESC, id DESC`);
  for (const row of rows) {
    const { n: _n, ...columns } = row;
    const r = fromRow(columns);
    out.get(r.contactId)?.push(toDeal(r));
  }
  return out;
}

/**
 * A deal task's completion as its deal records it, whichever route completed it (this one or POST /v1/tasks/{id}/
 * complete): the deal touched (guarded by `conditions`), a TASK_COMPLETED activity, deal.task_completed.
 */
export function dealTaskCompleted(ctx: ServiceContext, deal: DealRecord, done: TaskRecord, at: string, conditions: SQL[] = []) {
  const after = { ...deal, lastActivityAt: at, version: deal.version + 1 };
  return {
    statements: [
      ...touchDeal(ctx, deal.id, at, conditions),
      ctx.db
        .insert(dealActivities)
        .values(activityRow(ctx, deal.id, "TASK_COMPLETED", `Task completed: ${done.title}`, { taskId: done.id }, at)),
    ],
    events: [
      newEvent(ctx, "deal.task_completed", {
        object: toDeal(after),
        task: toTask(done),
        previousAttributes: { task: { completed: false } },
        changes: ["task.completed"],
      }),
    ],
  };
}
