import { dereference, type Schema as JsonSchema, validate } from "@cfworker/json-schema";
import { exports } from "cloudflare:workers";

/**
 * Every response the suite receives through `call()` is checked against what /openapi.json declares for its route
 * (issue 16): the status is declared, the content type is the declared one, and the body is valid against the
 * declared schema (JSON Schema 2020-12, the dialect of OpenAPI 3.1). The validator is @cfworker/json-schema: it
 * interprets schemas instead of compiling them to code, which workerd does not allow (no eval).
 */
type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: Schema;
}

/** Served by the Worker but not API operations: the document and its reference page. */
const DOCUMENTATION = new Set(["/openapi.json", "/docs"]);
const AUTHENTICATED_PREFIX = /^\/(v1|api(?!\/public\/)|plants)(\/|$)/;

let docPromise:
  | Promise<{ doc: Doc; templates: { template: string; re: RegExp; params: number }[]; lookup: ReturnType<typeof dereference> }>
  | undefined;

function loadDoc() {
  docPromise ??= (async () => {
    const doc = (await (await exports.default.fetch(new Request("http://api.test/openapi.json"))).json()) as Doc;
    const templates = Object.keys(doc.paths)
      .map((template) => ({
        template,
        re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      // A literal segment wins over a parameter (/v1/contacts/tags before /v1/contacts/{id}), as the router decides.
      .sort((a, b) => a.params - b.params);
    // Every schema of the document, indexed once: a response schema's $refs point into #/components, found here.
    // (A validator per operation and status indexed the whole document again, ~1.7 MB: 7 to 37 ms each, hundreds
    // of them per runtime.)
    const lookup = dereference(doc as unknown as JsonSchema);
    return { doc, templates, lookup };
  })();
  return docPromise;
}

/** Why `res` (already received for `method url`) breaks the document, or null when it matches. */
export async function contractViolation(method: string, url: string, res: Response): Promise<string | null> {
  const { doc, templates, lookup } = await loadDoc();
  const path = new URL(url).pathname;
  if (DOCUMENTATION.has(path)) return null;
  const template = templates.find((t) => t.re.test(path) && doc.paths[t.template]![method.toLowerCase()]);
  const where = `${method} ${path}`;
  // An undeclared path is a 404, or a 401 under the authenticated prefixes, where the token is checked before routing.
  if (!template)
    return res.status === 404 || (res.status === 401 && AUTHENTICATED_PREFIX.test(path))
      ? null
      : `${where} is no declared operation, yet answered ${res.status}`;
  const op = doc.paths[template.template]![method.toLowerCase()]!;
  const declared = op.responses[String(res.status)];
  if (!declared)
    return `${op.operationId} (${where}) answered ${res.status}, which it does not declare (declared: ${Object.keys(op.responses).join(", ")})`;
  const body = await res.clone().text();
  if (!declared.content) return body === "" ? null : `${op.operationId} answered ${res.status} with a body where none is declared`;
  const contentType = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const media = declared.content[contentType];
  if (!media)
    return `${op.operationId} answered ${res.status} as ${contentType || "no content type"}, declared: ${Object.keys(declared.content).join(", ")}`;
  // A file or a page: its declared content type is the contract; only JSON has a schema to check.
  if (contentType !== "application/json") return null;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return `${op.operationId} answered ${res.status} with a body that is not JSON`;
  }
  const result = validate(value, media.schema as JsonSchema, "2020-12", lookup, false);
  if (result.valid) return null;
  const errors = result.errors.slice(0, 5).map((e) => `${e.instanceLocation}: ${e.error}`);
  return `${op.operationId} answered ${res.status} with a body that breaks its schema:\n  ${errors.join("\n  ")}`;
}
