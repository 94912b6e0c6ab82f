// A session on local D1 (`npm run token`, scripts/token.mjs): the organization, its placement, the user and the
// session in the directory, then the copy of the organization and its member that its shard carries
// (src/shards/placement.ts does the same inside the Worker). The same org name maps to the same organization and the
// same email (within it) to the same user; every call mints a new 30-day session. The e2e suites call it on a handle
// they keep open (test/e2e/helpers/local-state.ts) where a token is only a means.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { retryLocked } from "./local-d1.mjs";
import { databaseBindings } from "./migrate.mjs";

const USER =
  "SELECT u.id AS userId, u.organization_id AS organizationId FROM users u JOIN organizations o ON o.id = u.organization_id WHERE o.name = ?1 AND u.email = ?2";

/** Mints a session for `email` in `org` on the open databases `env`: {token, userId, organizationId}. */
export async function mintLocalSession(env, { org: orgName, email: address, name = null, role = "owner" }) {
  const org = orgName.trim();
  const email = address.trim().toLowerCase();
  const now = new Date().toISOString();
  const token = `sess_${randomBytes(32).toString("base64url")}`;
  const tokenHash = createHash("sha256").update(token).digest("hex");
  const expiresAt = new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString();
  const shards = JSON.stringify(
    databaseBindings()
      .filter((b) => b !== "DB")
      .map((_, i) => i),
  );
  const db = env.DB;
  const directory = [
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
      .bind(randomUUID(), email, name, now, org, role),
    db
      .prepare(
        `INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) SELECT ?3, ?4, userId, organizationId, ?5, ?6 FROM (${USER}) WHERE true ON CONFLICT(token_hash) DO NOTHING`,
      )
      .bind(org, email, randomUUID(), tokenHash, now, expiresAt),
    db
      .prepare(
        "SELECT u.id AS userId, u.organization_id AS organizationId, u.email, u.name, u.role, u.accepts_leads AS acceptsLeads, u.created_at AS userCreatedAt, o.name AS orgName, o.created_at AS orgCreatedAt, s.shard FROM users u JOIN organizations o ON o.id = u.organization_id JOIN organization_shards s ON s.organization_id = o.id WHERE o.name = ?1 AND u.email = ?2",
      )
      .bind(org, email),
  ];
  // One batch: one transaction on the directory, as the Worker writes it.
  const row = (await retryLocked(() => db.batch(directory))).at(-1)?.results?.[0];
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
}
