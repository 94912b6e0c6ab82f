import { OpenAPIHono, z } from "@hono/zod-openapi";
import { API, apiError, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { MAX_HITS, MAX_QUERY_CHARS, searchDocuments } from "./indexing";

export const SearchQuery = z.strictObject({
  q: z
    .string()
    .max(MAX_QUERY_CHARS)
    // As for every text this API takes: no NUL or other control characters, no lone surrogates.
    .refine((v) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v) && v.isWellFormed(), {
      message: "Must be text without control characters",
      params: { code: "invalid_character" },
    })
    .optional()
    .openapi({
      example: "lease on Queen St W",
      description: `Natural-language query, at most ${MAX_QUERY_CHARS} characters (more is a 400). Empty or missing: no hits, and the AI gateway is not called.`,
    }),
});

export const SearchHit = z
  .object({
    documentId: z.string(),
    score: z.number().min(0).max(1).openapi({
      description:
        "Cosine similarity of the query and the document's best-matching chunk, clamped to 0–1; higher is more similar; documents sharing nothing with the query (0) are left out",
    }),
  })
  .openapi("SearchHit");

export const SearchResult = z
  .object({ hits: z.array(SearchHit).openapi({ description: `Best first, one per document, at most ${MAX_HITS}` }) })
  .openapi("SearchResult");

const search = defineRoute(API, {
  operationId: "searchDocuments",
  method: "get",
  path: "/api/documents/search",
  tags: ["Documents"],
  security: [{ bearerAuth: [] }],
  summary: "Search your organization's documents by meaning",
  description:
    "Embeds `q` with the AI gateway's embedding model and ranks your organization's documents by the cosine similarity of their text (form, parties, address, dates, amounts; a free-form document's title and body). Documents are indexed shortly after they are generated (DOCUMENT_GENERATED). Without an AI gateway configured every query answers `hits: []`.",
  request: { query: SearchQuery },
  responses: {
    200: apiJson("The hits", SearchResult),
    502: apiError("The AI gateway failed or could not be reached (ai_gateway_error, ai_gateway_unreachable, ai_gateway_bad_response)"),
  },
});

// Mounted before documentRoutes (src/app.ts): /api/documents/{id} would otherwise read "search" as an id.
export const searchRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(search, async (c) =>
  c.json({ hits: await searchDocuments(serviceContext(c), c.req.valid("query").q) }, 200),
);
