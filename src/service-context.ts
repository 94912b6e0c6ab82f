import type { Db } from "./db/client";
import type { Statement } from "./db/write";
import type { Env } from "./env";
import type { Logger } from "./lib/log";
import type { DeliveryMessage, EventMessage, ExportMessage, ImportMessage } from "./lib/queue-messages";

/**
 * What a service verb is handed (docs/architecture.md, tier 3): who acts, for which organization, and the databases.
 * A leaf: it names no HTTP and no higher layer, so shards, events, platform and the domains all take it alike.
 */

/** Who acts: a signed-in user, the system (a consumer, the cron) or the public (a link's holder). */
export interface Actor {
  type: "user" | "system" | "public";
  userId?: string | null;
}

/** Where a request came from, as an audit trail records it (platform/request-meta.ts reads it off the request). */
export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export interface AuthUser {
  id: string;
  email: string;
  name: string | null;
  /** The user's role in the organization (platform/permissions.ts `ROLES`). */
  role: "owner" | "admin" | "agent";
}

export interface AuthOrganization {
  id: string;
  name: string;
  /** `settings.defaultPhoneRegion` of the directory's copy (ServiceContext.phoneRegion). */
  phoneRegion: string;
}

/**
 * Refuses (throws 403) a caller who may not act on the records about this agent (the organization's own when null):
 * handed down by a route (platform/auth.ts `agentActingFor`) so a verb checks the row it writes.
 */
export type ActingFor = (agentUserId: string | null) => void;

/** A queue as a service sends to it: one message, or a batch, of the queue's message shape (lib/queue-messages.ts). */
export type QueuePort<Body> = Pick<Queue<Body>, "send" | "sendBatch">;

/** The queues a service sends to (wrangler.toml), each typed by its message. */
export interface Queues {
  events: QueuePort<EventMessage>;
  webhookDeliveries: QueuePort<DeliveryMessage>;
  imports: QueuePort<ImportMessage>;
  organizationExports: QueuePort<ExportMessage>;
}

/** The R2 bucket of the organization's files, as much of it as the services use (keys: files/ names them). */
export type Files = Pick<R2Bucket, "get" | "head" | "put" | "delete" | "list" | "createMultipartUpload">;

/** The queues and files of `env`, for a context built where the bindings are at hand (a request, a consumer, the cron). */
export const portsOf = (env: Env): Pick<ServiceContext, "queues" | "files"> => ({
  queues: {
    events: env.EVENTS,
    webhookDeliveries: env.WEBHOOK_DELIVERIES,
    imports: env.IMPORTS,
    organizationExports: env.ORGANIZATION_EXPORTS,
  },
  files: env.FILES,
});

/** What a service verb gets: never the HTTP request, only who acts, for which organization, and the bindings. */
export interface ServiceContext {
  env: Env;
  /** The queues a verb sends to; a service never reads a queue binding off `env`. */
  queues: Queues;
  /** R2, through which every file is read and written; a service never reads the binding off `env`. */
  files: Files;
  /** Lines of this context's work, carrying its request id and organization (lib/log.ts). */
  log: Logger;
  /** The organization's shard; a service never names a binding. */
  db: Db;
  /** The directory, for what is looked up across organizations: public link keys, agent slugs (src/shards/). */
  directory: Db;
  /** The same D1 session as `db`, for hand-written SQL (the contacts list). */
  d1: D1Database | D1DatabaseSession;
  organizationId: string;
  /**
   * The organization's `settings.defaultPhoneRegion`: phones without a country code are keyed in it (lib/phone.ts).
   * A request's context has it from the authentication read; a system context that writes contacts sets it first.
   */
  phoneRegion?: string;
  actor: Actor;
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
