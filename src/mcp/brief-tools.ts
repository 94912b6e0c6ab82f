import { z } from "zod";
import { DailyBrief, DEFAULT_BRIEF_ITEMS, MAX_BRIEF_ITEMS } from "../brief/schemas";
import { dailyBrief } from "../brief/service";
import { Pagination } from "../crm/body";
import { listQuery } from "../crm/list-query";
import { InsufficientPermission } from "../lib/errors";
import { CATALOGUE, readPermissionOf } from "../webhooks/catalogue";
import { listEventLog } from "../webhooks/event-log";
import { EventListQuery, EventPayload } from "../webhooks/schemas";
import { definedOnly, defineTool, parseWith } from "./tool";

/** Events one answer carries at most: each holds its whole object, so a page stays readable in an agent's context. */
const MAX_EVENTS = 50;
const EventLogQuery = listQuery(EventListQuery);

export const recentChanges = defineTool({
  name: "recent_changes",
  route: "GET /v1/events",
  title: "Recent changes in the organization",
  description:
    "The organization's event log of the last 30 days, newest first, one keyset page at a time with a total: what was created, changed, moved, signed, published … (contact.created, deal.stage_changed, property.price_changed, envelope.completed, testimonial.published …), each with the object as it was then, what changed and who did it. Only the events whose objects this token may read are listed; type keeps one event name (which needs its object's read permission). deliverySuccess false keeps the events whose webhook delivery has not succeeded.",
  permission: "events:read",
  effect: "read",
  input: z.strictObject({
    type: z.enum(CATALOGUE).optional().describe("One event name"),
    deliverySuccess: z.boolean().optional().describe("false: a webhook delivery has not succeeded; true: every one has"),
    limit: z.int().min(1).max(MAX_EVENTS).default(20),
    cursor: z.string().min(1).max(1000).optional().describe("pagination.nextCursor of the previous page"),
  }),
  output: z.object({ events: z.array(EventPayload), pagination: Pagination }),
  async run(i, { ctx, granted }) {
    // Through the route's own query schema, as GET /v1/events parses it.
    const query = parseWith(
      EventLogQuery,
      definedOnly({ limit: String(i.limit), cursor: i.cursor, type: i.type, deliverySuccess: i.deliverySuccess?.toString() }),
    );
    // As the route: one name asked for needs its read permission, the whole log shows the names the token may read.
    if (query.type && !granted.has(readPermissionOf(query.type)))
      throw new InsufficientPermission(`Events of type ${query.type} need the ${readPermissionOf(query.type)} permission`);
    const page = await listEventLog(
      ctx,
      query,
      CATALOGUE.filter((e) => granted.has(readPermissionOf(e))),
    );
    return { events: page.data, pagination: page.pagination };
  },
});

export const dailyBriefTool = defineTool({
  name: "daily_brief",
  // No route answers the brief: its leads are the contact list's (its other sections each need their own read).
  route: "GET /v1/contacts",
  title: "Your daily brief",
  description:
    "What you have to act on today, in one call: new leads (active, assigned to you or to nobody, never contacted), your tasks due today or overdue (on contacts and deals; and unassigned ones on your deals), the organization's document obligations overdue or due within 7 days, its signature envelopes still waiting on signers (with who), and your appointments starting today (you attend or made them). Each section lists its first items (limit, default 10) and a total. Days are UTC. A section this token may not read (tasks:read for tasks, documents:read for obligations, signatures:read for envelopes, appointments:read for appointments) is left out and named in omitted with that permission.",
  permission: "contacts:read",
  effect: "read",
  input: z.strictObject({
    limit: z.int().min(1).max(MAX_BRIEF_ITEMS).default(DEFAULT_BRIEF_ITEMS).describe("Items per section"),
  }),
  output: DailyBrief,
  async run({ limit }, { ctx, granted }) {
    return dailyBrief(ctx, ctx.actor.userId!, [...granted], { limit });
  },
});

/** The agent's day: the daily brief and recent changes (the events log). */
export const briefTools = [dailyBriefTool, recentChanges];
