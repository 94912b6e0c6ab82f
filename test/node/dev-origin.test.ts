// Issue 23: `npm run dev` states the origin it serves on. APP_URL and MCP_SERVER_URL follow PORT unless set.
import { describe, expect, it } from "vitest";
import { devOrigin, devOriginArgs } from "../../scripts/dev-origin.mjs";

describe("npm run dev's origin", () => {
  it("follows PORT when nothing sets it", () => {
    expect(devOrigin({ port: "18811" })).toEqual({ APP_URL: "http://127.0.0.1:18811", MCP_SERVER_URL: "http://127.0.0.1:18811/mcp" });
    expect(devOrigin()).toEqual({ APP_URL: "http://127.0.0.1:8787", MCP_SERVER_URL: "http://127.0.0.1:8787/mcp" });
  });

  it("keeps an explicit APP_URL, and puts the MCP server on it", () => {
    const tunnel = { APP_URL: "https://dev.example.com/", MCP_SERVER_URL: "https://dev.example.com/mcp" };
    expect(devOrigin({ port: "18811", env: { APP_URL: "https://dev.example.com/" } })).toEqual(tunnel);
    expect(devOrigin({ port: "18811", args: ["--var", "APP_URL:https://dev.example.com/"] })).toEqual(tunnel);
    expect(devOrigin({ port: "18811", args: ["--var=APP_URL:https://dev.example.com/"] })).toEqual(tunnel);
    expect(devOrigin({ port: "18811", fileVars: { APP_URL: "https://dev.example.com/" } })).toEqual(tunnel);
  });

  it("keeps an explicit MCP_SERVER_URL, and ranks --var over the environment over .dev.vars", () => {
    expect(devOrigin({ port: "18811", args: ["--test-scheduled", "--var", "MCP_SERVER_URL:http://127.0.0.1:9/mcp"] })).toEqual({
      APP_URL: "http://127.0.0.1:18811",
      MCP_SERVER_URL: "http://127.0.0.1:9/mcp",
    });
    const all = {
      args: ["--var", "APP_URL:https://a.example"],
      env: { APP_URL: "https://b.example" },
      fileVars: { APP_URL: "https://c.example" },
    };
    expect(devOrigin(all).APP_URL).toBe("https://a.example");
    expect(devOrigin({ ...all, args: [] }).APP_URL).toBe("https://b.example");
    expect(devOrigin({ ...all, args: [], env: { APP_URL: "" } }).APP_URL).toBe("https://c.example");
  });

  it("hands both to wrangler as --var arguments", () => {
    expect(devOriginArgs(devOrigin({ port: "18811" }))).toEqual([
      "--var",
      "APP_URL:http://127.0.0.1:18811",
      "--var",
      "MCP_SERVER_URL:http://127.0.0.1:18811/mcp",
    ]);
  });
});
