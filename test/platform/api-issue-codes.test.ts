import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { leaseCanonical } from "../helpers/documents";
import { createPrincipal } from "../helpers/factories";

/**
 * The /api family's 400 (DESIGN.md "Shapes", docs/guides/api-conventions.md "Errors"): `{error: "invalid_request", issues[]}`, each issue
 * `{field, path[], code, message}` with the same machine-readable codes as the CRM error body's errors[].code, so a
 * client can tell a missing field from a wrong one without reading the message.
 */
type Issue = { field: string; path: (string | number)[]; code: string; message: string };

async function issuesOf(res: Response): Promise<Issue[]> {
  expect(res.status).toBe(400);
  const body = await json<{ error: string; issues: Issue[] }>(res);
  expect(body.error).toBe("invalid_request");
  expect(body.issues.length).toBeGreaterThan(0);
  for (const issue of body.issues) {
    expect(issue).toEqual({
      field: expect.any(String),
      path: expect.any(Array),
      code: expect.stringMatching(/^[a-z][a-z0-9_]*$/),
      message: expect.any(String),
    });
    expect(issue.field).toBe(issue.path.join("."));
  }
  return body.issues;
}

/** field → code, one entry per field (a field with two problems keeps its first code). */
const codes = (issues: Issue[]) => Object.fromEntries([...issues].reverse().map((i) => [i.field, i.code]));

describe("/api 400 invalid_request: every issue carries field, path, code and message", () => {
  it("POST /api/documents: a canonical draft with several bad fields", async () => {
    const { token } = await createPrincipal();
    const canonical = leaseCanonical() as any;
    canonical.lease.tenants[0].email = "not-an-address";
    canonical.lease.monthlyRent.cents = "2500";
    delete canonical.lease.property.address.city;
    canonical.lease.pets = true;
    const res = await call("POST", "/api/documents", { token, body: { formKey: "on/standard-lease", canonical, color: "blue" } });
    expect(codes(await issuesOf(res))).toMatchObject({
      "canonical.lease.tenants.0.email": "invalid_email",
      "canonical.lease.monthlyRent.cents": "invalid_type",
      "canonical.lease.property.address.city": "required",
      "canonical.lease.pets": "unknown_field",
      color: "unknown_field",
    });
  });

  it("POST /api/reputation/testimonials: out of range, not in the list, missing, unknown", async () => {
    const { token, userId } = await createPrincipal();
    const res = await call("POST", "/api/reputation/testimonials", {
      token,
      body: { agentUserId: userId, category: "NEIGHBOUR", rating: 6, stars: 5 },
    });
    expect(codes(await issuesOf(res))).toMatchObject({
      category: "invalid_enum_value",
      rating: "too_big",
      body: "required",
      stars: "unknown_field",
    });
  });

  it("POST /api/clickwrap: a key of the wrong format, a blank body, a missing title, a lone surrogate", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/api/clickwrap", {
      rawBody: '{"key":"-terms","body":" \\u200b ","extra":"\\ud800"}',
      token,
      headers: { "content-type": "application/json" },
    });
    expect(codes(await issuesOf(res))).toMatchObject({
      key: "invalid_format",
      body: "invalid_character",
      title: "required",
      extra: "invalid_unicode",
    });
  });

  it("query parameters and malformed JSON have codes too", async () => {
    const { token } = await createPrincipal();
    const query = await call("GET", "/api/documents/obligations?withinDays=366&sort=due", { token });
    expect(codes(await issuesOf(query))).toMatchObject({ withinDays: expect.any(String), sort: "unknown_field" });
    const malformed = await call("POST", "/api/clickwrap", { token, rawBody: '{"key":', headers: { "content-type": "application/json" } });
    expect(await issuesOf(malformed)).toEqual([{ field: "", path: [], code: "malformed_json", message: expect.any(String) }]);
  });
});
