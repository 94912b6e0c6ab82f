// The tool registry as a client sees it (tools/list), against the HTTP routes it mirrors: every tool describes
// itself fully (title, a description to act on, input and output JSON Schemas a client can read without following
// `$ref`), its annotations say what it does, and its permission is its route's.
import { describe, expect, it } from "vitest";
import { MCP_TOOLS } from "../../src/mcp/server";
import { routePermission } from "../../src/platform/permissions";
import { createPrincipal } from "../helpers/factories";
import { connect } from "../helpers/mcp";
import { ROUTES } from "../helpers/route-table";

const DIALECT = "https://json-schema.org/draft/2020-12/schema";

/** Every key anywhere in a JSON value. */
function keysOf(node: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) keysOf(item, into);
  else if (node && typeof node === "object")
    for (const [key, value] of Object.entries(node)) {
      into.add(key);
      keysOf(value, into);
    }
  return into;
}

/** What a tool does, by its own account, for the tools whose effect a user would most regret getting wrong. */
const DESTRUCTIVE = [
  "merge_contacts",
  "resend_signing_link",
  "schedule_showing",
  "send_for_signature",
  "send_survey",
  "use_template",
  "void_envelope",
];
const MAILS_PEOPLE = [
  "send_for_signature",
  "resend_signing_link",
  "void_envelope",
  "send_survey",
  "use_template",
  "schedule_showing",
  "enroll_in_action_plan",
];

describe("the MCP tool registry", () => {
  it("lists at most 127 tools, each named once in snake_case, with a title, an actionable description and its permission", async () => {
    const client = await connect((await createPrincipal()).token);
    const { tools } = await client.listTools();
    await client.close();
    // Some clients cap a server at 128 tools.
    expect(tools.length).toBeLessThan(128);
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    for (const t of tools) {
      const registered = MCP_TOOLS.find((r) => r.name === t.name)!;
      expect(t.name, t.name).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)+$/);
      expect(t.title, t.name).toBeTruthy();
      expect(t.annotations?.title, t.name).toBe(t.title);
      expect(t.description!.length, t.name).toBeGreaterThan(60);
      expect(t.description, t.name).toContain(`Needs the \`${registered.permission}\` permission.`);
    }
  });

  it("gives every tool input and output JSON Schemas of draft 2020-12, objects at the root, with no $ref anywhere", async () => {
    const client = await connect((await createPrincipal()).token);
    const { tools } = await client.listTools();
    await client.close();
    for (const t of tools) {
      for (const [which, schema] of [
        ["input", t.inputSchema],
        ["output", t.outputSchema],
      ] as const) {
        expect(schema, `${t.name} ${which}`).toBeDefined();
        expect(schema!.type, `${t.name} ${which}`).toBe("object");
        expect((schema as { $schema?: string }).$schema, `${t.name} ${which}`).toBe(DIALECT);
        const keys = keysOf(schema);
        expect(keys.has("$ref"), `${t.name} ${which} uses $ref`).toBe(false);
        expect(keys.has("$defs") || keys.has("definitions"), `${t.name} ${which} has definitions`).toBe(false);
      }
      // Inputs are closed: a misspelt argument is refused, not ignored.
      expect(t.inputSchema.additionalProperties, t.name).toBe(false);
    }
  });

  it("annotates every tool truthfully: reads are read-only and idempotent, the irreversible ones destructive, mail open-world", async () => {
    const client = await connect((await createPrincipal()).token);
    const { tools } = await client.listTools();
    await client.close();
    for (const t of tools) {
      const a = t.annotations!;
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const)
        expect(typeof a[hint], `${t.name} ${hint}`).toBe("boolean");
      if (a.readOnlyHint) {
        expect(a.destructiveHint, t.name).toBe(false);
        expect(a.idempotentHint, t.name).toBe(true);
        // A read needs a read permission or draws nothing from the world (draft_document only answers).
        expect(t.name, t.name).toMatch(/^(find|get|list|search|my|recent|daily|reputation|property|draft|smart)_/);
      }
      if (MAILS_PEOPLE.includes(t.name)) expect(a.openWorldHint, t.name).toBe(true);
    }
    // Exactly these cannot be taken back; every other write can.
    expect(tools.filter((t) => t.annotations!.destructiveHint).map((t) => t.name)).toEqual([...DESTRUCTIVE].sort());
  });

  it("holds every tool to the route whose verb it calls: the route exists and needs the tool's permission", () => {
    const served = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
    for (const t of MCP_TOOLS) {
      const [method, path] = t.route.split(" ") as [string, string];
      expect(served.has(t.route), `${t.name}: ${t.route} is not in the route table`).toBe(true);
      const concrete = path.replace(/\{[^}]+\}/g, "x");
      expect(routePermission(method, concrete), `${t.name} (${t.route})`).toBe(t.permission);
    }
  });
});
