import type { McpTool } from "./tool";

/** Users to assign work to, custom fields to fill. */
export const orgTools: McpTool[] = [];
