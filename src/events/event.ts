import { z } from "zod";
import type { Actor } from "../service-context";

const EventActorSchema = z.object({
  type: z.enum(["user", "system", "public"]),
  userId: z.string().nullable().default(null),
}) satisfies z.ZodType<Actor, Actor>;

/** A domain event: the one internal shape of the event bus (DESIGN.md "Domain events"), as the outbox stores it. */
export const DomainEventSchema = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  organizationId: z.string().min(1),
  actor: EventActorSchema,
  occurredAt: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type DomainEvent = z.infer<typeof DomainEventSchema>;
