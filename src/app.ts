import { OpenAPIHono } from "@hono/zod-openapi";
import { requestId } from "hono/request-id";
import { contactRoutes } from "./contacts/routes";
import { obligationRoutes } from "./documents/obligation-routes";
import { documentRoutes } from "./documents/routes";
import { searchRoutes } from "./documents/search-routes";
import { draftRoutes } from "./documents/draft-routes";
import { fileRoutes } from "./files/routes";
import { turnstile } from "./platform/bot-challenge";
import { createPublicSigningRoutes, type SigningDeps } from "./signatures/public-routes";
import { signatureRoutes } from "./signatures/routes";
import { verifyRoutes } from "./signatures/verify-routes";
import { reviewRoutes } from "./reputation/public-routes";
import { referralRoutes } from "./reputation/referral-routes";
import { surveyRoutes } from "./reputation/survey-routes";
import { reputationRoutes } from "./reputation/routes";
import { readConfig } from "./env";
import { plantRoutes } from "./plants/routes";
import { propertyRoutes } from "./properties/routes";
import { dealRoutes } from "./deals/routes";
import { trashRoutes } from "./trash/routes";
import { clickwrapRoutes } from "./clickwrap/routes";
import { mcpRoutes } from "./mcp/routes";
import { oauthRoutes } from "./oauth/routes";
import { requireAuth, requireRoutePermission } from "./platform/auth";
import { limitBodies } from "./platform/body-limit";
import type { AppBindings } from "./platform/context";
import { idempotency } from "./platform/idempotency";
import { responseHeaders } from "./platform/response-headers";
import { d1Session } from "./platform/session";
import { handleError, handleNotFound } from "./platform/error-handler";
import { mountDocs, validationHook } from "./platform/openapi";
import { durableObjectRateLimiter, type RateLimiter } from "./platform/rate-limit";
import { createWebhookRoutes } from "./webhooks/routes";
import { defaultWebhookDeps, type WebhookDeps } from "./webhooks/transport";

export interface AppOptions {
  /** Replaces the Durable Object rate limiter (tests, or a deployment without the binding). */
  rateLimiter?: RateLimiter;
  /** Replaces the DNS resolver or the outbound transport of the webhook routes (tests). */
  webhooks?: Partial<WebhookDeps>;
  /** Replaces the bot challenge of the public signing routes (tests point the real client at a fake siteverify). */
  signing?: Partial<SigningDeps>;
}

/** Routes that need a bearer session; everything under /api/public, /oauth and the docs stays open. */
const AUTHENTICATED = ["/v1/*", "/plants", "/plants/*", "/api/*"] as const;
/** Writes that honour Idempotency-Key (platform/idempotency.ts); the public capability routes have no organization to scope keys to. */
const IDEMPOTENT = ["/v1/*", "/api/*"] as const;

export function createApp(options: AppOptions = {}) {
  const app = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });

  // First, so it sets nosniff and no-store on every answer, including the error handler's and the 404s.
  app.use(responseHeaders);
  app.use(requestId());
  app.use(async (c, next) => {
    readConfig(c.env); // a malformed deployment fails every request loudly (500 with request id), not one route subtly
    c.set("rateLimiter", options.rateLimiter ?? durableObjectRateLimiter(c.env));
    await next();
  });
  app.use(d1Session);
  app.use(limitBodies());
  const isPublic = (path: string) => path.startsWith("/api/public/");
  for (const path of AUTHENTICATED) {
    app.use(path, async (c, next) => (isPublic(c.req.path) ? next() : requireAuth(c, next)));
  }
  // An OAuth access token reaches only the /v1 routes its permissions cover (issue 14); before idempotency, so a 403 is not kept.
  app.use("/v1/*", requireRoutePermission);
  for (const path of IDEMPOTENT) {
    app.use(path, async (c, next) => (isPublic(c.req.path) ? next() : idempotency(c, next)));
  }

  app.route("/", plantRoutes);
  app.route("/", contactRoutes);
  app.route("/", propertyRoutes);
  app.route("/", dealRoutes);
  app.route("/", trashRoutes);
  app.route("/", createWebhookRoutes(defaultWebhookDeps(options.webhooks)));
  // Before documentRoutes: its /api/documents/{id} would take "obligations" or "search" for an id.
  app.route("/", obligationRoutes);
  app.route("/", searchRoutes);
  app.route("/", documentRoutes);
  app.route("/", draftRoutes);
  app.route("/", signatureRoutes);
  app.route("/", createPublicSigningRoutes({ botChallenge: options.signing?.botChallenge ?? ((secret) => turnstile(secret)) }));
  app.route("/", verifyRoutes);
  app.route("/", fileRoutes);
  app.route("/", reputationRoutes);
  app.route("/", reviewRoutes);
  app.route("/", referralRoutes);
  app.route("/", surveyRoutes);
  app.route("/", clickwrapRoutes);
  app.route("/", oauthRoutes);
  app.route("/", mcpRoutes);

  mountDocs(app);
  app.onError(handleError);
  app.notFound(handleNotFound);
  return app;
}
