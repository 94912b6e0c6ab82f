import { OpenAPIHono, z } from "@hono/zod-openapi";
import { CRM, crmError, crmSuccess } from "../crm/body";
import { NoQuery } from "../crm/list-query";
import { sha256Hex } from "../lib/crypto";
import { API, apiError, Gone, gone } from "../platform/api-family";
import { requirePermission, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { defineRoute } from "../platform/route";
import { openPublicKey, publicServiceContext } from "../platform/session";
import {
  FEED_FUTURE_DAYS,
  FEED_MAX_ITEMS,
  FEED_PAST_DAYS,
  calendarFeedIcs,
  calendarFeedState,
  issueCalendarFeed,
  revokeCalendarFeed,
} from "./feed";
import { CalendarFeedIssued, CalendarFeedState } from "./schemas";

const tags = ["Appointments"];
const security = [{ bearerAuth: [] }];
const WHAT = `The feed serves \`text/calendar\` (RFC 5545): the user's appointments (as attendee or maker, cancelled ones left
out) from ${FEED_PAST_DAYS} days back to ${FEED_FUTURE_DAYS} days ahead, in their own time zones with VTIMEZONE blocks, and
their dated open tasks as events (timed tasks 15 minutes at the due time, day tasks all day), at most ${FEED_MAX_ITEMS} of
each. Subscribe to it in Google Calendar (Other calendars → From URL), Apple Calendar (File → New Calendar Subscription)
or Outlook (Add calendar → Subscribe from web).`;

const state = defineRoute(CRM, {
  operationId: "getCalendarFeed",
  method: "get",
  path: "/v1/users/me/calendar-feed",
  tags,
  security,
  summary: "Whether you have a calendar feed URL, and since when",
  description: "Never answers the URL itself: it was shown once when issued. Issue a new one to see one again.",
  request: { query: NoQuery },
  responses: { 200: crmSuccess("The feed's state", CalendarFeedState) },
});

const issue = defineRoute(CRM, {
  operationId: "createCalendarFeed",
  method: "post",
  path: "/v1/users/me/calendar-feed",
  tags,
  security,
  summary: "Issue your secret calendar feed URL",
  description: `Answers the URL once (only its SHA-256 is kept); a feed issued before stops answering. ${WHAT} Since the
feed carries the user's tasks, issuing it needs \`tasks:read\` as well as \`appointments:read\`.`,
  request: { query: NoQuery },
  responses: {
    201: crmSuccess("The new feed URL", CalendarFeedIssued),
    403: crmError("The credential lacks tasks:read (insufficient_permission)"),
  },
});

const revoke = defineRoute(CRM, {
  operationId: "revokeCalendarFeed",
  method: "delete",
  path: "/v1/users/me/calendar-feed",
  tags,
  security,
  summary: "Stop your calendar feed URL",
  request: { query: NoQuery },
  responses: { 200: crmSuccess("The feed's state: none", CalendarFeedState) },
});

export const calendarFeedRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(state, async (c) => c.json({ success: true as const, data: await calendarFeedState(serviceContext(c), c.get("user").id) }, 200))
  .openapi(issue, async (c) => {
    // The URL is a capability anyone holding it reads without a credential: it may carry only what the issuer may read.
    requirePermission(c, "tasks:read");
    return c.json({ success: true as const, data: await issueCalendarFeed(serviceContext(c), c.get("user").id) }, 201);
  })
  .openapi(revoke, async (c) =>
    c.json({ success: true as const, data: await revokeCalendarFeed(serviceContext(c), c.get("user").id) }, 200),
  );

const FileParam = z.object({
  file: z
    .string()
    .min(1)
    .max(120)
    .openapi({ param: { name: "file", in: "path" }, example: "cal_3q2x….ics", description: "The feed's token followed by .ics" }),
});

const feed = defineRoute(API, {
  operationId: "getCalendarFeedFile",
  security: [],
  method: "get",
  path: "/calendar/{file}",
  tags: ["Appointments (public)"],
  summary: "A user's calendar feed (the secret URL issued by POST /v1/users/me/calendar-feed)",
  description: `No authentication: the URL is the capability. 60 requests a minute per address. ${WHAT}`,
  middleware: [rateLimit("calendar-feed:get")] as const,
  request: { params: FileParam },
  responses: {
    200: { description: "The calendar", content: { "text/calendar": { schema: z.string() } } },
    404: { description: "No such feed, or it was replaced or stopped (alike)", content: { "application/json": { schema: Gone } } },
    429: apiError("Too many requests from this address (rate_limited)"),
  },
});

export const calendarPublicRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(feed, async (c) => {
  const file = c.req.valid("param").file;
  if (!file.endsWith(".ics")) return gone(c);
  const tokenHash = await sha256Hex(file.slice(0, -".ics".length));
  const organizationId = await openPublicKey(c, "calendar_feed", tokenHash);
  const ics = organizationId && (await calendarFeedIcs(publicServiceContext(c, organizationId), tokenHash, new Date()));
  if (!ics) return gone(c);
  return c.body(ics, 200, { "content-type": "text/calendar; charset=utf-8" });
});
