import { type Hook, OpenAPIHono } from "@hono/zod-openapi";
import type { Context, Hono, MiddlewareHandler } from "hono";
import { AppError, type FieldIssue, Validation } from "../lib/errors";
import { jsonIssues } from "../lib/json-bounds";
import { issuesFromZod } from "../lib/validation";
import type { AppBindings } from "./context";
import { RATE_LIMIT_COMPONENTS, REQUEST_ID_COMPONENT } from "./route";

/**
 * The problems of a JSON body that no route schema expresses: nesting deeper than MAX_JSON_DEPTH and strings that are
 * not well-formed Unicode (lib/json-bounds.ts). Read from the raw body, which Hono has already parsed and cached.
 */
async function bodyIssues(target: string, c: Context<AppBindings>): Promise<FieldIssue[]> {
  if (target !== "json") return [];
  return jsonIssues(await c.req.json());
}

type Result = Parameters<Hook<unknown, AppBindings, string, unknown>>[0];

/**
 * Every route's validation failure becomes one typed error listing every issue; the error handler gives it the
 * body and status of the route's family (422 on /v1, 400 elsewhere). `checks` are a route's own checks that the schema
 * cannot express (a referenced user, a URL's address), run when the body broke the schema so that one answer names
 * every problem at once.
 */
async function validate(
  result: Result,
  c: Context<AppBindings>,
  checks?: (body: Record<string, unknown>, c: Context<AppBindings>) => Promise<FieldIssue[]>,
) {
  const issues = await bodyIssues(result.target, c);
  if (result.success) {
    if (issues.length > 0) throw new Validation(issues);
    return;
  }
  // zod-validator passes the rejected input as `data` at run time; its type leaves it out.
  const input = (result as { data?: unknown }).data;
  issues.push(...issuesFromZod(result.error, input));
  if (checks && result.target === "json" && input !== null && typeof input === "object" && !Array.isArray(input)) {
    issues.push(...(await checks(input as Record<string, unknown>, c)));
  }
  throw new Validation(issues.sort((a, b) => a.field.localeCompare(b.field)));
}

export const validationHook: Hook<unknown, AppBindings, string, unknown> = (result, c) => validate(result, c);

/** A validation hook with a route's own `checks` (see `validate`). */
export const validationHookWith =
  (
    checks: (body: Record<string, unknown>, c: Context<AppBindings>) => Promise<FieldIssue[]>,
  ): Hook<unknown, AppBindings, string, unknown> =>
  (result, c) =>
    validate(result, c, checks);

/** The field problems a service check reports, or none; a check that cannot decide now (a 503) reports none. */
export async function issuesOf(check: () => Promise<unknown>): Promise<FieldIssue[]> {
  try {
    await check();
    return [];
  } catch (err) {
    if (err instanceof Validation) return err.issues;
    if (err instanceof AppError && err.status === 503) return [];
    throw err;
  }
}

