import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../crm/list-query";
import { AppError, InsufficientPermission, Validation } from "../lib/errors";
import { includePermissions } from "../platform/auth";
import { jsonIssues } from "../lib/json-bounds";
import { loggableError, loggableStack } from "../lib/log";
import { issuesFromZod } from "../lib/validation";
import type { Permission } from "../oauth/permissions";
import type { ServiceContext } from "../platform/context";
import type { RequestMeta } from "../signatures/machine";

/** What a tool call runs with: the caller's service context (organization, actor) and what its token may do. */
export interface ToolScope {
  ctx: ServiceContext;
  granted: ReadonlySet<Permission>;
  /** Who called, as audit trails record it (the signature envelope's "sent" entries). */
  meta: RequestMeta;
}

interface ToolDefinition<S extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  permission: Permission;
  input: S;
  /** Reads only (MCP tool annotation readOnlyHint): clients may call it without asking the user. */
  readOnly?: boolean;
  /** Reaches people outside the organization (openWorldHint): sending mail to signers. */
  openWorld?: boolean;
  run(input: z.output<S>, scope: ToolScope): Promise<Record<string, unknown>>;
}

export interface McpTool {
  name: string;
  permission: Permission;
  register(server: McpServer, scope: ToolScope): void;
}

/**
 * Parses `input` with a route's own schema, so a tool takes exactly what the route takes (bounds, refinements); a
 * failure is the same Validation error the route would raise, with every issue.
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new Validation(issuesFromZod(parsed.error, input));
  return parsed.data;
}

/** Refuses, as the /v1 routes do, an embed (`include`) of what the token could not read by itself. */
export function requireEmbeds(scope: ToolScope, include: readonly string[] | undefined): void {
  for (const permission of includePermissions(include)) {
    if (!scope.granted.has(permission)) throw new InsufficientPermission(`Embedding this needs the ${permission} permission, which this access token was not granted`);
  }
}

/** The sort and page inputs of a list tool over `fields` (the list route's sort fields). */
export const listInputs = <F extends string>(fields: readonly [F, ...F[]]) => ({
  sort: z
    .array(z.strictObject({ field: z.enum(fields), direction: z.enum(["asc", "desc"]).default("asc") }))
    .min(1)
    .max(fields.length)
    .optional()
    .describe("Sort keys in order; default newest first"),
  limit: z.int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  cursor: z.string().min(1).max(1000).optional().describe("pagination.nextCursor of the previous page"),
});

/** Those inputs as the list route's query parameters (`sort=field:direction,…`). */
export const listParams = (i: { sort?: { field: string; direction: string }[]; limit: number; cursor?: string }) => ({
  limit: String(i.limit),
  cursor: i.cursor,
  sort: i.sort?.map((k) => `${k.field}:${k.direction}`).join(","),
});

/** A list route's query parameters from a tool's input: the ones given. */
export const definedOnly = (params: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));

const result = (body: Record<string, unknown>, isError = false): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(body) }],
  structuredContent: body,
  ...(isError ? { isError: true } : {}),
});

/** A service error as a tool error (MCP: errors of the tool itself are results with isError, not protocol errors). */
function failure(err: unknown, ctx: ServiceContext): CallToolResult {
  if (err instanceof Validation) {
    return result({ error: err.code, message: err.message, issues: err.issues.map(({ field, code, message }) => ({ field, code, message })) }, true);
  }
  if (err instanceof AppError) return result({ error: err.code, message: err.message }, true);
  // Unexpected: logged with the request id, answered without internals, as the HTTP error handler does.
  console.error(JSON.stringify({ level: "error", requestId: ctx.requestId, path: "/mcp", error: loggableError(err), stack: loggableStack(err) }));
  return result({ error: "internal_error", message: `Internal error (request id ${ctx.requestId})` }, true);
}

/** A tool that checks its permission first, then runs one service verb; it answers JSON text and structured content. */
export function defineTool<S extends z.ZodObject>(def: ToolDefinition<S>): McpTool {
  return {
    name: def.name,
    permission: def.permission,
    register(server, scope) {
      // No tool deletes anything: the writes add (a contact, an activity, an envelope) or move a deal.
      const annotations = { title: def.title, readOnlyHint: def.readOnly ?? false, destructiveHint: false, openWorldHint: def.openWorld ?? false };
      const description = `${def.description}\n\nNeeds the \`${def.permission}\` permission.`;
      // Registered as a plain object schema: the SDK's callback type does not resolve through a generic one.
      const inputSchema: z.ZodObject = def.input;
      server.registerTool(def.name, { title: def.title, description, inputSchema, annotations }, async (input) => {
        if (!scope.granted.has(def.permission)) {
          return result({ error: "insufficient_permission", message: `The ${def.name} tool needs the ${def.permission} permission, which this access token was not granted`, permission: def.permission }, true);
        }
        try {
          // What the routes refuse in any JSON body and no schema expresses: lone surrogates, NUL, deep nesting.
          const issues = jsonIssues(input);
          if (issues.length > 0) throw new Validation(issues);
          return result(await def.run(input as z.output<S>, scope));
        } catch (err) {
          return failure(err, scope.ctx);
        }
      });
    },
  };
}
