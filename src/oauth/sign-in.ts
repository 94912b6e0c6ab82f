import { and, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { oauthSignIns, organizations, users } from "../db/schema";
import { newToken, sha256Hex, toBase64Url } from "../lib/crypto";
import { newId } from "../lib/ids";
import { addSeconds, nowIso } from "../lib/time";

/**
 * The browser's sign-in on the authorization pages. The browser holds a random cookie; the server keeps only its
 * SHA-256 with the e-mail typed in, the SHA-256 of the one-time code mailed to it, and whether the code was entered.
 * Forms carry a CSRF token that is an HMAC of the cookie under JWT_SECRET, so a form only works in the browser that
 * holds the cookie it was made for. The cookie is replaced when the code is accepted (no session fixation).
 */
export const SIGN_IN_TTL_SECONDS = 30 * 60;
export const SIGN_IN_CODE_TTL_SECONDS = 10 * 60;
export const MAX_CODE_ATTEMPTS = 5;

export const newCookieValue = () => newToken("osi");

/**
 * The sign-in cookie of the pages under `path` (the OAuth pages, the invitation pages): `HttpOnly; SameSite=Lax`;
 * `Secure` and the `__Host-` prefix whenever the page is served over https (docs/domains/oauth-and-mcp.md), which pins it to `/`.
 */
export function signInCookie(base: string, path: string) {
  const name = (secure: boolean) => (secure ? `__Host-${base}` : base);
  return {
    name,
    header: (secure: boolean, value: string, maxAgeSeconds = SIGN_IN_TTL_SECONDS) =>
      `${name(secure)}=${value}; Path=${secure ? "/" : path}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`,
  };
}

export const OAUTH_COOKIE = signInCookie("oauth_sign_in", "/oauth");

async function hmac(secret: string, message: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}

export async function csrfTokenFor(secret: string, cookie: string): Promise<string> {
  return toBase64Url(await hmac(secret, `oauth-csrf:${cookie}`));
}

/** Constant-time: both sides are hashed to equal lengths first. */
export async function csrfTokenMatches(secret: string, cookie: string | undefined, token: string | undefined): Promise<boolean> {
  if (!cookie || !token) return false;
  const [a, b] = await Promise.all([sha256Hex(await csrfTokenFor(secret, cookie)), sha256Hex(token)]);
  return crypto.subtle.timingSafeEqual(new TextEncoder().encode(a), new TextEncoder().encode(b));
}

export type SignIn = typeof oauthSignIns.$inferSelect;

export async function findSignIn(db: Db, cookie: string | undefined): Promise<SignIn | null> {
  if (!cookie || cookie.length > 100) return null;
  const row = await db
    .select()
    .from(oauthSignIns)
    .where(and(eq(oauthSignIns.cookieHash, await sha256Hex(cookie)), gt(oauthSignIns.expiresAt, nowIso())))
    .get();
  return row ?? null;
}

/** The organizations a verified e-mail may act for: one user per organization (users are unique per org and e-mail). */
export async function membershipsOf(
  db: Db,
  email: string,
): Promise<{ userId: string; organizationId: string; organizationName: string }[]> {
  return db
    .select({ userId: users.id, organizationId: organizations.id, organizationName: organizations.name })
    .from(users)
    .innerJoin(organizations, eq(organizations.id, users.organizationId))
    .where(sql`lower(${users.email}) = ${email.toLowerCase()}`)
    .orderBy(organizations.name)
    .limit(50)
    .all();
}

/**
 * Starts (or restarts) the sign-in of the browser holding `cookie` as `email`. The row and the answer are the same
 * whether or not the e-mail belongs to a user: only then is the code returned, for the caller to mail.
 */
export async function startSignIn(db: Db, cookie: string, email: string): Promise<{ code: string | null }> {
  const digits = crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000;
  const code = String(digits).padStart(6, "0");
  const now = new Date();
  const cookieHash = await sha256Hex(cookie);
  const members = await membershipsOf(db, email);
  await db.batch([
    db.delete(oauthSignIns).where(eq(oauthSignIns.cookieHash, cookieHash)),
    db.insert(oauthSignIns).values({
      id: newId(),
      cookieHash,
      email,
      codeHash: await sha256Hex(`${cookieHash}:${code}`),
      codeExpiresAt: nowIso(addSeconds(now, SIGN_IN_CODE_TTL_SECONDS)),
      createdAt: nowIso(now),
      expiresAt: nowIso(addSeconds(now, SIGN_IN_TTL_SECONDS)),
    }),
  ]);
  return { code: members.length > 0 ? code : null };
}

/** `wrong` with no attempts left ended the code; `spent`: no code was compared (none live, or its tries used up). */
export type CodeCheck = { kind: "accepted"; cookie: string } | { kind: "wrong"; attemptsLeft: number } | { kind: "spent" };

/**
 * Checks a typed code. The attempt is counted before the comparison, in one conditional UPDATE, so parallel guesses
 * cannot exceed MAX_CODE_ATTEMPTS. A right code marks the sign-in verified and moves it to a new cookie.
 */
export async function checkSignInCode(db: Db, signIn: SignIn, code: string): Promise<CodeCheck> {
  if (!signIn.codeHash || !signIn.codeExpiresAt || Date.parse(signIn.codeExpiresAt) <= Date.now()) return { kind: "spent" };
  const counted = await db
    .update(oauthSignIns)
    .set({ attempts: sql`${oauthSignIns.attempts} + 1` })
    .where(
      and(eq(oauthSignIns.id, signIn.id), sql`${oauthSignIns.attempts} < ${MAX_CODE_ATTEMPTS}`, sql`${oauthSignIns.codeHash} IS NOT NULL`),
    )
    .returning({ attempts: oauthSignIns.attempts })
    .get();
  if (!counted) return { kind: "spent" };
  const typed = await sha256Hex(`${signIn.cookieHash}:${code.trim()}`);
  const right = crypto.subtle.timingSafeEqual(new TextEncoder().encode(typed), new TextEncoder().encode(signIn.codeHash));
  if (!right || (await membershipsOf(db, signIn.email)).length === 0) {
    return { kind: "wrong", attemptsLeft: Math.max(0, MAX_CODE_ATTEMPTS - counted.attempts) };
  }
  const cookie = newCookieValue();
  const now = new Date();
  await db
    .update(oauthSignIns)
    .set({
      cookieHash: await sha256Hex(cookie),
      codeHash: null,
      codeExpiresAt: null,
      verifiedAt: nowIso(now),
      expiresAt: nowIso(addSeconds(now, SIGN_IN_TTL_SECONDS)),
    })
    .where(eq(oauthSignIns.id, signIn.id))
    .run();
  return { kind: "accepted", cookie };
}

export async function endSignIn(db: Db, signIn: SignIn): Promise<void> {
  await db.delete(oauthSignIns).where(eq(oauthSignIns.id, signIn.id)).run();
}
