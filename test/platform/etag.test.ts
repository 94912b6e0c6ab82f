import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createDeal } from "../helpers/deals";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { createTestimonial } from "../helpers/testimonials";
import { subscribe } from "../helpers/webhooks";
import { createDb } from "../../src/db/client";
import { failureRunWrite } from "../../src/webhooks/healing";

/** A read sent with If-None-Match: `tag`. */
const readIf = (token: string, path: string, tag: string) => call("GET", path, { token, headers: { "if-none-match": tag } });

/** The read answers 304 to its own ETag, with the ETag and no body, and 200 to another. */
async function expectConditional(token: string, path: string): Promise<string> {
  const first = await call("GET", path, { token });
  expect(first.status).toBe(200);
  const etag = first.headers.get("etag")!;
  expect(etag).toMatch(/^"[^"]+"$/);
  const again = await readIf(token, path, etag);
  expect(again.status).toBe(304);
  expect(again.headers.get("etag")).toBe(etag);
  expect(again.headers.get("content-type")).toBeNull();
  expect(await again.text()).toBe("");
  // Weak comparison (RFC 9110 section 13.1.2), a list, and `*`.
  expect((await readIf(token, path, `W/${etag}`)).status).toBe(304);
  expect((await readIf(token, path, `"nope", ${etag}`)).status).toBe(304);
  expect((await readIf(token, path, "*")).status).toBe(304);
  const other = await readIf(token, path, '"nope"');
  expect(other.status).toBe(200);
  expect(other.headers.get("etag")).toBe(etag);
  return etag;
}

describe("ETag and If-None-Match on single-resource reads", () => {
  it("a versioned CRM read (a contact): its version, 304 until it changes; HEAD alike", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const path = `/v1/contacts/${contact.id}`;
    expect(await expectConditional(p.token, path)).toBe('"1"');
    // HEAD is GET without the body (the document declares the GET).
    const head = await exports.default.fetch(
      new Request(`http://api.test${path}`, { method: "HEAD", headers: { authorization: `Bearer ${p.token}`, "if-none-match": '"1"' } }),
    );
    expect(head.status).toBe(304);
    expect((await call("PUT", path, { token: p.token, body: { notes: "changed" } })).status).toBe(200);
    const changed = await readIf(p.token, path, '"1"');
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).toBe('"2"');
    // Embedded records change on their own: a read with include never answers 304 on the contact's version.
    expect((await readIf(p.token, `${path}?include=deals`, '"2"')).status).toBe(200);
  });

  it("a CRM read without a version (the pipeline): a hash of the answer, 304 until the answer changes", async () => {
    const p = await createPrincipal();
    const etag = await expectConditional(p.token, "/v1/deals/pipeline");
    await createDeal(p.token);
    const changed = await readIf(p.token, "/v1/deals/pipeline", etag);
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
  });

  it("the organization and a user (issue 32)", async () => {
    const p = await createPrincipal();
    expect(await expectConditional(p.token, "/v1/organization")).toBe('"1"');
    expect(await expectConditional(p.token, `/v1/users/${p.userId}`)).toBe('"1"');
  });

  it("a user whose invitation moves (renewed, then spent by signing in) never answers 304 to the ETag it had", async () => {
    const p = await createPrincipal();
    const invited = await call("POST", "/v1/users", {
      token: p.token,
      body: { name: "Ivy", email: `ivy.${crypto.randomUUID()}@etag.test` },
    });
    const { id, invitationExpiresAt } = (await json(invited)).data;
    const path = `/v1/users/${id}`;
    const etag = (await call("GET", path, { token: p.token })).headers.get("etag")!;
    // A new link: the user's invitationExpiresAt moves (and, once they sign in, their status), outside its version.
    expect((await call("POST", `${path}/invitation`, { token: p.token })).status).toBe(200);
    const renewed = await readIf(p.token, path, etag);
    expect(renewed.status).toBe(200);
    expect((await json(renewed)).data.invitationExpiresAt).not.toBe(invitationExpiresAt);
    // Signing in with the link deletes the invitation (users/invitations.ts redeemInvitation): the user is active.
    await env.DB.prepare("DELETE FROM user_invitations WHERE user_id = ?").bind(id).run();
    const active = await readIf(p.token, path, renewed.headers.get("etag")!);
    expect(active.status).toBe(200);
    expect((await json(active)).data.status).toBe("active");
    // The tag of the invited state still names the version for If-Match.
    expect(
      (await call("PATCH", path, { token: p.token, body: { name: "Ivy B" }, headers: { "if-match": renewed.headers.get("etag")! } }))
        .status,
    ).toBe(200);
  });

  it("a webhook whose failure run starts (failingSince, bookkeeping that moves no version) never answers 304 to the ETag it had", async () => {
    const p = await createPrincipal();
    const hook = await subscribe(p, { url: "http://127.0.0.1:9/hook" });
    const path = `/v1/webhooks/${hook.id}`;
    const etag = (await call("GET", path, { token: p.token })).headers.get("etag")!;
    // What the delivery consumer writes at an endpoint's first failed attempt.
    await failureRunWrite(createDb(await tenantDb(p.organizationId)), hook.id, null, false, new Date().toISOString())!;
    const after = await readIf(p.token, path, etag);
    expect(after.status).toBe(200);
    expect((await json(after)).data.failingSince).not.toBeNull();
    // The new tag names the same version for If-Match: the bookkeeping did not move it.
    expect(
      (await call("PATCH", path, { token: p.token, body: { description: "x" }, headers: { "if-match": after.headers.get("etag")! } }))
        .status,
    ).toBe(200);
  });

  it("the /api family: a testimonial (versioned) and the form catalogue (hashed)", async () => {
    const p = await createPrincipal();
    const testimonial = await createTestimonial(p);
    expect(await expectConditional(p.token, `/api/reputation/testimonials/${testimonial.id}`)).toBe('"1"');
    await expectConditional(p.token, "/api/documents/forms");
  });

  it("declares the ETag and the 304 of every single-resource read in /openapi.json; lists have neither", async () => {
    const doc = await json(await call("GET", "/openapi.json"));
    const op = (path: string) => doc.paths[path].get.responses;
    for (const path of ["/v1/contacts/{id}", "/v1/organization", "/v1/users/{id}", "/v1/deals/pipeline", "/api/documents/forms"]) {
      expect(op(path)["304"], path).toBeDefined();
      expect(op(path)["304"].content, path).toBeUndefined();
      expect(op(path)["200"].headers.ETag, path).toBeDefined();
    }
    for (const path of ["/v1/contacts", "/v1/users", "/api/reputation/testimonials"]) expect(op(path)["304"], path).toBeUndefined();
    const p = await createPrincipal();
    const list = await readIf(p.token, "/v1/contacts", "*");
    expect(list.status).toBe(200);
    expect(list.headers.get("etag")).toBeNull();
  });
});
