// The one origin `npm run dev` answers on (DESIGN.md contract 1): APP_URL and MCP_SERVER_URL follow PORT unless the
// developer sets them, so the OAuth issuer, the metadata, token claims and links name the port that is served.
import { varFromArgs } from "./config-guard.mjs";

/**
 * APP_URL and MCP_SERVER_URL for a dev server on `port`. Explicit values win: a `--var` on the command line, then the
 * environment (`APP_URL=https://… npm run dev`, behind a tunnel), then .dev.vars (`fileVars`). Otherwise APP_URL is
 * http://127.0.0.1:<port> and MCP_SERVER_URL is `/mcp` on APP_URL, never wrangler.toml's fixed :8787.
 */
export function devOrigin({ port = "8787", args = [], env = {}, fileVars = {} } = {}) {
  const given = (name) => varFromArgs(args, name) ?? (env[name] || undefined) ?? (fileVars[name] || undefined);
  const appUrl = given("APP_URL") ?? `http://127.0.0.1:${port}`;
  const mcpServerUrl = given("MCP_SERVER_URL") ?? `${appUrl.replace(/\/+$/, "")}/mcp`;
  return { APP_URL: appUrl, MCP_SERVER_URL: mcpServerUrl };
}

/** The same values as wrangler `--var` arguments, placed before the developer's own (which say the same). */
export const devOriginArgs = (origin) => Object.entries(origin).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
