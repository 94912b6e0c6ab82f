import { z } from "@hono/zod-openapi";

export const StartMove = z
  .object({
    organizationId: z.string().min(1),
    to: z.number().int().nonnegative(),
    /** How long the old rows stay readable after the flip, for requests that looked the organization up before it. */
    drainSeconds: z.number().int().min(0).max(300).optional(),
    /** At most this many batches in this call (short calls, or a step at a time); the time budget holds either way. */
    maxBatches: z.number().int().min(1).max(10_000).optional(),
  })
  // A misspelt option (drainSecond) is refused, not ignored for its default.
  .strict();

export const MoveParams = z.object({ organizationId: z.string().min(1) });

export const MoveProgress = z.object({
  organizationId: z.string(),
  from: z.number().int(),
  to: z.number().int(),
  phase: z.enum(["copying", "fenced", "flipped", "done"]),
  table: z.string().nullable(),
  tablesDone: z.number().int(),
  tables: z.number().int(),
  startedAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().nullable(),
  drainUntil: z.string().nullable(),
});
