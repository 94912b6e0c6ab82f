import { OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, type RouteFamily } from "../platform/route";
import { NewPlant, Plant, PlantError, PlantIdParam } from "./schemas";
import { deletePlant, savePlant } from "./service";

const errorBody = (description: string) => ({ description, content: { "application/json": { schema: PlantError } } });
const PLANTS: RouteFamily = { name: "plants", error: errorBody };

const createPlant = defineRoute(PLANTS, {
  operationId: "addPlant",
  method: "post",
  path: "/plants",
  tags: ["Plant store"],
  summary: "Add a plant",
  description: "Adds a plant with the id the client chose. Posting an id that already exists in your organization replaces that plant.",
  security: [{ bearerAuth: [] }],
  request: { body: { required: true, content: { "application/json": { schema: NewPlant } } } },
  responses: {
    200: { description: "The plant", content: { "application/json": { schema: Plant } } },
    400: errorBody("Malformed JSON or a body that is not a New plant; message lists every problem"),
  },
});

const removePlant = defineRoute(PLANTS, {
  operationId: "deletePlant",
  method: "delete",
  path: "/plants/{id}",
  tags: ["Plant store"],
  summary: "Delete a plant",
  security: [{ bearerAuth: [] }],
  request: { params: PlantIdParam },
  responses: {
    204: { description: "Deleted" },
    400: errorBody("id is not an integer"),
    404: errorBody("No plant with this id in your organization"),
  },
});

export const plantRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(createPlant, async (c) => c.json(await savePlant(serviceContext(c), c.req.valid("json")), 200))
  .openapi(removePlant, async (c) => {
    await deletePlant(serviceContext(c), c.req.valid("param").id);
    return c.body(null, 204);
  });
