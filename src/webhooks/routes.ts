import { OpenAPIHono, z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import { ETAG_HEADER, instantFacet, withEtag } from "../platform/etag";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { CRM, CRM_PRECONDITION_ERROR, crmError, crmSuccess } from "../crm/body";
import { defineRoute, jsonBody } from "../platform/route";
import { issuesOf, validationHookWith } from "../platform/openapi";
import { assertDeliverableUrl } from "./guards";
import { deliveryRoutes } from "./delivery-routes";
import { eventLogRoutes } from "./event-log-routes";
import { deliveryReach, REACH } from "./reach";
import { DEFAULT_OVERLAP_SECONDS } from "./limits";
import { CreateWebhook, RotateSecret, UpdateWebhook, Webhook, WebhookIdParam, WebhookList, WebhookWithSecret } from "./schemas";
import { createWebhook, deleteWebhook, findWebhook, listWebhooks, rotateWebhookSecret, shownWebhook, updateWebhook } from "./service";
import type { WebhookDeps } from "./transport";

const tags = ["Webhooks"];
const security = [{ bearerAuth: [] }];
const URL_ERRORS = {
  422: crmError(
    "Schema problems, an unknown event name, or a URL that is not HTTPS, carries credentials, or reaches a private, loopback, link-local or metadata address (code blocked_address)",
  ),
  503: crmError("The URL's host could not be resolved right now (DNS over HTTPS unavailable), or WEBHOOK_SECRET_KEY is not configured"),
};
const NOT_FOUND = { 404: crmError("No webhook with this id in your organization") };
const BAD_ID = { 422: crmError("id is not a UUID") };

const create = defineRoute(CRM, {
  operationId: "createWebhook",
  method: "post",
  path: "/v1/webhooks",
  tags,
  security,
  summary: "Subscribe to events",
  description:
    "Creates a subscription. The signing secret (yours, or generated when `secret` is left out, as `whsec_<base64>`) is returned in this answer only. Deliveries carry the X-Service-* headers and the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature). Each event needs the permission that reads its object too (`contacts:read` for `contact.*` …): an API key or token without it is a 403 `insufficient_permission`.",
  request: jsonBody(CreateWebhook),
  responses: { 201: crmSuccess("The subscription with its secret", WebhookWithSecret, ETAG_HEADER), ...URL_ERRORS, ...REACH },
});

const list = defineRoute(CRM, {
  operationId: "listWebhooks",
  method: "get",
  path: "/v1/webhooks",
  tags,
  security,
  summary: "List subscriptions",
  description: "Newest first, keyset-paginated. Secrets are never listed.",
  request: { query: listQuery({}) },
  responses: { 200: { description: "A page of subscriptions", content: { "application/json": { schema: WebhookList } } } },
});

const read = defineRoute(CRM, {
  operationId: "getWebhook",
  method: "get",
  path: "/v1/webhooks/{id}",
  tags,
  security,
  summary: "Read a subscription",
  request: { params: WebhookIdParam },
  responses: { 200: crmSuccess("The subscription, without its secret", Webhook, ETAG_HEADER), ...NOT_FOUND, ...BAD_ID },
});

const update = defineRoute(CRM, {
  operationId: "updateWebhook",
  method: "patch",
  path: "/v1/webhooks/{id}",
  tags,
  security,
  summary: "Update a subscription or rotate its secret",
  description:
    "Changes any of url, events, filters, enabled, description; only the fields sent change, so concurrent updates of different fields all land. `rotateSecret: true` (or a new `secret`) replaces the signing secret at once; the new secret is in this answer only. Send the subscription's ETag in `If-Match` to make the change conditional (412 when it has changed since). Any change, of the URL alone too, needs the read permission of every event the subscription holds after it (403 `insufficient_permission`).",
  request: { params: WebhookIdParam, ...jsonBody(UpdateWebhook) },
  responses: {
    200: crmSuccess("The subscription; `secret` only when it was rotated", WebhookWithSecret, ETAG_HEADER),
    ...URL_ERRORS,
    ...NOT_FOUND,
    ...CRM_PRECONDITION_ERROR,
    ...REACH,
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
  },
});

const rotate = defineRoute(CRM, {
  operationId: "rotateWebhookSecret",
  method: "post",
  path: "/v1/webhooks/{id}/rotate-secret",
  tags,
  security,
  summary: "Rotate the signing secret with an overlap",
  description:
    "Issues a new secret (in this answer only) that signs every delivery from now on. For `overlapSeconds` (default 24 h, at most 7 days; 0 switches at once) the replaced secret signs too: `webhook-signature` carries two signatures, `v1,<new> v1,<old>`, so a Standard Webhooks receiver holding either secret verifies; `X-Service-Signature` stays one `sha256=` signature with the new secret, so a receiver on it tries both secrets until it has switched. Rotating again during an overlap ends it: the overlap then holds the secret this rotation replaced. Honours If-Match (412). Needs the read permission of every event the subscription holds (403).",
  request: { params: WebhookIdParam, ...jsonBody(RotateSecret, false) },
  responses: {
    200: crmSuccess("The subscription with its new secret; `previousSecretExpiresAt` ends the overlap", WebhookWithSecret, ETAG_HEADER),
    ...NOT_FOUND,
    ...CRM_PRECONDITION_ERROR,
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
    422: crmError("id is not a UUID, or overlapSeconds is not an integer from 0 to 604800"),
    503: crmError("WEBHOOK_SECRET_KEY is not configured"),
    ...REACH,
  },
});

const remove = defineRoute(CRM, {
  operationId: "deleteWebhook",
  method: "delete",
  path: "/v1/webhooks/{id}",
  tags,
  security,
  summary: "Delete a subscription",
  description: "Deletes the subscription with its delivery log; deliveries still queued are dropped. Honours If-Match (412).",
  request: { params: WebhookIdParam },
  responses: {
    200: crmSuccess("Deleted", z.object({ id: z.string(), deleted: z.literal(true) })),
    ...NOT_FOUND,
    ...BAD_ID,
    ...CRM_PRECONDITION_ERROR,
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
  },
});

/** Every /v1/webhooks route. `deps` reaches DNS and receivers; tests pass fakes. */
export function createWebhookRoutes(deps: WebhookDeps) {
  // A body that breaks the schema still has its URL checked, so one 422 names every problem.
  const hook = validationHookWith(async (body, c) =>
    typeof body.url === "string" ? issuesOf(() => assertDeliverableUrl(c.env, body.url as string, deps.resolver)) : [],
  );
  return new OpenAPIHono<AppBindings>({ defaultHook: hook })
    .openapi(create, async (c) => {
      c.set("replayOmits", [["data", "secret"]]);
      return c.json(
        {
          success: true as const,
          data: withEtag(c, await createWebhook(serviceContext(c), c.req.valid("json"), deps.resolver, deliveryReach(c))),
        },
        201,
      );
    })
    .openapi(list, async (c) => c.json({ success: true as const, ...(await listWebhooks(serviceContext(c), c.req.valid("query"))) }, 200))
    .openapi(read, async (c) => {
      const hook = shownWebhook(await findWebhook(serviceContext(c), c.req.valid("param").id));
      // failingSince moves with deliveries, not with the version.
      return c.json({ success: true as const, data: withEtag(c, hook, instantFacet("f", hook.failingSince)) }, 200);
    })
    .openapi(update, async (c) => {
      c.set("replayOmits", [["data", "secret"]]);
      return c.json(
        {
          success: true as const,
          data: withEtag(
            c,
            await updateWebhook(serviceContext(c), c.req.valid("param").id, c.req.valid("json"), deps.resolver, deliveryReach(c)),
          ),
        },
        200,
      );
    })
    .openapi(rotate, async (c) => {
      c.set("replayOmits", [["data", "secret"]]);
      const { overlapSeconds = DEFAULT_OVERLAP_SECONDS } = (c.req.valid("json") as RotateSecret | undefined) ?? {};
      return c.json(
        {
          success: true as const,
          data: withEtag(c, await rotateWebhookSecret(serviceContext(c), c.req.valid("param").id, { overlapSeconds }, deliveryReach(c))),
        },
        200,
      );
    })
    .openapi(remove, async (c) => {
      const { id } = c.req.valid("param");
      await deleteWebhook(serviceContext(c), id);
      return c.json({ success: true as const, data: { id, deleted: true as const } }, 200);
    })
    .route("/", deliveryRoutes)
    .route("/", eventLogRoutes);
}
