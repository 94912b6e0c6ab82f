import { expectReferences, references } from "../db/references";
import { and, asc, desc, eq, gt, lt, or } from "drizzle-orm";
import { agentProfiles, testimonials } from "../db/schema";
import type { TestimonialStatus } from "../db/reputation";
import { expectVersion, expectVersionMatch, type Statement, versioned, type VersionedTable, withRetries } from "../db/write";
import { commit } from "../events/commit";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { InvalidState, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ActingFor, ServiceContext } from "../service-context";
import { recomputeAggregates } from "../reputation/aggregates";
import { checkReferences } from "../profiles/service";
import { feedUrl, purgeFeed } from "../reputation/feed-cache";
import type { Testimonial, TestimonialCreate, TestimonialUpdate } from "./schemas";
export { testimonialsErasable } from "./erasure";

/**
 * Testimonials (spec: Testimonial state table), with the moves the spec leaves open decided here and documented in
 * /docs: reject (PENDING or APPROVED → REJECTED, final), unpublish (PUBLISHED → APPROVED, PRIVATE), and a PATCH that
 * moves a published testimonial's visibility down to PRIVATE or INTERNAL unpublishes it the same way. Every move is a
 * compare-and-set on the row (db/write.ts); publish and unpublish recompute the rollups in the same batch.
 */
type Row = typeof testimonials.$inferSelect;
const TESTIMONIALS: VersionedTable = {
  table: testimonials,
  id: testimonials.id,
  organizationId: testimonials.organizationId,
  version: testimonials.version,
};

export function toTestimonial(r: Row): Testimonial {
  const { organizationId: _org, version: _v, ...rest } = r;
  return rest;
}
const shown = (r: Row) => versioned(toTestimonial(r), r.version);

async function findRow(ctx: ServiceContext, id: string): Promise<Row> {
  const row = await ctx.db
    .select()
    .from(testimonials)
    .where(and(eq(testimonials.organizationId, ctx.organizationId), eq(testimonials.id, id)))
    .get();
  if (!row) throw new NotFound("Testimonial");
  return row;
}

/** GET …/testimonials/{id}: with `syndications`, the public places that show it. */
export async function getTestimonial(ctx: ServiceContext, id: string): Promise<Testimonial> {
  const row = await findRow(ctx, id);
  const syndications: Testimonial["syndications"] = [];
  if (row.status === "PUBLISHED" && row.visibility === "PUBLIC") {
    const profile = await ctx.db
      .select({ slug: agentProfiles.slug, status: agentProfiles.status, publishedAt: agentProfiles.publishedAt })
      .from(agentProfiles)
      .where(and(eq(agentProfiles.organizationId, ctx.organizationId), eq(agentProfiles.userId, row.agentUserId)))
      .get();
    if (profile?.status === "PUBLISHED") {
      const since = [row.publishedAt!, profile.publishedAt!].sort().at(-1)!;
      syndications.push({ channel: "REVIEWS_FEED", url: feedUrl(ctx.env, profile.slug), since });
    }
  }
  return versioned({ ...toTestimonial(row), syndications }, row.version);
}

type NewTestimonial = Omit<
  Row,
  | "id"
  | "organizationId"
  | "status"
  | "visibility"
  | "approvedByUserId"
  | "approvedAt"
  | "publishedAt"
  | "rejectedAt"
  | "rejectionReason"
  | "createdAt"
  | "updatedAt"
  | "version"
>;

