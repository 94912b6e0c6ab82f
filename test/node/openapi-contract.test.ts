// The API contract as a product (issue 16), checked in Node with tools nobody here wrote: Redocly's linter on the
// document the routes declare, stable operationIds, and a typed client that matches the document.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
const run = promisify(execFile);

/** The document as `node scripts/openapi.mjs` builds it (in a child process: esbuild wants a plain Node). */
async function writeDocument(): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), "openapi-")), "openapi.json");
  await run("node", ["scripts/openapi.mjs", file], { cwd: process.cwd() });
  return file;
}
/** Built once for the file: both checks below read the same document (a build is a few seconds of esbuild and Node). */
let built: Promise<string> | undefined;
const documentFile = () => (built ??= writeDocument());
type Doc = { paths: Record<string, Record<string, { operationId?: string; responses: Record<string, unknown> }>> };

describe("the OpenAPI document", () => {
  it("passes Redocly's recommended lint with no error and no warning", async () => {
    const file = await documentFile();
    const { stdout } = await run("npx", ["redocly", "lint", file, "--format=json"], {
      cwd: process.cwd(),
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    }).catch((err: { stdout: string }) => err);
    const report = JSON.parse(stdout.slice(stdout.indexOf("{"))) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string }[];
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it("names every operation with a unique camelCase verbNoun operationId and declares a 4xx for each", async () => {
    const doc = JSON.parse(readFileSync(await documentFile(), "utf8")) as Doc;
    const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ at: `${method.toUpperCase()} ${path}`, ...op })),
    );
    expect(ops.length).toBeGreaterThan(20);
    for (const op of ops) {
      expect(op.operationId, op.at).toMatch(
        /^(list|get|create|update|delete|add|bulkUpdate|send|replay|void|open|actOn|download|approve|publish|unpublish|reject|preflight|upload|reorder|record|sync|move|complete|activate|deactivate|accept|search|reissue|resend|skip|authorize|submit|exchange|register|verify|restore|revoke|rotate|recover|merge|cancel|export|claim|preview|enroll|pause|resume|stop)[A-Z][A-Za-z]+$/,
      );
      expect(
        Object.keys(op.responses).some((s) => s.startsWith("4")),
        op.at,
      ).toBe(true);
    }
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
  });

  it("has a typed client (src/client/schema.d.ts) generated from the current document", async () => {
    const result = await run("node", ["scripts/typegen/generate.mjs", "--check"], { cwd: process.cwd() }).then(
      () => "current",
      (err: { stderr: string }) => err.stderr,
    );
    expect(result).toBe("current");
  });
});
