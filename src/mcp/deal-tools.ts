import { z } from "zod";
import { Pagination } from "../crm/body";
import { pipelineOverview } from "../deals/pipeline";
import { listDueTasks } from "../deals/due-tasks";
import {
  DEAL_STAGES,
  DEAL_STATUSES,
  DEAL_TYPES,
  Deal,
  DealCreate,
  DealListQuery,
  DealMove,
  DealReadQuery,
  DealTask,
  DealTaskCreate,
  DealUpdate,
  DueTask,
  DueTaskQuery,
  LIST_INCLUDES,
  MAX_DUE_WITHIN_DAYS,
  Pipeline,
  READ_INCLUDES,
  READ_ONLY_FIELDS,
  SORT_FIELDS,
} from "../deals/schemas";
import { createDeal, getDeal, listDeals, moveDeal, updateDeal } from "../deals/service";
import { completeTask, createTask } from "../deals/tasks";
import { defineTool, definedOnly, parseWith, listInputs, listParams, requireEmbeds, pageInputs } from "./tool";

const MAX_AMOUNT = 1e11;
const amount = z.number().min(0).max(MAX_AMOUNT);
/** A number as the route's decimal query parameter spells it (no exponent, at most 8 decimals). */
const decimal = (n: number | undefined) => (n === undefined ? undefined : n.toFixed(8).replace(/\.?0+$/, ""));

const dealId = z.string().min(1).max(100).describe("The deal's id");
const READ_ONLY = Object.fromEntries(READ_ONLY_FIELDS.map((f) => [f, true] as const)) as Record<(typeof READ_ONLY_FIELDS)[number], true>;
/** What a deal that enters CLOSED sets off outside the organization (surveys/scheduling.ts, DEAL_WON). */
const WON_SURVEY =
  "A deal entering CLOSED is won, which schedules a satisfaction survey mailed to its client (outside the organization) about the deal's agent.";

/** The list filters of GET /v1/deals with JSON types instead of query strings; mapped onto the route's query below. */
const ListDealsInput = z.strictObject({
  query: z.string().max(200).optional().describe("Words to find in the title, each as the start of a word; every word must match"),
  stage: z.enum(DEAL_STAGES).optional(),
  status: z.enum(DEAL_STATUSES).optional(),
  type: z.enum(DEAL_TYPES).optional(),
  assignedTo: z.string().min(1).max(100).optional().describe("The assigned agent's (user's) id"),
  minAmount: amount.optional(),
  maxAmount: amount.optional(),
  minProbability: z.int().min(0).max(100).optional(),
  createdAfter: z.iso.datetime({ offset: true }).optional().describe("ISO 8601 timestamp; created at or after"),
  closingAfter: z.string().min(10).max(40).optional().describe("ISO 8601 date or timestamp; closing on or after that day"),
  include: z
    .array(z.enum(LIST_INCLUDES))
    .min(1)
    .max(LIST_INCLUDES.length)
    .optional()
    .describe("Embed each deal's contact, property or documents"),
  ...listInputs(SORT_FIELDS),
});

export const listDealsTool = defineTool({
  name: "list_deals",
  route: "GET /v1/deals",
  title: "List deals",
  description:
    "Lists the organization's deals matching every given filter (words of the title, stage, status, type, agent, amount, probability, dates), one keyset page at a time with a total.",
  permission: "deals:read",
  effect: "read",
  input: ListDealsInput,
  output: z.object({ deals: z.array(Deal), pagination: Pagination }),
  async run(i, scope) {
    const { ctx } = scope;
    requireEmbeds(scope, i.include);
    // Through the route's own query schema: the same bounds, range checks and sort parsing as GET /v1/deals.
    const query = parseWith(
      DealListQuery,
      definedOnly({
        ...listParams(i),
        q: i.query,
        stage: i.stage,
        status: i.status,
        type: i.type,
        assignedTo: i.assignedTo,
        "amount[gte]": decimal(i.minAmount),
        "amount[lte]": decimal(i.maxAmount),
        "probability[gte]": i.minProbability?.toString(),
        "createdAt[gte]": i.createdAfter,
        "closingDate[gte]": i.closingAfter,
        include: i.include?.join(","),
      }),
    );
    const page = await listDeals(ctx, query);
    // No sparse fieldset (`fields`) is asked for: every deal is whole.
    return { deals: page.data as z.input<typeof Deal>[], pagination: page.pagination };
  },
});

