import { CUSTOM_FILTER_DOC } from "../crm/custom-fields";
import { OpenAPIHono, z } from "@hono/zod-openapi";
import { NoQuery } from "../crm/list-query";
import { CRM, CRM_FILES_NOT_CONFIGURED, CRM_PRECONDITION_ERROR, crmDeleted, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { MAX_DOCUMENT_BYTES, MAX_DOCUMENTS, listDocuments, uploadDocument } from "./files";
import { ANALYTICS_RULES, dealAnalytics, PIPELINE_RULES, pipelineOverview } from "./pipeline";
import {
  AnalyticsQuery,
  Deal,
  DealActivity,
  DealAnalytics,
  DealCreate,
  DealDocument,
  DealListQuery,
  DealMove,
  DealReadQuery,
  DealTask,
  DealTaskCreate,
  DealUpdate,
  DocumentUploadForm,
  IdParam,
  Pipeline,
  STAGE_RULES,
  SubListQuery,
  TaskParam,
} from "./schemas";
import { createDeal, deleteDeal, getDeal, listDeals, moveDeal, restoreDeal, updateDeal } from "./service";
import { RESTORE_DAYS } from "../crm/trash";
import { completeTask, createTask, listActivities, listTasks, MAX_TASKS } from "./tasks";

const tags = ["Deals"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No deal with this id in your organization (not_found)") };
const CONTENDED = { 409: crmError("Changed by too many requests at once (concurrent_modification); retry") };
const CONDITIONAL = "Send the deal's ETag in `If-Match` to make the write conditional: 412 when it has changed since.";
const COMMISSION = `commission.rate is a fraction of the amount (0.03 is 3%): the commission amount is then computed (amount × rate, to the cent)
and follows later amount changes; without a rate, commission.amount is kept as given. teamMembers' commissionSplit fractions add up to 1.`;

const list = defineRoute(CRM, {
  operationId: "listDeals",
  method: "get",
  path: "/v1/deals",
  tags,
  security,
  summary: "List deals",
  description:
    "Keyset-paginated (pass `pagination.nextCursor` back as `cursor`). Every filter combines with the others; closingDate[gte] compares timeline.closingDate by day." +
    CUSTOM_FILTER_DOC,
  request: { query: DealListQuery },
  responses: {
    200: { description: "A page of deals", content: { "application/json": { schema: Page(Deal) } } },
    ...CRM_FILES_NOT_CONFIGURED,
  },
});

const create = defineRoute(CRM, {
  operationId: "createDeal",
  method: "post",
  path: "/v1/deals",
  tags,
  security,
  summary: "Create a deal",
  description: `contactId names a contact of your organization, propertyId a property of it, assignedTo and teamMembers users of it. ${COMMISSION}\n\n${STAGE_RULES}`,
  request: jsonBody(DealCreate),
  responses: { 201: crmSuccess("The created deal", Deal, ETAG_HEADER) },
});

const pipeline = defineRoute(CRM, {
  operationId: "getDealPipeline",
  method: "get",
  path: "/v1/deals/pipeline",
  tags,
  security,
  summary: "Pipeline overview",
  description: PIPELINE_RULES,
  request: { query: NoQuery },
  responses: { 200: crmSuccess("The pipeline", Pipeline) },
});

const analytics = defineRoute(CRM, {
  operationId: "getDealAnalytics",
  method: "get",
  path: "/v1/deals/analytics",
  tags,
  security,
  summary: "Deal analytics over a period",
  description: ANALYTICS_RULES,
  request: { query: AnalyticsQuery },
  responses: { 200: crmSuccess("The figures", DealAnalytics) },
});

const read = defineRoute(CRM, {
  operationId: "getDeal",
  method: "get",
  path: "/v1/deals/{id}",
  tags,
  security,
  summary: "Read a deal",
  request: { params: IdParam, query: DealReadQuery },
  responses: { 200: crmSuccess("The deal", Deal, ETAG_HEADER), ...NOT_FOUND, ...CRM_FILES_NOT_CONFIGURED },
});

const update = defineRoute(CRM, {
  operationId: "updateDeal",
  method: "put",
  path: "/v1/deals/{id}",
  tags,
  security,
  summary: "Update a deal",
  description: `Any field; null clears an optional one (timeline fields one by one). Concurrent updates of different fields all land.
A stage here is a move (with \`reason\` and \`probability\` as in POST …/move). ${COMMISSION}\n\n${STAGE_RULES}\n\n${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(DealUpdate) },
  responses: { 200: crmSuccess("The updated deal", Deal, ETAG_HEADER), ...NOT_FOUND, ...CONTENDED, ...CRM_PRECONDITION_ERROR },
});

const remove = defineRoute(CRM, {
  operationId: "deleteDeal",
  method: "delete",
  path: "/v1/deals/{id}",
  tags,
  security,
  summary: "Delete a deal (to the trash)",
  description: `Moves the deal with its tasks, documents (files included), activities and stage history to the trash: reads
answer 404, lists, totals and the pipeline leave it out, and \`POST /v1/deals/{id}/restore\` brings it back as it was for
${RESTORE_DAYS} days, after which it is purged with its files. ${CONDITIONAL}`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmDeleted,
    ...NOT_FOUND,
    ...CONTENDED,
    ...CRM_PRECONDITION_ERROR,
  },
});

const restore = defineRoute(CRM, {
  operationId: "restoreDeal",
  method: "post",
  path: "/v1/deals/{id}/restore",
  tags,
  security,
  summary: "Restore a deal from the trash",
  description: `Within ${RESTORE_DAYS} days of its delete: the deal returns as it was, with its tasks, documents, activities and stage history, in the pipeline again (emits deal.restored). Its contact and property show as \`{id, deleted: true}\` if they are deleted themselves.`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmSuccess("The restored deal", Deal, ETAG_HEADER),
    404: crmError("No deal with this id in your organization's trash (not_found_error)"),
  },
});

