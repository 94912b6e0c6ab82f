import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, Page } from "../crm/body";
import { requirePermission, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { RESTORE_DAYS } from "../crm/trash";
import { TRASH_KINDS, TrashItem, TrashListQuery } from "./schemas";
import { listTrash } from "./service";

const READ_PERMISSION = { contact: "contacts:read", deal: "deals:read", property: "properties:read", template: "templates:read" } as const;

const list = defineRoute(CRM, {
  operationId: "listTrash",
  method: "get",
  path: "/v1/trash",
  tags: ["Trash"],
  security: [{ bearerAuth: [] }],
  summary: "Deleted contacts, deals and properties that can still be restored",
  description: `Newest delete first, keyset-paginated. A record stays restorable for ${RESTORE_DAYS} days
(\`POST /v1/{contacts|deals|properties}/{id}/restore\`); the purge then removes it with its files, and references to it
show \`{id, deleted: true, deletedAt}\`. An access token needs the read permission of every kind it lists.`,
  request: { query: TrashListQuery },
  responses: { 200: { description: "A page of restorable records", content: { "application/json": { schema: Page(TrashItem) } } } },
});

export const trashRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(list, async (c) => {
  const q = c.req.valid("query");
  for (const kind of q.kind ? [q.kind] : TRASH_KINDS) requirePermission(c, READ_PERMISSION[kind]);
  return c.json({ success: true as const, ...(await listTrash(serviceContext(c), q)) }, 200);
});
