// The developer contracts of DESIGN.md, run as a user runs them: `npm run dev` serves the API on 127.0.0.1:$PORT
// with local D1 migrated, and `npm run --silent token` prints a working token while it runs.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const PORT = String(18787 + Math.floor(Math.random() * 1000));
const base = `http://127.0.0.1:${PORT}`;
let dev: ChildProcess;
let devOutput = "";

async function token(org: string, email: string) {
  const { stdout } = await run("npm", ["run", "--silent", "token", "--", "--org", org, "--email", email], { cwd: process.cwd() });
  const lines = stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as { token: string; userId: string; organizationId: string };
}

beforeAll(async () => {
  dev = spawn("npm", ["run", "dev"], { cwd: process.cwd(), env: { ...process.env, PORT }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  dev.stdout!.on("data", (d: Buffer) => (devOutput += d));
  dev.stderr!.on("data", (d: Buffer) => (devOutput += d));
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/openapi.json`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || dev.exitCode !== null) throw new Error(`npm run dev did not come up on ${base}:\n${devOutput}`);
    await new Promise((r) => setTimeout(r, 500));
  }
});

afterAll(() => {
  if (dev?.pid) process.kill(-dev.pid, "SIGTERM");
});

describe("npm run dev + npm run token", () => {
  it("serves /openapi.json and /docs", async () => {
    expect(((await (await fetch(`${base}/openapi.json`)).json()) as { openapi: string }).openapi).toBe("3.1.0");
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toContain("text/html");
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

    const auth = (t: string) => ({ authorization: `Bearer ${t}`, "content-type": "application/json" });
    const created = await fetch(`${base}/plants`, { method: "POST", headers: auth(first.token), body: JSON.stringify({ id: 77, name: "Basil", tag: "herb" }) });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ name: "Basil", tag: "herb" });
    // Both tokens of the same user work; the other organization cannot see the plant.
    expect((await fetch(`${base}/plants/77`, { method: "DELETE", headers: auth(elsewhere.token) })).status).toBe(404);
    expect((await fetch(`${base}/plants/77`, { method: "DELETE", headers: auth(second.token) })).status).toBe(204);
    expect((await fetch(`${base}/plants/77`, { method: "DELETE" })).status).toBe(401);
  });

  it("refuses a call without --org or --email", async () => {
    await expect(run("npm", ["run", "--silent", "token", "--", "--org", "Only Org"], { cwd: process.cwd() })).rejects.toMatchObject({ code: 2 });
  });
});