export const moveDealTool = defineTool({
  name: "move_deal",
  route: "POST /v1/deals/{id}/move",
  title: "Move a deal to a stage",
  description: `Moves a deal to another pipeline stage, with an optional reason (kept on the STAGE_CHANGED activity) and probability (else the stage's default). CLOSED and LOST close the deal. ${WON_SURVEY} Moving a deal to the stage it is in is refused (already_in_stage).`,
  permission: "deals:write",
  input: DealMove.extend({ dealId }),
  output: z.object({ deal: Deal }),
  effect: "write",
  openWorld: true,
  async run({ dealId, ...move }, { ctx }) {
    return { deal: await moveDeal(ctx, dealId, move) };
  },
});

export const getPipeline = defineTool({
  name: "get_pipeline",
  route: "GET /v1/deals/pipeline",
  title: "Pipeline overview",
  description:
    "Per stage: how many deals, their value and average probability; overall: total deals and value, average deal size, and the conversion rate (won / decided).",
  permission: "deals:read",
  effect: "read",
  input: z.strictObject({}),
  output: z.object({ pipeline: Pipeline }),
  run: async (_input, { ctx }) => ({ pipeline: await pipelineOverview(ctx) }),
});

export const getDealTool = defineTool({
  name: "get_deal",
  route: "GET /v1/deals/{id}",
  title: "Read a deal",
  description:
    "One deal of the organization by id: stage, status, amount, commission, contact, property, agent, team, timeline, probability, tags, custom fields. include adds its tasks (all, oldest first, with id for complete_deal_task), its latest 20 activities (stage changes, tasks created and completed, documents), its documents (with download links valid 10 to 15 minutes), and a summary of its contact (needs contacts:read) or property (needs properties:read). Another organization's id, or a deal in the trash, answers not_found.",
  permission: "deals:read",
  effect: "read",
  input: z.strictObject({
    dealId,
    include: z
      .array(z.enum(READ_INCLUDES))
      .min(1)
      .max(READ_INCLUDES.length)
      .optional()
      .describe("Embed the deal's tasks, activities, documents, contact or property"),
  }),
  output: z.object({ deal: Deal }),
  async run({ dealId, include }, scope) {
    requireEmbeds(scope, include);
    // GET /v1/deals/{id}'s own query schema.
    const query = parseWith(DealReadQuery, definedOnly({ include: include?.join(",") }));
    return { deal: await getDeal(scope.ctx, dealId, query.include) };
  },
});

export const createDealTool = defineTool({
  name: "create_deal",
  route: "POST /v1/deals",
  title: "Create a deal",
  description:
    "Creates a deal (SALE, PURCHASE, LEASE or RENTAL) for a contact of the organization, with its amount; optionally a property, an agent (assignedTo: list_users), team members whose commissionSplit fractions add up to 1, commission (rate is a fraction of the amount, 0.03 for 3%; the amount is then computed), timeline dates, tags and customFields (keys: list_custom_fields). It starts ACTIVE in LEAD or the open stage given (not CLOSED or LOST: create it, then move it) with that stage's default probability unless one is given. Emits deal.created. Refused: a contact, property or user that is not the organization's (invalid_reference).",
  permission: "deals:write",
  // The body of POST /v1/deals, less the read-only fields that route merely tolerates.
  input: DealCreate.omit(READ_ONLY),
  output: z.object({ deal: Deal }),
  effect: "write",
  run: async (input, { ctx }) => ({ deal: await createDeal(ctx, input) }),
});

