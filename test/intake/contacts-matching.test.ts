import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { matchContacts } from "../../src/intake/service";
import { createDb } from "../../src/db/client";
import { phoneKey } from "../../src/lib/phone";
import { systemContext } from "../../src/shards/tenants";
import { call } from "../helpers/client";
import { createContact, updateContact } from "../helpers/contacts";
import { createPrincipal, tenantDb } from "../helpers/factories";

const unique = () => crypto.randomUUID().slice(0, 8);

/** The matching lead intake and imports share (issue 33), on the organization's own shard as a consumer would run it. */
async function match(organizationId: string, people: { emails?: string[]; phones?: string[] }[], phoneRegion?: string) {
  const ctx = { ...systemContext(env, createDb(await tenantDb(organizationId)), organizationId, "test", () => {}), phoneRegion };
  return matchContacts(
    ctx,
    people.map((p) => ({ emails: p.emails ?? [], phones: p.phones ?? [] })),
  );
}

describe("matching people to contacts (issue 33)", () => {
  it("matches an e-mail in any case and a phone written any way, either phone of a contact", async () => {
    const p = await createPrincipal();
    const email = `Raj.Patel.${unique()}@Example.test`;
    const raj = await createContact(p.token, { email, phone: "(415) 555-0100" });
    const ann = await createContact(p.token, { secondaryPhone: "415.555.0199" });
    const [byEmail, byPhone, bySecondary, nobody] = await match(p.organizationId, [
      { emails: [email.toUpperCase()] },
      { phones: ["+1 415-555-0100"] },
      { emails: ["someone-else@example.test"], phones: ["1 (415) 555 0199"] },
      { emails: ["nobody@example.test"], phones: ["415 555 0000"] },
    ]);
    expect(byEmail).toMatchObject({ contact: { id: raj.id }, matchedBy: "email", conflicts: [] });
    expect(byPhone).toMatchObject({ contact: { id: raj.id }, matchedBy: "phone", conflicts: [] });
    expect(bySecondary).toMatchObject({ contact: { id: ann.id }, matchedBy: "phone", conflicts: [] });
    expect(nobody).toEqual({ contact: null, matchedBy: null, conflicts: [] });
  });

  it("lets the e-mail win over a phone that names another contact, and lists that one in conflicts", async () => {
    const p = await createPrincipal();
    const a = await createContact(p.token, { phone: "212-555-0101" });
    const b = await createContact(p.token, {});
    const [m] = await match(p.organizationId, [{ emails: [b.email], phones: ["(212) 555-0101"] }]);
    expect(m).toMatchObject({ contact: { id: b.id }, matchedBy: "email", conflicts: [a.id] });
  });

  it("reads numbers without a country code in the organization's region, and keys a contact's phone again when it changes", async () => {
    const p = await createPrincipal();
    const res = await call("PATCH", "/v1/organization", { token: p.token, body: { settings: { defaultPhoneRegion: "GB" } } });
    expect(res.status).toBe(200);
    // A fresh session reads the region with its authentication, as every request does.
    const gb = await createContact(p.token, { phone: "020 7946 0958" });
    const [london, asUs] = await match(p.organizationId, [{ phones: ["+44 20 7946 0958"] }, { phones: ["+1 020 7946 0958"] }], "GB");
    expect(london).toMatchObject({ contact: { id: gb.id }, matchedBy: "phone" });
    expect(asUs!.contact).toBeNull();

    await updateContact(p.token, gb.id, { phone: "07700 900123" });
    const [old, fresh] = await match(p.organizationId, [{ phones: ["+442079460958"] }, { phones: ["+44 7700 900123"] }], "GB");
    expect(old!.contact).toBeNull();
    expect(fresh).toMatchObject({ contact: { id: gb.id }, matchedBy: "phone" });
  });

  it("keys one written number by the region it is read in, each time (the keys of recent numbers are remembered per region)", () => {
    // Read in the US first: had the remembered key ignored the region, the UK reading would answer the US key.
    expect(phoneKey("020 7946 0958", "US")).toBeNull();
    expect(phoneKey("020 7946 0958", "GB")).toBe("+442079460958");
    expect(phoneKey("020 7946 0958", "US")).toBeNull();
    expect(phoneKey("(416) 555-0101", "CA")).toBe("+14165550101");
    expect(phoneKey("0412 345 678", "AU")).toBe("+61412345678");
    expect(phoneKey("0412 345 678", "GB")).not.toBe("+61412345678");
    // More numbers than are remembered, then the first again: still its key.
    for (let i = 0; i < 2_500; i++) phoneKey(`(212) 555-${String(i).padStart(4, "0")}`, "US");
    expect(phoneKey("020 7946 0958", "GB")).toBe("+442079460958");
  });

  it("never matches another organization's contacts", async () => {
    const mine = await createPrincipal();
    const theirs = await createPrincipal();
    const email = `shared.${unique()}@example.test`;
    await createContact(theirs.token, { email, phone: "303-555-0123" });
    const [m] = await match(mine.organizationId, [{ emails: [email], phones: ["303 555 0123"] }]);
    expect(m).toEqual({ contact: null, matchedBy: null, conflicts: [] });
  });
});

describe("the matching query's plan", () => {
  it("looks each key up by its index, never walking the organization's contacts (an OR of the three did)", async () => {
    const p = await createPrincipal({ shard: 0 });
    const real = await tenantDb(p.organizationId);
    const issued: { sql: string; params: unknown[] }[] = [];
    // The shard, recording each statement the matching sends with its parameters.
    const recording = new Proxy(real, {
      get(target, prop) {
        if (prop === "prepare")
          return (sql: string) => {
            const statement = target.prepare(sql);
            return new Proxy(statement, {
              get(s, q) {
                if (q === "bind") return (...params: unknown[]) => (issued.push({ sql, params }), s.bind(...params));
                const v = Reflect.get(s, q);
                return typeof v === "function" ? v.bind(s) : v;
              },
            });
          };
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const ctx = systemContext(env, createDb(recording as D1Database), p.organizationId, "test", () => {});
    await matchContacts(ctx, [{ emails: ["a@example.test"], phones: ["416-555-0100"] }]);
    const [query] = issued.filter((q) => /from "contacts"/i.test(q.sql));
    const plan = (
      await real
        .prepare(`EXPLAIN QUERY PLAN ${query!.sql}`)
        .bind(...query!.params)
        .all<{ detail: string }>()
    ).results
      .map((r) => r.detail)
      .join("\n");
    expect(plan).toMatch(/contacts_org_email_unique \(organization_id=\? AND email_key=\?\)/);
    expect(plan).toMatch(/\(organization_id=\? AND phone_key=\?\)/);
    expect(plan).toMatch(/\(organization_id=\? AND secondary_phone_key=\?\)/);
    expect(plan).not.toMatch(/INDEX \w+ \(organization_id=\?\)$/m);
  });
});
