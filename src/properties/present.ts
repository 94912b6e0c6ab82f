import { and, desc, eq } from "drizzle-orm";
import { agentProfiles, propertyStats, propertyValuations, reputationAggregates, users } from "../db/schema";
import { versioned } from "../db/write";
import { requestFileSigner } from "../files/signed-url";
import { idsOf, inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { listingOf, type PropertyRecord, toProperty } from "./mapping";
import type { Include, Property } from "./schemas";

/**
 * Properties as the API shows them, with the requested includes: signed photo links (always for one property, with
 * include=photos on a list), the listing agent's profile, the all-time analytics, the latest valuation's comparables.
 * One query per include for the whole page.
 */
export async function present(
  ctx: ServiceContext,
  records: PropertyRecord[],
  include: readonly Include[],
  withPhotos: boolean,
): Promise<Property[]> {
  let urls: Map<string, string> | undefined;
  if (withPhotos) {
    urls = new Map();
    const uploads = records.flatMap((r) => r.photos.filter((p) => p.key));
    if (uploads.length) {
      const sign = requestFileSigner(ctx);
      const links = await Promise.all(uploads.map((p) => sign(p.key!)));
      for (const [i, p] of uploads.entries()) urls!.set(p.id, links[i]!.url);
    }
  }
  const shown = records.map((r) => versioned(toProperty(r, urls), r.version));
  const ids = records.map((r) => r.id);
  if (ids.length === 0) return shown;
  if (include.includes("analytics")) {
    const rows = await ctx.db
      .select()
      .from(propertyStats)
      .where(and(eq(propertyStats.organizationId, ctx.organizationId), inJsonList(propertyStats.propertyId, ids)))
      .all();
    const byId = new Map(rows.map((s) => [s.propertyId, s]));
    for (const p of shown) {
      const s = byId.get(p.id);
      p.analytics = {
        views: s?.views ?? 0,
        inquiries: s?.inquiries ?? 0,
        showings: s?.showings ?? 0,
        offers: s?.offers ?? 0,
        saveCount: s?.saves ?? 0,
        averageTimeOnSite: s && s.timeOnSiteCount > 0 ? Math.round(s.timeOnSiteTotal / s.timeOnSiteCount) : null,
      };
    }
  }
  if (include.includes("agent")) await attachAgents(ctx, records, shown);
  if (include.includes("comparables")) {
    for (const p of shown) {
      const latest = await ctx.db
        .select({ body: propertyValuations.body })
        .from(propertyValuations)
        .where(and(eq(propertyValuations.organizationId, ctx.organizationId), eq(propertyValuations.propertyId, p.id)))
        .orderBy(desc(propertyValuations.createdAt), desc(propertyValuations.id))
        .get();
      p.comparables = (latest?.body.comparables as unknown[] | undefined) ?? [];
    }
  }
  return shown;
}

/** include=agent: the listing agent when it is a user, with their public profile and rating. */
export async function attachAgents(ctx: ServiceContext, records: PropertyRecord[], shown: Property[]): Promise<void> {
  const agentIds = [
    ...new Set(records.map((r) => (listingOf(r).listingAgent as { id?: string } | undefined)?.id).filter((id): id is string => !!id)),
  ];
  const rows = agentIds.length
    ? await ctx.db
        .select({
          id: users.id,
          name: users.name,
          email: users.email,
          slug: agentProfiles.slug,
          status: agentProfiles.status,
          averageRating: reputationAggregates.averageRating,
          totalReviews: reputationAggregates.totalReviews,
        })
        .from(users)
        .leftJoin(agentProfiles, and(eq(agentProfiles.organizationId, users.organizationId), eq(agentProfiles.userId, users.id)))
        .leftJoin(
          reputationAggregates,
          and(eq(reputationAggregates.organizationId, users.organizationId), eq(reputationAggregates.agentUserId, users.id)),
        )
        .where(and(idsOf(users, ctx.organizationId, agentIds)))
        .all()
    : [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  records.forEach((r, i) => {
    const a = byId.get((listingOf(r).listingAgent as { id?: string } | undefined)?.id ?? "");
    shown[i]!.agent = a
      ? {
          id: a.id,
          name: a.name,
          email: a.email,
          profileSlug: a.status === "PUBLISHED" ? a.slug : null,
          averageRating: a.averageRating ?? null,
          totalReviews: a.totalReviews ?? 0,
        }
      : null;
  });
}
