import { expect } from "vitest";
import type { DomainEvent } from "../../src/events/event";
import { call, json } from "./client";
import { createContact } from "./contacts";
import { firstOnShards, freshIp, runOnShards } from "./documents";
import { type TestPrincipal, tenantDb } from "./factories";

/** The questions of the standard template (src/surveys/schemas.ts), as an organization would post them. */
export const STANDARD_QUESTIONS = [
  { id: "overall", type: "rating", label: "Overall, how would you rate your agent?", required: true, purpose: "overallRating" },
  { id: "recommend", type: "nps", label: "How likely are you to recommend your agent?", required: true },
  { id: "comments", type: "text", label: "Tell us about your experience", maxLength: 2000, purpose: "testimonial" },
  { id: "publish", type: "yes_no", label: "May we publish your comments?", required: true, purpose: "publishConsent" },
];

export type SurveyJson = Record<string, any> & { id: string; status: string; templateId: string };
export type IssuedSurvey = SurveyJson & { accessToken: string; surveyUrl: string };

/** POST /api/reputation/surveys/templates; fails the test unless 201. */
export async function createSurveyTemplate(
  owner: TestPrincipal,
  overrides: Record<string, unknown> = {},
): Promise<Record<string, any> & { id: string; isDefault: boolean }> {
  const res = await call("POST", "/api/reputation/surveys/templates", {
    token: owner.token,
    body: { name: "After closing", questions: STANDARD_QUESTIONS, ...overrides },
  });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

/** POST /api/reputation/surveys about the owner, to a fresh contact unless one is named, channel LINK unless named; fails unless 201. */
export async function scheduleSurvey(owner: TestPrincipal, overrides: Record<string, unknown> = {}): Promise<IssuedSurvey> {
  const recipientPersonId = (overrides.recipientPersonId as string | undefined) ?? (await createContact(owner.token)).id;
  const res = await call("POST", "/api/reputation/surveys", {
    token: owner.token,
    body: { agentUserId: owner.userId, channel: "LINK", ...overrides, recipientPersonId },
  });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

/** A survey of `owner` (with a template made for it), as route-table params. */
export async function seedSurvey(owner: TestPrincipal, channel: "LINK" | "EMAIL" = "LINK"): Promise<{ id: string }> {
  const template = await createSurveyTemplate(owner);
  return { id: (await scheduleSurvey(owner, { templateId: template.id, channel })).id };
}

/** GET /api/reputation/surveys/{id}; fails unless 200. */
export async function surveyDetail(owner: TestPrincipal, id: string): Promise<SurveyJson & { response: Record<string, any> | null }> {
  const res = await call("GET", `/api/reputation/surveys/${id}`, { token: owner.token });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

/** The public survey route, from its own client address unless one is given (the per-address limits stay out of the way). */
export const publicSurvey = (method: "GET" | "POST", token: string, body?: unknown, ip = freshIp()) =>
  call(method, `/api/public/survey/${encodeURIComponent(token)}`, {
    body,
    headers: { "cf-connecting-ip": ip, "user-agent": "vitest client" },
  });

/** An organization's outbox events of one type, oldest first, as the queue router hands them to consumers. */
export async function outboxEvents(organizationId: string, type: string): Promise<DomainEvent[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare(
      "SELECT id, type, organization_id, actor, occurred_at, data FROM outbox_events WHERE organization_id = ? AND type = ? ORDER BY occurred_at, rowid",
    )
    .bind(organizationId, type)
    .all<{ id: string; type: string; organization_id: string; actor: string; occurred_at: string; data: string }>();
  return results.map((r) => ({
    id: r.id,
    type: r.type,
    organizationId: r.organization_id,
    actor: JSON.parse(r.actor),
    occurredAt: r.occurred_at,
    data: JSON.parse(r.data),
  }));
}

/** The stored row of a survey, every column. */
export const surveyRow = (id: string) => firstOnShards<Record<string, string | number | null>>("SELECT * FROM surveys WHERE id = ?", id);

/** Moves a survey's send time (or expiry) into the past, as if the days had gone by. */
export const makeDue = (id: string) =>
  runOnShards("UPDATE surveys SET send_at = ? WHERE id = ?", new Date(Date.now() - 1000).toISOString(), id);
export const makeExpired = (id: string) =>
  runOnShards("UPDATE surveys SET expires_at = ? WHERE id = ?", new Date(Date.now() - 1000).toISOString(), id);
