import { and, eq, inArray, lte, sql } from "drizzle-orm";
import { importErrors, imports } from "../db/schema";
import { insertRowsFromJson } from "../db/row-json";
import { guard, StaleWrite, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { planContactImport, type DuplicateRule, type ImportOutcome, type IncomingContact } from "../intake/service";
import { customFieldIssues, customFieldsFromText, readDefinitions } from "../crm/custom-fields";
import { userResolver } from "../users/service";
import { organizationSettings } from "../organization/service";
import { nowIso } from "../lib/time";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { routeToShards, systemContext } from "../shards/tenants";
import { withDeferred } from "../lib/deferred";
import { loggableError } from "../lib/log";
import { OrganizationMoving } from "../lib/errors";
import { type ImportMessage, ImportMessageSchema } from "../lib/queue-messages";
import { IMPORT_CHUNK, ORGANIZATION_MOVING } from "../lib/retry";
import { queueConsumer } from "../events/queue-consumer";
import { contactFromRecord, type RowIssue } from "./contact-rows";
import { NotUtf8, readCsvChunk, RecordTooLong } from "./csv";
import { type ImportKind, resolveMapping, targetsOf } from "./mapping";
import { planPropertyRows } from "./property-rows";
import { planAppointmentRows, planTaskRows } from "./agenda-import";
import { ACTIVE, type ImportRow, toImport } from "./service";

/** Records per chunk: one D1 batch, one match query (at most 500 people). */
export const CHUNK_ROWS = 500;

/** A problem that stops the whole import (the file, not a row): it ends `failed` with this reason. */
class ImportFailed extends Error {}

interface Tally {
  outcomes: ImportOutcome[];
  failed: number;
  issues: { row: number; issue: RowIssue }[];
  statements: Statement[];
}

/** The statements and counts of one chunk's records of contacts. */
async function contactChunk(ctx: ServiceContext, job: ImportRow, records: string[][], firstRow: number): Promise<Tally> {
  const columns = job.columns!;
  const targets = targetsOf(job.resolvedMapping!, columns);
  const userOf = await userResolver(ctx);
  const people: IncomingContact[] = [];
  const rowOf = new Map<IncomingContact, number>();
  const issues: Tally["issues"] = [];
  let failed = 0;
  records.forEach((fields, i) => {
    const row = firstRow + i;
    const result = contactFromRecord(fields, columns, targets, userOf);
    if (result.ok) {
      people.push(result.ok);
      rowOf.set(result.ok, row);
      issues.push(...result.warnings.map((issue) => ({ row, issue })));
    } else {
      failed++;
      issues.push(...result.errors.map((issue) => ({ row, issue })));
    }
  });
  // Custom-field columns: read as their fields' types and checked against the definitions (one read a chunk, only
  // when the file maps any); a row with a bad value fails with a line per problem, as a bad API body would.
  const withCustom = people.filter((p) => p.input.customFields);
  let valid = people;
  if (withCustom.length) {
    const defs = await readDefinitions(ctx, "contact");
    const bad = new Set<IncomingContact>();
    for (const person of withCustom) {
      const values = customFieldsFromText(defs, person.input.customFields as Record<string, string>);
      const problems = customFieldIssues(defs, values, "contact");
      if (problems.length === 0) person.input = { ...person.input, customFields: values };
      else {
        bad.add(person);
        const row = rowOf.get(person)!;
        issues.push(
          ...problems.map((p) => ({
            row,
            issue: { column: columns[targets.indexOf(p.field)] ?? p.field, reason: `${p.code}: ${p.field} ${p.message}`.slice(0, 300) },
          })),
        );
      }
    }
    failed += bad.size;
    valid = people.filter((p) => !bad.has(p));
  }
  const plan = valid.length ? await planContactImport(ctx, valid, job.onDuplicate as DuplicateRule) : { statements: [], outcomes: [] };
  return { outcomes: plan.outcomes, failed, issues, statements: plan.statements };
}

/** Each kind's chunk: Follow Up Boss tasks and appointments through agenda-import.ts (issue 46 part 6). */
const PLANNERS: Record<ImportKind, (ctx: ServiceContext, job: ImportRow, records: string[][], firstRow: number) => Promise<Tally>> = {
  contacts: contactChunk,
  properties: planPropertyRows,
  tasks: planTaskRows,
  appointments: planAppointmentRows,
};

const count = (outcomes: ImportOutcome[], o: ImportOutcome) => outcomes.filter((x) => x === o).length;

/**
 * Runs the chunk the import's row names next: reads its records from the source at the row's byte offset, plans
 * them, and commits the records, the errors and the row's progress in ONE batch guarded on the row still being at
 * this chunk and active. So a crash anywhere resumes at this very chunk, a redelivered or duplicate message whose
 * chunk has moved on runs nothing, and a cancel stops every chunk after it. Answers whether another chunk follows.
 */
async function runChunk(ctx: ServiceContext, job: ImportRow): Promise<"more" | "done" | "stale"> {
  const head = await ctx.files.head(job.sourceKey);
  if (!head) throw new ImportFailed("The uploaded file is gone");
  const read = async (offset: number, length: number) => {
    const object = await ctx.files.get(job.sourceKey, { range: { offset, length: Math.min(length, job.sizeBytes - offset) } });
    if (!object) throw new ImportFailed("The uploaded file is gone");
    return new Uint8Array(await object.arrayBuffer());
  };
  let chunk;
  try {
    chunk = await readCsvChunk(read, job.sizeBytes, job.byteOffset, job.nextChunk === 0 ? CHUNK_ROWS + 1 : CHUNK_ROWS);
  } catch (err) {
    if (err instanceof NotUtf8 || err instanceof RecordTooLong) throw new ImportFailed(err.message);
    throw err;
  }
  let records = chunk.records;
  let firstRow = job.nextRow;
  const progress: Partial<ImportRow> = {};
  if (job.nextChunk === 0) {
    const header = records[0]?.map((c) => c.trim());
    if (!header || header.every((c) => c === "")) throw new ImportFailed("The file has no header row");
    const resolved = resolveMapping(job.kind as ImportKind, header, job.mapping);
    const missing = Object.keys(job.mapping ?? {}).filter((c) => !header.includes(c));
    if (missing.length) throw new ImportFailed(`The mapping names columns the header lacks: ${missing.join(", ")}`);
    if (job.kind === "contacts" && !resolved.targets.includes("email") && !resolved.targets.includes("otherEmail")) {
      throw new ImportFailed("No column maps to email: name it in mapping (a contact needs an e-mail)");
    }
    job = {
      ...job,
      columns: header,
      resolvedMapping: Object.fromEntries(header.flatMap((c, i) => (resolved.targets[i] ? [[c, resolved.targets[i]!]] : []))),
      detectedFormat: resolved.format,
    };
    Object.assign(progress, { columns: job.columns, resolvedMapping: job.resolvedMapping, detectedFormat: job.detectedFormat });
    records = records.slice(1);
    firstRow = 2;
  }
  const tally = await PLANNERS[job.kind as ImportKind](ctx, job, records, firstRow);
  const done = chunk.done;
  const at = nowIso();
  const next = {
    ...progress,
    status: done ? "completed" : "running",
    nextChunk: job.nextChunk + 1,
    byteOffset: chunk.nextOffset,
    nextRow: firstRow + records.length,
    processed: job.processed + records.length,
    created: job.created + count(tally.outcomes, "created"),
    updated: job.updated + count(tally.outcomes, "updated"),
    skipped: job.skipped + count(tally.outcomes, "skipped"),
    failed: job.failed + tally.failed,
    updatedAt: at,
    progressAt: at,
    finishedAt: done ? at : null,
  };
  const errorRows = tally.issues.map(({ row, issue }, seq) => ({
    importId: job.id,
    organizationId: job.organizationId,
    rowNumber: row,
    seq,
    column: issue.column.slice(0, 200),
    reason: issue.reason,
  }));
  const here = and(
    eq(imports.id, job.id),
    eq(imports.organizationId, job.organizationId),
    eq(imports.nextChunk, job.nextChunk),
    inArray(imports.status, [...ACTIVE]),
  );
  const events = done
    ? [
        newEvent(ctx, "import.completed", {
          object: toImport(ctx.env, { ...job, ...next } as ImportRow),
          previousAttributes: null,
          changes: null,
        }),
      ]
    : [];
  try {
    await commit(
      ctx,
      [
        guard(ctx.db, sql`EXISTS (SELECT 1 FROM ${imports} WHERE ${here})`),
        ...tally.statements,
        ...insertRowsFromJson(ctx.db, importErrors, errorRows),
        ctx.db.update(imports).set(next).where(here),
      ],
      events,
    );
  } catch (err) {
    if (err instanceof StaleWrite) return "stale";
    throw err;
  }
  return done ? "done" : "more";
}

async function readJob(ctx: ServiceContext, id: string): Promise<ImportRow | undefined> {
  return ctx.db
    .select()
    .from(imports)
    .where(and(eq(imports.id, id), eq(imports.organizationId, ctx.organizationId)))
    .get();
}

/**
 * The queue's consumer of one import message: runs the next chunk and sends the message of the one after. A chunk
 * whose batch lost a race (a contact it matched changed, another import took an e-mail) plans again on what is now
 * there; a finished, failed or cancelled import runs nothing and its source is deleted (again, if a delete was lost).
 */
export async function handleImportMessage(ctx: ServiceContext, message: ImportMessage): Promise<void> {
  // Phones without a country code are read in the organization's region, as on its requests.
  ctx.phoneRegion ??= (await organizationSettings(ctx)).defaultPhoneRegion;
  const outcome = await withRetries(async () => {
    const job = await readJob(ctx, message.importId);
    if (!job) return "gone" as const;
    if (!(ACTIVE as readonly string[]).includes(job.status)) return "ended" as const;
    try {
      const result = await runChunk(ctx, job);
      if (result !== "stale") return result;
    } catch (err) {
      if (!(err instanceof ImportFailed)) throw err;
      const at = nowIso();
      await ctx.db
        .update(imports)
        .set({ status: "failed", failureReason: err.message, finishedAt: at, updatedAt: at })
        .where(and(eq(imports.id, job.id), eq(imports.nextChunk, job.nextChunk), inArray(imports.status, [...ACTIVE])));
      return "ended" as const;
    }
    const now = await readJob(ctx, message.importId);
    // Another delivery ran this chunk (it sends the next message), or the import was cancelled: nothing more here.
    if (!now || now.nextChunk !== job.nextChunk || !(ACTIVE as readonly string[]).includes(now.status))
      return now && (ACTIVE as readonly string[]).includes(now.status) ? ("moved" as const) : ("ended" as const);
    throw new StaleWrite();
  });
  if (outcome === "more") await ctx.queues.imports.send(message);
  if (outcome === "done" || outcome === "ended") {
    const job = await readJob(ctx, message.importId);
    if (job) await ctx.files.delete(job.sourceKey);
  }
}

/** An import with no progress for this long lost its message (a send after a commit that failed): the cron sends it again. */
const STALLED_MS = 5 * 60_000;
/** An import whose chunk has failed for this long (every retry, every re-send) is given up: it ends `failed`. */
const GIVE_UP_MS = 24 * 3_600_000;

/**
 * Cron pass: re-sends the message of each import that has sat queued or running with no progress (at most 50 a pass),
 * and fails those that have made none for a day, all judged at the pass's `now` (DESIGN.md contract 12). The stalled ones
 * are touched (at `now`, which the next pass measures from), so the next pass waits again.
 */
export async function resumeStalledImports(
  env: ServiceContext["env"],
  db: ServiceContext["db"],
  { now: at0 = new Date() } = {},
): Promise<number> {
  const now = at0.getTime();
  const at = nowIso(at0);
  const active = inArray(imports.status, [...ACTIVE]);
  await db
    .update(imports)
    .set({
      status: "failed",
      failureReason: "A chunk failed again and again for a day; import the rest of the file again",
      finishedAt: at,
      updatedAt: at,
    })
    .where(and(active, lte(imports.progressAt, new Date(now - GIVE_UP_MS).toISOString())));
  const stalled = await db
    .select({ importId: imports.id, organizationId: imports.organizationId })
    .from(imports)
    .where(
      and(
        active,
        lte(imports.progressAt, new Date(now - STALLED_MS).toISOString()),
        lte(imports.updatedAt, new Date(now - STALLED_MS).toISOString()),
      ),
    )
    .limit(50);
  if (stalled.length === 0) return 0;
  await db
    .update(imports)
    .set({ updatedAt: at })
    .where(
      inJsonList(
        imports.id,
        stalled.map((s) => s.importId),
      ),
    );
  await env.IMPORTS.sendBatch(stalled.map((body) => ({ body: body satisfies ImportMessage })));
  return stalled.length;
}

/** The `imports` queue's consumer (one message per batch): each message on its organization's shard, retried on `IMPORT_CHUNK` when it fails. */
export const consumeImports = queueConsumer({ schema: ImportMessageSchema, retry: IMPORT_CHUNK }, async (messages, env, log) => {
  const { byShard, fenced, unknown } = await routeToShards(env, messages, (m) => m.body.organizationId);
  for (const message of unknown) message.ack();
  for (const message of fenced) message.retry(ORGANIZATION_MOVING.delaySeconds(message.attempts));
  for (const { shard, items } of byShard) {
    for (const message of items) {
      const { body } = message;
      try {
        await withDeferred((defer) =>
          handleImportMessage(systemContext(env, shard.db, body.organizationId, `import:${body.importId}`, defer), body),
        );
        message.ack();
      } catch (err) {
        log.error("import chunk failed; retried", { importId: body.importId, error: loggableError(err) });
        message.retry(OrganizationMoving.raisedBy(err) ? ORGANIZATION_MOVING.delaySeconds(message.attempts) : undefined);
      }
    }
  }
});
