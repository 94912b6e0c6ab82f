import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createDocument, leaseCanonical } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { testApp } from "../helpers/test-app";

const paths = (body: { issues: { path: (string | number)[] }[] }) => body.issues.map((i) => i.path.join(".")).sort();

describe("POST /api/documents (contract 4)", () => {
  it("generates a GENERATED document from a valid lease draft and reads it back", async () => {
    const { token } = await createPrincipal();
    const canonical = leaseCanonical();
    const res = await call("POST", "/api/documents", { token, body: { formKey: "on/standard-lease", canonical } });
    expect(res.status).toBe(201);
    const doc = await json(res);
    expect(doc).toMatchObject({
      id: expect.any(String),
      status: "GENERATED",
      formKey: "on/standard-lease",
      canonical,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await json(await call("GET", `/api/documents/${doc.id}`, { token }))).toEqual(doc);
    // The hash is of the content, whatever order its keys were sent in.
    const reordered = JSON.parse(
      JSON.stringify({ provenance: canonical.provenance, lease: canonical.lease, formKey: canonical.formKey, schemaVersion: 1 }),
    );
    expect((await createDocument(token, reordered)).sha256).toBe(doc.sha256);
  });

  it("answers 400 listing every problem of an invalid draft, and stores nothing", async () => {
    const { token, organizationId } = await createPrincipal();
    const canonical = leaseCanonical() as Record<string, any>;
    canonical.lease.tenants = [];
    canonical.lease.monthlyRent = { cents: -5 };
    canonical.lease.term.commencement = { year: 2027, month: 2, day: 30 };
    canonical.lease.pets = "yes";
    const res = await call("POST", "/api/documents", { token, body: { formKey: "on/standard-lease", canonical } });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.error).toBe("invalid_request");
    expect(paths(body)).toEqual([
      "canonical.lease.monthlyRent.cents",
      "canonical.lease.pets",
      "canonical.lease.tenants",
      "canonical.lease.term.commencement",
    ]);
    expect(
      await (await tenantDb(organizationId))
        .prepare("SELECT COUNT(*) AS n FROM documents WHERE organization_id = ?")
        .bind(organizationId)
        .first("n"),
    ).toBe(0);
  });

  it("answers 400 for an unknown formKey, a canonical of another form, and a missing canonical", async () => {
    const { token } = await createPrincipal();
    const unknown = await json(
      await call("POST", "/api/documents", { token, body: { formKey: "on/unknown-form", canonical: leaseCanonical() } }),
    );
    expect(paths(unknown)).toEqual(["formKey"]);
    const mismatch = await call("POST", "/api/documents", { token, body: { formKey: "generic/free-form", canonical: leaseCanonical() } });
    expect(mismatch.status).toBe(400);
    expect(paths(await json(mismatch))).toEqual(["canonical.formKey"]);
    expect(paths(await json(await call("POST", "/api/documents", { token, body: { formKey: "on/standard-lease" } })))).toEqual([
      "canonical",
    ]);
  });

  it("lists documents newest first with keyset pagination, only the caller's", async () => {
    const owner = await createPrincipal();
    const other = await createPrincipal();
    await createDocument(other.token);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await createDocument(owner.token)).id);
    const first = await json(await call("GET", "/api/documents?limit=2", { token: owner.token }));
    expect(first.documents.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first.pagination).toMatchObject({ hasMore: true, total: 3, limit: 2 });
    const second = await json(await call("GET", `/api/documents?limit=2&cursor=${first.pagination.nextCursor}`, { token: owner.token }));
    expect(second.documents.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    expect((await call("GET", "/api/documents?limit=0x2", { token: owner.token })).status).toBe(400);
  });

  it("answers another organization's document exactly as an unknown one", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const doc = await createDocument(owner.token);
    const foreign = await call("GET", `/api/documents/${doc.id}`, { token: stranger.token });
    const unknown = await call("GET", "/api/documents/00000000-0000-4000-8000-000000000000", { token: stranger.token });
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).toBe(await unknown.text());
  });
});

describe("GET /api/documents/usage", () => {
  it("counts this month's generations; included is null when DOCUMENTS_INCLUDED_PER_MONTH is unset", async () => {
    const { token } = await createPrincipal();
    const label = new Intl.DateTimeFormat("en-US", { month: "long", year: "numeric", timeZone: "UTC" }).format(new Date());
    expect(await json(await call("GET", "/api/documents/usage", { token }))).toEqual({ used: 0, included: null, periodLabel: label });
    await createDocument(token);
    await createDocument(token);
    expect(await json(await call("GET", "/api/documents/usage", { token }))).toEqual({ used: 2, included: null, periodLabel: label });
  });

  it("never refuses past the allotment: each document over it is recorded once in the overage ledger, also under concurrency", async () => {
    const { token, organizationId } = await createPrincipal();
    const { fetch } = testApp({}, { DOCUMENTS_INCLUDED_PER_MONTH: "3" });
    const body = JSON.stringify({ formKey: "on/standard-lease", canonical: leaseCanonical() });
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => fetch("POST", "/api/documents", { token, body, headers: { "content-type": "application/json" } })),
    );
    for (const a of answers) expect(a.status).toBe(201);
    expect(await (await fetch("GET", "/api/documents/usage", { token })).json()).toMatchObject({ used: 8, included: 3 });
    const ledger = await (await tenantDb(organizationId))
      .prepare("SELECT position, included FROM document_overages WHERE organization_id = ? ORDER BY position")
      .bind(organizationId)
      .all<{ position: number; included: number }>();
    expect(ledger.results).toEqual([4, 5, 6, 7, 8].map((position) => ({ position, included: 3 })));
  });
});
