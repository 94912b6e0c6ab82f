import { call } from "./client";
import type { TestPrincipal } from "./factories";

// Issue 46: ponds and the leads waiting in them, for the route, race and fault tables.

const made = async (res: Response, status: number) => {
  const text = await res.text();
  if (res.status !== status) throw new Error(`seeding failed: ${res.status} ${text}`);
  return JSON.parse(text) as { data: Record<string, any> };
};

/** A pond of the owner's organization with the owner as its member. */
export async function seedPond(owner: TestPrincipal): Promise<Record<string, string>> {
  const pond = await made(
    await call("POST", "/v1/ponds", { token: owner.token, body: { name: "Seeded pond", members: [owner.userId] } }),
    201,
  );
  return { id: pond.data.id };
}

/**
 * A lead waiting in a pond the owner is a member of: the routing sends every new lead there (mode rules, default the
 * pond), and one lead is taken in. `id`: the contact's, `pondId`: the pond's.
 */
export async function seedPondLead(owner: TestPrincipal): Promise<Record<string, string>> {
  const pondId = (await seedPond(owner)).id!;
  await made(
    await call("PATCH", "/v1/organization", {
      token: owner.token,
      body: { settings: { leadRouting: { mode: "rules", rules: [], default: { pondId } } } },
    }),
    200,
  );
  const lead = await made(
    await call("POST", "/v1/leads", {
      token: owner.token,
      body: { source: "WEBSITE", person: { emails: [`pond.${crypto.randomUUID()}@lead.test`] } },
    }),
    201,
  );
  return { id: lead.data.contactId, pondId };
}
