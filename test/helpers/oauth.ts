import { env, exports } from "cloudflare:workers";
import { type CallOptions, call as callFollowing } from "./client";
import { contractViolation } from "./contract";
import { mailTo } from "./documents";
import type { TestPrincipal } from "./factories";
import { testApp } from "./test-app";

// The OAuth authorization pages as a client and a browser use them (issue 14): shared by the OAuth test files.

export const CLIENT = "mcp-dev"; // OAUTH_CLIENTS of wrangler.toml: http://127.0.0.1:*/callback
export const REDIRECT = "http://127.0.0.1:4321/callback";
/** Where a test's requests go: the Worker's fetch handler, or an app of helpers/test-app.ts. */
type Fetcher = (request: Request) => Promise<Response>;

/** Sends without following a redirect; the answer is still checked against /openapi.json. */
async function callThrough(fetcher: Fetcher, method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const url = `http://api.test${path}`;
  const res = await fetcher(new Request(url, { method, headers, body: opts.rawBody, redirect: "manual" }));
  const violation = await contractViolation(method, url, res);
  if (violation) throw new Error(`Response breaks the API contract: ${violation}`);
  return res;
}

/** `call` of helpers/client, but a redirect is answered, not followed (the authorization endpoint redirects to the client). */
export async function call(method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  if (opts.vars || (opts.body !== undefined && opts.rawBody === undefined)) return callFollowing(method, path, opts);
  return callThrough((request) => exports.default.fetch(request), method, path, opts);
}

export type Call = typeof call;

/**
 * `call` through the production app without rate limits: for what lies behind the per-address limits (the sign-in
 * lock counts more tries than a 15-minute window admits). Deferred work (mail) has finished when it answers.
 */
export function unlimitedCall(): Call {
  const app = testApp({ rateLimiter: { consume: async () => ({ allowed: true, remaining: 1, retryAfterSeconds: 0 }) } });
  return (method, path, opts = {}) => callThrough(app.send, method, path, opts);
}

/** `call` through an app of helpers/test-app.ts (other options or configuration), redirects answered, not followed. */
export const callOn =
  (app: ReturnType<typeof testApp>): Call =>
  (method, path, opts = {}) =>
    callThrough(app.send, method, path, opts);

/** A form-encoded POST to /oauth/token (or /oauth/revoke), from an address of its own (they are rate-limited per address). */
export function postForm(path: "/oauth/token" | "/oauth/revoke", form: Record<string, string | undefined>, send: Call = call) {
  const body = new URLSearchParams(Object.entries(form).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return send("POST", path, {
    rawBody: body,
    headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": freshIp() },
  });
}

let ipSeq = 0;
export const freshIp = () => `10.14.${Math.floor(Math.random() * 250)}.${(ipSeq++ % 250) + 1}`;

const b64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
export async function pkce() {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return { verifier, challenge };
}

export const authorizeUrl = (params: Record<string, string | undefined>) => {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return `/oauth/authorize?${q}`;
};
export const validParams = (challenge: string, extra: Record<string, string | undefined> = {}) => ({
  client_id: CLIENT,
  redirect_uri: REDIRECT,
  response_type: "code",
  code_challenge: challenge,
  code_challenge_method: "S256",
  state: "st-123",
  ...extra,
});

export const locationOf = (res: Response) => new URL(res.headers.get("location")!);

/** A browser: keeps the sign-in cookie and reads each page's CSRF token. */
export class Browser {
  cookie = "";
  csrf = "";
  ip = freshIp();
  constructor(
    readonly url: string,
    private readonly send: Call = call,
  ) {}
  private absorb(res: Response, html: string) {
    const set = res.headers.get("set-cookie");
    if (set) this.cookie = set.split(";")[0]!;
    this.csrf = html.match(/name="csrf_token" value="([^"]+)"/)?.[1] ?? this.csrf;
  }
  async open() {
    const res = await this.send("GET", this.url, { headers: { cookie: this.cookie } });
    const html = await res.text();
    this.absorb(res, html);
    return { res, html };
  }
  async post(fields: Record<string, string>, csrf = this.csrf) {
    const res = await this.send("POST", this.url, {
      rawBody: new URLSearchParams({ csrf_token: csrf, ...fields }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: this.cookie, "cf-connecting-ip": this.ip },
    });
    const html = res.status === 302 ? "" : await res.text();
    this.absorb(res, html);
    return { res, html };
  }
}

/** The newest sign-in code mailed to `email`. */
export async function mailedCode(email: string): Promise<string> {
  for (let i = 0; i < 50; i++) {
    const mails = (await mailTo(email)).filter((m) => m.subject === "Your sign-in code");
    const code = mails.at(-1)?.text.match(/\b(\d{6})\b/)?.[1];
    if (code) return code;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no sign-in code was mailed to ${email}`);
}

export async function emailOf(p: TestPrincipal) {
  return (await env.DB.prepare("SELECT email FROM users WHERE id = ?").bind(p.userId).first<{ email: string }>())!.email;
}
