import { OpenAPIHono, z } from "@hono/zod-openapi";
import { intParam } from "../crm/list-query";
import { API, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { DUE_SOON_DAYS, listObligations, MAX_LISTED_OBLIGATIONS, OBLIGATION_TYPES, RENEWAL_NOTICE_DAYS, URGENCIES } from "./obligations";

/** Spec: Limits, GET obligations withinDays default 30, maximum 365. */
const DEFAULT_WITHIN_DAYS = 30;
const MAX_WITHIN_DAYS = 365;

export const ObligationQuery = z.strictObject({
  withinDays: intParam(0, MAX_WITHIN_DAYS)
    .default(DEFAULT_WITHIN_DAYS)
    .openapi({
      type: "integer",
      minimum: 0,
      maximum: MAX_WITHIN_DAYS,
      example: DEFAULT_WITHIN_DAYS,
      description: `Days ahead of today (UTC), 0–${MAX_WITHIN_DAYS}, default ${DEFAULT_WITHIN_DAYS}; anything else is a 400`,
    }),
});

export const Obligation = z
  .object({
    id: z.string(),
    documentId: z.string(),
    dealId: z.string().nullable().openapi({ description: "The document's linked deal, or null" }),
    type: z.enum(OBLIGATION_TYPES).openapi({
      description: `From the lease (on/standard-lease): deposit_due (deposit.dueDate, with the deposit), expiry (term.end), renewal (${RENEWAL_NOTICE_DAYS} days before term.end: a tenant's notice ending a fixed term is due at least ${RENEWAL_NOTICE_DAYS} days before it ends, Ontario RTA 2006 s. 44). The commencement implies none: no type of the closed list fits it. From the agreement of purchase and sale: deposit_due (deposit.dueDate, with the deposit), condition_waiver (one per condition not waived, at its waiverDeadline), closing (completion.date); its signed amendments remove waived conditions' rows and move closing. From the listing and buyer representation agreements: expiry (period.expiry) and renewal (30 days before it). Free-form documents and amendments imply none.`,
    }),
    description: z.string().nullable(),
    dueDate: z.iso
      .datetime()
      .openapi({ example: "2027-01-01T00:00:00.000Z", description: "ISO 8601 timestamp: the start (UTC) of the day it falls due" }),
    amountCents: z.int().nullable().openapi({ description: "The deposit of a deposit_due obligation; null when no amount applies" }),
    urgency: z.enum(URGENCIES).openapi({
      description: `As of the request, in UTC days: overdue before today, due_soon from today to ${DUE_SOON_DAYS} days ahead, pending after that`,
    }),
  })
  .openapi("Obligation");

export const ObligationList = z
  .object({ obligations: z.array(Obligation).openapi({ description: `Soonest first, at most ${MAX_LISTED_OBLIGATIONS}` }) })
  .openapi("ObligationList");

const list = defineRoute(API, {
  operationId: "listDocumentObligations",
  method: "get",
  path: "/api/documents/obligations",
  tags: ["Documents"],
  security: [{ bearerAuth: [] }],
  summary: "Overdue and upcoming obligations of your organization's documents",
  description: `Every obligation due on or before today + withinDays (UTC), overdue ones included, soonest first (ties by id), at most ${MAX_LISTED_OBLIGATIONS}. Obligations are derived from each document when it is generated and again when it is signed (DOCUMENT_SIGNED). An overdue obligation of a linked deal is also noted once on that deal as an OBLIGATION_OVERDUE activity.`,
  request: { query: ObligationQuery },
  responses: { 200: apiJson("The obligations", ObligationList) },
});

// Mounted before documentRoutes (src/app.ts): /api/documents/{id} would otherwise read "obligations" as an id.
export const obligationRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(list, async (c) =>
  c.json({ obligations: await listObligations(serviceContext(c), c.req.valid("query").withinDays) }, 200),
);
