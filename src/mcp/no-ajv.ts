/**
 * What the deployed Worker has for `ajv` and `ajv-formats` (wrangler.toml `[alias]`): nothing. The MCP SDK's server
 * module imports its Ajv validator whether or not it is used; ours passes @cfworker/json-schema instead (mcp/server.ts),
 * since Ajv compiles schemas with `new Function`, which Workers refuse, and weighs about 30 KiB gzip of startup code.
 * Constructing it is a programming error.
 */
export default class NoAjv {
  constructor() {
    throw new Error("Ajv is not shipped in this Worker: pass the @cfworker/json-schema validator (mcp/server.ts)");
  }
}
