import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createApp } from "../../src/app";
import { contractViolation } from "./contract";

export interface CallOptions {
  token?: string;
  /** JSON-encoded, or sent as multipart/form-data when a FormData. */
  body?: unknown;
  /** Sent as is, for malformed-JSON and content-type cases. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Configuration on top of the test env for this request (an outside service's URL, say). */
  vars?: Record<string, string>;
  /** The scheme and host the request reaches the API through (one deployment answers on several names). */
  origin?: string;
}

const appWithVars = createApp();

/** The app of the Worker's fetch handler, given an env with `vars` over the test env. */
async function fetchWithVars(request: Request, vars: Record<string, string>): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await appWithVars.fetch(request, { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/**
 * One request through the Worker's real fetch handler, inside workerd, with the real local bindings. The answer must
 * match what /openapi.json declares for the route (helpers/contract.ts), or the test fails here.
 */
export async function call(method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Uint8Array | FormData | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  // A multipart body: the Request sets its content type with the boundary.
  else if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const url = `${opts.origin ?? "http://api.test"}${path}`;
  const request = new Request(url, { method, headers, body });
  const res = opts.vars ? await fetchWithVars(request, opts.vars) : await exports.default.fetch(request);
  const violation = await contractViolation(method, url, res);
  if (violation) throw new Error(`Response breaks the API contract: ${violation}`);
  return res;
}

export async function json<T = any>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
