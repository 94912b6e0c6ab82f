import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import type { Env } from "../env";
import type { EventActor } from "../events/envelope";
import type { Permission } from "../oauth/permissions";
import type { Statement } from "../db/write";
import type { RateLimiter } from "./rate-limit";

export interface AuthUser {
  id: string;
  email: string;
  name: string | null;
}

export interface AuthOrganization {
  id: string;
  name: string;
}

/** What a service verb gets: never the HTTP request, only who acts, for which organization, and the bindings. */
export interface ServiceContext {
  env: Env;
  /** The organization's shard (issue 24); a service never names a binding. */
  db: Db;
  /** The directory, for what is looked up across organizations: public link keys, agent slugs (src/shards/). */
  directory: Db;
  /** The same D1 session as `db`, for hand-written SQL (the contacts list). */
  d1: D1Database | D1DatabaseSession;
  organizationId: string;
  actor: EventActor;
  requestId: string;
  /**
   * The versions the caller allows the addressed resource to be at when it is written (If-Match): `*` for any, absent
   * when the write is unconditional. Checked by `expectVersionMatch` (db/write.ts).
   */
  ifMatch?: "*" | number[];
  /** Keeps async work (a queue send) alive past the response: `ctx.waitUntil` in production. */
  defer(work: Promise<unknown>): void;
  /** What was read with the authentication, by key (platform/preload.ts); taken once. */
  preloaded?: Map<string, unknown[]>;
  /**
   * The idempotency record of a verb's answer, to join the batch that commits it (platform/idempotency.ts
   * `keepAnswerInBatch`); absent when the request carries no Idempotency-Key or the route does not keep in batch.
   */
  keepAnswer?: (answer: object) => { statement: Statement; committed(): void };
}

export interface AppVariables {
  requestId: string;
  /** The directory's session (issue 24): sessions, OAuth, organizations and their shards, public link keys. */
  directory: Db;
  /** The caller's organization's shard, once authentication or a public route's key has named it (platform/session.ts). */
  db: Db;
  d1: D1Database | D1DatabaseSession;
  shard: number;
  shardSession: D1DatabaseSession;
  rateLimiter: RateLimiter;
  user: AuthUser;
  organization: AuthOrganization;
  /**
   * What an OAuth access token was granted (src/oauth/permissions.ts); undefined for a bearer session, which may do
   * everything. Read it through `grantedPermissions` / `requirePermission` (platform/auth.ts).
   */
  permissions?: Permission[];
  /**
   * JSON paths of the answer that an idempotent replay leaves out (platform/idempotency.ts): secrets and capability
   * links shown once. `*` steps into every item of an array: `[["links", "*", "url"]]`.
   */
  replayOmits?: string[][];
  /** Results read with the authentication (platform/preload.ts). */
  preloaded?: Map<string, unknown[]>;
  /** The claimed idempotency key of this request (platform/idempotency.ts), for a verb that keeps its answer in its own batch. */
  idempotencyClaim?: { db: Db; where: SQL | undefined };
  /** The answer a verb kept in its own batch; the middleware then writes nothing more if the response is that answer. */
  answerKept?: { status: number; headers: Record<string, string>; body: string };
}

export interface AppBindings {
  Bindings: Env;
  Variables: AppVariables;
}