/** A new testimonial's row, by hand or from a survey: PENDING and PRIVATE, nothing approved or published yet. */
export function pendingTestimonialRow(organizationId: string, fields: NewTestimonial): Row {
  const at = nowIso();
  const moves = { approvedByUserId: null, approvedAt: null, publishedAt: null, rejectedAt: null, rejectionReason: null };
  return {
    id: newId(),
    organizationId,
    ...fields,
    status: "PENDING",
    visibility: "PRIVATE",
    ...moves,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
}

/** POST …/testimonials: always PENDING and PRIVATE, whatever the body says. */
export async function createTestimonial(ctx: ServiceContext, input: TestimonialCreate, actingFor: ActingFor): Promise<Testimonial> {
  actingFor(input.agentUserId);
  const refs = references(
    { path: ["authorPersonId"], target: "contact", id: input.authorPersonId },
    { path: ["dealId"], target: "deal", id: input.dealId },
  );
  return withRetries(async () => {
    await checkReferences(ctx, input.agentUserId, refs);
    const row = pendingTestimonialRow(ctx.organizationId, {
      agentUserId: input.agentUserId,
      authorPersonId: input.authorPersonId ?? null,
      dealId: input.dealId ?? null,
      source: input.source,
      category: input.category,
      rating: input.rating,
      headline: input.headline ?? null,
      body: input.body,
      displayName: input.displayName ?? null,
      displayLocation: input.displayLocation ?? null,
      displayPhotoUrl: input.displayPhotoUrl ?? null,
      permissionToPublishName: input.permissionToPublishName,
      permissionToPublishLocation: input.permissionToPublishLocation,
      permissionToPublishPhoto: input.permissionToPublishPhoto,
      isFeatured: input.isFeatured,
      sortOrder: input.sortOrder,
    });
    await commit(ctx, [...expectReferences(ctx, refs), ctx.db.insert(testimonials).values(row)]);
    return shown(row);
  });
}

const SORT = "sortOrder:asc,createdAt:desc";

/** GET …/testimonials: sortOrder ascending, then newest first; keyset-paginated on (sortOrder, createdAt, id). */
export async function listTestimonials(
  ctx: ServiceContext,
  q: { limit: number; cursor?: string; status?: string; visibility?: string; agentUserId?: string; category?: string },
) {
  const filters = and(
    eq(testimonials.organizationId, ctx.organizationId),
    q.status ? eq(testimonials.status, q.status as TestimonialStatus) : undefined,
    q.visibility ? eq(testimonials.visibility, q.visibility as Row["visibility"]) : undefined,
    q.agentUserId ? eq(testimonials.agentUserId, q.agentUserId) : undefined,
    q.category ? eq(testimonials.category, q.category) : undefined,
  );
  let after;
  if (q.cursor) {
    const { values, id } = decodeCursor(q.cursor, SORT, 2);
    const [order, at] = values;
    if (typeof order !== "number" || typeof at !== "string")
      throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Cursor is not one this API issued" }]);
    after = or(
      gt(testimonials.sortOrder, order),
      and(
        eq(testimonials.sortOrder, order),
        or(lt(testimonials.createdAt, at), and(eq(testimonials.createdAt, at), lt(testimonials.id, id))),
      ),
    );
  }
  const rows = await ctx.db
    .select()
    .from(testimonials)
    .where(and(filters, after))
    .orderBy(asc(testimonials.sortOrder), desc(testimonials.createdAt), desc(testimonials.id))
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  const hasMore = rows.length > q.limit;
  return {
    testimonials: page.map(toTestimonial),
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: SORT, values: [last.sortOrder, last.createdAt], id: last.id }) : null,
      limit: q.limit,
    },
  };
}

interface Move {
  set: Partial<Row>;
  /** Publish and unpublish change what the rollups count. */
  recompute?: boolean;
  event?: string;
  /** The webhook catalogue's event of the move, beside the internal one. */
  catalogue?: "testimonial.approved" | "testimonial.published";
}

/**
 * One guarded change of a testimonial, re-read and re-applied on a lost race; `decide` may refuse it, and so may
 * `actingFor` for a testimonial about someone else (else an agent could rewrite and unpublish a colleague's reviews).
 */
