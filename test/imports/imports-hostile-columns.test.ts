import { describe, expect, it } from "vitest";
import { listAll } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";
import { importErrors, settledImport, startCsvImport, startRowsImport } from "../helpers/imports";

// Issue 33's adversarial pass: a column named like a property every JS object has ("constructor", "toString") was
// read as Object.prototype's function, so the chunk threw on every retry and the import stayed queued for good.

describe("imports with columns named like Object.prototype's members", () => {
  it("JSON rows with constructor/toString columns complete, those columns ignored", async () => {
    const owner = await createPrincipal();
    const job = await startRowsImport(owner, {
      kind: "contacts",
      rows: [{ email: "proto.rows@example.test", firstName: "Ann", lastName: "Lee", constructor: "x", toString: "y", hasOwnProperty: "z" }],
    });
    const done = await settledImport(owner, job.id, 10_000);
    expect(done).toMatchObject({ status: "completed", processed: 1, created: 1, failed: 0 });
    const { contacts } = await listAll(owner.token, "limit=100");
    expect(contacts.map((c) => c.email)).toEqual(["proto.rows@example.test"]);
  });

  it("a CSV with a constructor column and a mapping completes", async () => {
    const owner = await createPrincipal();
    const job = await startCsvImport(
      owner,
      "E,F,L,constructor,valueOf\r\nproto.csv@example.test,Ann,Lee,x,y\r\n",
      `kind=contacts&mapping=${encodeURIComponent(JSON.stringify({ E: "email", F: "firstName", L: "lastName" }))}`,
    );
    const done = await settledImport(owner, job.id, 10_000);
    expect(done).toMatchObject({ status: "completed", created: 1, failed: 0 });
    expect(await importErrors(owner, job.id)).toEqual([]);
  });
});
