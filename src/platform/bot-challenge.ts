import { fetchWithDeadline } from "../lib/outbound";

/**
 * The bot challenge of the public signer actions (spec: Authentication 4): Cloudflare Turnstile, whose tokens are
 * checked with its siteverify endpoint (form-encoded `secret`, `response`, `remoteip`; JSON `{success}` back).
 */
export interface BotChallenge {
  verify(token: string, ip: string | null): Promise<boolean>;
}

export const TURNSTILE_SITEVERIFY = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

export function turnstile(secret: string, fetchFn: typeof fetch = fetch, url = TURNSTILE_SITEVERIFY, timeoutMs = 5000): BotChallenge {
  return {
    async verify(token, ip) {
      const form = new URLSearchParams({ secret, response: token });
      if (ip) form.set("remoteip", ip);
      try {
        return await fetchWithDeadline(fetchFn, url, { method: "POST", body: form }, timeoutMs, async (res) => res.ok && ((await res.json()) as { success?: unknown }).success === true);
      } catch {
        // Unreachable or unreadable: the challenge is not passed, so nothing is signed unchecked.
        return false;
      }
    },
  };
}
