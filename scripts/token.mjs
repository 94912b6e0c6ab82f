// npm run --silent token -- --org "<org name>" --email "<email>"
// Prints one JSON line {"token","userId","organizationId"} (DESIGN.md contract 2). The same org name maps to the
// same organization and the same email (within it) to the same user; every call mints a new 30-day session. It
// writes local D1 through wrangler, so it works whether or not `npm run dev` is running.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { applyLocalMigrations, databaseBindings } from "./migrate.mjs";
import { wrangler } from "./wrangler.mjs";

const { values } = parseArgs({ options: { org: { type: "string" }, email: { type: "string" }, name: { type: "string" } } });
const org = values.org?.trim();
const email = values.email?.trim().toLowerCase();
if (!org || !email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
  console.error('usage: npm run --silent token -- --org "<org name>" --email "<email>" [--name "<user name>"]');
  process.exit(2);
}

const q = (v) => (v === null || v === undefined ? "NULL" : `'${String(v).replaceAll("'", "''")}'`);
const now = new Date();
const token = `sess_${randomBytes(32).toString("base64url")}`;
const tokenHash = createHash("sha256").update(token).digest("hex");
const expiresAt = new Date(now.getTime() + 30 * 24 * 3600 * 1000).toISOString();
const user = `SELECT u.id AS userId, u.organization_id AS organizationId FROM users u JOIN organizations o ON o.id = u.organization_id WHERE o.name = ${q(org)} AND u.email = ${q(email)}`;

// The directory first (organization, its placement on the least full shard, the user, the session), then the copy of
// the organization and its member that its shard carries (src/shards/placement.ts does the same inside the Worker).
const shards = JSON.stringify(databaseBindings().filter((b) => b !== "DB").map((_, i) => i));
const directory = [
  `INSERT INTO organizations (id, name, created_at) VALUES (${q(randomUUID())}, ${q(org)}, ${q(now.toISOString())}) ON CONFLICT(name) DO NOTHING`,
  `INSERT INTO organization_shards (organization_id, shard) SELECT o.id, s.value FROM organizations o, json_each(${q(shards)}) s LEFT JOIN shard_placements p ON p.shard = s.value WHERE o.name = ${q(org)} ORDER BY ifnull(p.organizations, 0), s.value LIMIT 1 ON CONFLICT(organization_id) DO NOTHING`,
  `INSERT INTO users (id, organization_id, email, name, created_at) SELECT ${q(randomUUID())}, id, ${q(email)}, ${q(values.name ?? null)}, ${q(now.toISOString())} FROM organizations WHERE name = ${q(org)} ON CONFLICT(organization_id, email) DO NOTHING`,
  `INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) SELECT ${q(randomUUID())}, ${q(tokenHash)}, userId, organizationId, ${q(now.toISOString())}, ${q(expiresAt)} FROM (${user}) WHERE true ON CONFLICT(token_hash) DO NOTHING`,
  `SELECT u.id AS userId, u.organization_id AS organizationId, u.email, u.name, u.created_at AS userCreatedAt, o.name AS orgName, o.created_at AS orgCreatedAt, s.shard FROM users u JOIN organizations o ON o.id = u.organization_id JOIN organization_shards s ON s.organization_id = o.id WHERE o.name = ${q(org)} AND u.email = ${q(email)}`,
];

const lastRow = (out) => JSON.parse(out.slice(out.indexOf("["))).at(-1)?.results?.[0];

try {
  applyLocalMigrations();
  const row = lastRow(wrangler(["d1", "execute", "DB", "--local", "--json", "--command", directory.join(";\n")]));
  if (!row?.userId) throw new Error("the user row was not found after writing it");
  const shard = [
    `INSERT INTO organizations (id, name, created_at) VALUES (${q(row.organizationId)}, ${q(row.orgName)}, ${q(row.orgCreatedAt)}) ON CONFLICT(id) DO NOTHING`,
    `INSERT INTO users (id, organization_id, email, name, created_at) VALUES (${q(row.userId)}, ${q(row.organizationId)}, ${q(row.email)}, ${q(row.name)}, ${q(row.userCreatedAt)}) ON CONFLICT(id) DO NOTHING`,
  ];
  wrangler(["d1", "execute", `DB_SHARD_${row.shard}`, "--local", "--json", "--command", shard.join(";\n")]);
  process.stdout.write(`${JSON.stringify({ token, userId: row.userId, organizationId: row.organizationId })}\n`);
} catch (err) {
  console.error(`token: ${err.message}`);
  process.exit(1);
}
