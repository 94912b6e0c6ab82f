import { OpenAPIHono, z } from "@hono/zod-openapi";
import { CRM, crmError, crmSuccess } from "../crm/body";
import { NoQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { MAX_JSON_ROWS, Import, ImportIdParam, ImportQuery, ImportRows } from "./schemas";
import { cancelImport, getImport, importErrorsCsv, startCsvImport, startRowsImport } from "./service";

const tags = ["Imports"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No import with this id in your organization (not_found_error)") };

const start = defineRoute(CRM, {
  operationId: "createImport",
  method: "post",
  path: "/v1/imports",
  tags,
  security,
  summary: "Import a book of contacts, properties, tasks or appointments",
  description: `Either the CSV itself as the body (\`Content-Type: text/csv\`, with Content-Length, up to 50 MB: streamed to storage as it
arrives; \`kind\`, \`onDuplicate\` and \`mapping\` in the query), or a JSON body \`{kind, rows, mapping?, onDuplicate?}\` of up to
${MAX_JSON_ROWS} rows. Answers 202 with the import \`queued\`; a queue consumer then runs it in chunks of 500 rows, each chunk one
atomic batch, and \`GET /v1/imports/{id}\` shows its progress. Columns are read by the defaults of Follow Up Boss and kvCORE
exports (detected from the header) or the API's own field names, then \`mapping\`. A contact row is matched to an existing
contact by any of its e-mails (case-folded) or phones; a new contact needs an e-mail. Tasks and appointments are Follow Up Boss's
(its API's fields), each naming its person by \`personEmail\` or \`personPhone\`; a re-run of the same export matches them by
Follow Up Boss's \`id\`; no invitation is mailed for an imported appointment. Imported rows emit no per-record event:
one \`import.completed\` carries the counts. An \`Idempotency-Key\` on a CSV upload is kept by the body's length and type, not its
bytes (which are never held in memory).`,
  request: {
    query: ImportQuery,
    body: {
      required: false,
      content: {
        "text/csv": {
          schema: z
            .string()
            .openapi({ format: "binary", description: "The CSV, header first (RFC 4180; UTF-8, a byte-order mark is fine)" }),
        },
        "application/json": { schema: ImportRows },
      },
    },
  },
  responses: { 202: crmSuccess("The import, queued", Import) },
});

const read = defineRoute(CRM, {
  operationId: "getImport",
  method: "get",
  path: "/v1/imports/{id}",
  tags,
  security,
  summary: "An import's progress",
  request: { params: ImportIdParam, query: NoQuery },
  responses: { 200: crmSuccess("The import", Import), ...NOT_FOUND },
});

const errors = defineRoute(CRM, {
  operationId: "getImportErrors",
  method: "get",
  path: "/v1/imports/{id}/errors",
  tags,
  security,
  summary: "An import's errors CSV",
  description:
    "The rows the import could not take, and those it took with a warning (an assignee it did not know), as CSV: `row` (the file's row number, the header being 1), `column`, `reason`. Never the row's data: the file holds no personal data.",
  request: { params: ImportIdParam, query: NoQuery },
  responses: { 200: { description: "The errors CSV", content: { "text/csv": { schema: z.string() } } }, ...NOT_FOUND },
});

const cancel = defineRoute(CRM, {
  operationId: "cancelImport",
  method: "post",
  path: "/v1/imports/{id}/cancel",
  tags,
  security,
  summary: "Cancel an import",
  description: "No chunk runs after the cancel; what earlier chunks imported stays. The uploaded file is deleted.",
  request: { params: ImportIdParam, query: NoQuery },
  responses: {
    200: crmSuccess("The import, cancelled", Import),
    ...NOT_FOUND,
    409: crmError("The import has ended: completed, failed or cancelled (import_finished)"),
  },
});

export const importRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(start, async (c) => {
    const ctx = serviceContext(c);
    const isJson = (c.req.header("content-type") ?? "").toLowerCase().includes("json");
    const length = c.req.header("content-length");
    const data = isJson
      ? await startRowsImport(ctx, c.req.valid("json") as ImportRows)
      : await startCsvImport(ctx, c.req.valid("query"), c.req.raw.body, length === undefined ? null : Number(length));
    return c.json({ success: true as const, data }, 202);
  })
  .openapi(read, async (c) => c.json({ success: true as const, data: await getImport(serviceContext(c), c.req.valid("param").id) }, 200))
  .openapi(errors, async (c) => {
    const stream = await importErrorsCsv(serviceContext(c), c.req.valid("param").id);
    return c.body(stream, 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="import-${c.req.valid("param").id}-errors.csv"`,
    }) as never;
  })
  .openapi(cancel, async (c) =>
    c.json({ success: true as const, data: await cancelImport(serviceContext(c), c.req.valid("param").id) }, 200),
  );
