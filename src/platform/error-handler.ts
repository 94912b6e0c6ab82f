import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  AppError,
  Conflict,
  type FieldIssue,
  OrganizationMoving,
  RateLimited,
  TemporarilyUnavailable,
  Unprocessable,
  Validation,
} from "../lib/errors";
import type { AppBindings } from "./context";
import { createLogger, loggableError, loggableStack } from "../lib/log";

/** Route families answer errors in different shapes (spec rule 2 of the CRM document; DESIGN.md "Shapes"). */
type Family = "crm" | "plants" | "api" | "oauth";

export function familyOf(path: string): Family {
  if (path === "/v1" || path.startsWith("/v1/")) return "crm";
  if (path === "/plants" || path.startsWith("/plants/")) return "plants";
  if (path.startsWith("/oauth/")) return "oauth";
  return "api";
}

/** An error reduced to what every family's body is made of. */
interface Failure {
  status: number;
  code: string;
  message: string;
  issues?: FieldIssue[];
  retryAfterSeconds?: number;
}

const CRM_TYPES: Record<number, [type: string, title: string]> = {
  400: ["invalid_request_error", "Bad Request"],
  401: ["authentication_error", "Unauthorized"],
  403: ["permission_error", "Forbidden"],
  404: ["not_found_error", "Not Found"],
  409: ["conflict_error", "Conflict"],
  412: ["precondition_failed_error", "Precondition Failed"],
  413: ["invalid_request_error", "Payload Too Large"],
  415: ["invalid_request_error", "Unsupported Media Type"],
  422: ["validation_error", "Validation Failed"],
  429: ["rate_limit_error", "Too Many Requests"],
  500: ["api_error", "Internal Server Error"],
  502: ["api_error", "Bad Gateway"],
  503: ["api_error", "Service Unavailable"],
};

function toFailure(err: Error, family: Family): Failure | null {
  if (err instanceof Validation) {
    // A body that parsed but broke the schema is a 422 on the CRM routes (spec, Errors) and a 400 everywhere else.
    const status = err.kind === "malformed" || family !== "crm" ? 400 : 422;
    return { status, code: err.code, message: err.message, issues: err.issues };
  }
  if (err instanceof RateLimited || err instanceof OrganizationMoving || err instanceof TemporarilyUnavailable)
    return { status: err.status, code: err.code, message: err.message, retryAfterSeconds: err.retryAfterSeconds };
  if (OrganizationMoving.raisedBy(err)) return toFailure(new OrganizationMoving(), family);
  // A conflict's issues name what it is with; only the CRM error body has a place for them beside a 409.
  if (err instanceof Conflict && err.issues && family === "crm")
    return { status: err.status, code: err.code, message: err.message, issues: err.issues };
  if (err instanceof Unprocessable && err.issues) return { status: 422, code: err.code, message: err.message, issues: err.issues };
  if (err instanceof AppError) return { status: err.status, code: err.code, message: err.message };
  if (err instanceof HTTPException) {
    // Hono's validator throws 400 on malformed JSON; zod-openapi's media-type gate throws 415.
    if (err.status === 400) {
      const message = err.message || "Malformed JSON in request body";
      return toFailure(new Validation([{ field: "", path: [], code: "malformed_json", message }], "malformed"), family);
    }
    if (err.status === 415)
      return {
        status: 415,
        code: "unsupported_media_type",
        message: "Content-Type must be application/json (multipart/form-data on upload routes)",
      };
    if (err.status < 500) return { status: err.status, code: "request_error", message: err.message };
  }
  return null;
}

function render(c: Context, family: Family, f: Failure, requestId: string): Response {
  const status = f.status as ContentfulStatusCode;
  const headers: Record<string, string> = f.retryAfterSeconds !== undefined ? { "Retry-After": String(f.retryAfterSeconds) } : {};

  if (family === "plants") return c.json({ error: f.status, message: f.message }, status, headers);

  if (family === "crm") {
    const [type, title] = CRM_TYPES[f.status] ?? ["api_error", "Error"];
    const errors = (f.issues ?? []).map(({ field, code, message }) => ({ field, code, message }));
    const extra = f.status >= 500 ? { requestId } : {};
    return c.json(
      { success: false, error: { type, code: f.code, title, status: f.status, detail: f.message, errors, ...extra } },
      status,
      headers,
    );
  }

  if (family === "oauth") {
    // RFC 6749 section 5.2 error body, never cached (a 413 or 415 answered before the route's own headers too).
    const code = f.status === 401 ? "invalid_client" : f.issues || f.status === 413 || f.status === 415 ? "invalid_request" : f.code;
    const message =
      f.status === 415
        ? "Content-Type must be application/x-www-form-urlencoded (the token endpoint) or application/json (registration)"
        : f.message;
    return c.json({ error: code, error_description: message }, status, { ...headers, "Cache-Control": "no-store", Pragma: "no-cache" });
  }

  // /api/* and the rest: DESIGN.md "Shapes" and the document/reputation specs.
  if (f.status === 401) return c.json({ error: "Unauthorized" }, status);
  if (f.status === 429) return c.json({ error: "rate_limited" }, status, headers);
  // DESIGN.md's {message, path[]} plus the CRM error body's field and code (the same FieldIssue), so a client can act
  // on an issue without parsing its message.
  if (f.issues) {
    const issues = f.issues.map(({ field, path, code, message }) => ({ field, path, code, message }));
    // A 422 names its own refusal (invalid_fields …) beside the problems; a schema's 400 is invalid_request.
    return c.json(f.status === 422 ? { error: f.code, message: f.message, issues } : { error: "invalid_request", issues }, status);
  }
  if (f.status >= 500) return c.json({ error: f.code, message: f.message, requestId }, status, headers);
  return c.json({ error: f.code, message: f.message }, status, headers);
}

/** A path as the log may hold it: the token of a capability path (a signing, survey or invitation link) left out. */
const loggablePath = (path: string) => path.replace(/^(\/(?:api\/public\/)?(?:sign|survey|invite)\/)[^/]+/, "$1[token]");

export const handleError: ErrorHandler<AppBindings> = (err, c) => {
  const family = familyOf(c.req.path);
  const requestId = c.get("requestId") ?? "unknown";
  const failure = toFailure(err, family);
  if (failure) return render(c, family, failure, requestId);
  // Unexpected: logged with the request id (never headers or bodies, which may hold tokens), answered without a stack.
  createLogger({ requestId, organizationId: c.get("organization")?.id }).error("unexpected error", {
    method: c.req.method,
    path: loggablePath(c.req.path),
    error: loggableError(err),
    stack: loggableStack(err),
  });
  return render(c, family, { status: 500, code: "internal_error", message: `Internal server error (request id ${requestId})` }, requestId);
};

export const handleNotFound: NotFoundHandler<AppBindings> = (c) =>
  render(c, familyOf(c.req.path), { status: 404, code: "not_found", message: "Route not found" }, c.get("requestId") ?? "unknown");
