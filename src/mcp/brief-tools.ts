import type { McpTool } from "./tool";

/** The agent's day: the daily brief and recent changes (the events log). */
export const briefTools: McpTool[] = [];
