import {
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  type ResourceLink,
  ResourceNotFoundError,
} from "@modelcontextprotocol/server";
import { documentPdf } from "../documents/service";
import { AppError, NotFound } from "../lib/errors";
import { toBase64 } from "../lib/crypto";
import type { Permission } from "../platform/permissions";
import { envelopeFile } from "../signatures/service";
import type { ToolScope } from "./tool";

/**
 * The files a tool's answer points to, as MCP resources: a document's PDF, a completed envelope's sealed PDF and its
 * certificate of completion. Tools answer them as `resource_link`s; `resources/read` reads one with the caller's own
 * permissions (the HTTP routes' link answers are signed URLs; here the bytes come in-band, base64 as MCP carries
 * binary). Nothing is listed (`resources/list` is empty): the organization's files are found through the tools.
 */
const SCHEME = "brokerage:";

interface ResourceKind {
  /** The URI's path after the scheme, with `{id}` for the document's or envelope's id. */
  template: string;
  name: string;
  title: string;
  description: string;
  permission: Permission;
  read(scope: ToolScope, id: string): Promise<Uint8Array>;
}

const KINDS: ResourceKind[] = [
  {
    template: "//documents/{id}/document.pdf",
    name: "document-pdf",
    title: "A document's PDF",
    description: "The document as its form renders it (GET /api/documents/{id} describes it)",
    permission: "documents:read",
    read: (scope, id) => documentPdf(scope.ctx, id),
  },
  {
    template: "//envelopes/{id}/signed.pdf",
    name: "envelope-signed-pdf",
    title: "A completed envelope's sealed PDF",
    description: "The signed document with every signature, sealed (PAdES); exists once the envelope is completed",
    permission: "signatures:read",
    read: (scope, id) => envelopeFile(scope.ctx, id, "sealed"),
  },
  {
    template: "//envelopes/{id}/certificate.pdf",
    name: "envelope-certificate",
    title: "A completed envelope's certificate of completion",
    description: "Who signed what, when and from where, with the audit trail's hash chain; exists once the envelope is completed",
    permission: "signatures:read",
    read: (scope, id) => envelopeFile(scope.ctx, id, "certificate"),
  },
];

const ID = "[A-Za-z0-9_-]{1,100}";
const MATCHERS = KINDS.map((kind) => ({
  kind,
  pattern: new RegExp(`^${SCHEME}${kind.template.replace("{id}", `(${ID})`).replaceAll(".", "\\.")}$`),
}));

/** The kind of file a URI names and the id in it, or null for a URI of no kind served here. */
function parse(uri: string): { kind: ResourceKind; id: string } | null {
  for (const { kind, pattern } of MATCHERS) {
    const m = pattern.exec(uri);
    if (m) return { kind, id: m[1]! };
  }
  return null;
}

/** The permission reading `uri` needs (the step-up names it), or null for a URI served by nothing. */
export const resourcePermission = (uri: string): Permission | null => parse(uri)?.kind.permission ?? null;

/** A link to one of the files, for a tool's answer. */
export function resourceLink(name: "document-pdf" | "envelope-signed-pdf" | "envelope-certificate", id: string): ResourceLink {
  const kind = KINDS.find((k) => k.name === name)!;
  return {
    type: "resource_link",
    uri: `${SCHEME}${kind.template.replace("{id}", id)}`,
    name: kind.name,
    title: kind.title,
    description: kind.description,
    mimeType: "application/pdf",
  };
}

export const RESOURCE_TEMPLATES = {
  resourceTemplates: KINDS.map((k) => ({
    uriTemplate: `${SCHEME}${k.template}`,
    name: k.name,
    title: k.title,
    description: `${k.description}. Needs the \`${k.permission}\` permission.`,
    mimeType: "application/pdf",
  })),
};

/**
 * resources/read. A URI served by nothing here, or an id unknown in the caller's organization, is the not-found error
 * (-32602 on the wire, as MCP 2026-07-28 says); a file that does not exist yet (an envelope not completed) is -32602
 * with the service's code; a permission the credential lacks is -32600 naming it (an OAuth access token whose user's
 * role allows it is stepped up before this: mcp/routes.ts).
 */
export async function readResource(uri: string, scope: ToolScope): Promise<ReadResourceResult> {
  const found = parse(uri);
  if (!found) throw new ResourceNotFoundError(uri);
  if (!scope.granted.has(found.kind.permission))
    throw new ProtocolError(
      ProtocolErrorCode.InvalidRequest,
      `Reading ${uri} needs the ${found.kind.permission} permission, which this credential was not granted`,
    );
  try {
    const bytes = await found.kind.read(scope, found.id);
    return { contents: [{ uri, mimeType: "application/pdf", blob: toBase64(bytes) }] };
  } catch (err) {
    if (err instanceof NotFound) throw new ResourceNotFoundError(uri);
    if (err instanceof AppError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message, { error: err.code });
    throw err;
  }
}