async function change(ctx: ServiceContext, id: string, actingFor: ActingFor, decide: (row: Row) => Move | null): Promise<Testimonial> {
  return withRetries(async () => {
    const row = await findRow(ctx, id);
    actingFor(row.agentUserId);
    expectVersionMatch(ctx, row.version);
    const move = decide(row);
    if (!move) return shown(row);
    const after: Row = { ...row, ...move.set, updatedAt: nowIso(), version: row.version + 1 };
    const { id: _id, organizationId: _org, createdAt: _c, ...columns } = after;
    const statements: Statement[] = [
      expectVersion(ctx.db, TESTIMONIALS, ctx.organizationId, row),
      ctx.db
        .update(testimonials)
        .set(columns)
        .where(and(eq(testimonials.id, id), eq(testimonials.organizationId, ctx.organizationId))),
    ];
    if (move.recompute) statements.push(...recomputeAggregates(ctx.db, ctx.organizationId, row.agentUserId));
    const events: DomainEvent[] = move.event
      ? [newEvent(ctx, move.event, { testimonialId: id, agentUserId: row.agentUserId, status: after.status })]
      : [];
    if (move.catalogue) events.push(resourceEvent(ctx, move.catalogue, toTestimonial(after), toTestimonial(row)));
    await commit(ctx, statements, events);
    // A change the public feed shows (or stops showing) drops its cached copy here.
    if (row.status === "PUBLISHED" || after.status === "PUBLISHED") purgeFeed(ctx, row.agentUserId);
    return shown(after);
  });
}

const refuse = (code: string, message: string) => new InvalidState(code, message);
/** Back from the public: APPROVED again (it can be republished), PRIVATE, no longer counted. */
const unpublished = (set: Partial<Row> = {}): Move => ({
  set: { status: "APPROVED", visibility: "PRIVATE", publishedAt: null, ...set },
  recompute: true,
  event: "REVIEW_UNPUBLISHED",
});

export const approveTestimonial = (ctx: ServiceContext, id: string, actingFor: ActingFor) =>
  change(ctx, id, actingFor, (row) => {
    if (row.status !== "PENDING") throw refuse("invalid_state", `Only a PENDING testimonial can be approved; this one is ${row.status}`);
    return {
      set: { status: "APPROVED", approvedByUserId: ctx.actor.userId ?? null, approvedAt: nowIso() },
      event: "REVIEW_APPROVED",
      catalogue: "testimonial.approved",
    };
  });

/** APPROVED → PUBLISHED and PUBLIC; from anything else it fails closed (409) and the testimonial stays as it is. */
export const publishTestimonial = (ctx: ServiceContext, id: string, actingFor: ActingFor) =>
  change(ctx, id, actingFor, (row) => {
    if (row.status === "PENDING") throw refuse("not_approved", "The testimonial is PENDING: approve it before publishing");
    if (row.status !== "APPROVED")
      throw refuse("invalid_state", `Only an APPROVED testimonial can be published; this one is ${row.status}`);
    return {
      set: { status: "PUBLISHED", visibility: "PUBLIC", publishedAt: nowIso() },
      recompute: true,
      event: "REVIEW_PUBLISHED",
      catalogue: "testimonial.published",
    };
  });

export const unpublishTestimonial = (ctx: ServiceContext, id: string, actingFor: ActingFor) =>
  change(ctx, id, actingFor, (row) => {
    if (row.status !== "PUBLISHED")
      throw refuse("invalid_state", `Only a PUBLISHED testimonial can be unpublished; this one is ${row.status}`);
    return unpublished();
  });

export const rejectTestimonial = (ctx: ServiceContext, id: string, reason: string | undefined, actingFor: ActingFor) =>
  change(ctx, id, actingFor, (row) => {
    if (row.status !== "PENDING" && row.status !== "APPROVED")
      throw refuse(
        "invalid_state",
        `Only a PENDING or APPROVED testimonial can be rejected; this one is ${row.status} (unpublish it first)`,
      );
    return {
      set: { status: "REJECTED", visibility: "PRIVATE", rejectedAt: nowIso(), rejectionReason: reason ?? null },
      event: "REVIEW_REJECTED",
    };
  });

/** PATCH: copy, featuring, order, display fields, consent; visibility only down (unpublishing a published one). */
export const updateTestimonial = (ctx: ServiceContext, id: string, input: TestimonialUpdate, actingFor: ActingFor) =>
  change(ctx, id, actingFor, (row) => {
    const { visibility, ...fields } = input;
    const set: Partial<Row> = {};
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) (set as Record<string, unknown>)[k] = v;
    const demoted = visibility !== undefined && visibility !== row.visibility;
    if (demoted && row.status === "PUBLISHED") return unpublished({ ...set, visibility });
    if (demoted) set.visibility = visibility;
    return Object.keys(set).length ? { set } : null;
  });
