// `npm run --silent cron -- --at <ISO time>` against the plain `npm run dev` (DESIGN.md contract 12): the passes run
// as if at that time, never by the wall clock. An envelope that expires in a day is left open by a pass an hour
// before that and expired by one an hour after; then the script's own refusals. Last of served.test.ts: a pass a day
// ahead also ends what earlier suites left open, which they no longer read.
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";

const run = promisify(execFile);
const HOUR = 3_600_000;

/** The script as a developer runs it; its exit code, its one line on stdout and its stderr. */
async function cron(args: string[], port = dev.port): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("npm", ["run", "--silent", "cron", "--", ...args], { env: { ...process.env, PORT: port } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** A port nothing listens on: one the system handed out, closed again. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return String(port);
}

describe("npm run cron: the scheduled passes as if at a given time", () => {
  it("expires an envelope past its expiry only when the pass's time is past it", async () => {
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const { token } = await mintToken(`Clock Realty ${stamp}`, `agent.${stamp}@clock.test`);
    const api = createApiClient(dev.base, token);
    const canonical = {
      schemaVersion: 1 as const,
      formKey: "on/standard-lease" as const,
      lease: {
        tenants: [{ name: "Tess Tenant", email: `tenant.${stamp}@clock.test` }],
        landlords: [{ name: "Lars Landlord", email: `landlord.${stamp}@clock.test` }],
        property: { address: { street: "12 Clock St", city: "Toronto", province: "ON" } },
        term: { commencement: { year: 2027, month: 6, day: 1 } },
        monthlyRent: { cents: 210_000 },
      },
      provenance: { aiDrafted: false },
    };
    const doc = await api.POST("/api/documents", { body: { formKey: "on/standard-lease", canonical } });
    expect(doc.response.status).toBe(201);
    const sent = await api.POST("/api/documents/{id}/signature", { params: { path: { id: doc.data!.id } }, body: { expiresInDays: 1 } });
    expect(sent.response.status).toBe(201);
    const envelopeId = sent.data!.envelopeId;
    const status = async () => {
      const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
      expect(read.response.status).toBe(200);
      return read.data!.status;
    };
    const sentAt = Date.now();

    const before = new Date(sentAt + 23 * HOUR).toISOString();
    const early = await cron(["--at", before]);
    expect(early.code, early.stderr).toBe(0);
    expect(early.stdout.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(early.stdout)).toEqual({ ok: true, at: before });
    expect(await status()).toBe("partially_signed");

    const after = new Date(sentAt + 25 * HOUR).toISOString();
    const late = await cron(["--at", after]);
    expect(late.code, late.stderr).toBe(0);
    expect(JSON.parse(late.stdout)).toEqual({ ok: true, at: after });
    expect(await status()).toBe("expired");
  });

  it("refuses a time it cannot read with its usage, and says so when no server answers", async () => {
    const bad = await cron(["--at", "next tuesday"]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toContain("--at must be an ISO 8601 time");
    expect(bad.stderr).toContain("usage: npm run --silent cron -- [--at <ISO time>]");

    const port = await closedPort();
    const down = await cron(["--at", new Date().toISOString()], port);
    expect(down.code).toBe(1);
    expect(down.stdout).toBe("");
    expect(down.stderr).toContain(`no answer from npm run dev on port ${port}`);
    expect(down.stderr).toContain("is it running?");
  });
});
