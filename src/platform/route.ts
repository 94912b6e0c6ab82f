import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import { conditionalRead, HASH_ETAG_HEADER } from "./etag";

type Responses = RouteConfig["responses"];
type ResponseConfig = Responses[string];

/** `X-Request-Id`, which every answer carries (platform/response-headers.ts): a component of /openapi.json (openapi.ts). */
export const REQUEST_ID_COMPONENT = {
  name: "RequestId",
  header: {
    description:
      "The request's id: the caller's own X-Request-Id when it is 1–255 letters, digits, `_`, `-` or `=`, else a new UUID. A 5xx body and the logs name the same id.",
    required: true,
    schema: { type: "string" as const, pattern: "^[\\w\\-=]{1,255}$", example: "0f8fad5b-d9cb-469f-a165-70867728950e" },
  },
};
const REQUEST_ID_HEADER = { "X-Request-Id": { $ref: `#/components/headers/${REQUEST_ID_COMPONENT.name}` } };

/** The RateLimit fields every answer to an authenticated caller carries (platform/rate-limit.ts): components of /openapi.json. */
export const RATE_LIMIT_COMPONENTS = {
  "RateLimit-Policy": {
    description:
      "The caller's credential quota (draft-ietf-httpapi-ratelimit-headers): `q` requests per `w` seconds, per session, API key or access token. Absent from a 401.",
    required: false,
    schema: { type: "string" as const, example: '"default";q=600;w=60' },
  },
  RateLimit: {
    description: "What is left of the quota: `r` requests, and `t` seconds until one more comes back. Absent from a 401.",
    required: false,
    schema: { type: "string" as const, example: '"default";r=599;t=60' },
  },
};
const RATE_LIMIT_HEADERS = Object.fromEntries(
  Object.keys(RATE_LIMIT_COMPONENTS).map((name) => [name, { $ref: `#/components/headers/${name}` }]),
);

/** A route family (DESIGN.md "Shapes"): its name and how its error body is declared. */
export interface RouteFamily {
  name: "crm" | "api" | "plants";
  error(description: string): ResponseConfig;
}

/**
 * A route declaration (STYLE.md "A route"): `createRoute` with a required camelCase `operationId`, and with every
 * response the platform can give on that route declared by construction, beside the route's own:
 *
 * - 400 on every route: a malformed `X-D1-Bookmark` (platform/session.ts) or `Idempotency-Key`, a body that is not
 *   JSON, and on the /api and plant families every validation failure;
 * - 401, 403 (a role or a credential without the route's permission, platform/auth.ts) and 429 (the credential's
 *   quota, platform/rate-limit.ts) on authenticated routes; 413 and 415 on routes with a body; 500 everywhere;
 * - on authenticated writes of /v1 and /api (platform/idempotency.ts): 409 while a request with the same key runs,
 *   422 when the key was used for another request;
 * - 422 on CRM routes that take input (the CRM family's validation status);
 * - 503 on writes, while the organization's shard move is fenced (lib/errors.ts OrganizationMoving);
 * - on an authenticated single-resource read (a GET answering one JSON object that is not a page of a list): the
 *   ETag of its 200 and a 304 for If-None-Match, which `conditionalRead` (platform/etag.ts), attached here, answers.
 *
 * Where the route declares the same status for its own reasons, both are described. Every response, the route's own
 * and these, declares the `X-Request-Id` header, and on authenticated routes the RateLimit fields.
 */
export function defineRoute<P extends string, R extends Omit<RouteConfig, "path"> & { path: P; operationId: string }>(
  family: RouteFamily,
  config: R,
): ReturnType<typeof createRoute<P, R>> {
  const responses: Responses = { ...config.responses };
  const add = (status: number, description: string) => {
    const own = responses[status];
    responses[status] =
      own && "description" in own ? { ...own, description: `${own.description}; or: ${description}` } : family.error(description);
  };
  const request = config.request ?? {};
  const hasBody = request.body !== undefined;
  const authenticated = (config.security ?? []).length > 0;
  const idempotent = authenticated && config.method !== "get" && family.name !== "plants";
  const takesInput = hasBody || request.query !== undefined || request.params !== undefined;

  add(
    400,
    family.name === "crm" || !takesInput
      ? "The body is not valid JSON, or a header is malformed (X-D1-Bookmark, Idempotency-Key)"
      : "Invalid input (every problem listed), a body that is not JSON, or a malformed header",
  );
  if (authenticated) add(401, "Missing, unknown, revoked or expired token");
  if (authenticated)
    add(
      403,
      "The caller's role does not allow this route (insufficient_role), or its API key or OAuth access token was not granted the route's permission (insufficient_permission)",
    );
  if (authenticated) add(429, "The credential's quota is spent (rate_limited): retry after Retry-After seconds; RateLimit says the same");
  if (family.name === "crm" && takesInput)
    add(422, "The request broke the schema; errors[] lists every problem with field, code and message");
  if (idempotent) {
    add(409, "A request with this Idempotency-Key is still being processed (idempotency_key_in_flight)");
    add(422, "This Idempotency-Key was used for another request (idempotency_key_reused)");
  }
  if (hasBody) {
    add(413, "The body is over the route's size limit");
    add(415, "Content-Type is not one the route takes (application/json; multipart/form-data on uploads)");
  }
  // A write to an organization while a shard move copies its last rows (src/shards/move.ts).
  if (config.method !== "get" && config.method !== "head")
    add(503, "The organization is moving to another shard: writes resume shortly, after Retry-After (organization_moving)");
  add(500, "Unexpected failure; carries the request id, never a stack trace");
  const conditional = authenticated && config.method === "get" && isSingleResource(responses[200]);
  if (conditional) {
    const ok = responses[200] as ResponseConfig & { headers?: Record<string, unknown> };
    responses[200] = { ...ok, headers: { ...HASH_ETAG_HEADER, ...ok.headers } };
    responses[304] = {
      description: "Not modified: If-None-Match names this answer's ETag (weak comparison); no body",
      headers: { ...HASH_ETAG_HEADER, ...ok.headers },
    };
  }
  for (const [status, response] of Object.entries(responses)) {
    // Header records only: a route declaring its headers as a zod object would lose them here (none does; the
    // OpenAPI test checks every response declares X-Request-Id).
    if (!("$ref" in response))
      responses[status] = {
        ...response,
        headers: { ...(response.headers as object), ...REQUEST_ID_HEADER, ...(authenticated ? RATE_LIMIT_HEADERS : {}) },
      };
  }
  const middleware = conditional ? [...[config.middleware ?? []].flat(), conditionalRead] : config.middleware;
  return createRoute({ ...config, responses, ...(middleware ? { middleware } : {}) } as R);
}

/** A 200 of one JSON object that is no page of a list (a list answers `pagination`): what a conditional read serves. */
function isSingleResource(ok: ResponseConfig | undefined): boolean {
  const media = ok && "content" in ok ? ok.content?.["application/json"] : undefined;
  const schema = media && "schema" in media ? media.schema : undefined;
  return schema instanceof z.ZodObject && !("pagination" in schema.shape);
}

/** A JSON request body, as a route's `request` part: `request: { params, ...jsonBody(Schema) }`. */
export const jsonBody = <T extends z.ZodType>(schema: T, required = true) => ({
  body: { required, content: { "application/json": { schema } } },
});
