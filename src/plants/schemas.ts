import { z } from "@hono/zod-openapi";

/** Plant (spec: Sample plant store): name required, tag an optional type label. */
export const Plant = z
  .object({
    name: z.string().min(1).openapi({ example: "Monstera" }),
    tag: z.string().optional().openapi({ example: "tropical" }),
  })
  .openapi("Plant");
export type Plant = z.infer<typeof Plant>;

/** Longest name and tag stored (the spec sets none; every stored field has one, so a plant always fits in an event). */
export const MAX_PLANT_NAME = 200;
export const MAX_PLANT_TAG = 100;

/** New plant: Plant plus the client-chosen id (int64; JSON numbers are exact up to 2^53 - 1). */
export const NewPlant = z
  .object({
    name: z.string().min(1).max(MAX_PLANT_NAME),
    tag: z.string().max(MAX_PLANT_TAG).optional(),
    id: z.int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).openapi({ format: "int64", example: 42 }),
  })
  .openapi("NewPlant");
export type NewPlant = z.infer<typeof NewPlant>;

export const PlantError = z
  .object({
    error: z.int().openapi({ format: "int32", example: 400 }),
    message: z.string().openapi({ example: "id: Required" }),
  })
  .openapi("Error");

export const PlantIdParam = z.object({
  id: z
    .string()
    .regex(/^-?\d{1,16}$/, "id must be an integer")
    .pipe(z.coerce.number<string>().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER))
    .openapi({ param: { name: "id", in: "path" }, type: "integer", format: "int64", example: 42 }),
});
