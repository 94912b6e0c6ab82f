// The developer contracts of DESIGN.md, run as a user runs them: `npm run dev` serves the API on 127.0.0.1:$PORT
// with local D1 migrated, and `npm run --silent token` prints a working token and `npm run --silent mail` the mail
// sent while it runs.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { devForThisFile, mintToken as token } from "./helpers/dev-server";

const run = promisify(execFile);
/** One line of `npm run --silent mail` (DESIGN.md contract 8). */
interface Mail {
  to: string;
  subject: string;
  text: string;
  createdAt: string;
}

// Started as a developer starts it (no --var: APP_URL follows PORT), on a state of its own as a fresh clone has.
const dev = devForThisFile([]);
let base = "";

beforeAll(() => {
  base = dev.base;
});

describe("npm run dev + npm run token", () => {
  it("serves /openapi.json and /docs", async () => {
    expect(((await (await fetch(`${base}/openapi.json`)).json()) as { openapi: string }).openapi).toBe("3.1.0");
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toContain("text/html");
  });

  it("states the origin it serves on (PORT is never 8787 here), and starts without an error that is none", async () => {
    const server = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string;
      token_endpoint: string;
    };
    expect(server.issuer).toBe(base);
    expect(server.token_endpoint).toBe(`${base}/oauth/token`);
    const resource = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      resource: string;
      authorization_servers: string[];
    };
    expect(resource).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    const challenge = (await fetch(`${base}/mcp`, { method: "POST" })).headers.get("www-authenticate");
    expect(challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    expect(dev.output()).toContain(`APP_URL=${base} MCP_SERVER_URL=${base}/mcp`);
    // Miniflare's fetch of a sample request.cf printed a stack trace whenever the machine could not reach Cloudflare.
    expect(dev.output()).not.toMatch(/^Error:|Unable to fetch the `Request.cf`/m);
  });

  it("mints a working token per call, mapping the same org and email to the same ids", async () => {
    const org = `E2E Realty ${Date.now()}`;
    const first = await token(org, "agent@e2e.test");
    const second = await token(org, "agent@e2e.test");
    const colleague = await token(org, "colleague@e2e.test");
    const elsewhere = await token(`${org} West`, "agent@e2e.test");
    expect(second.organizationId).toBe(first.organizationId);
    expect(second.userId).toBe(first.userId);
    expect(second.token).not.toBe(first.token);
    expect(colleague.organizationId).toBe(first.organizationId);
    expect(colleague.userId).not.toBe(first.userId);
    expect(elsewhere.organizationId).not.toBe(first.organizationId);

    // Through the typed client (src/client), as a TypeScript caller would.
    const api = (t?: string) => createApiClient(base, t);
    const created = await api(first.token).POST("/plants", { body: { id: 77, name: "Basil", tag: "herb" } });
    expect(created.response.status).toBe(200);
    expect(created.data).toEqual({ name: "Basil", tag: "herb" });
    // Both tokens of the same user work; the other organization cannot see the plant.
    const plant = { params: { path: { id: 77 } } };
    expect((await api(elsewhere.token).DELETE("/plants/{id}", plant)).error).toMatchObject({ error: 404 });
    expect((await api(second.token).DELETE("/plants/{id}", plant)).response.status).toBe(204);
    expect((await api().DELETE("/plants/{id}", plant)).response.status).toBe(401);
  });

  it("works the contacts API through the typed client: create, conditional update, list", async () => {
    const { token: t } = await token(`E2E Typed ${Date.now()}`, "typed@e2e.test");
    const api = createApiClient(base, t);
    const created = await api.POST("/v1/contacts", { body: { firstName: "Ada", lastName: "Typed", email: "ada@e2e.test", tags: ["e2e"] } });
    expect(created.response.status).toBe(201);
    const id = created.data!.data.id;
    const etag = created.response.headers.get("etag")!;
    const path = { params: { path: { id } } };
    const updated = await api.PUT("/v1/contacts/{id}", { ...path, body: { notes: "typed" }, headers: { "If-Match": etag } });
    expect(updated.data?.data.notes).toBe("typed");
    const stale = await api.PUT("/v1/contacts/{id}", { ...path, body: { notes: "stale" }, headers: { "If-Match": etag } });
    expect(stale.response.status).toBe(412);
    expect(stale.error?.error.type).toBe("precondition_failed_error");
    const listed = await api.GET("/v1/contacts", { params: { query: { limit: 10, tags: "e2e" } } });
    expect(listed.data?.data.map((c) => c.id)).toEqual([id]);
    expect(listed.response.headers.get("x-d1-bookmark")).toMatch(/^v1\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
  });

  it("refuses a call without --org or --email", async () => {
    await expect(run("npm", ["run", "--silent", "token", "--", "--org", "Only Org"], { cwd: process.cwd() })).rejects.toMatchObject({
      code: 2,
    });
  });

  it("reads the signing links mailed by the running API back with npm run mail, newest first, unsealed", async () => {
    const { token: t } = await token(`E2E Mail ${Date.now()}`, "mail@e2e.test");
    const api = createApiClient(base, t);
    // Mixed case as the lease spells it; read back below in another case (addresses match case-insensitively).
    const tenant = `Tess.Mail.${Date.now()}@E2E.test`;
    const sendLease = async (street: string) => {
      const lease = {
        tenants: [{ name: "Tess Mail", email: tenant }],
        landlords: [{ name: "Lars Mail", email: "lars.mail@e2e.test" }],
        property: { address: { street, city: "Toronto", province: "ON" } },
        term: { commencement: { year: 2027, month: 5, day: 1 } },
        monthlyRent: { cents: 210_000 },
      };
      const canonical = { schemaVersion: 1 as const, formKey: "on/standard-lease" as const, lease, provenance: { aiDrafted: false } };
      const doc = await api.POST("/api/documents", { body: { formKey: "on/standard-lease", canonical } });
      expect(doc.response.status).toBe(201);
      const sent = await api.POST("/api/documents/{id}/signature", { params: { path: { id: doc.data!.id } }, body: {} });
      expect(sent.response.status).toBe(201);
      return sent.data!.links.find((l) => l.role === "tenant")!.url!;
    };
    const mail = async (...args: string[]) => {
      const { stdout } = await run("npm", ["run", "--silent", "mail", "--", ...args], { cwd: process.cwd() });
      return stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Mail);
    };

    const first = await sendLease("1 Mail St");
    const second = await sendLease("2 Mail St");
    expect(second).not.toBe(first);
    expect(second).toMatch(/\/sign\/sign_[\w-]+$/);
    // The mail leaves after the answer (waitUntil): wait until both are kept.
    const byText = (lines: Mail[], url: string) => lines.findIndex((m) => m.text.includes(url));
    let lines: Mail[] = [];
    await expect
      .poll(async () => ((lines = await mail("--to", tenant.toUpperCase())), byText(lines, first) >= 0 && byText(lines, second) >= 0), {
        timeout: 30_000,
        interval: 1_000,
      })
      .toBe(true);
    expect(byText(lines, second)).toBeLessThan(byText(lines, first));
    const [newest] = lines;
    expect(Object.keys(newest!)).toEqual(["to", "subject", "text", "createdAt"]);
    expect(newest!.to.toLowerCase()).toBe(tenant.toLowerCase());
    expect(newest!.subject).toMatch(/sign/i);
    expect(newest!.text).toContain(second);
    expect(new Date(newest!.createdAt).toISOString()).toBe(newest!.createdAt);

    const latest = await mail("--to", tenant.toLowerCase(), "--last", "1");
    expect(latest).toHaveLength(1);
    expect(latest[0]!.text).toContain(second);
    // An address nothing was sent to prints nothing; a bad count is refused with a usage line.
    expect(await mail("--to", `nobody.${Date.now()}@e2e.test`)).toEqual([]);
    await expect(
      run("npm", ["run", "--silent", "mail", "--", "--to", tenant, "--last", "0"], { cwd: process.cwd() }),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("usage:") });
  });
});

describe("a fresh clone's local databases", () => {
  it("take every migration once from parallel npm run token calls, recorded where wrangler reads them", async () => {
    // A state nobody has migrated yet, as a fresh clone has.
    const state = mkdtempSync(join(tmpdir(), "fresh-state-"));
    const env = { ...process.env, DEV_PERSIST_TO: state };
    try {
      const mint = (i: number) =>
        run("npm", ["run", "--silent", "token", "--", "--org", `Fresh Realty ${i}`, "--email", `owner${i}@fresh.test`], { env }).then(
          ({ stdout }) => JSON.parse(stdout) as { token: string; organizationId: string },
        );
      const minted = await Promise.all([0, 1].map(mint));
      expect(new Set(minted.map((m) => m.organizationId)).size).toBe(2);
      // Every file recorded once, where wrangler reads: its own list finds nothing left to apply (the directory, and a
      // shard: every shard is migrated by the same code).
      for (const binding of ["DB", "DB_SHARD_1"]) {
        const listed = await run("npx", ["wrangler", "d1", "migrations", "list", binding, "--local", "--persist-to", state], { env });
        expect(listed.stdout, binding).toContain("No migrations to apply");
      }
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
