import { AppError } from "../lib/errors";

/**
 * An error of the token or registration endpoint, answered as RFC 6749 section 5.2 / RFC 7591 section 3.2.2 say:
 * `{error, error_description}` (platform/error-handler.ts, family "oauth"). 401 is always `invalid_client`.
 */
export class OAuthError extends AppError {
  constructor(
    readonly code:
      | "invalid_request"
      | "invalid_client"
      | "invalid_grant"
      | "unsupported_grant_type"
      | "invalid_scope"
      | "invalid_redirect_uri"
      | "invalid_client_metadata"
      | "invalid_target"
      | "temporarily_unavailable",
    message: string,
    readonly status: 400 | 401 | 503 = 400,
  ) {
    super(message);
  }
}
