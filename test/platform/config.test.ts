import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { ConfigError, type Env, readConfig } from "../../src/env";
import { testApp } from "../helpers/test-app";

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
    expect(() =>
      readConfig(withVars({ OAUTH_CLIENTS: "{not json", DOCUMENTS_INCLUDED_PER_MONTH: "many", AI_GATEWAY_URL: "nope" })),
    ).toThrow(ConfigError);
    try {
      readConfig(withVars({ OAUTH_CLIENTS: "{not json", DOCUMENTS_INCLUDED_PER_MONTH: "many", AI_GATEWAY_URL: "nope" }));
    } catch (err) {
      expect((err as Error).message).toMatch(/OAUTH_CLIENTS/);
      expect((err as Error).message).toMatch(/DOCUMENTS_INCLUDED_PER_MONTH/);
      expect((err as Error).message).toMatch(/AI_GATEWAY_URL/);
    }
  });
});

describe("production mail", () => {
  const production = { ENVIRONMENT: "production", APP_URL: "https://api.brokerage.example" };

  it("refuses the log mailer in production, named or by default, and takes resend; other environments may log", () => {
    for (const vars of [
      { ...production, EMAIL_PROVIDER: "log" },
      { ...production, EMAIL_PROVIDER: undefined },
    ]) {
      expect(() => readConfig(withVars(vars))).toThrow(/EMAIL_PROVIDER: log .* not allowed with ENVIRONMENT=production/);
    }
    expect(readConfig(withVars({ ...production, EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "re_test" })).EMAIL_PROVIDER).toBe("resend");
    expect(readConfig(withVars({ ENVIRONMENT: "staging", EMAIL_PROVIDER: "log" })).EMAIL_PROVIDER).toBe("log");
  });

  it("fails every request loudly: a 500 with the request id, and the log names the setting", async () => {
    const { fetch } = testApp({}, { ...production, EMAIL_PROVIDER: "log" });
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await fetch("GET", "/api/public/sign/sign_anything");
    const lines = logged.mock.calls.map((args) => String(args[0]));
    logged.mockRestore();
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ error: "internal_error", requestId: res.headers.get("x-request-id") });
    expect(lines.some((line) => line.includes("EMAIL_PROVIDER") && line.includes(res.headers.get("x-request-id")!))).toBe(true);
  });
});
