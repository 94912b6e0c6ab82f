import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { eventColumns } from "./event-columns";
import { organizations, users } from "./members";

/**
 * The directory (the `DB` binding; docs/decisions/0008-directory-and-tenant-shards.md): what every request reads before
 * it knows an organization's shard. Sessions, where each organization lives, the keys of public links, and the state of
 * shard moves; the OAuth tables (db/oauth.ts) live here too. Organization data lives in the tenant shards
 * (`DB_SHARD_0 … n`).
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
 * API keys: bearers for machines, `bk_` + 32 random bytes base64url, of which only the SHA-256 is stored.
 * Resolved in the same directory read as a session (platform/auth.ts): a key acts as the user who created it, with its
 * permissions ∩ that user's current role; a user no longer in the organization takes their keys' reach with them
 * (no foreign key on `created_by`: the lookup's join is the rule).
 */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text().primaryKey(),
    organizationId: text()
      .notNull()
      .references(() => organizations.id),
    createdBy: text().notNull(),
    name: text().notNull(),
    /** The key's first characters (`bk_` and 8 more), to recognise it in a list; never enough to use it. */
    prefix: text().notNull(),
    keyHash: text().notNull(),
    permissions: text({ mode: "json" }).$type<string[]>().notNull(),
    createdAt: text().notNull(),
    expiresAt: text(),
    /** Stamped at most once a minute, after the answer (platform/auth.ts). */
    lastUsedAt: text(),
  },
  (t) => [
    uniqueIndex("api_keys_key_hash_unique").on(t.keyHash),
    index("api_keys_organization_created_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);

/**
 * Events of changes made in the directory (a key created, an OAuth client connected) on their way to their
 * organization's shard outbox (events/directory-outbox.ts): staged in the batch of the change, written to the shard
 * right after under the same id (an insert that ignores a second copy), then deleted here. A row still here at
 * `due_at` is written again by the cron, so the event exists once whatever fails between the two databases.
 */
export const directoryOutbox = sqliteTable(
  "directory_outbox",
  {
    ...eventColumns(),
    dueAt: text().notNull(),
  },
  (t) => [index("directory_outbox_due_idx").on(t.dueAt)],
);

/**
 * A user's invitation (POST /v1/users): the SHA-256 of the one-time sign-in link mailed to them, live until
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
  (t) => [
    uniqueIndex("user_invitations_token_hash_unique").on(t.tokenHash),
    index("user_invitations_organization_idx").on(t.organizationId),
  ],
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
    kind: text()
      .$type<
        "signing_link" | "survey_link" | "agent_slug" | "agreement" | "sealed_pdf" | "signing_session" | "template_link" | "calendar_feed"
      >()
      .notNull(),
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
