import { AppError, Validation } from "../lib/errors";
import { fetchWithDeadline } from "../lib/outbound";

/**
 * The bot challenge of the public signer actions (spec: Authentication 4) and the public referral form: Cloudflare Turnstile, whose tokens are
 * checked with its siteverify endpoint (form-encoded `secret`, `response`, `remoteip`; JSON `{success}` back).
 */
export interface BotChallenge {
  verify(token: string, ip: string | null): Promise<boolean>;
}

/** Where Turnstile's widget script and frame come from (a page's CSP names it). */
export const TURNSTILE_ORIGIN = "https://challenges.cloudflare.com";
export const TURNSTILE_SITEVERIFY = `${TURNSTILE_ORIGIN}/turnstile/v0/siteverify`;

export function turnstile(secret: string, fetchFn: typeof fetch = fetch, url = TURNSTILE_SITEVERIFY, timeoutMs = 5000): BotChallenge {
  return {
    async verify(token, ip) {
      const form = new URLSearchParams({ secret, response: token });
      if (ip) form.set("remoteip", ip);
      try {
        return await fetchWithDeadline(
          fetchFn,
          url,
          { method: "POST", body: form },
          timeoutMs,
          async (res) => res.ok && ((await res.json()) as { success?: unknown }).success === true,
        );
      } catch {
        // Unreachable or unreadable: the challenge is not passed, so nothing is signed unchecked.
        return false;
      }
    },
  };
}

/** The token failed the bot challenge (Turnstile): 403 on the public routes. */
export class ChallengeFailed extends AppError {
  readonly status = 403;
  readonly code = "challenge_failed";
  constructor() {
    super("The bot challenge was not passed; reload the page and try again");
  }
}

/**
 * With a Turnstile secret configured, a public write needs `challengeToken` (400 when missing, naming the field) that
 * siteverify accepts (403 otherwise); without one (development, tests) nothing is checked.
 */
export async function requireChallenge(
  secret: string | undefined,
  challenge: (secret: string) => BotChallenge,
  token: string | undefined,
  ip: string | null,
  when: string,
): Promise<void> {
  if (!secret) return;
  if (!token) throw new Validation([{ field: "challengeToken", path: ["challengeToken"], code: "required", message: `Required ${when}` }]);
  if (!(await challenge(secret).verify(token, ip))) throw new ChallengeFailed();
}
