import { z } from "zod";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../crm/list-query";

/** The page inputs of a list tool whose route has no sort to choose (`limit`, `cursor`), as tool.ts `listInputs` gives them. */
export const pageInputs = {
  limit: z.int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  cursor: z.string().min(1).max(1000).optional().describe("pagination.nextCursor of the previous page"),
};
