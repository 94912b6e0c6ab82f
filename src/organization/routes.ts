import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmError, crmSuccess } from "../crm/body";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHookWith } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { Organization, UpdateOrganization } from "./schemas";
import { getOrganization, routingIssues, updateOrganization } from "./service";

const tags = ["Organization"];
const security = [{ bearerAuth: [] }];

const read = defineRoute(CRM, {
  operationId: "getOrganization",
  method: "get",
  path: "/v1/organization",
  tags,
  security,
  summary: "Read your organization",
  description: "Its profile and settings (every setting shown, defaults filled in). Needs `organization:read`.",
  responses: { 200: crmSuccess("The organization", Organization, ETAG_HEADER) },
});

const update = defineRoute(CRM, {
  operationId: "updateOrganization",
  method: "patch",
  path: "/v1/organization",
  tags,
  security,
  summary: "Change your organization's profile or settings",
  description:
    "Changes `displayName`, `timeZone` (an IANA name) and `settings` (`defaultPhoneRegion`, `leadRouting`); only what is sent changes, each settings key replaced whole, so concurrent changes of different fields all land. `name` cannot change: it is the key `npm run token` maps organizations by. Emits `organization.updated` when something changed. Send the ETag in `If-Match` to make the change conditional. Owners and admins only (`organization:manage`).",
  request: jsonBody(UpdateOrganization),
  responses: {
    200: crmSuccess("The organization", Organization, ETAG_HEADER),
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
    ...CRM_PRECONDITION_ERROR,
  },
});

// A body that breaks the schema still has its zip rules' users checked, so one 422 names every problem.
export const organizationRoutes = new OpenAPIHono<AppBindings>({
  defaultHook: validationHookWith((body, c) => routingIssues(serviceContext(c), body)),
})
  .openapi(read, async (c) => c.json({ success: true as const, data: withEtag(c, await getOrganization(serviceContext(c))) }, 200))
  .openapi(update, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await updateOrganization(serviceContext(c), c.req.valid("json"))) }, 200),
  );
