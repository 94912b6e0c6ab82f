import { z } from "zod";
import { Pagination } from "../crm/body";
import { SmartListListQuery } from "../smart-lists/schemas";
import { listSmartLists } from "../smart-lists/service";
import { definedOnly, defineTool, pageInputs, parseWith } from "./tool";

// Smart lists (issue 46): how many contacts each saved query holds now.

export const smartListCounts = defineTool({
  name: "smart_list_counts",
  route: "GET /v1/smart-lists",
  title: "Smart lists and how many contacts each holds",
  description:
    "The organization's smart lists (saved contact queries such as 'new leads not yet called' or 'not contacted in 30 days'), newest first, one keyset page at a time with a total: each with its id, name, saved query (GET /v1/contacts's parameters) and count, the number of contacts matching it right now (countExact false only for a broad text search, whose count is a lower bound). Read-only.",
  permission: "smart-lists:read",
  effect: "read",
  input: z.strictObject({ ...pageInputs }),
  output: z.object({
    smartLists: z.array(
      z.object({ id: z.string(), name: z.string(), query: z.record(z.string(), z.string()), count: z.int(), countExact: z.boolean() }),
    ),
    pagination: Pagination,
  }),
  async run({ limit, cursor }, { ctx }) {
    // GET /v1/smart-lists' own query schema.
    const page = await listSmartLists(ctx, parseWith(SmartListListQuery, definedOnly({ limit: String(limit), cursor })));
    return {
      smartLists: page.data.map(({ id, name, query, count, countExact }) => ({ id, name, query, count, countExact })),
      pagination: page.pagination,
    };
  },
});

export const smartListTools = [smartListCounts];