const move = defineRoute(CRM, {
  operationId: "moveDeal",
  method: "post",
  path: "/v1/deals/{id}/move",
  tags,
  security,
  summary: "Move a deal to a stage",
  description: `${STAGE_RULES}\n\nOf two concurrent moves from the same stage one lands; the other is re-applied to the moved deal (a 409
already_in_stage when that is where it went). ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(DealMove) },
  responses: {
    200: crmSuccess("The moved deal", Deal, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("The deal is already in this stage (already_in_stage), or too many concurrent changes (concurrent_modification)"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const tasks = defineRoute(CRM, {
  operationId: "listDealTasks",
  method: "get",
  path: "/v1/deals/{id}/tasks",
  tags,
  security,
  summary: "A deal's tasks",
  description: `Oldest first, all of them (a deal holds at most ${MAX_TASKS}).`,
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmSuccess("The tasks", z.array(DealTask)), ...NOT_FOUND },
});

const addTask = defineRoute(CRM, {
  operationId: "createDealTask",
  method: "post",
  path: "/v1/deals/{id}/tasks",
  tags,
  security,
  summary: "Add a task",
  description: `Priority LOW, MEDIUM (default), HIGH or URGENT; assignedTo a user of your organization. A TASK_CREATED activity; emits
deal.task_created. A deal holds at most ${MAX_TASKS} tasks.`,
  request: { params: IdParam, ...jsonBody(DealTaskCreate) },
  responses: { 201: crmSuccess("The task", DealTask), ...NOT_FOUND, ...CONTENDED },
});

const completeRoute = defineRoute(CRM, {
  operationId: "completeDealTask",
  method: "post",
  path: "/v1/deals/{id}/tasks/{taskId}/complete",
  tags,
  security,
  summary: "Complete a task",
  description: "Ours (the spec names deal.task_completed, not the route). A TASK_COMPLETED activity; emits deal.task_completed once.",
  request: { params: TaskParam },
  responses: {
    200: crmSuccess("The completed task", DealTask),
    404: crmError("No deal with this id in your organization, or no such task on it (not_found)"),
    409: crmError("The task is already completed (task_already_completed)"),
  },
});

const documents = defineRoute(CRM, {
  operationId: "listDealDocuments",
  method: "get",
  path: "/v1/deals/{id}/documents",
  tags,
  security,
  summary: "A deal's documents",
  description: `Oldest first, all of them (a deal holds at most ${MAX_DOCUMENTS}), each with a signed download link valid 10 to 15 minutes.`,
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmSuccess("The documents", z.array(DealDocument)), ...NOT_FOUND, ...CRM_FILES_NOT_CONFIGURED },
});

const upload = defineRoute(CRM, {
  operationId: "uploadDealDocument",
  method: "post",
  path: "/v1/deals/{id}/documents",
  tags,
  security,
  summary: "Upload a document",
  description: `multipart/form-data: \`file\` (at most ${MAX_DOCUMENT_BYTES / 1024 / 1024} MiB), \`name\` (default the file's name), \`type\` (default OTHER),
\`stage\`, \`signedAt\`. PDF, JPEG, PNG, GIF, WebP, AVIF, HEIC, and Word, Excel and PowerPoint files, judged by the file's bytes
(Office files also by their extension). A DOCUMENT_UPLOADED activity; emits deal.document_uploaded.`,
  request: { params: IdParam, body: { required: true, content: { "multipart/form-data": { schema: DocumentUploadForm } } } },
  responses: {
    201: crmSuccess("The document, with a signed link", DealDocument),
    ...NOT_FOUND,
    ...CONTENDED,
    413: crmError(`A file over ${MAX_DOCUMENT_BYTES / 1024 / 1024} MiB`),
    ...CRM_FILES_NOT_CONFIGURED,
  },
});

