import { z } from "@hono/zod-openapi";
import { APPOINTMENT_TARGETS, TASK_TARGETS } from "./agenda-columns";
import { CONTACT_TARGETS, PROPERTY_TARGETS } from "./mapping";

export const IMPORT_KINDS = ["contacts", "properties", "tasks", "appointments"] as const;
export const IMPORT_STATUSES = ["queued", "running", "completed", "failed", "cancelled"] as const;
export const DUPLICATE_RULES = ["skip", "update", "merge"] as const;
/** Rows a JSON body may carry; a larger book goes as a CSV. */
export const MAX_JSON_ROWS = 1000;

const kind = z.enum(IMPORT_KINDS).openapi({
  description:
    "What the rows are. `tasks` and `appointments`: Follow Up Boss's (its API's fields, `invitees` a list), each naming its person by `personEmail` or `personPhone`, after the people were imported",
});
const onDuplicate = z.enum(DUPLICATE_RULES).openapi({
  description:
    "A row matching an existing record (a contact by any e-mail, case-folded, or phone; a property by mlsId): `skip` it (default), `update` the record with the row's non-blank values (tags are added), or `merge`: fill only the record's empty fields",
});
const MAPPING_DESCRIPTION = `Column → field, over the defaults detected from the header (Follow Up Boss and kvCORE exports, or the API's own field names). Fields of contacts: ${CONTACT_TARGETS.join(", ")}; of properties: ${PROPERTY_TARGETS.join(", ")}; of tasks: ${TASK_TARGETS.join(", ")}; of appointments: ${APPOINTMENT_TARGETS.join(", ")}; and customFields.<key> (contacts, properties). "ignore" drops a column.`;
const mapping = z
  .record(z.string().min(1).max(200), z.string().min(1).max(100))
  .openapi({ description: MAPPING_DESCRIPTION, example: { "Cell Phone": "secondaryPhone", Birthday: "ignore" } });

/** The query of POST /v1/imports: a CSV body takes its kind and options here (a JSON body carries its own). */
export const ImportQuery = z.strictObject({
  kind: kind.optional().openapi({ description: "Required with a CSV body" }),
  onDuplicate: onDuplicate.optional(),
  mapping: z
    .string()
    .max(20_000)
    .optional()
    .openapi({ description: `With a CSV body: the mapping as JSON (URL-encoded). ${MAPPING_DESCRIPTION}` }),
});
export type ImportQuery = z.infer<typeof ImportQuery>;

const scalar = z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]);
/** A value of a row; a list (Follow Up Boss's appointment `invitees`) is carried as its JSON text. */
const cell = z.union([scalar, z.array(z.union([scalar, z.record(z.string().max(100), scalar)])).max(100)]);

export const ImportRows = z
  .strictObject({
    kind,
    rows: z
      .array(z.record(z.string().min(1).max(200), cell))
      .min(1)
      .max(MAX_JSON_ROWS)
      .openapi({ description: `Up to ${MAX_JSON_ROWS} rows, each an object of column → value, as a CSV's header would name them` }),
    mapping: mapping.optional(),
    onDuplicate: onDuplicate.optional(),
  })
  .openapi("ImportRows");
export type ImportRows = z.infer<typeof ImportRows>;
export { mapping as ImportMapping };

export const Import = z
  .object({
    id: z.string(),
    kind,
    status: z.enum(IMPORT_STATUSES),
    onDuplicate,
    format: z
      .enum(["followupboss", "kvcore", "native", "custom"])
      .nullable()
      .openapi({ description: "The export the header was read as; null until the first chunk ran" }),
    processed: z.int().openapi({ description: "Rows read so far" }),
    created: z.int(),
    updated: z.int(),
    skipped: z.int().openapi({ description: "Rows that matched a record and changed nothing (onDuplicate skip, or nothing new)" }),
    failed: z.int().openapi({ description: "Rows not imported; the errors CSV says why" }),
    errorsUrl: z
      .string()
      .openapi({ description: "The errors CSV (row number, column, reason; never the row's data): GET it with the same credentials" }),
    failureReason: z
      .string()
      .nullable()
      .openapi({ description: "Why a failed import stopped (the file is not UTF-8 text, a mapping names a column the file lacks …)" }),
    createdAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi("Import");
export type Import = z.infer<typeof Import>;

export const ImportIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
