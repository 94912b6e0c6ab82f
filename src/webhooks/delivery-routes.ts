import { OpenAPIHono } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { CRM, crmError, crmSuccess } from "../crm/body";
import { defineRoute, jsonBody } from "../platform/route";
import { validationHook } from "../platform/openapi";
import { listDeliveries, replayDelivery, replayEvent, sendTestEvent } from "./deliveries";
import { recoverWebhook } from "./recover";
import { deliveryReach, REACH } from "./reach";
import {
  Delivery,
  DeliveryList,
  DeliveryListQuery,
  DeliveryParams,
  EventParams,
  RecoverWebhook,
  Recovery,
  WebhookIdParam,
} from "./schemas";

const tags = ["Webhooks"];
const security = [{ bearerAuth: [] }];
const queued = crmSuccess("Queued for delivery; follow it in the delivery log", Delivery);
const DISABLED = { 409: crmError("The webhook is disabled (code webhook_disabled)") };

const test = defineRoute(CRM, {
  operationId: "sendWebhookTest",
  method: "post",
  path: "/v1/webhooks/{id}/test",
  tags,
  security,
  summary: "Send a test event",
  description: "Queues a signed `webhook.test` delivery through the same path as real events (signature, retries, delivery log).",
  request: { params: WebhookIdParam },
  responses: { 202: queued, ...DISABLED, 404: crmError("No webhook with this id in your organization"), 422: crmError("id is not a UUID") },
});

const deliveries = defineRoute(CRM, {
  operationId: "listWebhookDeliveries",
  method: "get",
  path: "/v1/webhooks/{id}/deliveries",
  tags,
  security,
  summary: "Delivery log",
  description:
    "Deliveries of this webhook, newest first, each with every attempt (status code, duration, error, next attempt). Status: pending (queued), retrying, delivered, failed (410 Gone or webhook disabled), dead (retries exhausted; replayable).",
  request: { params: WebhookIdParam, query: listQuery(DeliveryListQuery.shape) },
  responses: {
    200: { description: "A page of deliveries", content: { "application/json": { schema: DeliveryList } } },
    404: crmError("No webhook with this id in your organization"),
    422: crmError("Bad id, limit, cursor or status, or an unknown parameter"),
  },
});

const replay = defineRoute(CRM, {
  operationId: "replayWebhookDelivery",
  method: "post",
  path: "/v1/webhooks/{id}/deliveries/{deliveryId}/replay",
  tags,
  security,
  summary: "Replay a delivery",
  description:
    "Sends the delivery again (a dead one too): same body and event id, fresh timestamp and signature, a fresh retry schedule. Needs the read permission of the delivery's event and of every event the subscription holds.",
  request: { params: DeliveryParams },
  responses: {
    202: queued,
    ...REACH,
    409: crmError(
      "The webhook is disabled (webhook_disabled), no longer subscribes to the delivery's event (event_not_subscribed), or the delivery is still being attempted (delivery_in_flight)",
    ),
    404: crmError("No such webhook or delivery in your organization"),
    422: crmError("id or deliveryId is not a UUID"),
  },
});

const replayOne = defineRoute(CRM, {
  operationId: "replayWebhookEvent",
  method: "post",
  path: "/v1/webhooks/{id}/events/{eventId}/replay",
  tags,
  security,
  summary: "Replay an event",
  description:
    "Sends an event of your organization to this webhook again, or for the first time when it never had a delivery (it predates the subscription, or a filter held it back; replay skips filters). The webhook must subscribe to the event's name. Needs the read permission of every event the subscription holds.",
  request: { params: EventParams },
  responses: {
    202: queued,
    ...REACH,
    404: crmError("No such webhook or event in your organization"),
    409: crmError(
      "The webhook is disabled (webhook_disabled), does not subscribe to this event (event_not_subscribed), or its delivery of it is still being attempted (delivery_in_flight)",
    ),
    422: crmError("id is not a UUID"),
  },
});

const recover = defineRoute(CRM, {
  operationId: "recoverWebhook",
  method: "post",
  path: "/v1/webhooks/{id}/recover",
  tags,
  security,
  summary: "Re-send what failed since a moment",
  description:
    "Queues once more every delivery of this webhook since `since` (at most 30 days back) that has not succeeded: dead-lettered, failed, or still retrying. Each is sent on a fresh retry schedule, and its old one stops. Delivered ones are not sent again, and a second recover leaves alone what the first is still sending. Up to 1,000 per call (`hasMore`: call again with the same `since`). Only deliveries of events the subscription still subscribes to are sent. Needs the read permission of every event the subscription holds.",
  request: { params: WebhookIdParam, ...jsonBody(RecoverWebhook) },
  responses: {
    202: crmSuccess("Queued; follow them in the delivery log", Recovery),
    ...REACH,
    409: crmError(
      "The webhook is disabled (webhook_disabled), or all that failed in this window is still being sent by an earlier recover (recovery_in_flight)",
    ),
    404: crmError("No webhook with this id in your organization"),
    422: crmError("id is not a UUID, or since is not an ISO 8601 timestamp, is in the future or more than 30 days ago"),
  },
});

export const deliveryRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(test, async (c) =>
    c.json({ success: true as const, data: await sendTestEvent(serviceContext(c), c.req.valid("param").id) }, 202),
  )
  .openapi(deliveries, async (c) =>
    c.json({ success: true as const, ...(await listDeliveries(serviceContext(c), c.req.valid("param").id, c.req.valid("query"))) }, 200),
  )
  .openapi(replay, async (c) => {
    const { id, deliveryId } = c.req.valid("param");
    return c.json({ success: true as const, data: await replayDelivery(serviceContext(c), id, deliveryId, deliveryReach(c)) }, 202);
  })
  .openapi(replayOne, async (c) => {
    const { id, eventId } = c.req.valid("param");
    return c.json({ success: true as const, data: await replayEvent(serviceContext(c), id, eventId, deliveryReach(c)) }, 202);
  })
  .openapi(recover, async (c) =>
    c.json(
      {
        success: true as const,
        data: await recoverWebhook(serviceContext(c), c.req.valid("param").id, c.req.valid("json").since, deliveryReach(c)),
      },
      202,
    ),
  );
