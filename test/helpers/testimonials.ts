import { expect } from "vitest";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";

export type TestimonialJson = Record<string, any> & { id: string; status: string; visibility: string };

export async function createTestimonial(owner: TestPrincipal, overrides: Record<string, unknown> = {}): Promise<TestimonialJson> {
  const res = await call("POST", "/api/reputation/testimonials", {
    token: owner.token,
    body: { agentUserId: owner.userId, category: "BUYER", rating: 5, body: "A great agent.", ...overrides },
  });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

/** POST …/testimonials/{id}/{verb}; fails the test unless 200. */
export async function move(
  owner: TestPrincipal,
  id: string,
  verb: "approve" | "publish" | "unpublish" | "reject",
): Promise<TestimonialJson> {
  const res = await call("POST", `/api/reputation/testimonials/${id}/${verb}`, { token: owner.token });
  const body = await json(res);
  expect(res.status, `${verb}: ${JSON.stringify(body)}`).toBe(200);
  return body;
}

/** A testimonial created, approved and published. */
export async function publishedTestimonial(owner: TestPrincipal, overrides: Record<string, unknown> = {}): Promise<TestimonialJson> {
  const t = await createTestimonial(owner, overrides);
  await move(owner, t.id, "approve");
  return move(owner, t.id, "publish");
}

export const aggregateOf = async (owner: TestPrincipal, agentUserId?: string) =>
  json(await call("GET", `/api/reputation/aggregate${agentUserId ? `?agentUserId=${agentUserId}` : ""}`, { token: owner.token }));
