import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { openCors } from "../platform/cors";
import { API, apiError, apiJson, gone } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { requestMeta } from "../platform/request-meta";
import { defineRoute, jsonBody } from "../platform/route";
import { openPublicKey, publicServiceContext } from "../platform/session";
import type { ServiceContext } from "../service-context";
import { consentPage } from "./page";
import {
  AcceptanceList,
  AcceptanceQuery,
  AcceptRequest,
  AgreementDetail,
  AgreementIdParam,
  AgreementList,
  AgreementPublish,
  AgreementSummary,
  Gone,
  HistoryQuery,
  ListQuery,
  MAX_ACCEPTANCES,
  MAX_BODY_CHARS,
  PublicAgreement,
  Published,
  SUBJECT,
  VersionParam,
  VersionText,
} from "./schemas";
import { getAgreement } from "./history";
import { accept, getVersion, listAcceptances, listAgreements, publicAgreement, publishAgreement, setActive } from "./service";

const tags = ["Clickwrap"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: apiError("No agreement with this id in your organization") };
const GONE = { 404: { description: "No such agreement, or it is not active (alike)", content: { "application/json": { schema: Gone } } } };
const RATE_LIMITED = { 429: apiError("Too many requests from this address (rate_limited)") };
const STALE = { 412: apiError("If-Match named a version the agreement is no longer at (precondition_failed)") };

const publish = defineRoute(API, {
  operationId: "publishClickwrapAgreement",
  method: "post",
  path: "/api/clickwrap",
  tags,
  security,
  summary: "Publish an agreement (a new one, or a new version of a key)",
  description: `The agreement id is stable for a key within your organization. The same body again changes nothing and answers the
same id and versionHash (the hex SHA-256 of the body, exactly as sent), also with another title: a text keeps the title it
was shown under, since both are what a person accepted. A changed body becomes the current version with its title, and every
earlier text is kept (GET …/{agreementId} lists them); publishing an earlier text again makes it current again, under its
first title. Publishing does not reactivate a deactivated agreement. The body is at most ${MAX_BODY_CHARS} characters.
The answer's ETag is the agreement's version; send it in If-Match to publish only over the version you read (412 when the
agreement has moved on, the same body included). Without If-Match a publish is unconditional; a key's first publish always is.`,
  request: jsonBody(AgreementPublish),
  responses: { 201: apiJson("The agreement's id and current version", Published, ETAG_HEADER), ...STALE },
});

const list = defineRoute(API, {
  operationId: "listClickwrapAgreements",
  method: "get",
  path: "/api/clickwrap",
  tags,
  security,
  summary: "List agreements, newest first",
  description: "Ours (the spec leaves operators' reads open).",
  request: { query: ListQuery },
  responses: { 200: apiJson("A page of agreements", AgreementList) },
});

const read = defineRoute(API, {
  operationId: "getClickwrapAgreement",
  method: "get",
  path: "/api/clickwrap/{agreementId}",
  tags,
  security,
  summary: "An agreement with its current text and version history",
  description:
    "Ours. history lists the texts ever published a page at a time (`limit` 1–100, default 25; `cursor` from `nextCursor`, null on the last page): the current one first, then newest first; acceptances name theirs by versionHash. The ETag is the agreement's version (If-Match on publish, deactivate and activate).",
  request: { params: AgreementIdParam, query: HistoryQuery },
  responses: { 200: apiJson("The agreement", AgreementDetail, ETAG_HEADER), ...NOT_FOUND },
});

const version = defineRoute(API, {
  operationId: "getClickwrapVersion",
  method: "get",
  path: "/api/clickwrap/{agreementId}/versions/{versionHash}",
  tags,
  security,
  summary: "One published text of an agreement",
  description: "Ours: the exact text an acceptance of this versionHash was given for.",
  request: { params: VersionParam },
  responses: { 200: apiJson("The text", VersionText), 404: apiError("No such agreement in your organization, or no such version of it") },
});