export const updateDealTool = defineTool({
  name: "update_deal",
  route: "PUT /v1/deals/{id}",
  title: "Update a deal",
  description: `Sets the fields given and leaves the others, as PUT /v1/deals/{id}: title, amount, status, agent (assignedTo), contact, property, team, commission, timeline dates (one by one), probability, tags (the whole list), notes, customFields. null clears an optional field. A stage here is a move, with an optional reason, as move_deal (which refuses a move to the stage the deal is in; this does not). Emits deal.updated, and deal.stage_changed (deal.won, deal.closed or deal.lost) on a stage change; setting what is already there changes nothing. ${WON_SURVEY} Another organization's id answers not_found.`,
  permission: "deals:write",
  // The body of PUT /v1/deals/{id}, less the read-only fields that route merely tolerates.
  input: DealUpdate.omit(READ_ONLY).extend({ dealId }),
  output: z.object({ deal: Deal }),
  effect: "write",
  // A set to the values given: the same call again changes nothing more.
  idempotent: true,
  openWorld: true,
  async run({ dealId, ...update }, { ctx }) {
    return { deal: await updateDeal(ctx, dealId, update) };
  },
});

export const addDealTask = defineTool({
  name: "add_deal_task",
  route: "POST /v1/deals/{id}/tasks",
  title: "Add a task to a deal",
  description:
    "Adds a task to a deal: a title, an optional description, due date (YYYY-MM-DD or an ISO 8601 timestamp), priority (LOW, MEDIUM by default, HIGH, URGENT) and assignee (a user id: list_users). Logs a TASK_CREATED activity on the deal and emits deal.task_created. A deal holds at most 200 tasks (too_many_tasks). Another organization's deal answers not_found; a user not of the organization, invalid_reference.",
  permission: "deals:write",
  input: DealTaskCreate.extend({ dealId }),
  output: z.object({ task: DealTask }),
  effect: "write",
  async run({ dealId, ...task }, { ctx }) {
    return { task: await createTask(ctx, dealId, task) };
  },
});

export const completeDealTask = defineTool({
  name: "complete_deal_task",
  route: "POST /v1/deals/{id}/tasks/{taskId}/complete",
  title: "Complete a deal task",
  description:
    "Marks a task of a deal done (completedAt now), logs a TASK_COMPLETED activity on the deal and emits deal.task_completed. A task already completed is refused (task_already_completed); a task that is not on that deal, or a deal of another organization, answers not_found. Find tasks with my_tasks or get_deal with include tasks.",
  permission: "deals:write",
  input: z.strictObject({ dealId, taskId: z.string().min(1).max(100).describe("The task's id") }),
  output: z.object({ task: DealTask }),
  // A change of state, nothing deleted or sent: the task and its history stay.
  effect: "write",
  // Once done, done: a repeat is refused and changes nothing.
  idempotent: true,
  async run({ dealId, taskId }, { ctx }) {
    return { task: await completeTask(ctx, dealId, taskId) };
  },
});

export const myTasks = defineTool({
  name: "my_tasks",
  // No route lists one user's due tasks across deals: the deal-task list's permission is this read's.
  route: "GET /v1/deals/{id}/tasks",
  title: "My due deal tasks",
  description:
    "The open deal tasks assigned to the signed-in user that are due today or overdue (withinDays: 0), or due within the next withinDays days, soonest first (UTC days), each with its deal's id and title. Tasks without a due date are never listed. One keyset page at a time with a total; complete one with complete_deal_task.",
  permission: "deals:read",
  effect: "read",
  input: z.strictObject({
    withinDays: z
      .int()
      .min(0)
      .max(MAX_DUE_WITHIN_DAYS)
      .default(0)
      .describe("0: due today or overdue; 7: also those due in the next seven days"),
    ...pageInputs,
  }),
  output: z.object({ tasks: z.array(DueTask), pagination: Pagination }),
  async run({ withinDays, limit, cursor }, { ctx }) {
    const query = parseWith(DueTaskQuery, definedOnly({ withinDays: String(withinDays), limit: String(limit), cursor }));
    // The caller's own: every credential acts for a user.
    const page = await listDueTasks(ctx, ctx.actor.userId ?? "", query);
    return { tasks: page.data, pagination: page.pagination };
  },
});

export const dealTools = [
  listDealsTool,
  moveDealTool,
  getPipeline,
  getDealTool,
  createDealTool,
  updateDealTool,
  addDealTask,
  completeDealTask,
  myTasks,
];
