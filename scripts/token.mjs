// npm run --silent token -- --org "<org name>" --email "<email>" [--name "<user name>"] [--role owner|admin|agent]
// Prints one JSON line {"token","userId","organizationId"} (DESIGN.md contract 2). The same org name maps to the
// same organization and the same email (within it) to the same user; every call mints a new 30-day session. It
// writes local D1 (scripts/local-d1.mjs), so it works whether or not `npm run dev` is running. A new user is an owner
// unless `--role` says otherwise; an existing user keeps the role they have.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { retryLocked, withLocalD1 } from "./local-d1.mjs";
import { databaseBindings } from "./migrate.mjs";

const { values } = parseArgs({
  options: { org: { type: "string" }, email: { type: "string" }, name: { type: "string" }, role: { type: "string" } },
});
const org = values.org?.trim();
const email = values.email?.trim().toLowerCase();
const role = values.role ?? "owner";
if (!org || !email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || !["owner", "admin", "agent"].includes(role)) {
  console.error('usage: npm run --silent token -- --org "<org name>" --email "<email>" [--name "<user name>"] [--role owner|admin|agent]');
  process.exit(2);
}

const now = new Date().toISOString();
const token = `sess_${randomBytes(32).toString("base64url")}`;
const tokenHash = createHash("sha256").update(token).digest("hex");
const expiresAt = new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString();
const user =
  "SELECT u.id AS userId, u.organization_id AS organizationId FROM users u JOIN organizations o ON o.id = u.organization_id WHERE o.name = ?1 AND u.email = ?2";

// The directory first (organization, its placement on the least full shard, the user, the session), then the copy of
// the organization and its member that its shard carries (src/shards/placement.ts does the same inside the Worker).
const shards = JSON.stringify(
  databaseBindings()
    .filter((b) => b !== "DB")
    .map((_, i) => i),
);
const directory = (db) => [
  db
    .prepare("INSERT INTO organizations (id, name, created_at) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING")
    .bind(randomUUID(), org, now),
  db
    .prepare(
      "INSERT INTO organization_shards (organization_id, shard) SELECT o.id, s.value FROM organizations o, json_each(?2) s LEFT JOIN shard_placements p ON p.shard = s.value WHERE o.name = ?1 ORDER BY ifnull(p.organizations, 0), s.value LIMIT 1 ON CONFLICT(organization_id) DO NOTHING",
    )
    .bind(org, shards),
  db
    .prepare(
      "INSERT INTO users (id, organization_id, email, name, role, created_at) SELECT ?1, id, ?2, ?3, ?6, ?4 FROM organizations WHERE name = ?5 ON CONFLICT(organization_id, email) DO NOTHING",
    )
    .bind(randomUUID(), email, values.name ?? null, now, org, role),
  db
    .prepare(
      `INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) SELECT ?3, ?4, userId, organizationId, ?5, ?6 FROM (${user}) WHERE true ON CONFLICT(token_hash) DO NOTHING`,
    )
    .bind(org, email, randomUUID(), tokenHash, now, expiresAt),
  db
    .prepare(
      "SELECT u.id AS userId, u.organization_id AS organizationId, u.email, u.name, u.role, u.accepts_leads AS acceptsLeads, u.created_at AS userCreatedAt, o.name AS orgName, o.created_at AS orgCreatedAt, s.shard FROM users u JOIN organizations o ON o.id = u.organization_id JOIN organization_shards s ON s.organization_id = o.id WHERE o.name = ?1 AND u.email = ?2",
    )
    .bind(org, email),
];

try {
  const minted = await withLocalD1(
    async (env) => {
      // One batch: one transaction on the directory, as the Worker writes it.
      const row = (await retryLocked(() => env.DB.batch(directory(env.DB)))).at(-1)?.results?.[0];
      if (!row?.userId) throw new Error("the user row was not found after writing it");
      const shard = env[`DB_SHARD_${row.shard}`];
      await retryLocked(() =>
        shard.batch([
          shard
            .prepare("INSERT INTO organizations (id, name, created_at) VALUES (?1, ?2, ?3) ON CONFLICT(id) DO NOTHING")
            .bind(row.organizationId, row.orgName, row.orgCreatedAt),
          shard
            .prepare(
              "INSERT INTO users (id, organization_id, email, name, role, accepts_leads, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(id) DO NOTHING",
            )
            .bind(row.userId, row.organizationId, row.email, row.name, row.role, row.acceptsLeads, row.userCreatedAt),
        ]),
      );
      return { token, userId: row.userId, organizationId: row.organizationId };
    },
    { migrate: true },
  );
  process.stdout.write(`${JSON.stringify(minted)}\n`);
} catch (err) {
  console.error(`token: ${err.message}`);
  process.exit(1);
}
