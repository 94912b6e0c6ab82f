/** The numbers of endpoints that heal, in one place: the routes' schemas and the services read them. */

/** Every delivery of an endpoint failing this long turns it off (what Svix and Stripe do). */
export const DISABLE_AFTER_DAYS = 5;

/** A rotation's overlap, when the replaced secret still signs beside the new one: a day unless said, a week at most. */
export const DEFAULT_OVERLAP_SECONDS = 86_400;
export const MAX_OVERLAP_SECONDS = 7 * 86_400;

/**
 * How far back the event log (GET /v1/events) and a recover reach. The outbox keeps events longer (nothing prunes it
 * today); a pruning added later must keep at least this.
 */
export const EVENT_RETENTION_DAYS = 30;

/** The oldest moment the event log and a recover reach. */
export const retentionStart = (now = Date.now()): string => new Date(now - EVENT_RETENTION_DAYS * 86_400_000).toISOString();

/** Deliveries one recover queues; a larger window takes more calls (`hasMore`). */
export const RECOVER_BATCH = 1000;
