import type { McpTool } from "./tool";

/** The reputation suite: testimonials, surveys, referrals and the summary. */
export const reputationTools: McpTool[] = [];
