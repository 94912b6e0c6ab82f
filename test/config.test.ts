import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConfigError, type Env, readConfig } from "../src/env";

const withVars = (vars: Partial<Env>) => ({ ...env, ...vars }) as Env;

describe("configuration", () => {
  it("parses wrangler.toml's development defaults, with contract 7's settings unset", () => {
    const config = readConfig(withVars({}));
    expect(config.APP_URL).toBe("http://127.0.0.1:8787");
    expect(config.OAUTH_CLIENTS[0]).toMatchObject({ clientId: "mcp-dev" });
    expect(config.AI_GATEWAY_URL).toBeUndefined();
    expect(config.BOT_CHALLENGE_SECRET).toBeUndefined();
    expect(config.DOCUMENTS_INCLUDED_PER_MONTH).toBeUndefined();
  });

  it("types numbers and treats empty strings as unset", () => {
    const config = readConfig(withVars({ DOCUMENTS_INCLUDED_PER_MONTH: "25", BOT_CHALLENGE_SECRET: "  " }));
    expect(config.DOCUMENTS_INCLUDED_PER_MONTH).toBe(25);
    expect(config.BOT_CHALLENGE_SECRET).toBeUndefined();
  });

  it("names every malformed setting", () => {
    expect(() => readConfig(withVars({ OAUTH_CLIENTS: "{not json", DOCUMENTS_INCLUDED_PER_MONTH: "many", AI_GATEWAY_URL: "nope" }))).toThrow(ConfigError);
    try {
      readConfig(withVars({ OAUTH_CLIENTS: "{not json", DOCUMENTS_INCLUDED_PER_MONTH: "many", AI_GATEWAY_URL: "nope" }));
    } catch (err) {
      expect((err as Error).message).toMatch(/OAUTH_CLIENTS/);
      expect((err as Error).message).toMatch(/DOCUMENTS_INCLUDED_PER_MONTH/);
      expect((err as Error).message).toMatch(/AI_GATEWAY_URL/);
    }
  });
});
