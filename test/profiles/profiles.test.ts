import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { publishedProfile } from "../helpers/profiles";
import { createTestimonial, publishedTestimonial } from "../helpers/testimonials";

const refused = async (res: Response, code: string) => {
  expect(res.status).toBe(409);
  expect(await json(res)).toEqual({ error: code, message: expect.any(String) });
};
const feed = (slug: string, headers: Record<string, string> = {}, origin?: string) =>
  call("GET", `/api/public/reviews/${slug}`, {
    origin,
    headers: { "cf-connecting-ip": `10.77.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`, ...headers },
  });

describe("profiles", () => {
  it("PUT saves the draft only; publish checks it against the approved blocks, listing every problem", async () => {
    const owner = await createPrincipal();
    expect((await call("GET", "/api/reputation/profile", { token: owner.token })).status).toBe(404);
    const draft = { headline: "x".repeat(200), photoUrl: "http://insecure.test/p.jpg", featuredTestimonialIds: ["nope"], sparkles: true };
    const put = await json(
      await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig: draft, slug: "avery-agent-toronto" } }),
    );
    expect(put).toMatchObject({ slug: "avery-agent-toronto", status: "DRAFT", draftConfig: draft, publishedConfig: null });
    const bad = await call("POST", "/api/reputation/profile/publish", { token: owner.token, body: {} });
    expect(bad.status).toBe(400);
    expect((await json(bad)).issues.map((i: { path: string[] }) => i.path.join(".")).sort()).toEqual([
      "draftConfig.displayName",
      "draftConfig.headline",
      "draftConfig.photoUrl",
      "draftConfig.sparkles",
    ]);
    await call("PUT", "/api/reputation/profile", {
      token: owner.token,
      body: { draftConfig: { displayName: "Avery", featuredTestimonialIds: ["nope"] } },
    });
    const ref = await json(await call("POST", "/api/reputation/profile/publish", { token: owner.token, body: {} }));
    expect(ref.issues.map((i: { path: (string | number)[] }) => i.path.join("."))).toEqual(["draftConfig.featuredTestimonialIds.0"]);
    const t = await publishedTestimonial(owner);
    await call("PUT", "/api/reputation/profile", {
      token: owner.token,
      body: { draftConfig: { displayName: "Avery", featuredTestimonialIds: [t.id] } },
    });
    const published = await json(await call("POST", "/api/reputation/profile/publish", { token: owner.token }));
    expect(published).toMatchObject({
      status: "PUBLISHED",
      publishedConfig: { displayName: "Avery", featuredTestimonialIds: [t.id] },
      publishedAt: expect.any(String),
    });
    // A later draft does not change what is published.
    await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig: { displayName: "Draft only" } } });
    expect((await json(await call("GET", "/api/reputation/profile", { token: owner.token }))).publishedConfig.displayName).toBe("Avery");
    expect((await json(await call("GET", `/api/reputation/testimonials/${t.id}`, { token: owner.token }))).syndications).toEqual([
      // On the configured origin (APP_URL), not the host this request came through.
      { channel: "REVIEWS_FEED", url: `${env.APP_URL}/api/public/reviews/avery-agent-toronto`, since: expect.any(String) },
    ]);
  });

  it("keeps slugs unique across organizations and agents; another organization's agent answers 404", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const slug = `unique-${crypto.randomUUID().slice(0, 8)}`;
    expect((await call("PUT", "/api/reputation/profile", { token: a.token, body: { slug, draftConfig: {} } })).status).toBe(200);
    await refused(await call("PUT", "/api/reputation/profile", { token: b.token, body: { slug, draftConfig: {} } }), "slug_taken");
    const generated = await json(await call("PUT", "/api/reputation/profile", { token: b.token, body: { draftConfig: {} } }));
    expect(generated.slug).toMatch(/^[a-z0-9-]{3,60}$/);
    expect((await call("PUT", "/api/reputation/profile", { token: b.token, body: { slug: "Bad Slug!", draftConfig: {} } })).status).toBe(
      400,
    );
    expect((await call("GET", `/api/reputation/profile?agentUserId=${a.userId}`, { token: b.token })).status).toBe(404);
    expect(
      (await call("PUT", "/api/reputation/profile", { token: b.token, body: { agentUserId: a.userId, draftConfig: {} } })).status,
    ).toBe(404);
  });

  it("a slug claimed by an organization on shard 0 cannot be taken by one on shard 1, nor after it changed to another (issue 24)", async () => {
    const zero = await createPrincipal({ shard: 0 });
    const one = await createPrincipal({ shard: 1 });
    const slug = `sharded-${crypto.randomUUID().slice(0, 8)}`;
    expect(await publishedProfile(zero, { displayName: "Zero Agent" }, slug)).toBe(slug);
    // The shards do not see each other's rows: the directory's claim is what refuses.
    await refused(await call("PUT", "/api/reputation/profile", { token: one.token, body: { slug, draftConfig: {} } }), "slug_taken");
    expect((await json(await feed(slug))).agent.displayName).toBe("Zero Agent");
    // Moved to another slug, the old one stays the organization's: a widget embedded under it never shows another
    // organization's agent. The organization's own agent may take it back.
    expect(
      (
        await call("PUT", "/api/reputation/profile", {
          token: zero.token,
          body: { slug: `${slug}-moved`, draftConfig: { displayName: "Zero Agent" } },
        })
      ).status,
    ).toBe(200);
    await refused(await call("PUT", "/api/reputation/profile", { token: one.token, body: { slug, draftConfig: {} } }), "slug_taken");
    const claimed = await env.DB.prepare("SELECT organization_id FROM public_keys WHERE kind = 'agent_slug' AND key = ?")
      .bind(slug)
      .first<string>("organization_id");
    expect(claimed).toBe(zero.organizationId);
    expect(
      (await call("PUT", "/api/reputation/profile", { token: zero.token, body: { slug, draftConfig: { displayName: "Zero Agent" } } }))
        .status,
    ).toBe(200);
  });

  it("DELETE takes a profile down once: a repeated delete is 404 and leaves the version alone; a PUT brings it back", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const removed = await call("DELETE", "/api/reputation/profile", { token: owner.token });
    expect(removed.status).toBe(200);
    expect(removed.headers.get("etag")).toBe('"3"');
    expect((await json(removed)).status).toBe("DELETED");
    for (let i = 0; i < 3; i++) {
      const again = await call("DELETE", "/api/reputation/profile", { token: owner.token });
      expect(again.status).toBe(404);
      expect(await json(again)).toEqual({ error: "not_found", message: expect.any(String) });
    }
    const read = await call("GET", "/api/reputation/profile", { token: owner.token });
    expect(read.headers.get("etag")).toBe('"3"');
    expect((await json(read)).status).toBe("DELETED");
    expect((await feed(slug)).status).toBe(404);
    // Saved again, it is a draft that can be taken down again.
    expect(
      (await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig: { displayName: "Back" } } })).status,
    ).toBe(200);
    expect((await call("DELETE", "/api/reputation/profile", { token: owner.token })).status).toBe(200);
  });
});

