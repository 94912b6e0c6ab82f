import { expect } from "vitest";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";

export type TestimonialJson = Record<string, any> & { id: string; status: string; visibility: string };

export async function createTestimonial(owner: TestPrincipal, overrides: Record<string, unknown> = {}): Promise<TestimonialJson> {
  const res = await call("POST", "/api/reputation/testimonials", { token: owner.token, body: { agentUserId: owner.userId, category: "BUYER", rating: 5, body: "A great agent.", ...overrides } });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

/** POST …/testimonials/{id}/{verb}; fails the test unless 200. */
export async function move(owner: TestPrincipal, id: string, verb: "approve" | "publish" | "unpublish" | "reject"): Promise<TestimonialJson> {
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

/** The caller's profile saved and published; answers its slug. */
export async function publishedProfile(owner: TestPrincipal, draftConfig: Record<string, unknown> = { displayName: "Avery Agent", headline: "Toronto condos" }, slug?: string): Promise<string> {
  const put = await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig, ...(slug ? { slug } : {}) } });
  expect(put.status, await put.clone().text()).toBe(200);
  const res = await call("POST", "/api/reputation/profile/publish", { token: owner.token, body: {} });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.slug;
}

export const aggregateOf = async (owner: TestPrincipal, agentUserId?: string) =>
  json(await call("GET", `/api/reputation/aggregate${agentUserId ? `?agentUserId=${agentUserId}` : ""}`, { token: owner.token }));