const deactivate = defineRoute(API, {
  operationId: "deactivateClickwrapAgreement",
  method: "post",
  path: "/api/clickwrap/{agreementId}/deactivate",
  tags,
  security,
  summary: "Withdraw an agreement",
  description:
    'Ours. The public routes and the consent page then answer 404 `{state: "gone"}`; acceptances stay. Idempotent. Honours If-Match.',
  request: { params: AgreementIdParam },
  responses: { 200: apiJson("The agreement", AgreementSummary, ETAG_HEADER), ...NOT_FOUND, ...STALE },
});

const activate = defineRoute(API, {
  operationId: "activateClickwrapAgreement",
  method: "post",
  path: "/api/clickwrap/{agreementId}/activate",
  tags,
  security,
  summary: "Reinstate a withdrawn agreement",
  description: "Ours. Idempotent. Honours If-Match.",
  request: { params: AgreementIdParam },
  responses: { 200: apiJson("The agreement", AgreementSummary, ETAG_HEADER), ...NOT_FOUND, ...STALE },
});

const acceptances = defineRoute(API, {
  operationId: "listClickwrapAcceptances",
  method: "get",
  path: "/api/clickwrap/{agreementId}/acceptances",
  tags,
  security,
  summary: "Acceptances, newest first",
  description: `At most ${MAX_ACCEPTANCES} (spec: Limits). \`subjectRef\` narrows to one subject and then also answers
\`acceptedCurrentVersion\`: whether that subject has accepted the current text; \`current=true\` narrows to acceptances of the
current version. Acceptances are never changed or deleted (no route does, and the database refuses it).`,
  request: { params: AgreementIdParam, query: AcceptanceQuery },
  responses: { 200: apiJson("The acceptances", AcceptanceList), ...NOT_FOUND },
});

const publicRead = defineRoute(API, {
  operationId: "getPublicClickwrapAgreement",
  security: [],
  method: "get",
  path: "/api/public/clickwrap/{agreementId}",
  tags: ["Clickwrap (public)"],
  summary: "The current text of an agreement",
  description: "No authentication; CORS-enabled for any origin. 120 requests a minute per address.",
  middleware: [rateLimit("public-clickwrap:get")] as const,
  request: { params: AgreementIdParam },
  responses: { 200: apiJson("The agreement", PublicAgreement), ...GONE, ...RATE_LIMITED },
});

const publicAccept = defineRoute(API, {
  operationId: "acceptClickwrapAgreement",
  security: [],
  method: "post",
  path: "/api/public/clickwrap/{agreementId}",
  tags: ["Clickwrap (public)"],
  summary: "Accept the current text",
  description: `No authentication; the body is optional. Records the current versionHash, subjectRef (null when absent), the time,
the address and the user agent. CORS-enabled for any origin. Send the versionHash you displayed: when it is no longer the current one the acceptance is
refused with 409 version_mismatch and nothing is recorded (show the current text first). 60 requests a minute per address.`,
  middleware: [rateLimit("public-clickwrap:post")] as const,
  request: { params: AgreementIdParam, body: { required: false, content: { "application/json": { schema: AcceptRequest } } } },
  responses: {
    200: apiJson("Recorded", z.object({ accepted: z.literal(true) })),
    ...GONE,
    409: apiError("The versionHash sent is not the current one (version_mismatch)"),
    ...RATE_LIMITED,
  },
});

const page = defineRoute(API, {
  operationId: "getConsentPage",
  security: [],
  method: "get",
  path: "/consent/{agreementId}",
  tags: ["Clickwrap (public)"],
  summary: "The consent page, to embed in an iframe",
  description: `An HTML page (DESIGN.md contract 5): the title, the text and an accept button; \`?subjectRef=\` is recorded with the
acceptance. Any site may frame it (\`frame-ancestors *\`): it holds no secret and the accept route is public anyway. On
acceptance it posts \`{type: "clickwrap:accepted", agreementId, versionHash, subjectRef}\` to its parent window.`,
  middleware: [rateLimit("public-clickwrap:get")] as const,
  request: { params: AgreementIdParam },
  responses: {
    200: { description: "The page", content: { "text/html": { schema: z.string() } } },
    400: {
      description: "subjectRef is not one line of 1 to 200 visible characters (a page that says so)",
      content: { "text/html": { schema: z.string() } },
    },
    404: { description: "The agreement is unknown or withdrawn (a page that says so)", content: { "text/html": { schema: z.string() } } },
    ...RATE_LIMITED,
  },
});

