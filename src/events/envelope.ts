import { z } from "zod";
import type { Actor } from "../service-context";

const EventActorSchema = z.object({
  type: z.enum(["user", "system", "public"]),
  userId: z.string().nullable().default(null),
}) satisfies z.ZodType<Actor, Actor>;

/** The one internal envelope of the event bus (DESIGN.md "Domain events"). */
export const EventEnvelopeSchema = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  organizationId: z.string().min(1),
  actor: EventActorSchema,
  occurredAt: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;
