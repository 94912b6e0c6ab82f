import { expect } from "vitest";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";

/** The caller's profile saved and published; answers its slug. */
export async function publishedProfile(
  owner: TestPrincipal,
  draftConfig: Record<string, unknown> = { displayName: "Avery Agent", headline: "Toronto condos" },
  slug?: string,
): Promise<string> {
  const put = await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig, ...(slug ? { slug } : {}) } });
  expect(put.status, await put.clone().text()).toBe(200);
  const res = await call("POST", "/api/reputation/profile/publish", { token: owner.token, body: {} });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.slug;
}