// Issue 40: an agent PUT, published and deleted the owner's profile by naming agentUserId: the owner's public reviews
// page showed the agent's headline and contact button, or went down.
describe("whose profile a caller may touch", () => {
  it("lets an agent read and write only their own; another user's needs users:manage", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const slug = await publishedProfile(owner, { displayName: "Olive Owner", headline: "Trusted since 1999" });
    const hostile = {
      agentUserId: owner.userId,
      draftConfig: {
        displayName: "Olive Owner",
        headline: "Call my colleague instead",
        contactButton: { label: "Call now", url: "tel:+14165550000" },
      },
    };
    const attempts: [string, string, unknown][] = [
      ["GET", `/api/reputation/profile?agentUserId=${owner.userId}`, undefined],
      ["PUT", "/api/reputation/profile", hostile],
      ["POST", "/api/reputation/profile/publish", { agentUserId: owner.userId }],
      ["DELETE", `/api/reputation/profile?agentUserId=${owner.userId}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(method as "GET", path, { token: agent.token, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(JSON.stringify(await json(res)), `${method} ${path}`).toContain("insufficient_role");
    }
    const page = await json(await feed(slug));
    expect(JSON.stringify(page)).not.toContain("Call my colleague");
    expect(JSON.stringify(page)).toContain("Trusted since 1999");

    // Their own, by id or by default, is theirs to write.
    expect(
      (
        await call("PUT", "/api/reputation/profile", {
          token: agent.token,
          body: { agentUserId: agent.userId, draftConfig: { displayName: "Ava Agent" } },
        })
      ).status,
    ).toBe(200);
    expect((await call("POST", "/api/reputation/profile/publish", { token: agent.token })).status).toBe(200);
    // An admin manages anyone's; an owner's key without users:manage only its own user's.
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    expect((await call("GET", `/api/reputation/profile?agentUserId=${agent.userId}`, { token: admin.token })).status).toBe(200);
    const keyRes = await call("POST", "/v1/api-keys", {
      token: owner.token,
      body: { name: "Profile key", permissions: ["reputation:read", "reputation:write"] },
    });
    const key = (await json(keyRes)).data.key as string;
    const viaKey = await call("GET", `/api/reputation/profile?agentUserId=${agent.userId}`, { token: key });
    expect(viaKey.status).toBe(403);
    expect(JSON.stringify(await json(viaKey))).toContain("insufficient_permission");
    expect((await call("GET", `/api/reputation/profile?agentUserId=${owner.userId}`, { token: key })).status).toBe(200);
  });
});

describe("the public reviews feed", () => {
  it("serves published public testimonials with only consented fields, the aggregate, branding and JSON-LD, with CORS", async () => {
    const owner = await createPrincipal();
    await publishedTestimonial(owner, {
      rating: 5,
      displayName: "Pat Client",
      displayLocation: "Oakville",
      displayPhotoUrl: "https://photos.test/pat.jpg",
      permissionToPublishName: true,
      headline: "Wonderful",
    });
    await publishedTestimonial(owner, {
      rating: 3,
      displayName: "Secret Person",
      displayLocation: "Hidden",
      permissionToPublishLocation: true,
    });
    await createTestimonial(owner, { body: "Still pending" });
    const slug = await publishedProfile(owner);
    const res = await feed(slug);
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("cache-control")).toBe("public, max-age=60");
    const body = await json(res);
    expect(body.agent).toEqual({ slug, displayName: "Avery Agent", headline: "Toronto condos", photoUrl: null });
    expect(body.branding.brokerage).toBe(`Org ${owner.organizationId}`);
    expect(body.aggregate).toMatchObject({ totalReviews: 2, averageRating: 4 });
    const authors = body.reviews.map((r: { author: unknown }) => r.author);
    expect(authors).toContainEqual({ name: "Pat Client" });
    expect(authors).toContainEqual({ location: "Hidden" });
    const text = JSON.stringify(body);
    // (The brokerage name of a test organization carries its id, so only the agent's id is checked here.)
    for (const withheld of ["Oakville", "pat.jpg", "Secret Person", "Still pending", owner.userId, "email"])
      expect(text).not.toContain(withheld);
    expect(body.jsonLd).toMatchObject({
      "@context": "https://schema.org",
      "@type": "RealEstateAgent",
      aggregateRating: { "@type": "AggregateRating", ratingValue: 4, reviewCount: 2 },
    });
    expect(body.jsonLd.review).toHaveLength(2);

    const preflight = await call("OPTIONS", `/api/public/reviews/${slug}`, {
      headers: { origin: "https://broker-site.example", "access-control-request-method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("GET");
  });

  it("serves a second request within the minute from the edge cache, without D1; a change is purged at once", async () => {
    const owner = await createPrincipal();
    const kept = await publishedTestimonial(owner, { body: "First review" });
    const slug = await publishedProfile(owner);
    const miss = await feed(slug);
    expect(miss.headers.get("x-cache")).toBe("MISS");
    // Behind the API's back: the row changes, yet the cached feed still shows the old text.
    await (await tenantDb(owner.organizationId)).prepare("UPDATE testimonials SET body = 'Changed in D1' WHERE id = ?").bind(kept.id).run();
    const hit = await feed(slug);
    expect(hit.headers.get("x-cache")).toBe("HIT");
    expect(hit.headers.get("access-control-allow-origin")).toBe("*");
    expect((await json(hit)).reviews[0].body).toBe("First review");
    // Through the API, the change purges the cached copy: the next read is fresh.
    await publishedTestimonial(owner, { body: "Second review" });
    const fresh = await feed(slug);
    expect(fresh.headers.get("x-cache")).toBe("MISS");
    expect((await json(fresh)).reviews.map((r: { body: string }) => r.body).sort()).toEqual(["Changed in D1", "Second review"]);
  });

  it("caches one copy whatever host name it is read through, so a change purges it for every host (issue 23)", async () => {
    const owner = await createPrincipal();
    const review = await publishedTestimonial(owner, { body: "Seen through two names" });
    const slug = await publishedProfile(owner);
    const [hostA, hostB] = ["http://reviews.broker-a.test", "https://api.broker-b.test"];
    const first = await feed(slug, {}, hostA);
    expect(first.headers.get("x-cache")).toBe("MISS");
    expect((await json(first)).reviews.map((r: { body: string }) => r.body)).toEqual(["Seen through two names"]);
    expect((await feed(slug, {}, hostB)).headers.get("x-cache")).toBe("HIT");
    // Unpublished through host A: host B's next read is fresh and no longer shows it.
    const res = await call("POST", `/api/reputation/testimonials/${review.id}/unpublish`, { token: owner.token, origin: hostA });
    expect(res.status).toBe(200);
    const after = await feed(slug, {}, hostB);
    expect(after.headers.get("x-cache")).toBe("MISS");
    expect((await json(after)).reviews).toEqual([]);
  });

  it("answers the same 404 for an unknown slug, a draft profile and a deleted one", async () => {
    const owner = await createPrincipal();
    const draftSlug = `draft-${crypto.randomUUID().slice(0, 8)}`;
    await call("PUT", "/api/reputation/profile", { token: owner.token, body: { slug: draftSlug, draftConfig: { displayName: "D" } } });
    const other = await createPrincipal();
    const gone = await publishedProfile(other);
    expect((await feed(gone)).status).toBe(200);
    expect((await call("DELETE", "/api/reputation/profile", { token: other.token })).status).toBe(200);
    const bodies = [];
    for (const slug of ["no-such-agent-anywhere", draftSlug, gone]) {
      const res = await feed(slug);
      expect(res.status, slug).toBe(404);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      bodies.push(await res.text());
    }
    expect(new Set(bodies).size).toBe(1);
  });

  it("limits misses per client address (a hit costs no limiter call)", async () => {
    const owner = await createPrincipal();
    const slug = await publishedProfile(owner);
    const ip = "10.88.1.1";
    const misses = await Promise.all(
      Array.from({ length: 301 }, (_, i) => feed(i % 2 ? `missing-${i}` : `missing-x-${i}`, { "cf-connecting-ip": ip })),
    );
    expect(misses.filter((r) => r.status === 429)).toHaveLength(1);
    // The cached feed still answers this address.
    await feed(slug);
    expect((await feed(slug, { "cf-connecting-ip": ip })).headers.get("x-cache")).toBe("HIT");
  });

  it("serves the widget script", async () => {
    const res = await call("GET", "/widget/reviews.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/javascript");
    const script = await res.text();
    expect(script).toContain('customElements.define("reviews-widget"');
    expect(script).toContain("attachShadow");
    expect(script).not.toContain("innerHTML");
  });
});
