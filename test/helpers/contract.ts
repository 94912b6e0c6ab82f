import { Validator } from "@cfworker/json-schema";
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

let docPromise: Promise<{ doc: Doc; templates: { template: string; re: RegExp; params: number }[] }> | undefined;
const validators = new Map<string, Validator>();

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
    return { doc, templates };
  })();
  return docPromise;
}

/** Why `res` (already received for `method url`) breaks the document, or null when it matches. */
export async function contractViolation(method: string, url: string, res: Response): Promise<string | null> {
  const { doc, templates } = await loadDoc();
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
  const key = `${op.operationId} ${res.status} ${contentType}`;
  let validator = validators.get(key);
  if (!validator) {
    // The schema's $refs point into #/components of the document: carry them along at the root.
    validator = new Validator({ ...media.schema, components: doc.components } as Schema, "2020-12", false);
    validators.set(key, validator);
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return `${op.operationId} answered ${res.status} with a body that is not JSON`;
  }
  const result = validator.validate(value);
  if (result.valid) return null;
  const errors = result.errors.slice(0, 5).map((e) => `${e.instanceLocation}: ${e.error}`);
  return `${op.operationId} answered ${res.status} with a body that breaks its schema:\n  ${errors.join("\n  ")}`;
}
