import { and, eq } from "drizzle-orm";
import { agentProfiles, testimonials } from "../db/schema";
import { expectNoRow, expectVersion, expectVersionMatch, type Statement, versioned, type VersionedTable, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { Conflict, NotFound, Validation } from "../lib/errors";
import { inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import { issuesFromZod } from "../lib/validation";
import type { ServiceContext } from "../service-context";
import { claimPublicKey } from "../shards/directory";
import { findAgent } from "./agents";
import { purgeFeed, purgeFeedBySlug } from "../reputation/feed-cache";
import { ProfileBlocks } from "./schemas";
export { profilesErasable } from "./erasure";

/** For the domains whose records name an agent (testimonials, referrals): the agent and the records must exist. */
export { checkReferences } from "./agents";

/**
 * Agent public profiles (spec: Profile): PUT writes the draft only; publish checks the draft against the approved
 * blocks (schemas.ts ProfileBlocks), copies it to the published configuration and opens the public feed at the
 * profile's slug; delete (ours) closes it again. Slugs are unique across organizations, since public routes know
 * only the slug: each is claimed in the directory, which also tells those routes the slug's shard.
 */
type Row = typeof agentProfiles.$inferSelect;
const PROFILES = {
  table: agentProfiles,
  id: agentProfiles.userId,
  organizationId: agentProfiles.organizationId,
  version: agentProfiles.version,
} satisfies VersionedTable;

export const toProfile = (r: Row) =>
  versioned(
    {
      agentUserId: r.userId,
      slug: r.slug,
      status: r.status,
      draftConfig: r.draftConfig,
      publishedConfig: r.publishedConfig,
      publishedAt: r.publishedAt,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    },
    r.version,
  );

const byAgent = (ctx: ServiceContext, userId: string) =>
  and(eq(agentProfiles.organizationId, ctx.organizationId), eq(agentProfiles.userId, userId));

/** The agent a profile route is about: the one named, or the caller. */
async function agentOf(ctx: ServiceContext, agentUserId: string | undefined) {
  return findAgent(ctx, agentUserId ?? ctx.actor.userId ?? "");
}

async function findProfile(ctx: ServiceContext, userId: string): Promise<Row> {
  const row = await ctx.db.select().from(agentProfiles).where(byAgent(ctx, userId)).get();
  if (!row) throw new NotFound("Profile");
  return row;
}

export async function getProfile(ctx: ServiceContext, agentUserId?: string) {
  const agent = await agentOf(ctx, agentUserId);
  return toProfile(await findProfile(ctx, agent.id));
}

/** A slug from the agent's name, with a short random tail so two Jane Does do not collide. */
function slugFor(name: string | null): string {
  const base =
    (name ?? "agent")
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "agent";
  return `${base.length < 3 ? `agent-${base}` : base}-${crypto.randomUUID().slice(0, 6)}`;
}

const slugTaken = () => new Conflict("This slug is taken; choose another", "slug_taken");

/** PUT /api/reputation/profile: creates or updates the draft (and the slug, when given). */
export async function putProfile(
  ctx: ServiceContext,
  input: { agentUserId?: string; slug?: string; draftConfig: Record<string, unknown> },
) {
  const agent = await agentOf(ctx, input.agentUserId);
  return withRetries(async () => {
    const row = await ctx.db.select().from(agentProfiles).where(byAgent(ctx, agent.id)).get();
    if (row) expectVersionMatch(ctx, row.version);
    const at = nowIso();
    const slug = input.slug ?? row?.slug ?? slugFor(agent.name);
    if (slug !== row?.slug) {
      // Claimed in the directory before the shard write: it is what keeps a slug unique across
      // organizations on every shard; the shard's own index keeps it unique among this organization's agents.
      if (!(await claimPublicKey(ctx.directory, ctx.organizationId, "agent_slug", slug))) throw slugTaken();
      const holder = await ctx.db.select({ userId: agentProfiles.userId }).from(agentProfiles).where(eq(agentProfiles.slug, slug)).get();
      if (holder) throw slugTaken();
    }
    const next: Row = row
      ? {
          ...row,
          slug,
          draftConfig: input.draftConfig,
          status: row.status === "DELETED" ? "DRAFT" : row.status,
          updatedAt: at,
          version: row.version + 1,
        }
      : {
          organizationId: ctx.organizationId,
          userId: agent.id,
          slug,
          status: "DRAFT",
          draftConfig: input.draftConfig,
          publishedConfig: null,
          publishedAt: null,
          createdAt: at,
          updatedAt: at,
          version: 1,
        };
    const write: Statement[] = row
      ? [
          expectVersion(ctx.db, PROFILES, ctx.organizationId, { id: agent.id, version: row.version }),
          ctx.db
            .update(agentProfiles)
            .set({ slug, draftConfig: next.draftConfig, status: next.status, updatedAt: at, version: next.version })
            .where(byAgent(ctx, agent.id)),
        ]
      : [expectNoRow(ctx.db, agentProfiles, byAgent(ctx, agent.id)), ctx.db.insert(agentProfiles).values(next)];
    try {
      await commit(ctx, write);
    } catch (err) {
      if (String(err).includes("agent_profiles_slug_unique") || String(err).includes("agent_profiles.slug")) throw slugTaken();
      throw err;
    }
    // The old slug stays the organization's in the directory: widgets and links embedded under it never show another
    // organization's agent, and no release can race another agent of the organization taking it back.
    // A published profile keeps serving its published configuration; only a new slug moves the feed.
    if (row && row.slug !== slug && row.status === "PUBLISHED") purgeFeedBySlug(ctx, row.slug);
    return toProfile(next);
  });
}

/** POST /api/reputation/profile/publish: the draft must satisfy the approved blocks; every problem in one 400. */
export async function publishProfile(ctx: ServiceContext, agentUserId?: string) {
  const agent = await agentOf(ctx, agentUserId);
  return withRetries(async () => {
    const row = await findProfile(ctx, agent.id);
    expectVersionMatch(ctx, row.version);
    const parsed = ProfileBlocks.safeParse(row.draftConfig);
    if (!parsed.success) throw new Validation(issuesFromZod(parsed.error, row.draftConfig, ["draftConfig"]));
    const featured = parsed.data.featuredTestimonialIds ?? [];
    if (featured.length) {
      const found = await ctx.db
        .select({ id: testimonials.id })
        .from(testimonials)
        .where(
          and(
            eq(testimonials.organizationId, ctx.organizationId),
            eq(testimonials.agentUserId, agent.id),
            eq(testimonials.status, "PUBLISHED"),
            inJsonList(testimonials.id, featured),
          ),
        );
      const published = new Set(found.map((f) => f.id));
      const missing = featured.map((id, i) => ({ id, i })).filter(({ id }) => !published.has(id));
      if (missing.length) {
        throw new Validation(
          missing.map(({ i }) => ({
            field: `draftConfig.featuredTestimonialIds.${i}`,
            path: ["draftConfig", "featuredTestimonialIds", i],
            code: "invalid_reference",
            message: "Not a published testimonial of this agent",
          })),
        );
      }
    }
    const at = nowIso();
    await commit(ctx, [
      expectVersion(ctx.db, PROFILES, ctx.organizationId, { id: agent.id, version: row.version }),
      ctx.db
        .update(agentProfiles)
        .set({ publishedConfig: parsed.data, status: "PUBLISHED", publishedAt: at, updatedAt: at, version: row.version + 1 })
        .where(byAgent(ctx, agent.id)),
    ]);
    purgeFeed(ctx, agent.id);
    return toProfile({
      ...row,
      publishedConfig: parsed.data,
      status: "PUBLISHED",
      publishedAt: at,
      updatedAt: at,
      version: row.version + 1,
    });
  });
}

/**
 * DELETE /api/reputation/profile: the public feed closes (the same 404 as an unknown slug); the draft is kept. A profile
 * already taken down answers 404 like a missing one, so of repeated or concurrent deletes exactly one succeeds and the
 * version moves once (a PUT brings it back as a draft).
 */
export async function deleteProfile(ctx: ServiceContext, agentUserId?: string) {
  const agent = await agentOf(ctx, agentUserId);
  return withRetries(async () => {
    const row = await findProfile(ctx, agent.id);
    if (row.status === "DELETED") throw new NotFound("Profile");
    expectVersionMatch(ctx, row.version);
    const at = nowIso();
    await commit(ctx, [
      expectVersion(ctx.db, PROFILES, ctx.organizationId, { id: agent.id, version: row.version }),
      ctx.db
        .update(agentProfiles)
        .set({ status: "DELETED", publishedConfig: null, publishedAt: null, updatedAt: at, version: row.version + 1 })
        .where(byAgent(ctx, agent.id)),
    ]);
    purgeFeedBySlug(ctx, row.slug);
    return toProfile({ ...row, status: "DELETED", publishedConfig: null, publishedAt: null, updatedAt: at, version: row.version + 1 });
  });
}
