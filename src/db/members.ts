import { check, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { sql } from "drizzle-orm";

/**
 * Tables the directory and every tenant shard both have (drizzle.directory.config.ts, drizzle.tenant.config.ts).
 *
 * The organizations and their members. The directory (the `DB` binding) holds them for sign-in and sessions; every
 * tenant shard holds a copy of the rows of the organizations it carries, written with them (src/shards/placement.ts),
 * so that a service joins a user's name or an organization's name on its own shard; a move copies them with
 * the rest of the organization. A new member is written to the directory first and is complete once its shard copy
 * exists; a change of a member or of the organization commits on the shard, where its event and version
 * live, and then brings the directory's row up to that version (src/users/, src/organization/).
 */
export const organizations = sqliteTable(
  "organizations",
  {
    id: text().primaryKey(),
    // Unique so that the token command maps one organization name to one organization (DESIGN.md contract 2).
    name: text().notNull(),
    /** What people are shown (PATCH /v1/organization); null: `name`. `name` itself never changes. */
    displayName: text(),
    /** An IANA time zone. */
    timeZone: text().notNull().default("UTC"),
    /** JSON, read through src/organization/service.ts (defaults filled in there): lead routing, the default phone region. */
    settings: text({ mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    createdAt: text().notNull(),
    updatedAt: text(),
    version: integer().notNull().default(1),
  },
  (t) => [uniqueIndex("organizations_name_unique").on(t.name)],
);

/** The region phones without a country code are read in (settings.defaultPhoneRegion, default US), for the reads that authenticate. */
export const organizationPhoneRegion = sql<string>`ifnull(json_extract(${organizations.settings}, '$.defaultPhoneRegion'), 'US')`;

export const users = sqliteTable(
  "users",
  {
    id: text().primaryKey(),
    organizationId: text()
      .notNull()
      .references(() => organizations.id),
    email: text().notNull(),
    name: text(),
    /** owner | admin | agent; a user made by `npm run token` or before roles existed is an owner. */
    role: text().$type<"owner" | "admin" | "agent">().notNull().default("agent"),
    /** Whether lead routing may assign new leads to this user. */
    acceptsLeads: integer({ mode: "boolean" }).notNull().default(true),
    createdAt: text().notNull(),
    updatedAt: text(),
    version: integer().notNull().default(1),
  },
  (t) => [
    // GET /v1/users: newest first, keyset on (created_at, id).
    index("users_organization_created_idx").on(t.organizationId, t.createdAt, t.id),
    check("users_role_known", sql`${t.role} IN ('owner', 'admin', 'agent')`),
    uniqueIndex("users_organization_email_unique").on(t.organizationId, t.email),
    // The OAuth sign-in finds a user by the e-mail typed in, whatever its case.
    index("users_email_lower_idx").on(sql`lower(${t.email})`),
  ],
);

/**
 * Always empty: a batch statement inserts into it only when a condition it guards does not hold, and the CHECK then
 * aborts the whole batch (db/write.ts). This is how a D1 batch becomes a compare-and-set, on the directory (OAuth) as on
 * a shard.
 */
export const writeGuards = sqliteTable("write_guards", { failed: text().notNull() }, () => [
  check("write_guard_failed", sql`failed IS NULL`),
]);
