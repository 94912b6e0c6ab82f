import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { organizations, users } from "./members";

/**
 * The directory (the `DB` binding, issue 24): what every request reads before it knows an organization's shard.
 * Sessions, where each organization lives, the keys of public links, and the state of shard moves; the OAuth tables
 * (db/oauth.ts) live here too. Organization data lives in the tenant shards (`DB_SHARD_0 … n`).
 */

/** Bearer sessions. Only the SHA-256 of the token is stored; the raw token exists once, in the minting answer. */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text().primaryKey(),
    tokenHash: text().notNull(),
    userId: text()
      .notNull()
      .references(() => users.id),
    organizationId: text()
      .notNull()
      .references(() => organizations.id),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
    revokedAt: text(),
  },
  (t) => [uniqueIndex("sessions_token_hash_unique").on(t.tokenHash), index("sessions_user_idx").on(t.userId)],
);


/**
 * A user's invitation (issue 32, POST /v1/users): the SHA-256 of the one-time sign-in link mailed to them, live until
 * `expiresAt` (7 days). One per user: inviting again replaces the link. Deleted when the link signs them in, so a user
 * with a row here is still `invited`. Here beside sessions, which redeeming it mints in the same batch.
 */
export const userInvitations = sqliteTable(
  "user_invitations",
  {
    userId: text()
      .primaryKey()
      .references(() => users.id),
    organizationId: text()
      .notNull()
      .references(() => organizations.id),
    tokenHash: text().notNull(),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
  },
  (t) => [uniqueIndex("user_invitations_token_hash_unique").on(t.tokenHash), index("user_invitations_organization_idx").on(t.organizationId)],
);

/** Where each organization lives, and the write fence of a move out of it (src/shards/). */
export const organizationShards = sqliteTable("organization_shards", {
  organizationId: text()
    .primaryKey()
    .references(() => organizations.id),
  shard: integer().notNull(),
  /** Set while a move copies the organization's last rows: its writes answer 503 until the directory flips. */
  fencedAt: text(),
});

/** How many organizations each shard carries: a new organization goes to the least full, found without a scan. */
export const shardPlacements = sqliteTable("shard_placements", {
  shard: integer().primaryKey(),
  organizations: integer().notNull().default(0),
});

/**
 * What a public route is given (a signing or survey token's hash, an agent's slug, an agreement id, a sealed PDF's
 * hash) → the organization it belongs to, so the route opens one shard. Slugs are claimed here, which makes them
 * unique across organizations and shards.
 */
export const publicKeys = sqliteTable(
  "public_keys",
  {
    kind: text().$type<"signing_link" | "survey_link" | "agent_slug" | "agreement" | "sealed_pdf">().notNull(),
    key: text().notNull(),
    organizationId: text().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.key] }), index("public_keys_organization_idx").on(t.organizationId)],
);

/**
 * A move of one organization between shards (src/shards/move.ts): the phase it reached and, while copying, the table
 * and the last key copied, so that a move resumes after a crash at the batch where it stopped.
 */
export const shardMoves = sqliteTable(
  "shard_moves",
  {
    organizationId: text()
      .primaryKey()
      .references(() => organizations.id),
    fromShard: integer().notNull(),
    toShard: integer().notNull(),
    phase: text().$type<"copying" | "fenced" | "flipped" | "done">().notNull(),
    tableIndex: integer().notNull().default(0),
    cursor: text(),
    startedAt: text().notNull(),
    updatedAt: text().notNull(),
    finishedAt: text(),
  },
  (t) => [index("shard_moves_phase_idx").on(t.phase)],
);