const activities = defineRoute(CRM, {
  operationId: "listDealActivities",
  method: "get",
  path: "/v1/deals/{id}/activities",
  tags,
  security,
  summary: "A deal's activity log",
  description:
    "Newest first: DEAL_CREATED, STAGE_CHANGED (metadata previousStage, newStage, reason), TASK_CREATED, TASK_COMPLETED, DOCUMENT_UPLOADED, OBLIGATION_OVERDUE.",
  request: { params: IdParam, query: SubListQuery },
  responses: {
    200: { description: "A page of activities", content: { "application/json": { schema: Page(DealActivity) } } },
    ...NOT_FOUND,
  },
});

// Fixed paths (pipeline, analytics) before /v1/deals/{id}, so that they are not read as ids.
export const dealRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listDeals(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(create, async (c) => {
    const { ctx, answer } = keptAnswer<Deal>(c, 201);
    return c.json(answer(withEtag(c, await createDeal(ctx, c.req.valid("json")))), 201);
  })
  .openapi(pipeline, async (c) => c.json({ success: true as const, data: await pipelineOverview(serviceContext(c)) }, 200))
  .openapi(analytics, async (c) =>
    c.json({ success: true as const, data: await dealAnalytics(serviceContext(c), c.req.valid("query")) }, 200),
  )
  .openapi(read, async (c) =>
    c.json(
      {
        success: true as const,
        data: withEtag(c, await getDeal(serviceContext(c), c.req.valid("param").id, c.req.valid("query").include)),
      },
      200,
    ),
  )
  .openapi(update, async (c) => {
    const { ctx, answer } = keptAnswer<Deal>(c, 200);
    return c.json(answer(withEtag(c, await updateDeal(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    await deleteDeal(serviceContext(c), id);
    return c.json({ success: true as const, message: "Deal deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(restore, async (c) => {
    const { ctx, answer } = keptAnswer<Deal>(c, 200);
    return c.json(answer(withEtag(c, await restoreDeal(ctx, c.req.valid("param").id))), 200);
  })
  .openapi(move, async (c) => {
    const { ctx, answer } = keptAnswer<Deal>(c, 200);
    return c.json(answer(withEtag(c, await moveDeal(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(tasks, async (c) => c.json({ success: true as const, data: await listTasks(serviceContext(c), c.req.valid("param").id) }, 200))
  .openapi(addTask, async (c) =>
    c.json({ success: true as const, data: await createTask(serviceContext(c), c.req.valid("param").id, c.req.valid("json")) }, 201),
  )
  .openapi(completeRoute, async (c) => {
    const { id, taskId } = c.req.valid("param");
    return c.json({ success: true as const, data: await completeTask(serviceContext(c), id, taskId) }, 200);
  })
  .openapi(documents, async (c) =>
    c.json({ success: true as const, data: await listDocuments(serviceContext(c), c.req.valid("param").id) }, 200),
  )
  .openapi(upload, async (c) => {
    const { ctx, answer } = keptAnswer<DealDocument>(c, 201);
    return c.json(answer(await uploadDocument(ctx, c.req.valid("param").id, c.req.valid("form"))), 201);
  })
  .openapi(activities, async (c) =>
    c.json({ success: true as const, ...(await listActivities(serviceContext(c), c.req.valid("param").id, c.req.valid("query"))) }, 200),
  );
