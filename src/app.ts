import { OpenAPIHono } from "@hono/zod-openapi";
import { readConfig } from "./env";
import { accessTokens } from "./oauth/tokens";
import { authenticate, requireRoutePermission } from "./platform/auth";
import { contactPreloads } from "./contacts/preload";
import { dealPreloads } from "./deals/preload";
import { propertyPreloads } from "./properties/preload";
import { limitBodies } from "./platform/body-limit";
import type { ClientDocumentDeps } from "./oauth/client-documents";
import type { AppBindings } from "./platform/context";
import { idempotency } from "./platform/idempotency";
import { mountLazily, type RouteGroup } from "./platform/lazy-routes";
import { responseHeaders } from "./platform/response-headers";
import { d1Session } from "./platform/session";
import { handleError, handleNotFound } from "./platform/error-handler";
import { mountDocs, type Routers, validationHook } from "./platform/openapi";
import { rateLimitFields } from "./platform/rate-limit";
import { durableObjectRateLimiter, type RateLimiter } from "./platform/rate-limiter";
import type { ReferralDeps } from "./referrals/routes";
import type { SigningDeps } from "./signatures/public-routes";
import type { InviteDeps } from "./users/invite-routes";
import type { WebhookDeps } from "./webhooks/transport";

export interface AppOptions {
  /** Replaces the Durable Object rate limiter of the per-route limits (tests, or a deployment without the binding). */
  rateLimiter?: RateLimiter;
  /** Replaces the Durable Object rate limiter of the per-credential quota (platform/rate-limit.ts `countCredential`). */
  credentialLimiter?: RateLimiter;
  /** Replaces the DNS resolver or the outbound transport of the webhook routes (tests). */
  webhooks?: Partial<WebhookDeps>;
  /** Replaces the DNS resolver, the fetch or the deadline through which OAuth clients' metadata documents are read (tests). */
  oauth?: Partial<ClientDocumentDeps>;
  /** Replaces the bot challenge of the public signing routes (tests point the real client at a fake siteverify). */
  signing?: Partial<SigningDeps>;
  /** Replaces the bot challenge of the public referral form (tests point the real client at a fake siteverify). */
  referrals?: Partial<ReferralDeps>;
  /** Replaces the bot challenge of the invitation page (tests point the real client at a fake siteverify). */
  invitations?: Partial<InviteDeps>;
}

/** Routes that need a bearer session; everything under /api/public, /oauth and the docs stays open. */
const AUTHENTICATED = ["/v1/*", "/plants", "/plants/*", "/api/*"] as const;
/** Writes that honour Idempotency-Key (platform/idempotency.ts); the public capability routes have no organization to scope keys to. */
const IDEMPOTENT = ["/v1/*", "/api/*"] as const;

export function createApp(options: AppOptions = {}) {
  const app = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });

  // First, so it names the request and sets X-Request-Id, nosniff and no-store on every answer, including the error
  // handler's, the 404s and the lazily built groups' (which answer from their own context).
  app.use(responseHeaders);
  app.use(async (c, next) => {
    readConfig(c.env); // a malformed deployment fails every request loudly (500 with request id), not one route subtly
    c.set("rateLimiter", options.rateLimiter ?? durableObjectRateLimiter(c.env));
    c.set("credentialLimiter", options.credentialLimiter ?? durableObjectRateLimiter(c.env));
    await next();
  });
  // The RateLimit fields of an authenticated caller's credential, on whatever answers (a route, an error, a group).
  app.use(rateLimitFields);
  app.use(d1Session);
  app.use(limitBodies());
  const isPublic = (path: string) => path.startsWith("/api/public/");
  // Writes of one row read it with the session lookup (platform/preload.ts).
  const requireAuth = authenticate([...contactPreloads, ...dealPreloads, ...propertyPreloads], accessTokens);
  for (const path of AUTHENTICATED) {
    app.use(path, async (c, next) => (isPublic(c.req.path) ? next() : requireAuth(c, next)));
  }
  // A caller reaches only the routes its credential's permissions and its role cover; before
  // idempotency, so a 403 is not kept.
  for (const path of AUTHENTICATED) {
    app.use(path, async (c, next) => (isPublic(c.req.path) ? next() : requireRoutePermission(c, next)));
  }
  for (const path of IDEMPOTENT) {
    app.use(path, async (c, next) => (isPublic(c.req.path) ? next() : idempotency(c, next)));
  }

  const groups = routeGroups(options);
  for (const group of groups) mountLazily(app, group);
  mountDocs(app, async () => (await Promise.all(groups.filter((g) => g.documented !== false).map((g) => g.load()))).flat());
  app.onError(handleError);
  app.notFound(handleNotFound);
  return app;
}

