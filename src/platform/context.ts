import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import type { Env } from "../env";
import type { Permission } from "./permissions";
import type { AuthOrganization, AuthUser } from "../service-context";
import type { RateDecision, RateLimiter, RateRule } from "./rate-limiter";

/** A claimed Idempotency-Key: where its row is, and the answer a verb kept in its own batch, once that batch committed. */
export interface IdempotencyClaim {
  db: Db;
  where: SQL | undefined;
  /** Set when the batch that kept it committed; the middleware then writes nothing more if the response is that answer. */
  kept?: { status: number; headers: Record<string, string>; body: string };
}

export interface AppVariables {
  requestId: string;
  /** The directory's session: sessions, OAuth, organizations and their shards, public link keys. */
  directory: Db;
  /** The caller's organization's shard, once authentication or a public route's key has named it (platform/session.ts). */
  db: Db;
  d1: D1Database | D1DatabaseSession;
  shard: number;
  shardSession: D1DatabaseSession;
  rateLimiter: RateLimiter;
  /** Counts each credential's requests (platform/rate-limit.ts `countCredential`); tests replace it. */
  credentialLimiter: RateLimiter;
  /**
   * The quotas this request was counted against, with its count in each, for the RateLimit fields: the caller's
   * credential once authentication admitted it (policy "default"), then a route's own bucket (policy = its name).
   */
  quota?: { rule: RateRule; decision: RateDecision; policy: string }[];
  user: AuthUser;
  organization: AuthOrganization;
  /**
   * What the credential carries (src/platform/permissions.ts): an OAuth access token's grant, an API key's
   * permissions; undefined for a bearer session, which may do everything. Either way within the user's role: read it
   * through `grantedPermissions` / `requirePermission` (platform/auth.ts).
   */
  permissions?: Permission[];
  /**
   * When the credential stops working, for what it may create that would outlive it (an API key: api-keys/service.ts):
   * an API key's `expiresAt` (null: it never expires), an OAuth access token's grant's; undefined for a bearer session,
   * which is the user signed in rather than a delegation of theirs.
   */
  credentialExpiresAt?: string | null;
  /**
   * JSON paths of the answer that an idempotent replay leaves out (platform/idempotency.ts): secrets and capability
   * links shown once. `*` steps into every item of an array: `[["links", "*", "url"]]`.
   */
  replayOmits?: string[][];
  /** The D1 bookmark the client sent back, opened, and its shard (platform/session.ts); undefined when none, or it did not open. */
  sentBookmark?: { shard: number; bookmark: string };
  /** Results read with the authentication (platform/preload.ts). */
  preloaded?: Map<string, unknown[]>;
  /** The claimed idempotency key of this request (platform/idempotency.ts), for a verb that keeps its answer in its own batch. */
  idempotencyClaim?: IdempotencyClaim;
}

export interface AppBindings {
  Bindings: Env;
  Variables: AppVariables;
}
