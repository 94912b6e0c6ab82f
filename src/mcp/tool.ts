import { type CallToolResult, ProtocolError, ProtocolErrorCode, type ResourceLink, type Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../crm/list-query";
import { AppError, InsufficientPermission, Validation } from "../lib/errors";
import { includePermissions } from "../platform/auth";
import { jsonIssues } from "../lib/json-bounds";
import { loggableError, loggableStack } from "../lib/log";
import { issuesFromZod } from "../lib/validation";
import type { Permission } from "../platform/permissions";
import type { ActingFor, RequestMeta, ServiceContext } from "../service-context";

/** What a tool call runs with: the caller's service context (organization, actor) and what its token may do. */
export interface ToolScope {
  ctx: ServiceContext;
  granted: ReadonlySet<Permission>;
  /** Who called, as audit trails record it (the signature envelope's "sent" entries). */
  meta: RequestMeta;
  /** Whether the caller may act on records about `agentUserId` (an agent only on their own), as the HTTP routes decide. */
  actingFor: ActingFor;
  /** The MCP protocol version the client speaks (its MCP-Protocol-Version header): it decides how bad arguments are answered. */
  protocolVersion: string;
}

/**
 * What a tool does to the world, as MCP's tool annotations say it, and as a client decides whether to ask the user
 * first: `read` changes nothing; `write` changes what can be changed back (a contact's fields, a deal's stage);
 * `destructive` does what cannot be taken back (a merge that trashes its sources, a void, a mail sent).
 */
type ToolEffect = "read" | "write" | "destructive";

interface ToolDefinition<S extends z.ZodObject, O extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  permission: Permission;
  /**
   * The HTTP route whose service verb the tool calls (`METHOD /path`, as the OpenAPI document spells it): its
   * permission is the tool's (the registry test holds the two together).
   */
  route: string;
  input: S;
  /** What `run` answers (structuredContent): advertised as the tool's outputSchema. */
  output: O;
  effect: ToolEffect;
  /** Calling it again with the same arguments changes nothing more (idempotentHint): a set, not an add. Reads are. */
  idempotent?: boolean;
  /** Reaches people outside the organization (openWorldHint): mail to signers, surveys to clients. */
  openWorld?: boolean;
  run(input: z.output<S>, scope: ToolScope): Promise<z.input<O>>;
  /** The files the answer points to (a document's PDF, a sealed copy), offered as resource links readable through resources/read. */
  links?(output: z.input<O>): ResourceLink[];
}

export interface McpTool {
  name: string;
  permission: Permission;
  route: string;
  /** The zod schemas behind the definition's JSON Schemas (the registry test checks answers against them). */
  input: z.ZodObject;
  output: z.ZodObject;
  /** What tools/list shows of it, built once per isolate. */
  definition: Tool;
  call(args: Record<string, unknown>, scope: ToolScope): Promise<CallToolResult>;
}

/** Array elements and object members one tools/call may carry: a contact with every list full is well under it. */
export const MAX_TOOL_INPUT_ELEMENTS = 2_000;

/** Whether `value` holds more than `max` array elements and object members, counted until the count passes `max`. */
function exceedsElements(value: unknown, max: number): boolean {
  let count = 0;
  const stack = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== "object") continue;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (++count > max) return true;
      stack.push(child);
    }
  }
  return false;
}

/**
 * MCP 2025-11-25 (SEP-1303) answers arguments that fail validation as a tool result with isError, so the model can
 * correct them; the versions before it list "invalid arguments" among the protocol errors (JSON-RPC -32602).
 */
const argumentErrorsAreResults = (protocolVersion: string) => protocolVersion >= "2025-11-25";

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
    if (!scope.granted.has(permission))
      throw new InsufficientPermission(`Embedding this needs the ${permission} permission, which this access token was not granted`);
  }
}

/** The page inputs of a list tool (`limit`, `cursor`); `listParams` makes them the route's query parameters. */
export const pageInputs = {
  limit: z.int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  cursor: z.string().min(1).max(1000).optional().describe("pagination.nextCursor of the previous page"),
};

/** The sort and page inputs of a list tool over `fields` (the list route's sort fields). */
export const listInputs = <F extends string>(fields: readonly [F, ...F[]]) => ({
  sort: z
    .array(z.strictObject({ field: z.enum(fields), direction: z.enum(["asc", "desc"]).default("asc") }))
    .min(1)
    .max(fields.length)
    .optional()
    .describe("Sort keys in order; default newest first"),
  ...pageInputs,
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

/** An answer: structured content, its JSON as text for clients that read only text, and the files it points to. */
const result = (body: Record<string, unknown>, links: ResourceLink[] = []): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(body) }, ...links],
  structuredContent: body,
});

/**
 * An error as a tool result: text only. Structured content would have to match the tool's outputSchema, which
 * describes its answer, and clients validate what they receive against it (the official ones even on an error).
 */
const errorResult = (body: Record<string, unknown>): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(body) }],
  isError: true,
});

