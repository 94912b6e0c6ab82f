import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { agentProfiles } from "../db/schema";
import { purgeFeed } from "../reputation/feed-cache";
import type { ServiceContext } from "../service-context";

// The agent profiles' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): a profile's texts that name them.

/** An agent's public feed shows their published profile: a rewrite of it purges the feed at once. */
const purgeProfileFeeds = async (ctx: ServiceContext, userIds: string[]) => {
  for (const userId of userIds) purgeFeed(ctx, userId);
};

const COPIES: Copy[] = [
  { kind: "agent_profiles", table: agentProfiles, key: "userId", column: "draftConfig", versioned: true },
  { kind: "agent_profiles", table: agentProfiles, key: "userId", column: "publishedConfig", versioned: true, after: purgeProfileFeeds },
];

export const profilesErasable: Erasable = {
  erase: async (ctx, scrub, counted) => ({ name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) }),
};
