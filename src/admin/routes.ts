import { OpenAPIHono } from "@hono/zod-openapi";
import { createDb } from "../db/client";
import { NotFound } from "../lib/errors";
import { API } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { progressOf, readMove, startMove, stepMove } from "../shards/move";
import { requireAdmin } from "./auth";
import { MoveParams, MoveProgress, StartMove } from "./schemas";

/**
 * Operator routes, behind ADMIN_TOKEN (admin/auth.ts) and left out of /openapi.json: the public API's
 * clients have no use for them. `npm run shard:move` drives the first.
 */

/** A request's share of the move: batches stop being started after this, and the caller calls again. */
const STEP_BUDGET_MS = 10_000;

const json = { "application/json": { schema: MoveProgress } };

const move = defineRoute(API, {
  operationId: "moveOrganization",
  method: "post",
  path: "/admin/shards/moves",
  summary: "Move an organization to another shard, or go on with its move",
  description: `Runs the move's batches for about ${STEP_BUDGET_MS / 1000} s. 202 while it is under way (call again to go on,
after Retry-After when it waits for reads of the old shard to drain), 200 once done. Idempotent: after a crash the same
call resumes at the batch where the move stopped.`,
  request: jsonBody(StartMove),
  responses: {
    200: { description: "The organization lives on the target shard and nothing of it is left on the old one", content: json },
    202: { description: "Under way: call again", content: json },
    401: API.error("Missing or wrong ADMIN_TOKEN"),
    404: API.error("The directory knows no such organization"),
    409: API.error("The organization already lives on that shard, or a move to another shard is under way"),
    503: API.error("ADMIN_TOKEN is not configured"),
  },
});

const status = defineRoute(API, {
  operationId: "getOrganizationMove",
  method: "get",
  path: "/admin/shards/moves/{organizationId}",
  summary: "Where the last move of an organization stands",
  request: { params: MoveParams },
  responses: {
    200: { description: "The move", content: json },
    401: API.error("Missing or wrong ADMIN_TOKEN"),
    404: API.error("No move of this organization was started"),
    503: API.error("ADMIN_TOKEN is not configured"),
  },
});

export const adminRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
adminRoutes.use("/admin/*", requireAdmin);
adminRoutes
  .openapi(move, async (c) => {
    const input = c.req.valid("json");
    await startMove(c.env, input.organizationId, input.to);
    const drainMs = input.drainSeconds === undefined ? undefined : input.drainSeconds * 1000;
    const progress = await stepMove(c.env, input.organizationId, { budgetMs: STEP_BUDGET_MS, drainMs, maxBatches: input.maxBatches });
    if (progress.phase === "done") return c.json(progress, 200);
    const wait = progress.drainUntil ? Math.max(1, Math.ceil((Date.parse(progress.drainUntil) - Date.now()) / 1000)) : 0;
    return c.json(progress, 202, wait > 0 ? { "Retry-After": String(wait) } : {});
  })
  .openapi(status, async (c) => {
    const row = await readMove(createDb(c.env.DB), c.req.valid("param").organizationId);
    if (!row) throw new NotFound("Move");
    return c.json(progressOf(row), 200);
  });
