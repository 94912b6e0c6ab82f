// Issue 41 §5: the write kit contacts, deals and properties share (src/crm/record-writes.ts, src/crm/write-reads.ts),
// checked as each resource declares it.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { contactPreloads, contactWriteReads } from "../../src/contacts/preload";
import { writableInput as contactInput } from "../../src/contacts/writes";
import { createDb } from "../../src/db/client";
import { dealPreloads } from "../../src/deals/preload";
import { writableInput as dealInput } from "../../src/deals/writes";
import { NotFound, PreconditionFailed } from "../../src/lib/errors";
import { propertyPreloads } from "../../src/properties/preload";
import { writableInput as propertyInput } from "../../src/properties/writes";
import { systemContext } from "../../src/shards/tenants";
import { call } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createPrincipal, tenantDb } from "../helpers/factories";

describe("the reads a write of one record starts from (src/crm/write-reads.ts)", () => {
  it("ride the authentication for PUT of one contact, deal or property, and for nothing else", () => {
    for (const [preloads, base] of [
      [contactPreloads, "/v1/contacts"],
      [dealPreloads, "/v1/deals"],
      [propertyPreloads, "/v1/properties"],
    ] as const) {
      expect(preloads.map((p) => p.method)).toEqual(["PUT"]);
      const path = preloads[0]!.path;
      expect([`${base}/abc`, `${base}/abc/tags`, base, `${base}/`].map((p) => path.test(p))).toEqual([true, false, false, false]);
    }
  });

  it("are taken from the authentication once: a retry reads the shard again, where a contact deleted since is a 404", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const db = createDb(await tenantDb(p.organizationId));
    const match = `/v1/contacts/${contact.id}`.match(contactPreloads[0]!.path)!;
    const { key, statements } = contactPreloads[0]!.read(db, sql`${p.organizationId}`, match);
    const preloaded = (await db.batch(statements as [never, ...never[]])) as unknown[];
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);

    const ctx = { ...systemContext(env, db, p.organizationId, "test", () => {}), preloaded: new Map([[key, preloaded]]) };
    const [[row]] = await contactWriteReads.read(ctx, contact.id);
    expect(row?.id, "the row read with the authentication").toBe(contact.id);
    await expect(contactWriteReads.read(ctx, contact.id), "the retry's own read").rejects.toBeInstanceOf(NotFound);
  });

  it("answer 412 when If-Match names another version than the one read", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const db = createDb(await tenantDb(p.organizationId));
    const ctx = { ...systemContext(env, db, p.organizationId, "test", () => {}), ifMatch: [99] };
    await expect(contactWriteReads.read(ctx, contact.id)).rejects.toBeInstanceOf(PreconditionFailed);
    const [[row]] = await contactWriteReads.read({ ...ctx, ifMatch: [1] }, contact.id);
    expect(row?.version).toBe(1);
  });
});

describe("the input a write takes (src/crm/record-writes.ts)", () => {
  it("drops what each resource shows but never takes, and only that", () => {
    const echoed = { id: "x", organizationId: "o", createdAt: "t", updatedAt: "t", notes: "kept" };
    expect(contactInput({ ...echoed, lastContactedAt: "t" })).toEqual({ notes: "kept" });
    expect(dealInput({ ...echoed, lastActivityAt: "t", contact: { id: "c" }, tasks: [] })).toEqual({ notes: "kept" });
    expect(propertyInput({ id: "x", listing: { listPrice: 1, priceHistory: [], daysOnMarket: 3 }, mlsId: "m" })).toEqual({
      listing: { listPrice: 1 },
      mlsId: "m",
    });
  });
});
