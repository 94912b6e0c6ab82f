import type { Db } from "../db/client";
import type { Env } from "../env";
import type { EventActor } from "../events/envelope";
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
  db: Db;
  organizationId: string;
  actor: EventActor;
  requestId: string;
  /** Keeps async work (a queue send) alive past the response: `ctx.waitUntil` in production. */
  defer(work: Promise<unknown>): void;
}

export interface AppVariables {
  requestId: string;
  db: Db;
  rateLimiter: RateLimiter;
  user: AuthUser;
  organization: AuthOrganization;
}

export interface AppBindings {
  Bindings: Env;
  Variables: AppVariables;
}
