import { z } from "zod";
import { Pagination } from "../crm/body";
import { pipelineOverview } from "../deals/pipeline";
import {
  DEAL_STAGES,
  DEAL_STATUSES,
  DEAL_TYPES,
  Deal,
  DealListQuery,
  DealMove,
  LIST_INCLUDES,
  Pipeline,
  SORT_FIELDS,
} from "../deals/schemas";
import { listDeals, moveDeal } from "../deals/service";
import { defineTool, definedOnly, parseWith, listInputs, listParams, requireEmbeds } from "./tool";

const MAX_AMOUNT = 1e11;
const amount = z.number().min(0).max(MAX_AMOUNT);
/** A number as the route's decimal query parameter spells it (no exponent, at most 8 decimals). */
const decimal = (n: number | undefined) => (n === undefined ? undefined : n.toFixed(8).replace(/\.?0+$/, ""));

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
  description:
    "Moves a deal to another pipeline stage, with an optional reason (kept on the STAGE_CHANGED activity) and probability (else the stage's default). CLOSED and LOST close the deal. Moving a deal to the stage it is in is refused (already_in_stage).",
  permission: "deals:write",
  input: DealMove.extend({ dealId: z.string().min(1).max(100).describe("The deal's id") }),
  output: z.object({ deal: Deal }),
  effect: "write",
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

export const dealTools = [listDealsTool, moveDealTool, getPipeline];