const DESCRIPTION = `Edge-native API for real-estate brokerages: a CRM (contacts, deals, listings, signed webhooks),
a document desk (drafts, e-signature envelopes, obligations, search, clickwrap) and a reputation suite.

**Authentication.** Authenticated routes take \`Authorization: Bearer <token>\` (a session, an API key or an OAuth
access token) and only ever see the caller's organization; an id of another organization answers exactly as an
unknown id (404). Missing, unknown, revoked or expired tokens answer 401; a route outside the credential's
permissions or the user's role 403. Public routes (\`/api/public/*\`, \`/oauth/*\`, these docs) need no token.

**Errors.** Each route family has its own error body:
- \`/v1/*\`: \`{success: false, error: {type, title, status, detail, errors[{field, code, message}]}}\`; a body that
  is not valid JSON is a 400 \`invalid_request_error\`, a body that breaks the schema a 422 \`validation_error\` listing
  every problem.
- \`/api/*\`: 401 \`{error: "Unauthorized"}\`; bad input 400 \`{error: "invalid_request", issues[{field, path[], code, message}]}\`
  listing every problem (\`code\` as in the CRM's \`errors[].code\`: \`required\`, \`too_big\`, \`unknown_field\` …);
  a refused state move 409 \`{error, message}\`.
- \`/plants\`: \`{error: <int32>, message}\`.
- Every family: 413 when a body is over the route's size limit (1 MiB unless the route says less), 415 when a JSON
  route gets another Content-Type, 429 with \`Retry-After\` past a rate limit. A 5xx carries a request id
  (also in the \`X-Request-Id\` header) and never a stack trace.

**Concurrency.** Every write is a compare-and-set on the resource's version: concurrent changes of different fields
all land, and of concurrent deletes exactly one succeeds. Reads and writes of a versioned resource (a contact, a webhook
subscription, the organization …) answer \`ETag: "<version>"\`; send it in \`If-Match\` on a write to make it
conditional (412 when the resource has changed since; \`*\` matches any). Every single-resource read answers an ETag
(the version, or a hash of the answer) and 304 to an \`If-None-Match\` naming it; lists have none. Under extreme
contention a write answers 409 \`concurrent_modification\`; retry it.

**Idempotency-Key.** Any POST, PUT, PATCH or DELETE of \`/v1\` and \`/api\` may carry \`Idempotency-Key\` (1–255
visible ASCII characters). The first answer is kept for 24 hours per organization and key and replayed, with
\`Idempotent-Replayed: true\`, to a retry of the same request; the same key with another method, path, query or body
is a 422 \`idempotency_key_reused\`; a retry while the first is still running is a 409. A 5xx is not kept.

**Read-your-writes.** Reads may be served by a nearby read replica. Every answer that read your organization's data
carries \`X-D1-Bookmark\`, an opaque sealed value (never the same twice); send it back on a later request to read at
least what that answer saw. A malformed bookmark is a 400; one the service can no longer open is ignored.

**Bounds.** Every string has a maximum length, lists are paginated (\`limit\` 1–100, decimal; unknown query
parameters are refused), no JSON body nests deeper than 32 levels, and every string must be well-formed Unicode
(a lone surrogate is refused with \`invalid_unicode\`).

**Rate limits** (per client IP, per minute) on the public routes: signing link GET 60 / POST 30, clickwrap GET 120 /
POST 60, survey GET 60 / POST 10, referral POST 10, reviews feed GET 300, OAuth token POST 30, OAuth client registration and sign-in POST 20,
invitation page GET 60 / POST 20; each answer carries \`RateLimit-Policy\` and \`RateLimit\` with the bucket's name as the policy.
On the authenticated routes, per credential (each session, API key and access token its own window; 600 requests a
minute unless the deployment says otherwise): every answer carries \`RateLimit-Policy: "default";q=600;w=60\` and
\`RateLimit: "default";r=<left>;t=<seconds>\` (draft-ietf-httpapi-ratelimit-headers); past the quota, 429 with \`Retry-After\`.`;

/** Routers of any route shape (plain Hono apps or OpenAPIHono), as the route groups build them (lazy-routes.ts). */
// biome-ignore lint/suspicious/noExplicitAny: route groups of every schema and base path are mounted side by side.
export type Routers = Hono<AppBindings, any, any>[];

/**
 * Serves the OpenAPI 3.1 document at /openapi.json and the interactive reference at /docs. The document is built from
 * every router of the API (`routers`, loaded on demand: the routes themselves are built lazily, platform/lazy-routes.ts),
 * once per isolate.
 */
export function mountDocs(app: OpenAPIHono<AppBindings>, routers: () => Promise<Routers>): void {
  let document: unknown;
  const build = async () => {
    const all = new OpenAPIHono<AppBindings>();
    for (const router of await routers()) all.route("/", router);
    all.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
      type: "http",
      scheme: "bearer",
      description:
        "A session token (`npm run token` in development), an API key (`bk_…`, POST /v1/api-keys) or an OAuth 2.1 access token, each within its permissions and its user's role.",
    });
    all.openAPIRegistry.registerComponent("headers", REQUEST_ID_COMPONENT.name, REQUEST_ID_COMPONENT.header);
    for (const [name, header] of Object.entries(RATE_LIMIT_COMPONENTS)) all.openAPIRegistry.registerComponent("headers", name, header);
    const config = {
      openapi: "3.1.0",
      info: {
        title: "Brokerage Edge API",
        version: "1.0.0",
        description: DESCRIPTION,
        license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      },
      // Relative: the host that serves this document serves the API (OpenAPI 3.1, Server Object).
      servers: [{ url: "/", description: "This deployment" }],
    };
    return all.getOpenAPI31Document(config as Parameters<typeof all.getOpenAPI31Document>[0]);
  };
  // Each kept as a value once made, never as a pending promise another request would await (platform/lazy-routes.ts).
  app.get("/openapi.json", async (c) => {
    if (!document) {
      const built = await build();
      document ??= built;
    }
    return c.json(document);
  });
  // The reference page's module loads with its first view, not at startup.
  let docs: MiddlewareHandler | undefined;
  app.get("/docs", async (c, next) => {
    if (!docs) {
      const { Scalar } = await import("@scalar/hono-api-reference");
      docs ??= Scalar({ url: "/openapi.json", pageTitle: "Brokerage Edge API" }) as unknown as MiddlewareHandler;
    }
    return docs(c, next);
  });
}
