/**
 * Typed errors thrown by service verbs and middleware. Each knows its HTTP status and a stable code; `app.onError`
 * (platform/error-handler.ts) turns it into the body of the route family that raised it.
 */
export interface FieldIssue {
  /** Dotted path of the offending field ("" for the whole body). */
  field: string;
  /** The same path as segments (the `issues[].path` of the /api routes). */
  path: (string | number)[];
  /** Machine-readable code, e.g. invalid_email, required, too_big. */
  code: string;
  message: string;
}

export abstract class AppError extends Error {
  abstract readonly status: 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 422 | 429 | 502 | 503;
  abstract readonly code: string;
}

export class Unauthorized extends AppError {
  readonly status = 401;
  readonly code = "unauthorized";
  constructor(message = "Authentication is missing or invalid") {
    super(message);
  }
}

/** A credential (OAuth access token, API key) without the permission a route or MCP tool needs (src/platform/permissions.ts): 403. */
export class InsufficientPermission extends AppError {
  readonly status = 403;
  readonly code = "insufficient_permission";
  constructor(message: string) {
    super(message);
  }
}

/** A caller whose role in the organization does not allow the route (an agent managing users, keys or webhooks): 403. */
export class InsufficientRole extends AppError {
  readonly status = 403;
  readonly code = "insufficient_role";
  constructor(message: string) {
    super(message);
  }
}

export class NotFound extends AppError {
  readonly status = 404;
  readonly code = "not_found";
  constructor(what = "Resource", message = `${what} not found`) {
    super(message);
  }
}

/** Well-formed input the resource cannot act on as it stands (too few comparable sales to value a property): 422. */
export class Unprocessable extends AppError {
  readonly status = 422;
  constructor(
    readonly code: string,
    message: string,
    /** Every problem, when there are several to name (an uploaded document's recipients and fields). */
    readonly issues?: FieldIssue[],
  ) {
    super(message);
  }
}

/** A service this one depends on (an MLS) failed or could not be reached: 502. */
export class UpstreamFailed extends AppError {
  readonly status = 502;
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class Conflict extends AppError {
  readonly status = 409;
  readonly code: string;
  /** What the conflict is with, for a client to act on (the CRM error body's errors[]): the contact a merged one went into. */
  readonly issues?: FieldIssue[];
  constructor(message: string, code = "conflict", issues?: FieldIssue[]) {
    super(message);
    this.code = code;
    this.issues = issues;
  }
}

/** A refused state move: 409 `{error: code, message}` on /api routes. */
export class InvalidState extends Conflict {
  constructor(code: string, message: string) {
    super(message, code);
  }
}

/**
 * Input that failed validation. `kind` says whether the body could not be read at all (malformed JSON: 400) or was
 * read and broke the schema (422 on the CRM routes, 400 elsewhere, as DESIGN.md "Shapes" says).
 */
const MAX_LISTED_ISSUES = 100;

export class Validation extends AppError {
  readonly status: 400 | 422;
  readonly code = "validation_error";
  readonly issues: FieldIssue[];
  constructor(
    issues: FieldIssue[],
    readonly kind: "malformed" | "schema" = "schema",
  ) {
    // Every problem is listed, up to a bound: a request with thousands of bad parameters gets a short answer too.
    const listed =
      issues.length > MAX_LISTED_ISSUES
        ? [
            ...issues.slice(0, MAX_LISTED_ISSUES),
            { field: "", path: [], code: "too_many_problems", message: `and ${issues.length - MAX_LISTED_ISSUES} more problems` },
          ]
        : issues;
    super(listed.map((i) => (i.field ? `${i.field}: ${i.message}` : i.message)).join("; ") || "Invalid request");
    this.issues = listed;
    this.status = kind === "malformed" ? 400 : 422;
  }
}

/** A body of a type the route does not take (an upload that is not a PDF): 415. */
export class UnsupportedMediaType extends AppError {
  readonly status = 415;
  readonly code = "unsupported_media_type";
}

/** If-Match named a version the resource is no longer at (RFC 9110 section 13.1.1). */
export class PreconditionFailed extends AppError {
  readonly status = 412;
  readonly code = "precondition_failed";
  constructor(message = "The resource has changed since the version named in If-Match; read it again") {
    super(message);
  }
}

export class PayloadTooLarge extends AppError {
  readonly status = 413;
  readonly code = "payload_too_large";
  constructor(readonly limitBytes: number) {
    super(`Request body exceeds ${limitBytes} bytes`);
  }
}

export class RateLimited extends AppError {
  readonly status = 429;
  readonly code = "rate_limited";
  constructor(readonly retryAfterSeconds: number) {
    super("Too many requests");
  }
}

/**
 * A write to an organization that a shard move has fenced for its final copy: reads go on, writes are
 * refused for the few seconds the copy takes. Also what a tenant shard's fence trigger raises (src/shards/), so a
 * write already past authentication when the fence went up is refused the same way.
 */
export class OrganizationMoving extends AppError {
  readonly status = 503;
  readonly code = "organization_moving";
  static readonly MARK = "organization_moving";
  constructor(readonly retryAfterSeconds = 5) {
    super("This organization is moving to another database; writes resume in a few seconds");
  }
  /** True for a D1 error raised by a tenant shard's fence trigger. */
  static raisedBy(err: unknown): boolean {
    return err instanceof Error && err.message.includes(OrganizationMoving.MARK);
  }
}

/**
 * A step the request needed failed where a retry may succeed (the signing object's D1 write refused or its
 * answer lost): nothing is assumed done, and the caller tries again after Retry-After.
 */
export class TemporarilyUnavailable extends AppError {
  readonly status = 503;
  readonly code = "temporarily_unavailable";
  constructor(readonly retryAfterSeconds = 5) {
    super("The request could not be completed just now; try it again shortly");
  }
}

/** A route whose required configuration (an AI gateway, a mail key) is absent in this deployment. */
export class NotConfigured extends AppError {
  readonly status = 503;
  readonly code = "not_configured";
  constructor(what: string) {
    super(`${what} is not configured`);
  }
}
