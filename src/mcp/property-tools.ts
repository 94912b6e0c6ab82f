import type { McpTool } from "./tool";

/** Listings: find, read, create, update, value and analyse. */
export const propertyTools: McpTool[] = [];
