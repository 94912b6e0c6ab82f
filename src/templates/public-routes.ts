import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { sha256Hex } from "../lib/crypto";
import { API, apiError, apiJson, Gone, gone } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { admitForAddress, rateLimit } from "../platform/rate-limit";
import { requestMeta } from "../platform/request-meta";
import { defineRoute, jsonBody } from "../platform/route";
import { openPublicKey, publicServiceContext } from "../platform/session";
import type { ServiceContext } from "../service-context";
import { publicLinkPage } from "./page";
import { CODE_TRIES, publicTemplate, sendVisitorCode, startVisitorEnvelope } from "./public-link";
import { RoleRecipient } from "./schemas";

const tags = ["Templates (public)"];
const SlugParam = z.object({
  slug: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "slug", in: "path" } }),
});
const GONE = { 404: { description: "No such link, or it was disabled (alike)", content: { "application/json": { schema: Gone } } } };
const RATE_LIMITED = { 429: apiError("Too many requests from this address, or for this e-mail (rate_limited)") };
const Visitor = RoleRecipient.pick({ name: true, email: true }).strict().openapi("TemplateLinkVisitor");
const VisitorStart = Visitor.extend({ code: z.string().regex(/^\d{6}$/, "Six digits") }).openapi("TemplateLinkStart");

const read = defineRoute(API, {
  operationId: "getPublicTemplateLink",
  security: [],
  method: "get",
  path: "/api/public/templates/{slug}",
  tags,
  summary: "What a template's public link asks its visitor to sign",
  description: "No authentication. 60 requests a minute per address.",
  middleware: [rateLimit("public-template:get")] as const,
  request: { params: SlugParam },
  responses: {
    200: apiJson(
      "The template's name and title, its pages, the visitor's role",
      z.object({
        template: z.object({ name: z.string(), title: z.string(), pageCount: z.int() }),
        role: z.object({ key: z.string(), label: z.string() }),
      }),
    ),
    ...GONE,
    ...RATE_LIMITED,
  },
});

const code = defineRoute(API, {
  operationId: "sendTemplateLinkCode",
  security: [],
  method: "post",
  path: "/api/public/templates/{slug}/code",
  tags,
  summary: "Mail the visitor a code that proves their e-mail",
  description:
    "A 6-digit code, valid 10 minutes, mailed to the address. 20 requests a minute per client address; 5 codes per 15 minutes per e-mail.",
  middleware: [rateLimit("public-template:post")] as const,
  request: { params: SlugParam, ...jsonBody(Visitor) },
  responses: { 202: apiJson("Mailed", z.object({ sent: z.literal(true) })), ...GONE, ...RATE_LIMITED },
});

const start = defineRoute(API, {
  operationId: "createTemplateLinkEnvelope",
  security: [],
  method: "post",
  path: "/api/public/templates/{slug}/start",
  tags,
  summary: "With the mailed code: make the visitor's envelope from the template and answer their signing link",
  description: `The code is checked against the newest one mailed to the address (${CODE_TRIES} tries; 422 invalid_code with
\`attemptsLeft\`, 422 code_expired once spent or expired: ask for a new one). A right code is used once: the envelope is made
from the template (\`source: public_link\`) with the visitor in the link's role and the link's recipients in the others, and
the answer is the visitor's signing URL (also mailed to them, as to any recipient).`,
  middleware: [rateLimit("public-template:post")] as const,
  request: { params: SlugParam, ...jsonBody(VisitorStart) },
  responses: {
    201: apiJson("The visitor's signing link", z.object({ url: z.string(), envelopeId: z.string() })),
    ...GONE,
    422: apiError("A wrong code (invalid_code, with attemptsLeft) or none live (code_expired); or the visitor's details"),
    ...RATE_LIMITED,
  },
});

const page = defineRoute(API, {
  operationId: "getTemplateLinkPage",
  security: [],
  method: "get",
  path: "/t/{slug}",
  tags,
  summary: "The public link's page",
  description: "An HTML page: the visitor's name and e-mail, the mailed code, then the signing page of their envelope.",
  middleware: [rateLimit("public-template:get")] as const,
  request: { params: SlugParam },
  responses: {
    200: { description: "The page", content: { "text/html": { schema: z.string() } } },
    404: { description: "The link is unknown or disabled (a page that says so)", content: { "text/html": { schema: z.string() } } },
    ...RATE_LIMITED,
  },
});

/** The link's organization from the directory (by the slug's hash) with its shard opened; null answers as gone. */
async function linkContext(c: Context<AppBindings>, slug: string): Promise<{ ctx: ServiceContext; slugHash: string } | null> {
  const slugHash = await sha256Hex(slug);
  const organizationId = await openPublicKey(c, "template_link", slugHash);
  return organizationId ? { ctx: publicServiceContext(c, organizationId), slugHash } : null;
}

export const templatePublicRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
templatePublicRoutes.use("/api/public/templates/*", async (c, next) => {
  await next();
  c.header("Cache-Control", "no-store");
});
templatePublicRoutes
  .openapi(read, async (c) => {
    const open = await linkContext(c, c.req.valid("param").slug);
    const shown = open && (await publicTemplate(open.ctx, open.slugHash));
    return shown ? c.json(shown, 200) : gone(c);
  })
  .openapi(code, async (c) => {
    const visitor = c.req.valid("json");
    const open = await linkContext(c, c.req.valid("param").slug);
    if (!open) return gone(c);
    await admitForAddress(c, "template-link-mail:email", visitor.email);
    const sent = await sendVisitorCode(open.ctx, open.slugHash, visitor.email);
    return sent ? c.json(sent, 202) : gone(c);
  })
  .openapi(start, async (c) => {
    const { code: typed, ...visitor } = c.req.valid("json");
    const open = await linkContext(c, c.req.valid("param").slug);
    if (!open) return gone(c);
    await admitForAddress(c, "template-link-code:email", visitor.email);
    const outcome = await startVisitorEnvelope(open.ctx, open.slugHash, visitor, typed, requestMeta(c));
    if (outcome.kind === "gone") return gone(c);
    if (outcome.kind === "wrong")
      return c.json(
        { error: "invalid_code", message: "The code is not the one mailed to this address", attemptsLeft: outcome.attemptsLeft },
        422,
      ) as never;
    if (outcome.kind === "spent")
      return c.json({ error: "code_expired", message: "No live code for this address: ask for a new one" }, 422) as never;
    return c.json({ url: outcome.url, envelopeId: outcome.envelopeId }, 201);
  })
  .openapi(page, async (c) => {
    const { slug } = c.req.valid("param");
    const open = await linkContext(c, slug);
    return publicLinkPage(c, slug, open && (await publicTemplate(open.ctx, open.slugHash))) as never;
  });
