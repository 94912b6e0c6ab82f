import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { AppBindings } from "./context";
import { handleError, handleNotFound } from "./error-handler";
import { type Routers, validationHook } from "./openapi";

/**
 * Route groups built at the first request that reaches them (docs/decisions/0006-a-fast-cold-start.md). Building a
 * domain's routes builds its zod schemas, which was most of the Worker's startup CPU; a cold isolate now builds only
 * the group its first request needs. The app's middleware (headers, session, authentication, permissions, idempotency)
 * still runs first, in the app; the group's routers then answer with the app's own context variables, error and
 * not-found answers.
 */

export interface RouteGroup {
  /** The paths the group answers (Hono patterns), mounted on the app. */
  paths: string[];
  /** Imports the group's modules and builds its routers, in the order they are matched. */
  load(): Promise<Routers>;
  /** False for operator routes kept out of /openapi.json (src/admin/). */
  documented?: boolean;
}

/** The app's context of a request a group answers, for the group's bridge. */
const PARENT = new WeakMap<Request, Context<AppBindings>>();

type Vars = AppBindings["Variables"];

/** One app of a group's routers, whose first middleware shares the variables of the app's context both ways. */
function joined(routers: Routers): OpenAPIHono<AppBindings> {
  const group = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
  group.use(async (c, next) => {
    const parent = PARENT.get(c.req.raw);
    if (parent) for (const [key, value] of Object.entries(parent.var)) c.set(key as keyof Vars, value as never);
    try {
      await next();
    } finally {
      // What a route sets for the app's middleware after it (idempotency's replayOmits) goes back.
      if (parent) for (const [key, value] of Object.entries(c.var)) parent.set(key as keyof Vars, value as never);
    }
  });
  for (const router of routers) group.route("/", router);
  group.onError(handleError);
  group.notFound(handleNotFound);
  return group;
}

/** Mounts `group` on `app`: its routers are imported and built once, at the first request to one of its paths. */
export function mountLazily(app: OpenAPIHono<AppBindings>, group: RouteGroup): void {
  // The built group is kept, never the pending build: a promise that settles in one request's I/O context cannot be
  // awaited from another (workerd cancels that request as hung), so requests racing the first build each build it
  // and the first to finish is kept. A failed import is tried again by the next request.
  let built: OpenAPIHono<AppBindings> | undefined;
  const router = async () => {
    if (built) return built;
    const fresh = joined(await group.load());
    built ??= fresh;
    return built;
  };
  const handler: MiddlewareHandler<AppBindings> = async (c) => {
    const sub = await router();
    // A body the app's middleware already read (the idempotency fingerprint) is handed on from its cache.
    const request = c.req.raw.bodyUsed ? new Request(c.req.raw, { body: await c.req.arrayBuffer() }) : c.req.raw;
    PARENT.set(request, c);
    let executionCtx: Parameters<typeof sub.fetch>[2];
    try {
      executionCtx = c.executionCtx;
    } catch {
      executionCtx = undefined; // none outside a request (app.request in a script)
    }
    return sub.fetch(request, c.env, executionCtx);
  };
  for (const path of group.paths) app.all(path, handler);
}
