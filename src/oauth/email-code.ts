import type { Context } from "hono";
import type { Db } from "../db/client";
import type { Env } from "../env";
import { sha256Hex } from "../lib/crypto";
import { createLogger, loggableError } from "../lib/log";
import { mailerFor, type MailMessage } from "../mail/mailer";
import type { AppBindings } from "../platform/context";
import { consumeForAddress } from "../platform/rate-limit";
import type { RateLimiter } from "../platform/rate-limiter";
import { openShardOf } from "../shards/tenants";
import { lockEndText, recordSignInFailure, SIGN_IN_FAILURES_BEFORE_LOCK, signInLockedUntil } from "./lockout";
import { checkSignInCode, membershipsOf, type SignIn, startSignIn } from "./sign-in";

/**
 * The two steps of the e-mail-code sign-in, whatever page drives them (the OAuth authorization pages, an invitation
 * link): mail a code to an address, and check a typed code. Both keep the same caps and lockouts everywhere: the
 * per-address limits of platform/rate-limit.ts (codes mailed, codes typed) and the cumulative lock of lockout.ts.
 */
export interface CodeSignInDeps {
  env: Env;
  directory: Db;
  rateLimiter: RateLimiter;
  requestId: string;
  /** Keeps the mail going after the answer (`waitUntil`), so an address with an account answers as fast as one without. */
  defer(work: Promise<unknown>): void;
}

/** What the steps need of a page's request. */
export const codeSignInDeps = (c: Context<AppBindings>): CodeSignInDeps => ({
  env: c.env,
  directory: c.get("directory"),
  rateLimiter: c.get("rateLimiter"),
  requestId: c.get("requestId"),
  defer: (work) => c.executionCtx.waitUntil(work),
});

/** `locked`: the address's sign-in is locked until `until` (text); `too_many`: its per-address limit is spent for now. */
export type SendOutcome = { kind: "sent" } | { kind: "locked"; until: string } | { kind: "too_many" };

/**
 * Starts (or restarts) the sign-in of the browser holding `cookie` as `email` and mails the code when the address has
 * an account. A locked address gets nothing; the answer is the same whether or not the address has an account.
 */
export async function sendSignInCode(deps: CodeSignInDeps, cookie: string, email: string): Promise<SendOutcome> {
  const locked = await signInLockedUntil(deps.directory, email);
  if (locked) return { kind: "locked", until: lockEndText(locked) };
  if (!(await allowedFor(deps, "oauth-sign-in-mail:email", email))) return { kind: "too_many" };
  const { code } = await startSignIn(deps.directory, cookie, email);
  if (code) mailCode(deps, email, code);
  return { kind: "sent" };
}

/**
 * `accepted`: the sign-in is verified and moved to `cookie`; `wrong` with tries left; `spent`: no live code (expired,
 * or its tries used up); `locked` (this try may have started the lock, whose notice is then mailed); `too_many`.
 */
export type CodeOutcome =
  | { kind: "accepted"; cookie: string }
  | { kind: "wrong"; attemptsLeft: number }
  | { kind: "spent" }
  | { kind: "locked"; until: string }
  | { kind: "too_many" };

/**
 * Checks a typed code. A locked address is refused before anything is counted or compared; a wrong code counts towards
 * the lock (lockout.ts), and the try that starts it says so and mails the user.
 */
export async function enterSignInCode(deps: CodeSignInDeps, signIn: SignIn, code: string): Promise<CodeOutcome> {
  const locked = await signInLockedUntil(deps.directory, signIn.email);
  if (locked) return { kind: "locked", until: lockEndText(locked) };
  // Across every browser and client address: a new code does not buy new guesses at this address.
  if (!(await allowedFor(deps, "oauth-sign-in-code:email", signIn.email))) return { kind: "too_many" };
  const check = await checkSignInCode(deps.directory, signIn, code);
  if (check.kind !== "wrong") return check;
  const lock = await recordSignInFailure(deps.directory, signIn.email);
  if (lock) {
    mailLockNotice(deps, signIn.email, lock.lockedUntil);
    return { kind: "locked", until: lockEndText(lock.lockedUntil) };
  }
  return check.attemptsLeft > 0 ? check : { kind: "spent" };
}

/** One request against a per-e-mail limit (platform/rate-limit.ts). */
async function allowedFor(
  deps: CodeSignInDeps,
  bucket: "oauth-sign-in-mail:email" | "oauth-sign-in-code:email",
  email: string,
): Promise<boolean> {
  return (await consumeForAddress(deps.rateLimiter, bucket, email)).allowed;
}

/**
 * Mailed after the answer, so that the page does not tell whether a user exists. `what` names the mail in the log,
 * which never holds the address or the body.
 */
function mailAfterAnswer(deps: CodeSignInDeps, what: string, message: () => Promise<MailMessage | null>): void {
  const send = async () => {
    try {
      const mail = await message();
      // A sign-in code belongs to no organization: its mail is filed on the first shard.
      if (mail) await mailerFor(deps.env, openShardOf(deps.env, 0).db).send(mail);
    } catch (err) {
      createLogger({ requestId: deps.requestId }).error(`${what} mail failed`, { error: loggableError(err) });
    }
  };
  deps.defer(send());
}

function mailCode(deps: CodeSignInDeps, to: string, code: string): void {
  mailAfterAnswer(deps, "sign-in code", async () => ({
    to,
    subject: "Your sign-in code",
    // No client name here: a registered client chooses its own, and the mail must not carry a stranger's words.
    // The consent page names the client, after the code.
    text: `Your sign-in code is ${code}.\n\nType it on the sign-in page you opened; never tell it to anyone. It is valid for 10 minutes. If you did not ask for it, ignore this message: nothing happens without the code.`,
  }));
}

/**
 * The lock just started (once per lock): logged without the address or any code, and the user is told, when the
 * address has an account (an address without one gets no mail, as with codes).
 */
function mailLockNotice(deps: CodeSignInDeps, to: string, lockedUntil: string): void {
  mailAfterAnswer(deps, "sign-in lock notice", async () => {
    const emailHash = await sha256Hex(to.toLowerCase());
    createLogger({ requestId: deps.requestId }).warn("oauth sign-in locked after repeated wrong codes", { emailHash, lockedUntil });
    if ((await membershipsOf(deps.directory, to)).length === 0) return null;
    return {
      to,
      subject: "Sign-in to your account is locked for a day",
      text: `${SIGN_IN_FAILURES_BEFORE_LOCK} wrong sign-in codes were typed for your address within a day, so signing in with an e-mailed code is locked until ${lockEndText(lockedUntil)}. Nobody signed in with them. Until then no code is sent and none is accepted.\n\nIf it was you, wait until then and sign in again. If it was not, someone may be guessing codes for your address: the lock stops them, and nothing is needed from you.`,
    };
  });
}
