import { defineConfig } from "drizzle-kit";

/**
 * The tenant shards' migrations (`DB_SHARD_0 … n`): every organization-scoped table, and the copy of the
 * organizations and members each shard carries (db/members.ts). Applied to every shard (issue 24).
 */
export default defineConfig({
  dialect: "sqlite",
  schema: [
    "./src/db/members.ts",
    "./src/db/platform.ts",
    "./src/db/plants.ts",
    "./src/db/contacts.ts",
    "./src/db/webhooks.ts",
    "./src/db/documents.ts",
    "./src/db/signatures.ts",
    "./src/db/reputation.ts",
    "./src/db/properties.ts",
    "./src/db/deals.ts",
    "./src/db/exports.ts",
    "./src/db/clickwrap.ts",
    "./src/db/obligations.ts",
    "./src/db/document-vectors.ts",
    "./src/db/referrals.ts",
    "./src/db/surveys.ts",
    "./src/db/trash.ts",
    "./src/db/uploads.ts",
    "./src/db/shard-fences.ts",
    "./src/db/search.ts",
    "./src/db/custom-fields.ts",
    "./src/db/templates.ts",
    "./src/db/imports.ts",
    "./src/db/agenda.ts",
    "./src/db/plans.ts",
    "./src/db/smart-lists.ts",
    "./src/db/ponds.ts",
  ],
  out: "./migrations/tenant",
  casing: "snake_case",
});
