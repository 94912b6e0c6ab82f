import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { aggregateOf, createTestimonial, move, publishedTestimonial } from "../helpers/testimonials";

const refused = async (res: Response, code: string) => {
  expect(res.status).toBe(409);
  expect(await json(res)).toEqual({ error: code, message: expect.any(String) });
};
const events = async (organizationId: string, type: string) =>
  (await tenantDb(organizationId))
    .prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = ?")
    .bind(organizationId, type)
    .first<number>("n");

describe("testimonials (spec: Testimonial state table)", () => {
  it("starts PENDING and PRIVATE whatever the body says, with the author a contact of the organization", async () => {
    const owner = await createPrincipal();
    const author = await createContact(owner.token);
    const t = await createTestimonial(owner, {
      authorPersonId: author.id,
      status: "PUBLISHED",
      visibility: "PUBLIC",
      headline: "Sold in a week",
    });
    expect(t).toMatchObject({
      status: "PENDING",
      visibility: "PRIVATE",
      authorPersonId: author.id,
      approvedAt: null,
      publishedAt: null,
      rating: 5,
    });
    const stranger = await createPrincipal();
    const foreignContact = await createContact(stranger.token);
    const bad = await call("POST", "/api/reputation/testimonials", {
      token: owner.token,
      body: { agentUserId: stranger.userId, authorPersonId: foreignContact.id, category: "BUYER", rating: 6, body: "x" },
    });
    expect(bad.status).toBe(400);
    expect((await json(bad)).issues.map((i: { path: string[] }) => i.path.join("."))).toEqual(["rating"]);
    const refs = await call("POST", "/api/reputation/testimonials", {
      token: owner.token,
      body: { agentUserId: stranger.userId, authorPersonId: foreignContact.id, category: "BUYER", rating: 4, body: "x" },
    });
    expect((await json(refs)).issues.map((i: { path: string[] }) => i.path.join(".")).sort()).toEqual(["agentUserId", "authorPersonId"]);
  });

  it("walks PENDING → APPROVED → PUBLISHED; publish from PENDING fails closed and leaves it PENDING", async () => {
    const owner = await createPrincipal();
    const t = await createTestimonial(owner);
    await refused(await call("POST", `/api/reputation/testimonials/${t.id}/publish`, { token: owner.token }), "not_approved");
    expect((await json(await call("GET", `/api/reputation/testimonials/${t.id}`, { token: owner.token }))).status).toBe("PENDING");
    const approved = await move(owner, t.id, "approve");
    expect(approved).toMatchObject({
      status: "APPROVED",
      visibility: "PRIVATE",
      approvedByUserId: owner.userId,
      approvedAt: expect.any(String),
      publishedAt: null,
    });
    await refused(await call("POST", `/api/reputation/testimonials/${t.id}/approve`, { token: owner.token }), "invalid_state");
    const published = await move(owner, t.id, "publish");
    expect(published).toMatchObject({ status: "PUBLISHED", visibility: "PUBLIC", publishedAt: expect.any(String) });
    await refused(await call("POST", `/api/reputation/testimonials/${t.id}/publish`, { token: owner.token }), "invalid_state");
    expect(await events(owner.organizationId, "REVIEW_APPROVED")).toBe(1);
    expect(await events(owner.organizationId, "REVIEW_PUBLISHED")).toBe(1);
  });

  it("rejects from PENDING or APPROVED (final); a published one must be unpublished first", async () => {
    const owner = await createPrincipal();
    const t = await createTestimonial(owner);
    const res = await call("POST", `/api/reputation/testimonials/${t.id}/reject`, { token: owner.token, body: { reason: "Not a client" } });
    expect(await json(res)).toMatchObject({ status: "REJECTED", rejectionReason: "Not a client", rejectedAt: expect.any(String) });
    await refused(await call("POST", `/api/reputation/testimonials/${t.id}/approve`, { token: owner.token }), "invalid_state");
    await refused(await call("POST", `/api/reputation/testimonials/${t.id}/publish`, { token: owner.token }), "invalid_state");
    const live = await publishedTestimonial(owner);
    await refused(await call("POST", `/api/reputation/testimonials/${live.id}/reject`, { token: owner.token }), "invalid_state");
  });

  it("PATCH edits copy and consent; moving a published testimonial's visibility down unpublishes it", async () => {
    const owner = await createPrincipal();
    const t = await publishedTestimonial(owner, { rating: 4 });
    expect((await aggregateOf(owner, owner.userId)).totalReviews).toBe(1);
    const edited = await json(
      await call("PATCH", `/api/reputation/testimonials/${t.id}`, {
        token: owner.token,
        body: { headline: "Fixed typo", isFeatured: true },
      }),
    );
    expect(edited).toMatchObject({ headline: "Fixed typo", isFeatured: true, status: "PUBLISHED", visibility: "PUBLIC" });
    expect(
      (await call("PATCH", `/api/reputation/testimonials/${t.id}`, { token: owner.token, body: { visibility: "PUBLIC" } })).status,
    ).toBe(400);
    const demoted = await json(
      await call("PATCH", `/api/reputation/testimonials/${t.id}`, { token: owner.token, body: { visibility: "INTERNAL" } }),
    );
    expect(demoted).toMatchObject({ status: "APPROVED", visibility: "INTERNAL", publishedAt: null });
    expect((await aggregateOf(owner, owner.userId)).totalReviews).toBe(0);
    expect(await events(owner.organizationId, "REVIEW_UNPUBLISHED")).toBe(1);
    // Republishing works from APPROVED.
    expect((await move(owner, t.id, "publish")).visibility).toBe("PUBLIC");
  });

  it("lists by sortOrder then newest, filtered, keyset-paginated", async () => {
    const owner = await createPrincipal();
    const a = await createTestimonial(owner, { sortOrder: 2, category: "SELLER" });
    const b = await createTestimonial(owner, { sortOrder: 1 });
    const c = await createTestimonial(owner, { sortOrder: 2 });
    const first = await json(await call("GET", "/api/reputation/testimonials?limit=2", { token: owner.token }));
    expect(first.testimonials.map((t: { id: string }) => t.id)).toEqual([b.id, c.id]);
    const second = await json(
      await call("GET", `/api/reputation/testimonials?limit=2&cursor=${first.pagination.nextCursor}`, { token: owner.token }),
    );
    expect(second.testimonials.map((t: { id: string }) => t.id)).toEqual([a.id]);
    expect(
      (await json(await call("GET", "/api/reputation/testimonials?category=SELLER", { token: owner.token }))).testimonials.map(
        (t: { id: string }) => t.id,
      ),
    ).toEqual([a.id]);
    expect((await json(await call("GET", "/api/reputation/testimonials?status=PUBLISHED", { token: owner.token }))).testimonials).toEqual(
      [],
    );
    expect((await call("GET", "/api/reputation/testimonials?status=LIVE", { token: owner.token })).status).toBe(400);
  });
});

