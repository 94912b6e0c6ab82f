import { describe, expect, it } from "vitest";
import { contractViolation } from "../helpers/contract";

// The checker that every call() of the suite goes through (helpers/contract.ts) must be able to fail.
const json = (body: unknown, status: number) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const url = "http://api.test/v1/contacts/00000000-0000-4000-8000-000000000000";

describe("the contract check of the test client", () => {
  it("accepts a declared answer whose body matches its schema", async () => {
    const error = {
      success: false,
      error: { type: "not_found_error", code: "not_found", title: "Not Found", status: 404, detail: "Contact not found", errors: [] },
    };
    expect(await contractViolation("GET", url, json(error, 404))).toBeNull();
  });

  it("reports an undeclared status, a wrong content type, a body that breaks the schema, and a stray operation", async () => {
    expect(await contractViolation("GET", url, json({}, 418))).toMatch(/getContact .* answered 418, which it does not declare/);
    expect(await contractViolation("GET", url, new Response("nope", { status: 404, headers: { "content-type": "text/plain" } }))).toMatch(
      /as text\/plain/,
    );
    expect(await contractViolation("GET", url, json({ success: true, data: { id: 7 } }, 200))).toMatch(/breaks its schema/);
    expect(await contractViolation("PATCH", "http://api.test/v1/contacts/tags", json({}, 200))).toMatch(/no declared operation/);
    expect(await contractViolation("DELETE", "http://api.test/plants/1", new Response(null, { status: 204 }))).toBeNull();
  });
});
