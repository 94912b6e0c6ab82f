import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Clickwrap agreements (spec: Clickwrap agreement). One row per key within an organization, stable across versions;
 * `version_hash` is the current text's SHA-256 (hex), whose text is in clickwrap_versions.
 */
export const clickwrapAgreements = sqliteTable(
  "clickwrap_agreements",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    key: text().notNull(),
    title: text().notNull(),
    versionHash: text().notNull(),
    active: integer({ mode: "boolean" }).notNull().default(true),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    uniqueIndex("clickwrap_agreements_org_key_unique").on(t.organizationId, t.key),
    index("clickwrap_agreements_org_created_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);

/** Every text an agreement has had, kept for good: acceptances name the version they accepted by its hash. */
export const clickwrapVersions = sqliteTable(
  "clickwrap_versions",
  {
    agreementId: text().notNull(),
    versionHash: text().notNull(),
    organizationId: text().notNull(),
    title: text().notNull(),
    body: text().notNull(),
    /** When this text was first published. */
    publishedAt: text().notNull(),
    /** When it last became the current text (publishing an earlier text again makes it current again). */
    currentSince: text().notNull(),
  },
  // The history's keyset order (newest current first, the hash breaking ties): GET /api/clickwrap/{agreementId} pages on it.
  (t) => [
    primaryKey({ columns: [t.agreementId, t.versionHash] }),
    index("clickwrap_versions_history_idx").on(t.agreementId, t.currentSince, t.versionHash),
  ],
);

/**
 * Acceptances (spec: Clickwrap acceptance): immutable. No route changes or deletes one, and the migration adds
 * triggers that abort any UPDATE or DELETE of this table.
 */
export const clickwrapAcceptances = sqliteTable(
  "clickwrap_acceptances",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    agreementId: text().notNull(),
    versionHash: text().notNull(),
    subjectRef: text(),
    acceptedAt: text().notNull(),
    ip: text(),
    userAgent: text(),
  },
  (t) => [
    index("clickwrap_acceptances_agreement_idx").on(t.organizationId, t.agreementId, t.acceptedAt, t.id),
    index("clickwrap_acceptances_subject_idx").on(t.organizationId, t.agreementId, t.subjectRef, t.acceptedAt),
  ],
);
