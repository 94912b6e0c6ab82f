import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import { organizationExports, users } from "../db/schema";
import { expectNoRow, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { appUrlOf, type Env, readConfig } from "../env";
import { exportArchiveKey } from "../files/export-archives";
import { newToken, sha256Hex } from "../lib/crypto";
import { Conflict, InsufficientRole, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { loggableError } from "../lib/log";
import { mailerFor } from "../mail/mailer";
import type { ServiceContext } from "../service-context";
import { EXPORTED_TABLES, type Progress, stillRunning, writeArchive } from "./archive";
import type { OrganizationExport } from "./schemas";
export { exportsErasable } from "./erasure";

/** How long a download link lives. */
export const LINK_DAYS = 7;
/** A run that has not finished in this long has stopped (a crash): another delivery may take the job over. */
export const LEASE_MS = 15 * 60_000;
/** Deliveries of one job before it is `failed`. */
export const MAX_ATTEMPTS = 5;

type Row = typeof organizationExports.$inferSelect;

const toExport = (r: Row): OrganizationExport => ({
  id: r.id,
  status: r.status as OrganizationExport["status"],
  progress: { tablesDone: r.tablesDone, tablesTotal: r.tablesTotal, rows: r.rows, files: r.files, bytes: r.bytes },
  expiresAt: r.expiresAt,
  error: r.error,
  createdAt: r.createdAt,
  completedAt: r.completedAt,
});

/** The statuses of a job that holds the organization's one export slot. */
export const LIVE = ["queued", "running"];

/** 409 export_running: the organization's export already queued or running, named like merge's `mergedInto`. */
const exportRunning = (id: string) =>
  new Conflict(`Export ${id} of your organization is queued or running; ask again once it has ended`, "export_running", [
    { field: "exportId", path: ["exportId"], code: "export_running", message: id },
  ]);

/**
 * POST /v1/organization/export: an organization's archive is everything it holds (every contact, deal, document and
 * file), so only owners and admins may ask for it, whatever the credential carries (403 insufficient_role). Each job
 * reads the whole organization, so one may be queued or running at a time (409 export_running naming it): the insert
 * is guarded in its batch by "no live job", so of two concurrent requests one inserts and the other reads the winner.
 * Records the job and queues it; the answer is the job, `queued`.
 */
export async function startOrganizationExport(ctx: ServiceContext, role: string): Promise<OrganizationExport> {
  if (role !== "owner" && role !== "admin") throw new InsufficientRole("Only an owner or an admin may export the whole organization");
  const live = and(eq(organizationExports.organizationId, ctx.organizationId), inArray(organizationExports.status, LIVE));
  const row = await withRetries(async () => {
    const running = await ctx.db.select({ id: organizationExports.id }).from(organizationExports).where(live).get();
    if (running) throw exportRunning(running.id);
    const at = new Date().toISOString();
    const row: Row = {
      id: newId(),
      organizationId: ctx.organizationId,
      requestedBy: ctx.actor.userId ?? null,
      status: "queued",
      tablesDone: 0,
      tablesTotal: EXPORTED_TABLES.length,
      rows: 0,
      files: 0,
      bytes: 0,
      attempts: 0,
      objectKey: null,
      tokenHash: null,
      expiresAt: null,
      leaseUntil: null,
      error: null,
      createdAt: at,
      updatedAt: at,
      completedAt: null,
    };
    // A live job inserted since the read fails the guard (StaleWrite): the next attempt reads it and answers 409.
    await commit(ctx, [expectNoRow(ctx.db, organizationExports, live), ctx.db.insert(organizationExports).values(row)]);
    return row;
  });
  // Sent once the row is written: a message that names no row yet would be dropped by the consumer. A job whose
  // message was not sent would hold the slot with nothing to run it: it is failed before the error goes on.
  try {
    await ctx.queues.organizationExports.send({ organizationId: ctx.organizationId, exportId: row.id });
  } catch (err) {
    await ctx.db
      .update(organizationExports)
      .set({ status: "failed", error: "The export could not be queued; ask for a new one", updatedAt: new Date().toISOString() })
      .where(and(eq(organizationExports.organizationId, ctx.organizationId), eq(organizationExports.id, row.id)));
    throw err;
  }
  return toExport(row);
}

/** GET /v1/organization/exports/{id}: the job's status and progress; another organization's id is a 404 alike. */
export async function getOrganizationExport(ctx: ServiceContext, id: string): Promise<OrganizationExport> {
  const row = await ctx.db
    .select()
    .from(organizationExports)
    .where(and(eq(organizationExports.organizationId, ctx.organizationId), eq(organizationExports.id, id)))
    .get();
  if (!row) throw new NotFound("Export");
  return toExport(row);
}

/**
 * Takes the job for this run: queued, or running under a lease that has run out (the run that held it stopped). A
 * second delivery while a run holds it finds nothing to take and leaves it.
 */
async function claim(ctx: ServiceContext, id: string, now: Date): Promise<Row | null> {
  const [row] = await ctx.db
    .update(organizationExports)
    .set({
      status: "running",
      attempts: sql`${organizationExports.attempts} + 1`,
      leaseUntil: new Date(now.getTime() + LEASE_MS).toISOString(),
      tablesDone: 0,
      rows: 0,
      files: 0,
      bytes: 0,
      error: null,
      updatedAt: now.toISOString(),
    })
    .where(
      and(
        eq(organizationExports.organizationId, ctx.organizationId),
        eq(organizationExports.id, id),
        or(
          eq(organizationExports.status, "queued"),
          and(
            eq(organizationExports.status, "running"),
            or(isNull(organizationExports.leaseUntil), lt(organizationExports.leaseUntil, now.toISOString())),
          ),
        ),
      ),
    )
    .returning();
  return row ?? null;
}

const README = (organizationId: string, at: string) => `Organization export of ${organizationId}, made ${at}.

tables/<table>.ndjson  one JSON object per line: the organization's rows of each table, as stored (camelCase
                       columns). Credentials and capabilities (link tokens and their hashes, webhook secrets, sealed
                       mail bodies holding links) are left out.
files/<key>            every file the organization holds: deal documents, property photos and reports, the documents
                       of envelopes, certificates of completion and the sealed PDFs of signed envelopes (files/signed/).
`;

/**
 * The queue job: writes the zip (archive.ts), then gives it a download link valid LINK_DAYS days, stored as the
 * token's SHA-256 only, and mails the link to whoever asked. Answers "retry" when the run failed and deliveries are
 * left (the upload was aborted: the next run starts again from scratch), "done" otherwise.
 */
export async function runOrganizationExport(ctx: ServiceContext, id: string, now = new Date()): Promise<"done" | "retry"> {
  const job = await claim(ctx, id, now);
  if (!job) return "done";
  const report = (p: Progress) =>
    ctx.db
      .update(organizationExports)
      .set({ ...p, updatedAt: new Date().toISOString() })
      .where(and(eq(organizationExports.id, id), eq(organizationExports.status, "running")))
      .run()
      .then(() => undefined);
  let progress: Progress;
  try {
    progress = await writeArchive(ctx, id, README(ctx.organizationId, now.toISOString()), report);
  } catch (err) {
    const last = job.attempts >= MAX_ATTEMPTS;
    ctx.log.error("organization export failed", { exportId: id, attempt: job.attempts, error: loggableError(err) });
    await ctx.db
      .update(organizationExports)
      .set({
        status: last ? "failed" : "queued",
        leaseUntil: null,
        error: last ? "The export failed; ask for a new one" : "Retrying after a failure",
        updatedAt: new Date().toISOString(),
      })
      .where(and(eq(organizationExports.id, id), eq(organizationExports.status, "running")));
    return last ? "done" : "retry";
  }
  const key = exportArchiveKey(ctx.organizationId, id);
  const token = newToken("oex");
  const expiresAt = new Date(now.getTime() + LINK_DAYS * 86_400_000).toISOString();
  const done = (await stillRunning(ctx, id))
    ? await ctx.db
        .update(organizationExports)
        .set({
          ...progress,
          status: "completed",
          objectKey: key,
          tokenHash: await sha256Hex(token),
          expiresAt,
          leaseUntil: null,
          completedAt: new Date().toISOString(),
          updatedAt: new Date().toISOString(),
        })
        .where(and(eq(organizationExports.id, id), eq(organizationExports.status, "running")))
        .returning({ id: organizationExports.id })
    : [];
  // Ended while it ran (an erasure deleted the organization's zips): this zip must not outlive it either.
  if (done.length === 0) {
    await ctx.files.delete(key);
    return "done";
  }
  await mailLink(ctx, job.requestedBy, downloadUrl(ctx.env, ctx.organizationId, token), expiresAt);
  return "done";
}

export const downloadUrl = (env: Env, organizationId: string, token: string) =>
  `${appUrlOf(readConfig(env))}/api/public/exports/${organizationId}/${token}`;

/** Mails the link to the user who asked; a mail that fails is logged (the job is done; its status shows it). */
async function mailLink(ctx: ServiceContext, userId: string | null, url: string, expiresAt: string): Promise<void> {
  const user = userId
    ? await ctx.db
        .select({ email: users.email, name: users.name })
        .from(users)
        .where(and(eq(users.organizationId, ctx.organizationId), eq(users.id, userId)))
        .get()
    : undefined;
  if (!user) return;
  try {
    await mailerFor(ctx.env, ctx.db).send({
      to: user.email,
      subject: "Your organization export is ready",
      text: `Hello${user.name ? ` ${user.name}` : ""},\n\nThe export of your organization is ready. Download it (a .zip) here, until ${expiresAt}:\n\n${url}\n\nAnyone with this link can download the export: do not forward it.\n`,
      organizationId: ctx.organizationId,
    });
  } catch (err) {
    ctx.log.error("organization export mail failed", { error: loggableError(err) });
  }
}

/**
 * The public download: the zip behind a live link, or null (a wrong token, an expired link, a deleted export alike).
 * The token is looked up by its SHA-256 only.
 */
export async function openDownload(
  ctx: Pick<ServiceContext, "db" | "files">,
  organizationId: string,
  token: string,
  now = new Date(),
): Promise<R2ObjectBody | null> {
  const row = await ctx.db
    .select({ objectKey: organizationExports.objectKey, expiresAt: organizationExports.expiresAt })
    .from(organizationExports)
    .where(
      and(
        eq(organizationExports.organizationId, organizationId),
        eq(organizationExports.tokenHash, await sha256Hex(token)),
        inArray(organizationExports.status, ["completed"]),
      ),
    )
    .get();
  if (!row?.objectKey || !row.expiresAt || row.expiresAt <= now.toISOString()) return null;
  return ctx.files.get(row.objectKey);
}
