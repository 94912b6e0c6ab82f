import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";

/** Issue 46 (scaffold: the domain's routes are added here). */
export const appointmentRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