// Issue 40 (adversarial pass): an agent rewrote the owner's published review, planted a 1-star one on the owner's page
// and unpublished the real one.
describe("whose testimonials a caller may write", () => {
  it("an agent writes only those about themselves; owners and admins any", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const theirs = await publishedTestimonial(owner, { headline: "Wonderful" });
    const pending = await createTestimonial(owner);
    const attempts: [string, string, unknown][] = [
      ["PATCH", `/api/reputation/testimonials/${theirs.id}`, { headline: "Terrible owner" }],
      ["POST", `/api/reputation/testimonials/${theirs.id}/unpublish`, undefined],
      ["POST", `/api/reputation/testimonials/${pending.id}/approve`, undefined],
      ["POST", `/api/reputation/testimonials/${pending.id}/reject`, undefined],
      ["POST", "/api/reputation/testimonials", { agentUserId: owner.userId, category: "BUYER", rating: 1, body: "Avoid." }],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(method as "POST", path, { token: agent.token, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(JSON.stringify(await json(res)), `${method} ${path}`).toContain("insufficient_role");
    }
    expect(await json(await call("GET", `/api/reputation/testimonials/${theirs.id}`, { token: owner.token }))).toMatchObject({
      headline: "Wonderful",
      status: "PUBLISHED",
    });
    expect((await aggregateOf(owner, owner.userId)).totalReviews).toBe(1);

    // The agent's own, start to finish; an admin moderates anyone's.
    const own = await createTestimonial(agent, { agentUserId: agent.userId });
    await move(agent, own.id, "approve");
    await move(agent, own.id, "publish");
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    await move(admin, own.id, "unpublish");
    await move(admin, pending.id, "approve");
  });
});

describe("aggregates", () => {
  it("match the published testimonials after every publish and unpublish, per agent and for the organization", async () => {
    const owner = await createPrincipal();
    const colleague = await createPrincipal({ organizationId: owner.organizationId });
    const expectRollup = async (agent: string | undefined, total: number, average: number | null, distribution: number[]) => {
      const a = await aggregateOf(owner, agent);
      expect(a).toMatchObject({
        scope: agent ? "AGENT" : "ORG",
        totalReviews: total,
        averageRating: average,
        nps: null,
        responseRate: null,
      });
      expect(Object.values(a.ratingDistribution)).toEqual(distribution);
    };
    await expectRollup(owner.userId, 0, null, [0, 0, 0, 0, 0]);
    const five = await publishedTestimonial(owner, { rating: 5 });
    await expectRollup(owner.userId, 1, 5, [0, 0, 0, 0, 1]);
    await publishedTestimonial(owner, { rating: 2 });
    await publishedTestimonial(colleague, { agentUserId: colleague.userId, rating: 4 });
    await expectRollup(owner.userId, 2, 3.5, [0, 1, 0, 0, 1]);
    await expectRollup(colleague.userId, 1, 4, [0, 0, 0, 1, 0]);
    await expectRollup(undefined, 3, 3.67, [0, 1, 0, 1, 1]);
    await move(owner, five.id, "unpublish");
    await expectRollup(owner.userId, 1, 2, [0, 1, 0, 0, 0]);
    await expectRollup(undefined, 2, 3, [0, 1, 0, 1, 0]);
    expect((await aggregateOf(owner, owner.userId)).reviewVelocity).toBe(1);
    const stranger = await createPrincipal();
    const foreign = await call("GET", `/api/reputation/aggregate?agentUserId=${owner.userId}`, { token: stranger.token });
    const unknown = await call("GET", "/api/reputation/aggregate?agentUserId=00000000-0000-4000-8000-000000000000", {
      token: stranger.token,
    });
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect(await foreign.text()).toBe(await unknown.text());
  });
});