/**
 * The API's routes by group, each built at the first request to one of its paths (platform/lazy-routes.ts), in the
 * order its routers match. Every path of a router must be under its group's paths: the route matrix and contract
 * tests reach every route through the app, so a route outside them answers 404 there.
 */
function routeGroups(options: AppOptions): RouteGroup[] {
  const group = (paths: string[], load: () => Promise<Routers>): RouteGroup => ({ paths, load });
  return [
    group(["/plants", "/plants/*"], async () => [(await import("./plants/routes")).plantRoutes]),
    // The exports first: /v1/contacts/export would otherwise be taken for /v1/contacts/{id}.
    group(["/v1/contacts", "/v1/contacts/*"], async () => {
      const [exports, contacts, communications, ponds] = await Promise.all([
        import("./exports/routes"),
        import("./contacts/routes"),
        import("./communications/routes"),
        import("./ponds/contact-routes"),
      ]);
      return [exports.contactExportRoutes, contacts.contactRoutes, communications.communicationRoutes, ponds.pondContactRoutes];
    }),
    group(["/v1/leads", "/v1/leads/*"], async () => [(await import("./leads/routes")).leadRoutes]),
    group(["/v1/properties", "/v1/properties/*"], async () => {
      const [exports, properties] = await Promise.all([import("./exports/routes"), import("./properties/routes")]);
      return [exports.propertyExportRoutes, properties.propertyRoutes];
    }),
    group(["/v1/deals", "/v1/deals/*"], async () => {
      const [exports, deals] = await Promise.all([import("./exports/routes"), import("./deals/routes")]);
      return [exports.dealExportRoutes, deals.dealRoutes];
    }),
    group(["/v1/trash"], async () => [(await import("./trash/routes")).trashRoutes]),
    // The agent's day (issue 46).
    group(["/v1/tasks", "/v1/tasks/*"], async () => [(await import("./tasks/routes")).taskRoutes]),
    group(["/v1/appointments", "/v1/appointments/*"], async () => [(await import("./appointments/routes")).appointmentRoutes]),
    group(["/v1/action-plans", "/v1/action-plans/*"], async () => [(await import("./action-plans/routes")).actionPlanRoutes]),
    group(["/v1/smart-lists", "/v1/smart-lists/*"], async () => [(await import("./smart-lists/routes")).smartListRoutes]),
    group(["/v1/ponds", "/v1/ponds/*"], async () => [(await import("./ponds/routes")).pondRoutes]),
    group(["/v1/imports", "/v1/imports/*"], async () => [(await import("./imports/routes")).importRoutes]),
    group(["/v1/api-keys", "/v1/api-keys/*"], async () => [(await import("./api-keys/routes")).apiKeyRoutes]),
    group(["/v1/custom-fields", "/v1/custom-fields/*"], async () => [(await import("./custom-fields/routes")).customFieldRoutes]),
    group(["/v1/integrations"], async () => [(await import("./integrations/routes")).integrationRoutes]),
    group(["/v1/organization", "/v1/organization/*"], async () => {
      const [exports, organization] = await Promise.all([import("./exports/routes"), import("./organization/routes")]);
      return [organization.organizationRoutes, exports.organizationExportRoutes];
    }),
    // The user's calendar feed (issue 46) before the users' routes, which would read `me` as an id.
    group(["/v1/users", "/v1/users/*"], async () => {
      const [feeds, users] = await Promise.all([import("./appointments/feed-routes"), import("./users/routes")]);
      return [feeds.calendarFeedRoutes, users.userRoutes];
    }),
    // A user's calendar feed file: its secret URL is the capability (appointments/feed.ts).
    group(["/calendar/*"], async () => [(await import("./appointments/feed-routes")).calendarPublicRoutes]),
    group(["/invite/*"], async () => {
      const [invite, challenge] = await Promise.all([import("./users/invite-routes"), import("./platform/bot-challenge")]);
      return [invite.createInviteRoutes({ botChallenge: options.invitations?.botChallenge ?? ((secret) => challenge.turnstile(secret)) })];
    }),
    // The event log (GET /v1/events) is the webhooks' own: the payloads their deliveries carry.
    group(["/v1/webhooks", "/v1/webhooks/*", "/v1/events"], async () => {
      const [{ createWebhookRoutes }, { defaultWebhookDeps }] = await Promise.all([
        import("./webhooks/routes"),
        import("./webhooks/transport"),
      ]);
      return [createWebhookRoutes(defaultWebhookDeps(options.webhooks))];
    }),
    group(["/api/documents", "/api/documents/*", "/api/signatures", "/api/signatures/*"], async () => {
      const [obligations, search, forms, documents, draft, signatures] = await Promise.all([
        import("./documents/obligation-routes"),
        import("./documents/search-routes"),
        import("./documents/form-routes"),
        import("./documents/routes"),
        import("./documents/draft-routes"),
        import("./signatures/routes"),
      ]);
      // Obligations, search and forms before the documents: /api/documents/{id} would take them for an id.
      return [
        obligations.obligationRoutes,
        search.searchRoutes,
        forms.formRoutes,
        documents.documentRoutes,
        draft.draftRoutes,
        signatures.signatureRoutes,
      ];
    }),
    group(["/api/public/sign/*", "/sign/*", "/api/public/verify", "/api/public/files/*", "/api/public/exports/*"], async () => {
      const [signing, challenge, verify, files, documentLink, exports] = await Promise.all([
        import("./signatures/public-routes"),
        import("./platform/bot-challenge"),
        import("./signatures/verify-routes"),
        import("./files/routes"),
        import("./signatures/document-link"),
        import("./exports/routes"),
      ]);
      return [
        signing.createPublicSigningRoutes({ botChallenge: options.signing?.botChallenge ?? ((secret) => challenge.turnstile(secret)) }),
        verify.verifyRoutes,
        files.createFileRoutes({ holderMayRead: documentLink.signerMayReadDocument }),
        exports.exportDownloadRoutes,
      ];
    }),
    group(["/api/templates", "/api/templates/*", "/api/public/templates/*", "/t/*"], async () => {
      const [templates, publicLinks] = await Promise.all([import("./templates/routes"), import("./templates/public-routes")]);
      return [templates.templateRoutes, publicLinks.templatePublicRoutes];
    }),
    group(["/static/pdfjs/*"], async () => [(await import("./signatures/pdfjs-assets")).pdfjsRoutes]),
    group(
      [
        "/api/reputation",
        "/api/reputation/*",
        "/api/public/reviews/*",
        "/widget/*",
        "/api/public/referral/*",
        "/api/public/survey/*",
        "/survey/*",
      ],
      async () => {
        const [testimonials, profiles, reviews, referrals, surveys, challenge] = await Promise.all([
          import("./testimonials/routes"),
          import("./profiles/routes"),
          import("./profiles/public-routes"),
          import("./referrals/routes"),
          import("./surveys/routes"),
          import("./platform/bot-challenge"),
        ]);
        const referralRoutes = referrals.createReferralRoutes({
          botChallenge: options.referrals?.botChallenge ?? ((secret) => challenge.turnstile(secret)),
        });
        return [testimonials.testimonialRoutes, profiles.profileRoutes, reviews.reviewRoutes, referralRoutes, surveys.surveyRoutes];
      },
    ),
    group(["/api/clickwrap", "/api/clickwrap/*", "/api/public/clickwrap/*", "/consent/*"], async () => [
      (await import("./clickwrap/routes")).clickwrapRoutes,
    ]),
    group(["/oauth/*", "/.well-known/*"], async () => {
      const [{ createOAuthRoutes }, { defaultClientDocumentDeps }] = await Promise.all([
        import("./oauth/routes"),
        import("./oauth/client-documents"),
      ]);
      return [createOAuthRoutes(defaultClientDocumentDeps(options.oauth))];
    }),
    group(["/mcp", "/mcp/*"], async () => [(await import("./mcp/routes")).mcpRoutes]),
    // Operator routes (shard moves), behind ADMIN_TOKEN and out of the public document.
    { ...group(["/admin/*"], async () => [(await import("./admin/routes")).adminRoutes]), documented: false },
  ];
}
