import { z } from "zod";

/**
 * The body of every queue message, one schema per queue: producers send these shapes (through the ports of
 * service-context.ts), consumers parse them (events/queue-consumer.ts) and never cast. Bodies carry ids only: the
 * consumer reads the rest where it lives, so a message stays far under Queues' 128 KB whatever it is about. Fields
 * a message queued by an earlier version may lack are optional, and the consumer finds them another way.
 */

/** Ids are UUIDs; a bound keeps a hostile or broken body from reaching a query. */
const Id = z.string().min(1).max(100);

/**
 * `events`: a committed event's id and its organization, whose shard holds the event's row (events/outbox.ts).
 * Messages queued before messages named the organization carry the id only.
 */
export const EventMessageSchema = z.object({ id: Id, organizationId: Id.optional() });
export type EventMessage = Required<z.infer<typeof EventMessageSchema>>;

/**
 * `webhook-deliveries` (and its dead-letter queue): a delivery to attempt, with its organization (whose shard holds it) and the
 * retry chain it belongs to (db/webhooks.ts `chain`; absent for the first, 0). Older messages lack the organization.
 */
export const DeliveryMessageSchema = z.object({ deliveryId: Id, organizationId: Id.optional(), chain: z.int().optional() });
export type DeliveryMessage = { deliveryId: string; organizationId: string; chain?: number };

/** `imports`: the import whose next chunk to run (its row says which chunk that is: imports/chunks.ts). */
export const ImportMessageSchema = z.object({ importId: Id, organizationId: Id });
export type ImportMessage = z.infer<typeof ImportMessageSchema>;

/** `organization-exports`: the export job to run (exports/service.ts). */
export const ExportMessageSchema = z.object({ organizationId: Id, exportId: Id });
export type ExportMessage = z.infer<typeof ExportMessageSchema>;