/** A service error as a tool error (MCP: errors of the tool itself are results with isError, not protocol errors). */
function failure(err: unknown, ctx: ServiceContext): CallToolResult {
  if (err instanceof AppError) return errorResult({ error: err.code, message: err.message });
  // Unexpected: logged with the request id, answered without internals, as the HTTP error handler does.
  ctx.log.error("unexpected error", { path: "/mcp", error: loggableError(err), stack: loggableStack(err) });
  return errorResult({ error: "internal_error", message: `Internal error (request id ${ctx.requestId})` });
}

/**
 * Arguments that are not what the tool takes: a JSON-RPC error (-32602) or, from MCP 2025-11-25, a tool error with
 * every issue. Unknown tools are always the JSON-RPC error (mcp/server.ts).
 */
function invalidArguments(tool: string, err: Validation, protocolVersion: string): CallToolResult {
  const issues = err.issues.map(({ field, code, message }) => ({ field, code, message }));
  if (argumentErrorsAreResults(protocolVersion)) return errorResult({ error: err.code, message: err.message, issues });
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments for tool ${tool}: ${err.message}`, { issues });
}

/**
 * Draft 2020-12 (MCP's default dialect), every schema inline (some clients do not follow `$ref`), one `type` per
 * schema (clients that map tool schemas onto a single-type dialect, as Gemini's function declarations do, drop a
 * `type` array: `["string","null"]` is spelt as `anyOf` branches instead).
 */
function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io, reused: "inline", unrepresentable: "any", metadata: z.registry() });
  return portable(json, io);
}

/** What describes a schema rather than constrains it: kept once, beside the `anyOf`, when a `type` array is split. */
const ANNOTATIONS = new Set(["title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$schema"]);

const isEmptyObject = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0;

function portable<T>(node: T, io: "input" | "output"): T {
  if (Array.isArray(node)) return node.map((n) => portable(n, io)) as T;
  if (node === null || typeof node !== "object") return node;
  const entries = Object.entries(node)
    // An answer may carry more than its schema names (a field added later): an outputSchema promises what is there.
    .filter(([key, value]) => !(io === "output" && key === "additionalProperties" && value === false))
    // `additionalProperties: {}` (free-form JSON such as metadata) says what its absence says, and reads as a mistake.
    .filter(([key, value]) => !(key === "additionalProperties" && isEmptyObject(value)))
    .map(([key, value]) => [key, portable(value, io)] as const);
  const types = entries.find(([key]) => key === "type")?.[1];
  if (!Array.isArray(types)) return Object.fromEntries(entries) as T;
  const annotations = entries.filter(([key]) => ANNOTATIONS.has(key));
  const constraints = entries.filter(([key]) => key !== "type" && !ANNOTATIONS.has(key));
  return Object.fromEntries([...annotations, ["anyOf", types.map((type) => Object.fromEntries([["type", type], ...constraints]))]]) as T;
}

/**
 * A tool that checks its permission, then its arguments, then runs one service verb; it answers JSON text and
 * structured content. A Validation error is about the arguments wherever it is raised (the tool's schema, the
 * route's schema through parseWith, a verb's reference check), as it is a 400 on the HTTP routes.
 */
export function defineTool<S extends z.ZodObject, O extends z.ZodObject>(def: ToolDefinition<S, O>): McpTool {
  const annotations = {
    title: def.title,
    readOnlyHint: def.effect === "read",
    destructiveHint: def.effect === "destructive",
    idempotentHint: def.effect === "read" || (def.idempotent ?? false),
    openWorldHint: def.openWorld ?? false,
  };
  return {
    name: def.name,
    permission: def.permission,
    route: def.route,
    input: def.input,
    output: def.output,
    definition: {
      name: def.name,
      title: def.title,
      description: `${def.description}\n\nNeeds the \`${def.permission}\` permission.`,
      inputSchema: jsonSchemaOf(def.input, "input") as Tool["inputSchema"],
      outputSchema: jsonSchemaOf(def.output, "output") as Tool["outputSchema"],
      annotations,
    },
    async call(args, scope) {
      if (!scope.granted.has(def.permission)) {
        return errorResult({
          error: "insufficient_permission",
          message: `The ${def.name} tool needs the ${def.permission} permission, which this access token was not granted`,
          permission: def.permission,
        });
      }
      // A bound on the work any argument check does: refused before the schemas run, whatever the version.
      if (exceedsElements(args, MAX_TOOL_INPUT_ELEMENTS))
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Invalid arguments for tool ${def.name}: more than ${MAX_TOOL_INPUT_ELEMENTS} elements`,
        );
      try {
        // What the routes refuse in any JSON body and no schema expresses: lone surrogates, NUL, deep nesting.
        const issues = jsonIssues(args);
        if (issues.length > 0) throw new Validation(issues);
        const output = await def.run(parseWith(def.input, args), scope);
        return result(output as Record<string, unknown>, def.links?.(output));
      } catch (err) {
        if (err instanceof Validation) return invalidArguments(def.name, err, scope.protocolVersion);
        return failure(err, scope.ctx);
      }
    },
  };
}
