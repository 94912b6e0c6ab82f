import { OpenAPIHono, z } from "@hono/zod-openapi";
import { NoQuery } from "../crm/list-query";
import { API, apiJson } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { listForms } from "./service";

export const FormSummary = z
  .object({
    formKey: z.string().openapi({ example: "on/agreement-of-purchase-and-sale" }),
    title: z.string(),
    roles: z
      .array(z.string())
      .openapi({ description: "The signing roles, in the order a sequential envelope follows", example: ["buyer", "seller"] }),
    signable: z
      .boolean()
      .openapi({ description: "Whether a document of this form can be sent for signature (its parties derive from it)" }),
    schema: z
      .record(z.string(), z.unknown())
      .openapi({ description: "The canonical's JSON Schema (draft 2020-12), the one POST /api/documents validates `canonical` with" }),
  })
  .openapi("FormSummary");

export const FormList = z.object({ forms: z.array(FormSummary) }).openapi("FormList");

const list = defineRoute(API, {
  operationId: "listDocumentForms",
  method: "get",
  path: "/api/documents/forms",
  tags: ["Documents"],
  security: [{ bearerAuth: [] }],
  summary: "The forms a document can be generated from",
  description:
    "Each form's key, title, signing roles and canonical JSON Schema, so a client (or an AI agent) can build a canonical for POST /api/documents without reading our source.",
  request: { query: NoQuery },
  responses: { 200: apiJson("The forms", FormList) },
});

// Mounted before documentRoutes (src/app.ts): /api/documents/{id} would otherwise read "forms" as an id.
export const formRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(list, (c) =>
  c.json({ forms: listForms() }, 200),
);
