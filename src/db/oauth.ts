import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The OAuth authorization server (src/oauth/). Every secret it hands out (authorization codes, sign-in
 * codes, the browser's sign-in cookie) is stored only as its SHA-256; access tokens are JWTs that name their grant.
 */

/**
 * Clients that registered themselves (RFC 7591). Public clients only: no secret, exact redirect URIs. `lastUsedAt` is
 * stamped whenever one is issued a code; the cron deletes clients unused for 90 days (registration is open to anyone).
 */
export const oauthClients = sqliteTable(
  "oauth_clients",
  {
    id: text().primaryKey(),
    clientName: text(),
    redirectUris: text({ mode: "json" }).$type<string[]>().notNull(),
    createdAt: text().notNull(),
    /** Set at registration, then at every code issued. */
    lastUsedAt: text(),
  },
  (t) => [index("oauth_clients_last_used_idx").on(t.lastUsedAt)],
);

/**
 * Authorization codes: single use, short-lived, bound to the client, the redirect URI, the PKCE challenge, the user,
 * the organization and the permissions approved. `grantId` is set when the code is exchanged, so that a second
 * exchange of the same code can revoke what the first one issued (RFC 6749 section 4.1.2).
 */
export const oauthCodes = sqliteTable(
  "oauth_codes",
  {
    codeHash: text().primaryKey(),
    clientId: text().notNull(),
    redirectUri: text().notNull(),
    codeChallenge: text().notNull(),
    userId: text().notNull(),
    organizationId: text().notNull(),
    permissions: text({ mode: "json" }).$type<string[]>().notNull(),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
    usedAt: text(),
    grantId: text(),
  },
  (t) => [index("oauth_codes_expires_idx").on(t.expiresAt)],
);

/** One row per token issuance: an access token's `jti`. Revoking the row stops every token that names it. */
export const oauthGrants = sqliteTable(
  "oauth_grants",
  {
    id: text().primaryKey(),
    clientId: text().notNull(),
    userId: text().notNull(),
    organizationId: text().notNull(),
    permissions: text({ mode: "json" }).$type<string[]>().notNull(),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
    revokedAt: text(),
    /** The refresh token family this grant was issued in: revoking the family revokes it too. */
    familyId: text(),
  },
  (t) => [index("oauth_grants_user_idx").on(t.userId), index("oauth_grants_family_idx").on(t.familyId)],
);

/**
 * A browser's sign-in on the authorization page: keyed by the SHA-256 of its cookie, it holds the one-time code
 * mailed to the e-mail typed in (hashed, short-lived, a few attempts) and, once the code was right, the verified
 * e-mail the consent step acts for.
 */
export const oauthSignIns = sqliteTable(
  "oauth_sign_ins",
  {
    id: text().primaryKey(),
    cookieHash: text().notNull(),
    email: text().notNull(),
    codeHash: text(),
    codeExpiresAt: text(),
    attempts: integer().notNull().default(0),
    verifiedAt: text(),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
  },
  (t) => [uniqueIndex("oauth_sign_ins_cookie_unique").on(t.cookieHash), index("oauth_sign_ins_expires_idx").on(t.expiresAt)],
);

/**
 * Refresh tokens (OAuth 2.1 section 4.3): opaque, stored only as SHA-256, each used once. A token is rotated
 * on every use into a new one of the same family; the family starts at a code exchange and its id is that first
 * grant's id, which every grant issued from it carries too (`oauth_grants.family_id`). A token presented after its
 * use (or after its family was revoked) revokes the whole family: its refresh tokens and its grants, so every access
 * token issued from it stops working. Bound to the client, the user, the organization and the permissions granted
 * at consent (a refresh may narrow the access token's scope, never the family's).
 */
export const oauthRefreshTokens = sqliteTable(
  "oauth_refresh_tokens",
  {
    tokenHash: text().primaryKey(),
    familyId: text().notNull(),
    clientId: text().notNull(),
    userId: text().notNull(),
    organizationId: text().notNull(),
    permissions: text({ mode: "json" }).$type<string[]>().notNull(),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
    usedAt: text(),
    /** The SHA-256 of the token its use issued: while that one is unused, this one may be presented again (a retry). */
    replacedBy: text(),
    revokedAt: text(),
  },
  (t) => [
    index("oauth_refresh_tokens_family_idx").on(t.familyId),
    index("oauth_refresh_tokens_expires_idx").on(t.expiresAt),
    // Whether a client still holds a live family in an organization (integrations/connections.ts).
    index("oauth_refresh_tokens_organization_client_idx").on(t.organizationId, t.clientId),
  ],
);

/**
 * The OAuth clients connected to an organization (integrations/connections.ts): a row while some user of the
 * organization holds a live refresh token family of the client. Written in the batch that starts the first family
 * (the code exchange) and deleted in the batch that ends the last (revocation, reuse detection), or by the cron once
 * the last one expired; `integration.connected` and `.disconnected` are staged on exactly those transitions.
 */
export const oauthConnections = sqliteTable(
  "oauth_connections",
  {
    organizationId: text().notNull(),
    clientId: text().notNull(),
    /** The user whose consent connected it. */
    connectedBy: text().notNull(),
    connectedAt: text().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.clientId] }),
    index("oauth_connections_organization_connected_idx").on(t.organizationId, t.connectedAt, t.clientId),
  ],
);

/**
 * Failed sign-in code tries: one row per wrong code typed, keyed by the SHA-256 of the lower-cased address
 * (no address is kept). A row per try, not a counter, so parallel tries cannot lose one, and the 24-hour window slides.
 */
export const oauthSignInFailures = sqliteTable(
  "oauth_sign_in_failures",
  {
    id: text().primaryKey(),
    emailHash: text().notNull(),
    at: text().notNull(),
  },
  (t) => [index("oauth_sign_in_failures_email_idx").on(t.emailHash, t.at), index("oauth_sign_in_failures_at_idx").on(t.at)],
);

/** An address whose sign-in is locked (20 failed tries in 24 hours): no code is mailed or checked until `lockedUntil`. */
export const oauthSignInLocks = sqliteTable(
  "oauth_sign_in_locks",
  {
    emailHash: text().primaryKey(),
    lockedAt: text().notNull(),
    lockedUntil: text().notNull(),
  },
  (t) => [index("oauth_sign_in_locks_until_idx").on(t.lockedUntil)],
);
