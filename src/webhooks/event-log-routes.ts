import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, crmError } from "../crm/body";
import { listQuery } from "../crm/list-query";
import { grantedPermissions, requirePermission, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { listEventLog } from "./event-log";
import { readPermissionOf, CATALOGUE } from "./catalogue";
import { EventList, EventListQuery } from "./schemas";

const list = defineRoute(CRM, {
  operationId: "listEvents",
  method: "get",
  path: "/v1/events",
  tags: ["Webhooks"],
  security: [{ bearerAuth: [] }],
  summary: "The event log",
  description:
    "The organization's catalogue events of the last 30 days (the names a webhook may subscribe to; internal events are not listed), newest first, keyset-paginated. Each item is the payload its deliveries carry; only events whose objects the caller may read elsewhere are listed (a contact's need `contacts:read`, an integration's `integrations:read` …). `type` keeps one event name; `deliverySuccess=false` keeps events with a delivery that has not succeeded (retrying, failed or dead), `true` those every delivery of which succeeded.",
  request: { query: listQuery(EventListQuery) },
  responses: {
    200: { description: "A page of events", content: { "application/json": { schema: EventList } } },
    422: crmError("An unknown event name, a bad limit, cursor or deliverySuccess, or an unknown parameter"),
  },
});

/** GET /v1/events: mounted with the webhook routes. */
export const eventLogRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(list, async (c) => {
  const query = c.req.valid("query");
  // The events of what the caller may read: one name asked for needs its read permission (403), the whole log shows those it has.
  if (query.type) requirePermission(c, readPermissionOf(query.type));
  const granted = grantedPermissions(c);
  const readable = CATALOGUE.filter((e) => granted.includes(readPermissionOf(e)));
  return c.json({ success: true as const, ...(await listEventLog(serviceContext(c), query, readable)) }, 200);
});
