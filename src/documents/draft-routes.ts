import { OpenAPIHono, z } from "@hono/zod-openapi";
import { API, ApiError, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { DraftFailure, DraftRequest, DraftResult, draftDocument, MAX_DRAFT_PROMPT_CHARS } from "./draft";

const draft = defineRoute(API, {
  operationId: "createDocumentDraft",
  method: "post",
  path: "/api/documents/draft",
  tags: ["Documents"],
  security: [{ bearerAuth: [] }],
  summary: "Draft a form's canonical data from a prompt, with AI",
  description: `The AI gateway picks the typed form the prompt describes (lease, agreement of purchase and sale, listing agreement, buyer representation agreement, amendment; GET /api/documents/forms) and answers its canonical draft with \`provenance.aiDrafted: true\`, validated against that form's schema as POST /api/documents validates it. The draft is for a person to review, then to send to POST /api/documents; it is never stored. A prompt over ${MAX_DRAFT_PROMPT_CHARS} characters is a 400.`,
  request: jsonBody(DraftRequest),
  responses: {
    200: apiJson("The draft, valid against the form's schema", DraftResult),
    // The idempotency layer's 422 (idempotency_key_reused) shares the status, hence either body.
    422: apiJson(
      "draft_failed: `no_json` (the model's answer is not JSON), `invalid_draft` (it breaks the canonical schema; every issue listed, paths from `canonical`), `error` (no AI gateway configured, or it failed)",
      z.union([DraftFailure, ApiError]),
    ),
  },
});

export const draftRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(draft, async (c) => {
  const outcome = await draftDocument(serviceContext(c), c.req.valid("json"));
  if (!outcome.ok) return c.json({ error: "draft_failed" as const, reason: outcome.reason, issues: outcome.issues }, 422);
  return c.json({ formKey: outcome.formKey, canonical: outcome.canonical }, 200);
});
