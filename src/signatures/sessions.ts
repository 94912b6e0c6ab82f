import { and, eq } from "drizzle-orm";
import { users } from "../db/schema";
import { readConfig } from "../env";
import {
  AppError,
  type FieldIssue,
  InvalidState,
  NotFound,
  OrganizationMoving,
  TemporarilyUnavailable,
  Unprocessable,
} from "../lib/errors";
import type { RequestMeta, ServiceContext } from "../service-context";
import type { ViewRequest } from "./schemas";
import { findEnvelope } from "./service";
import type { SessionPerson } from "./session-store";
import type { SessionRequest } from "./session-transitions";
import { envelopeSigner } from "./signer-client";

/**
 * Issue 45, parts 3 and 4: the sender's view URL for an embedded recipient (5 minutes) and the host's session for an
 * in-person one (15 minutes), each single use: `{APP_URL}/sign/session/<token>` (public-routes.ts, page-session.ts).
 * The envelope's object checks the recipient and their turn, records who asked in the audit trail and keeps the
 * session (session-transitions.ts).
 */
export const VIEW_TTL_SECONDS = 300;
export const HOST_SESSION_TTL_SECONDS = 900;

/** Someone other than the in-person recipient's host asked for their session: 403. */
export class NotTheHost extends AppError {
  readonly status = 403;
  readonly code = "not_the_host";
  constructor() {
    super("Only the recipient's host (the user named in inPerson.hostUserId) may start their in-person session");
  }
}

/** In development and tests a page on this machine may frame the signing page and be returned to. */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|localhost):\d{1,5}$/;

/** Why `value` is not an origin the page may be framed by (or returned to, for a URL), or null. */
function placeProblem(value: string, loopbackAllowed: boolean, wholeUrl: boolean): { code: string; message: string } | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { code: wholeUrl ? "invalid_url" : "invalid_origin", message: wholeUrl ? "Not a URL" : "Not an origin" };
  }
  if (url.username || url.password) return { code: "invalid_url", message: "A URL with credentials is not taken" };
  if (!wholeUrl && url.origin !== value.replace(/\/$/, ""))
    return { code: "invalid_origin", message: "An origin is scheme://host[:port], with no path, query or wildcard" };
  if (url.protocol === "https:") return null;
  if (loopbackAllowed && LOOPBACK.test(url.origin)) return null;
  return {
    code: "not_https",
    message: loopbackAllowed ? "Must be https (or http://127.0.0.1:<port>, http://localhost:<port> in development)" : "Must be https",
  };
}

/** The returnUrl and frameAncestors checked all at once (422 naming each), the origins in their serialized form. */
function checkPlaces(ctx: ServiceContext, input: ViewRequest): { returnUrl: string; frameAncestors: string[] } {
  const environment = readConfig(ctx.env).ENVIRONMENT;
  const loopback = environment === "development" || environment === "test";
  const issues: FieldIssue[] = [];
  const back = placeProblem(input.returnUrl, loopback, true);
  if (back) issues.push({ field: "returnUrl", path: ["returnUrl"], ...back });
  for (const [i, origin] of input.frameAncestors.entries()) {
    const problem = placeProblem(origin, loopback, false);
    if (problem) issues.push({ field: `frameAncestors.${i}`, path: ["frameAncestors", i], ...problem });
  }
  if (issues.length > 0) throw new Unprocessable("invalid_view_request", `${issues.length} problem(s) with the view request`, issues);
  return { returnUrl: input.returnUrl, frameAncestors: [...new Set(input.frameAncestors.map((o) => new URL(o).origin))] };
}

/** The caller, as the audit trail names them. */
async function caller(ctx: ServiceContext): Promise<SessionPerson | null> {
  const userId = ctx.actor.userId;
  if (!userId) return null;
  const row = await ctx.db
    .select({ name: users.name, email: users.email })
    .from(users)
    .where(and(eq(users.organizationId, ctx.organizationId), eq(users.id, userId)))
    .get();
  return row ? { userId, name: row.name, email: row.email } : null;
}

async function startSession(ctx: ServiceContext, envelopeId: string, request: SessionRequest, meta: RequestMeta) {
  const result = await envelopeSigner(ctx.env, envelopeId).startSession(envelopeId, ctx.organizationId, request, meta);
  if (result.kind === "moving") throw new OrganizationMoving();
  if (result.kind === "failed") throw new TemporarilyUnavailable();
  if (result.kind === "not_found") throw new NotFound("Signer", "No signer with this id in this envelope");
  if (result.kind === "not_host") throw new NotTheHost();
  if (result.kind === "refused") throw new InvalidState(result.code, result.message);
  const base = readConfig(ctx.env).APP_URL.replace(/\/$/, "");
  return { url: `${base}/sign/session/${result.token}`, expiresAt: result.expiresAt };
}

/** POST /api/signatures/{envelopeId}/signers/{signerId}/view: an embedded recipient's single-use signing URL. */
export async function requestSigningView(ctx: ServiceContext, envelopeId: string, signerId: string, input: ViewRequest, meta: RequestMeta) {
  await findEnvelope(ctx, envelopeId);
  const places = checkPlaces(ctx, input);
  // Every authenticated caller is a user of the organization (an API key acts as its creator).
  const requestedBy = (await caller(ctx)) ?? { userId: ctx.actor.userId ?? "", name: null, email: null };
  return startSession(ctx, envelopeId, { kind: "embedded", signerId, ttlSeconds: VIEW_TTL_SECONDS, requestedBy, ...places }, meta);
}

/** POST /api/signatures/{envelopeId}/signers/{signerId}/host-session: the host's single-use session on their device. */
export async function startHostSession(ctx: ServiceContext, envelopeId: string, signerId: string, meta: RequestMeta) {
  await findEnvelope(ctx, envelopeId);
  const host = await caller(ctx);
  if (!host) throw new NotTheHost();
  return startSession(
    ctx,
    envelopeId,
    { kind: "in_person", signerId, ttlSeconds: HOST_SESSION_TTL_SECONDS, requestedBy: host, returnUrl: null, frameAncestors: [] },
    meta,
  );
}
