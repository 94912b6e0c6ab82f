import { and, count, desc, eq, sql } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { clickwrapAcceptances, clickwrapAgreements, clickwrapVersions } from "../db/schema";
import {
  atVersion,
  expectNoRow,
  expectRow,
  expectVersion,
  expectVersionMatch,
  StaleWrite,
  versioned,
  type VersionedTable,
  withRetries,
} from "../db/write";
import { commit } from "../events/commit";
import { resourceEvent } from "../events/resource-event";
import { sha256Hex } from "../lib/crypto";
import { Conflict, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { registerPublicKeys } from "../shards/directory";
import type { RequestMeta, ServiceContext } from "../service-context";
import { type Acceptance, type AcceptRequest, type AgreementPublish, type AgreementSummary, MAX_ACCEPTANCES } from "./schemas";
export { acceptancesOf, clickwrapErasable } from "./erasure";

const AGREEMENTS: VersionedTable = {
  table: clickwrapAgreements,
  id: clickwrapAgreements.id,
  organizationId: clickwrapAgreements.organizationId,
  version: clickwrapAgreements.version,
};
type AgreementRecord = typeof clickwrapAgreements.$inferSelect;

/** The hex SHA-256 of the agreement text, as published (no normalisation: the hash names exactly the text shown). */
export const versionHashOf = (body: string): Promise<string> => sha256Hex(body);

const mine = (ctx: ServiceContext, id: string) =>
  and(eq(clickwrapAgreements.organizationId, ctx.organizationId), eq(clickwrapAgreements.id, id));

async function findAgreement(ctx: ServiceContext, id: string): Promise<AgreementRecord> {
  const row = await ctx.db.select().from(clickwrapAgreements).where(mine(ctx, id)).get();
  if (!row) throw new NotFound("Agreement");
  return row;
}

/**
 * POST /api/clickwrap: the agreement of `key` (created on first publish). The same body again changes nothing (its
 * title included) and answers the same id and hash; a changed body becomes the current version with its title, every
 * earlier text kept with the title it was shown under. Concurrent publishes of one key create it once (the unique key), and each
 * publish applies to the agreement as it is at commit time. With If-Match, a publish to an existing key applies only while the
 * agreement is still at a named version (412 otherwise, the same body included); a first publish is unconditional (as a PUT of a
 * profile). The answer carries the agreement's version after the publish, for the ETag.
 */
export async function publishAgreement(
  ctx: ServiceContext,
  input: AgreementPublish,
): Promise<{ id: string; versionHash: string; changed: boolean }> {
  const versionHash = await versionHashOf(input.body);
  return withRetries(async () => {
    const before = await ctx.db
      .select()
      .from(clickwrapAgreements)
      .where(and(eq(clickwrapAgreements.organizationId, ctx.organizationId), eq(clickwrapAgreements.key, input.key)))
      .get();
    // Taken after the read: of racing publishes the one that commits last also has the latest currentSince.
    const now = new Date().toISOString();
    if (!before) {
      const id = newId();
      // The public routes find the agreement's organization by its id in the directory: registered first.
      await registerPublicKeys(ctx.directory, ctx.organizationId, "agreement", [id]);
      await commit(ctx, [
        expectNoRow(
          ctx.db,
          clickwrapAgreements,
          and(eq(clickwrapAgreements.organizationId, ctx.organizationId), eq(clickwrapAgreements.key, input.key)),
        ),
        ctx.db.insert(clickwrapAgreements).values({
          id,
          organizationId: ctx.organizationId,
          key: input.key,
          title: input.title,
          versionHash,
          active: true,
          createdAt: now,
          updatedAt: now,
          version: 1,
        }),
        ctx.db.insert(clickwrapVersions).values({
          agreementId: id,
          versionHash,
          organizationId: ctx.organizationId,
          title: input.title,
          body: input.body,
          publishedAt: now,
          currentSince: now,
        }),
      ]);
      return versioned({ id, versionHash, changed: true }, 1);
    }
    expectVersionMatch(ctx, before.version);
    // The same body changes nothing (spec), whatever title comes with it: a version's title is part of what was shown.
    if (before.versionHash === versionHash) return versioned({ id: before.id, versionHash, changed: false }, before.version);
    const known = await ctx.db
      .select({ title: clickwrapVersions.title })
      .from(clickwrapVersions)
      .where(and(eq(clickwrapVersions.agreementId, before.id), eq(clickwrapVersions.versionHash, versionHash)))
      .get();
    // An earlier text published again becomes current again with the title it was published with; a new text is kept.
    const title = known?.title ?? input.title;
    await commit(ctx, [
      expectVersion(ctx.db, AGREEMENTS, ctx.organizationId, before),
      ctx.db
        .update(clickwrapAgreements)
        .set({ title, versionHash, updatedAt: now, version: before.version + 1 })
        .where(atVersion(AGREEMENTS, ctx.organizationId, before.id, before.version)),
      ctx.db
        .insert(clickwrapVersions)
        .values({
          agreementId: before.id,
          versionHash,
          organizationId: ctx.organizationId,
          title,
          body: input.body,
          publishedAt: now,
          currentSince: now,
        })
        .onConflictDoUpdate({ target: [clickwrapVersions.agreementId, clickwrapVersions.versionHash], set: { currentSince: now } }),
    ]);
    return versioned({ id: before.id, versionHash, changed: true }, before.version + 1);
  });
}

export const versionCount = (agreementId = clickwrapAgreements.id) =>
  sql<number>`(SELECT COUNT(*) FROM ${clickwrapVersions} v WHERE v.agreement_id = ${agreementId})`;

export const summary = (r: AgreementRecord & { versions: number }): AgreementSummary => ({
  id: r.id,
  key: r.key,
  title: r.title,
  versionHash: r.versionHash,
  active: r.active,
  versions: r.versions,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

/** GET /api/clickwrap: newest first, keyset-paginated. */
export async function listAgreements(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const org = eq(clickwrapAgreements.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select({ row: clickwrapAgreements, versions: versionCount() })
      .from(clickwrapAgreements)
      .where(after ? and(org, olderThan(clickwrapAgreements.createdAt, clickwrapAgreements.id, after)) : org)
      .orderBy(desc(clickwrapAgreements.createdAt), desc(clickwrapAgreements.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(clickwrapAgreements).where(org),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.row.createdAt, id: r.row.id }));
  return { agreements: page.map((r) => summary({ ...r.row, versions: r.versions })), pagination };
}

/** GET /api/clickwrap/{agreementId}/versions/{versionHash}: one text, as it was published. */
export async function getVersion(ctx: ServiceContext, id: string, versionHash: string) {
  await findAgreement(ctx, id);
  const v = await ctx.db
    .select({
      versionHash: clickwrapVersions.versionHash,
      title: clickwrapVersions.title,
      body: clickwrapVersions.body,
      publishedAt: clickwrapVersions.publishedAt,
    })
    .from(clickwrapVersions)
    .where(
      and(
        eq(clickwrapVersions.organizationId, ctx.organizationId),
        eq(clickwrapVersions.agreementId, id),
        eq(clickwrapVersions.versionHash, versionHash),
      ),
    )
    .get();
  if (!v) throw new NotFound("Version");
  return v;
}

/** Deactivate or reactivate: an inactive agreement answers 404 `{state: "gone"}` on the public routes. Honours If-Match. */
export async function setActive(ctx: ServiceContext, id: string, active: boolean): Promise<AgreementSummary> {
  return withRetries(async () => {
    const before = await findAgreement(ctx, id);
    expectVersionMatch(ctx, before.version);
    if (before.active === active) return (await listOne(ctx, before))!;
    const after = { ...before, active, updatedAt: new Date().toISOString(), version: before.version + 1 };
    await commit(ctx, [
      expectVersion(ctx.db, AGREEMENTS, ctx.organizationId, before),
      ctx.db
        .update(clickwrapAgreements)
        .set({ active, updatedAt: after.updatedAt, version: after.version })
        .where(atVersion(AGREEMENTS, ctx.organizationId, id, before.version)),
    ]);
    return (await listOne(ctx, after))!;
  });
}

async function listOne(ctx: ServiceContext, a: AgreementRecord): Promise<AgreementSummary> {
  const [row] = await ctx.db.select({ n: count() }).from(clickwrapVersions).where(eq(clickwrapVersions.agreementId, a.id));
  return versioned(summary({ ...a, versions: row?.n ?? 0 }), a.version);
}

/** An acceptance as GET /api/clickwrap/{agreementId}/acceptances lists it. */
const toAcceptance = (r: typeof clickwrapAcceptances.$inferSelect): Acceptance => ({
  id: r.id,
  versionHash: r.versionHash,
  subjectRef: r.subjectRef,
  acceptedAt: r.acceptedAt,
  ip: r.ip,
  userAgent: r.userAgent,
});

/**
 * GET /api/clickwrap/{agreementId}/acceptances: newest first, at most MAX_ACCEPTANCES; with `subjectRef` only that
 * subject's, with `current` only those of the current version. With a subjectRef the answer also says whether that
 * subject has accepted the current version (any acceptance of it, not only those listed).
 */
export async function listAcceptances(ctx: ServiceContext, id: string, q: { subjectRef?: string; current?: boolean }) {
  const a = await findAgreement(ctx, id);
  const scope = and(
    eq(clickwrapAcceptances.organizationId, ctx.organizationId),
    eq(clickwrapAcceptances.agreementId, id),
    q.subjectRef !== undefined ? eq(clickwrapAcceptances.subjectRef, q.subjectRef) : undefined,
    q.current ? eq(clickwrapAcceptances.versionHash, a.versionHash) : undefined,
  );
  const rows = await ctx.db
    .select()
    .from(clickwrapAcceptances)
    .where(scope)
    .orderBy(desc(clickwrapAcceptances.acceptedAt), desc(clickwrapAcceptances.id))
    .limit(MAX_ACCEPTANCES)
    .all();
  let acceptedCurrentVersion: boolean | undefined;
  if (q.subjectRef !== undefined) {
    const hit = await ctx.db
      .select({ id: clickwrapAcceptances.id })
      .from(clickwrapAcceptances)
      .where(
        and(
          eq(clickwrapAcceptances.organizationId, ctx.organizationId),
          eq(clickwrapAcceptances.agreementId, id),
          eq(clickwrapAcceptances.subjectRef, q.subjectRef),
          eq(clickwrapAcceptances.versionHash, a.versionHash),
        ),
      )
      .get();
    acceptedCurrentVersion = hit !== undefined;
  }
  const acceptances = rows.map(toAcceptance);
  return { acceptances, versionHash: a.versionHash, ...(acceptedCurrentVersion === undefined ? {} : { acceptedCurrentVersion }) };
}

/**
 * What the public routes read with: the shard of the agreement's organization, named by the directory.
 */
export type PublicClickwrap = Pick<ServiceContext, "db" | "organizationId">;

/** The current text of an active agreement (the public routes), or null: unknown and inactive answer alike. */
export async function publicAgreement(ctx: PublicClickwrap, id: string) {
  const row = await ctx.db
    .select({
      id: clickwrapAgreements.id,
      key: clickwrapAgreements.key,
      title: clickwrapAgreements.title,
      versionHash: clickwrapAgreements.versionHash,
      body: clickwrapVersions.body,
      organizationId: clickwrapAgreements.organizationId,
    })
    .from(clickwrapAgreements)
    .innerJoin(
      clickwrapVersions,
      and(eq(clickwrapVersions.agreementId, clickwrapAgreements.id), eq(clickwrapVersions.versionHash, clickwrapAgreements.versionHash)),
    )
    .where(
      and(eq(clickwrapAgreements.organizationId, ctx.organizationId), eq(clickwrapAgreements.id, id), eq(clickwrapAgreements.active, true)),
    )
    .get();
  return row ?? null;
}

/** The shown version is no longer current: the person must see the current text first. */
export class StaleVersion extends Conflict {
  constructor(readonly current: string) {
    super("The agreement changed since it was shown; show the current text and accept again", "version_mismatch");
  }
}

/**
 * POST /api/public/clickwrap/{agreementId}: records an acceptance of the current version, in one batch that requires
 * the agreement still active at that version (a publish between read and write refuses it rather than record it
 * against a text the person did not see). Returns null when the agreement is unknown or inactive.
 */
export async function accept(ctx: ServiceContext, id: string, input: AcceptRequest, meta: RequestMeta): Promise<boolean> {
  const a = await publicAgreement(ctx, id);
  if (!a) return false;
  if (input.versionHash !== undefined && input.versionHash !== a.versionHash) throw new StaleVersion(a.versionHash);
  const row = {
    id: newId(),
    organizationId: a.organizationId,
    agreementId: id,
    versionHash: a.versionHash,
    subjectRef: input.subjectRef ?? null,
    acceptedAt: new Date().toISOString(),
    ip: meta.ip,
    userAgent: meta.userAgent,
  };
  try {
    await commit(
      ctx,
      [
        expectRow(
          ctx.db,
          clickwrapAgreements,
          and(
            eq(clickwrapAgreements.organizationId, ctx.organizationId),
            eq(clickwrapAgreements.id, id),
            eq(clickwrapAgreements.active, true),
            eq(clickwrapAgreements.versionHash, a.versionHash),
          ),
        ),
        ctx.db.insert(clickwrapAcceptances).values(row),
      ],
      [resourceEvent(ctx, "clickwrap.accepted", { ...toAcceptance(row), agreementId: id, agreementKey: a.key })],
    );
  } catch (err) {
    if (!(err instanceof StaleWrite)) throw err;
    const now = await publicAgreement(ctx, id);
    if (!now) return false;
    throw new StaleVersion(now.versionHash);
  }
  return true;
}