/**
 * The agreement's organization, found in the directory by its id, with its shard opened; null when the
 * directory knows no such agreement, which answers as an unknown one.
 */
async function publicContext(c: Context<AppBindings>, agreementId: string): Promise<ServiceContext | null> {
  const organizationId = await openPublicKey(c, "agreement", agreementId);
  return organizationId ? publicServiceContext(c, organizationId) : null;
}

export const clickwrapRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
// A site may also show the text and take the acceptance with its own interface: the public routes answer any origin
// (errors too), and preflights are answered here. Nothing they hand out is private, and no cookie is involved.
clickwrapRoutes.use("/api/public/clickwrap/*", openCors(["GET", "POST", "OPTIONS"], ["accept", "content-type"]));
// The current text must never come from a cache (an acceptance of a stale one is refused), and acceptance lists carry
// addresses: nothing here is stored by a shared cache.
clickwrapRoutes.use("/api/public/clickwrap/*", async (c, next) => {
  await next();
  c.header("Cache-Control", "no-store");
});
clickwrapRoutes.use("/api/clickwrap/*", async (c, next) => {
  await next();
  c.header("Cache-Control", "private, no-store");
});
clickwrapRoutes
  .openapi(publish, async (c) => {
    const { id, versionHash } = withEtag(c, await publishAgreement(serviceContext(c), c.req.valid("json")));
    return c.json({ id, versionHash }, 201);
  })
  .openapi(list, async (c) => c.json(await listAgreements(serviceContext(c), c.req.valid("query")), 200))
  .openapi(read, async (c) =>
    c.json(withEtag(c, await getAgreement(serviceContext(c), c.req.valid("param").agreementId, c.req.valid("query"))), 200),
  )
  .openapi(version, async (c) => {
    const { agreementId, versionHash } = c.req.valid("param");
    return c.json(await getVersion(serviceContext(c), agreementId, versionHash), 200);
  })
  .openapi(deactivate, async (c) => c.json(withEtag(c, await setActive(serviceContext(c), c.req.valid("param").agreementId, false)), 200))
  .openapi(activate, async (c) => c.json(withEtag(c, await setActive(serviceContext(c), c.req.valid("param").agreementId, true)), 200))
  .openapi(acceptances, async (c) =>
    c.json(await listAcceptances(serviceContext(c), c.req.valid("param").agreementId, c.req.valid("query")), 200),
  )
  .openapi(publicRead, async (c) => {
    const { agreementId } = c.req.valid("param");
    const ctx = await publicContext(c, agreementId);
    const a = ctx && (await publicAgreement(ctx, agreementId));
    if (!a) return gone(c);
    return c.json({ agreement: { id: a.id, key: a.key, title: a.title, body: a.body, versionHash: a.versionHash } }, 200);
  })
  .openapi(publicAccept, async (c) => {
    const input = (c.req.valid("json") as AcceptRequest | undefined) ?? {};
    const { agreementId } = c.req.valid("param");
    const ctx = await publicContext(c, agreementId);
    const done = ctx !== null && (await accept(ctx, agreementId, input, requestMeta(c)));
    return done ? c.json({ accepted: true as const }, 200) : gone(c);
  })
  .openapi(page, async (c) => {
    const subject = c.req.query("subjectRef");
    const parsed = subject === undefined ? undefined : SUBJECT.safeParse(subject);
    // A subjectRef the accept route would refuse is refused here, before anyone is asked to click.
    if (parsed && !parsed.success) return consentPage(c, null, { invalidSubject: true }) as never;
    const { agreementId } = c.req.valid("param");
    const ctx = await publicContext(c, agreementId);
    return consentPage(c, ctx && (await publicAgreement(ctx, agreementId)), { subjectRef: parsed?.data }) as never;
  });
