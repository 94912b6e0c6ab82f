import { Hono, type Context } from "hono";
import { cors } from "hono/cors";
import { EXPOSED_HEADERS } from "../platform/cors";
import { createMiddleware } from "hono/factory";
import { type Config, readConfig } from "../env";
import { Unauthorized } from "../lib/errors";
import { BASELINE_SCOPE, issuerOf, mcpServerUrlOf, protectedResourceMetadataUrl } from "../oauth/metadata";
import { accessTokens } from "../oauth/tokens";
import { agentActingFor, authenticate as authenticateCaller, bearerOf, grantedPermissions, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { PERMISSION_NAMES, ROLE_PERMISSIONS } from "../platform/permissions";
import { requestMeta } from "../platform/request-meta";
import { resourcePermission } from "./resources";
import { MODERN_PROTOCOL_VERSION, serveMcp, toolNamed } from "./server";

/** The path of MCP_SERVER_URL (http://127.0.0.1:8787/mcp in development), where requireAuth accepts access tokens. */
export const MCP_PATH = "/mcp";

/**
 * MCP authorization (2025-11-25), after RFC 9728 section 5.1: a 401 names the protected-resource metadata, which
 * leads the client to the authorization server, and the scope to ask for (the baseline: MCP's scope selection takes
 * the challenge's `scope` first). A token that was sent but is not valid is `invalid_token` (RFC 6750). The
 * metadata's address is the OAuth server's own (APP_URL, path-suffixed with the resource's path: RFC 9728 3.1).
 */
function challenge(c: Context<AppBindings>): Response {
  const metadata = protectedResourceMetadataUrl(readConfig(c.env));
  const error = c.req.header("authorization") ? ', error="invalid_token"' : "";
  return c.json({ error: "Unauthorized" }, 401, {
    "WWW-Authenticate": `Bearer resource_metadata="${metadata}", scope="${BASELINE_SCOPE}"${error}`,
  });
}

/**
 * MCP authorization, step-up (2025-11-25, "Scope Challenge Handling"): a `tools/call` or `resources/read` needing a
 * permission the user's role allows but the access token was not granted answers HTTP 403 `insufficient_scope`,
 * naming the scope to ask for: what the token holds plus what the call needs. The client re-authorizes with it and calls again. A
 * permission the role does not allow stays a tool error (no consent can grant it), and so does a bearer session or an
 * API key, which no OAuth flow re-issues.
 */
function stepUp(c: Context<AppBindings>, body: unknown): Response | undefined {
  const call = body as { method?: unknown; id?: unknown; params?: { name?: unknown; uri?: unknown } } | null;
  const needed = neededPermission(call);
  if (!call || !needed) return undefined;
  const token = bearerOf(c.req.header("authorization")) ?? "";
  const credential = c.get("permissions");
  if (!credential || !accessTokens.recognizes(token) || credential.includes(needed.permission)) return undefined;
  if (!ROLE_PERMISSIONS[c.get("user").role].includes(needed.permission)) return undefined;
  const scope = PERMISSION_NAMES.filter((p) => p === needed.permission || credential.includes(p)).join(" ");
  const metadata = protectedResourceMetadataUrl(readConfig(c.env));
  const message = `${needed.what} needs the ${needed.permission} permission, which this access token was not granted: authorize again with the scope named in WWW-Authenticate`;
  return c.json({ jsonrpc: "2.0", id: jsonRpcId(call), error: { code: -32001, message } }, 403, {
    "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${metadata}", error_description="${needed.label} needs ${needed.permission}"`,
  });
}

/** The request's JSON-RPC id when it is one (a string or a number), else null, for an answer made here. */
function jsonRpcId(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** What a request needs: a tools/call its tool's permission, a resources/read its file's; null for anything else. */
function neededPermission(call: { method?: unknown; params?: { name?: unknown; uri?: unknown } } | null) {
  if (call?.method === "tools/call" && typeof call.params?.name === "string") {
    const tool = toolNamed(call.params.name);
    return tool ? { permission: tool.permission, what: `The ${tool.name} tool`, label: tool.name } : null;
  }
  if (call?.method === "resources/read" && typeof call.params?.uri === "string") {
    // A URI of a known kind (resources.ts: letters, digits, `/`, `.`, `-`, `_` only), so it sits in a quoted string as is.
    const permission = resourcePermission(call.params.uri);
    return permission ? { permission, what: `Reading ${call.params.uri}`, label: call.params.uri } : null;
  }
  return null;
}

/** Authentication without preloads. */
const requireAuth = authenticateCaller([], accessTokens);

/** A bearer session or an OAuth access token, as on every authenticated route, with the MCP challenge on a 401. */
const authenticate = createMiddleware<AppBindings>(async (c, next) => {
  try {
    await requireAuth(c, next);
  } catch (err) {
    if (err instanceof Unauthorized) return challenge(c);
    throw err;
  }
});

/** The origins whose pages may call the endpoint: APP_URL's, MCP_SERVER_URL's and MCP_ALLOWED_ORIGINS. */
const originsCache = new WeakMap<Config, Set<string>>();
function allowedOrigins(config: Config): Set<string> {
  let origins = originsCache.get(config);
  if (!origins) {
    origins = new Set([new URL(issuerOf(config)).origin, new URL(mcpServerUrlOf(config)).origin, ...config.MCP_ALLOWED_ORIGINS]);
    originsCache.set(config, origins);
  }
  return origins;
}

/** A page served from this machine (any port): what a developer's own tools (an inspector, a test page) run on. */
const LOOPBACK_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/;

/**
 * An allowed origin, or in development any loopback one, as the SDK's own localhost servers allow: a rebinding page's
 * Origin is its own site's name, never a loopback address, so these are the developer's pages.
 */
function originAllowed(c: Context<AppBindings>, origin: string): boolean {
  const config = readConfig(c.env);
  return allowedOrigins(config).has(origin) || (config.ENVIRONMENT === "development" && LOOPBACK_ORIGIN.test(origin));
}

/**
 * MCP Streamable HTTP (2025-11-25, Security Warning): servers must validate Origin against DNS rebinding, a page on
 * another site reaching a server through a name it re-pointed. No Origin is a client outside a browser (an agent, the
 * SDK, the Inspector's proxy); a present one must be an allowed origin, else 403 before anything else runs.
 */
const checkOrigin = createMiddleware<AppBindings>(async (c, next) => {
  const origin = c.req.header("origin");
  if (origin !== undefined && !originAllowed(c, origin)) {
    return c.json(
      { jsonrpc: "2.0", id: null, error: { code: -32000, message: `Forbidden: requests from the origin ${origin} are not accepted` } },
      403,
    );
  }
  await next();
});

/** A 2025 client's protocol version; without the header the transport spec says to assume 2025-03-26. */
const legacyProtocolVersionOf = (c: Context<AppBindings>) => c.req.header("mcp-protocol-version") ?? "2025-03-26";

/**
 * Each POST is served by a server built for its caller (mcp/server.ts, both eras) and answered with JSON, so any
 * Worker isolate can serve any request and no session is kept.
 */
async function handle(c: Context<AppBindings>): Promise<Response> {
  // JSON-RPC batches left the MCP transport in 2025-06-18: one message per request, so one request is one tool call.
  const UNREADABLE = Symbol("unreadable");
  const body: unknown = await c.req.raw
    .clone()
    .json()
    .catch(() => UNREADABLE);
  if (Array.isArray(body))
    return c.json(
      { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Batches are not supported: send one JSON-RPC message per request" } },
      400,
    );
  // 2026-07-28's change streams: nothing here changes between requests (no listChanged is advertised), and a
  // stateless Worker holds no stream open, so there is nothing to listen to (answered as the SDK answers a method it
  // does not serve).
  if ((body as { method?: unknown } | null)?.method === "subscriptions/listen")
    return c.json(
      {
        jsonrpc: "2.0",
        id: jsonRpcId(body),
        error: {
          code: -32601,
          message:
            "Method not found: this server's tools and resources do not change between requests, so there is no subscription to listen on",
        },
      },
      404,
    );
  const refused = stepUp(c, body);
  if (refused) return refused;
  // If-Match is an HTTP precondition on one resource; a tool call addresses none through it.
  const ctx = { ...serviceContext(c), ifMatch: undefined };
  const granted = new Set(grantedPermissions(c));
  const meta = requestMeta(c);
  const actingFor = agentActingFor(c);
  // The body is parsed once, here: the SDK reads it itself only when it is not JSON (to answer the parse error).
  return serveMcp(c.req.raw, body === UNREADABLE ? undefined : body, (era) => ({
    ctx,
    granted,
    meta,
    actingFor,
    protocolVersion: era === "modern" ? MODERN_PROTOCOL_VERSION : legacyProtocolVersionOf(c),
  }));
}

/**
 * Browser-based MCP clients (an inspector page) call the endpoint with fetch, from an allowed origin (checkOrigin):
 * the preflight names only those; to any other page the browser refuses the call before it is sent.
 */
const openCors = cors({
  origin: (origin, c) => (originAllowed(c, origin) ? origin : null),
  allowMethods: ["POST", "GET", "DELETE", "OPTIONS"],
  // Mcp-Method and Mcp-Name: the request headers of the 2026-07-28 transport.
  allowHeaders: ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id", "mcp-method", "mcp-name"],
  exposeHeaders: ["WWW-Authenticate", "Mcp-Session-Id", ...EXPOSED_HEADERS],
  maxAge: 86_400,
});

export const mcpRoutes = new Hono<AppBindings>()
  .use(MCP_PATH, openCors, checkOrigin, authenticate)
  .post(MCP_PATH, handle)
  // Without sessions there is no server-initiated stream to open (GET) nor session to end (DELETE): the transport
  // spec's answer is 405.
  .on(["GET", "DELETE"], MCP_PATH, (c) =>
    c.json({ error: "method_not_allowed", message: "This MCP server is stateless: send JSON-RPC messages with POST" }, 405, {
      Allow: "POST",
    }),
  );
