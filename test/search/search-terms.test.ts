import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { foldMap, MAX_TERM_CHARS, searchWords, termsOf } from "../../src/lib/search-terms";
import { shardDatabase } from "../../src/shards/bindings";
import { call, json } from "../helpers/client";
import { createContact, getContact, updateContact } from "../helpers/contacts";
import { createDeal } from "../helpers/deals";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import { contactTerms, termsIndexed } from "../helpers/search";

// The index's triggers (migration 0012) and the query's words (src/lib/search-terms.ts) must split text alike, or
// a word a record holds would not be found by typing it.

describe("the words of a text", () => {
  it("folds case and accents in any Unicode form, keeps apostrophes inside a word and splits on every other separator", () => {
    expect(
      termsOf("Zoë ZOË Zoe\u0308 ŁUKASZ Straße O'Brien d’Arc Smith-Jones raj.patel@Example.com ﬁne ＡＢＣ１２ 東京、大阪 «x»—y…z"),
    ).toEqual([
      "zoe",
      "lukasz",
      "strasse",
      "obrien",
      "darc",
      "smith",
      "jones",
      "raj",
      "patel",
      "example",
      "com",
      "fine",
      "abc12",
      "東京",
      "大阪",
      "x",
      "y",
      "z",
    ]);
    expect(termsOf("a".repeat(100))).toEqual(["a".repeat(MAX_TERM_CHARS)]);
  });

  it("reads q's FTS syntax as plain words, and a number written with phone punctuation as one number", () => {
    expect(searchWords('"raj" pat* NEAR(x) -y z:w', true)).toEqual([["raj"], ["pat"], ["near"], ["x"], ["y"], ["z"], ["w"]]);
    expect(searchWords("Patel (416) 555-0101", true)).toEqual([["patel"], ["4165550101"]]);
    expect(searchWords("+1 416 555", true)).toEqual([["1416555", "416555"]]);
    expect(searchWords("1-416-555-0101", true)).toEqual([["14165550101", "4165550101"]]);
    expect(searchWords("1234", true)).toEqual([["1234"]]);
    // Deals and listings have no phones: "12-14" is two words there.
    expect(searchWords("12-14 Main", false)).toEqual([["12"], ["14"], ["main"]]);
    expect(searchWords("*** ---", true)).toEqual([]);
  });
});

describe("the index's triggers (migration 0012)", () => {
  it("hold the character map q is split with", async () => {
    const rows = (await env.DB_SHARD_0.prepare("SELECT ch, folded FROM search_fold").all<{ ch: string; folded: string }>()).results;
    expect(new Map(rows.map((r) => [r.ch, r.folded]))).toEqual(foldMap());
  });

  it("index a contact's names, e-mail, tags, notes and phones as q reads them, through every write", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    // A note past the tokenizer's 100-character blocks in one chunk of non-ASCII words, control characters, every kind
    // of separator.
    const long = Array.from({ length: 700 }, (_, i) => `wörd${i % 250}`).join("—");
    const cases: Record<string, unknown>[] = [
      {
        firstName: "Zoë",
        lastName: "Łukasiewicz-O'Brien",
        phone: "+1 (416) 555-0101",
        secondaryPhone: "416.555.0102 ext 7",
        tags: ["first-time buyer", 'say "hi"', "ÉLITE"],
        notes: "Called about Elm St.\n\tWants ＡＢＣ１２; 東京、大阪 «x»—y…z \u0001ctl",
      },
      { firstName: "Ann", lastName: "Lee", notes: long },
      { firstName: "E\u0301mile", lastName: "ÅSTRÖM", tags: [] },
    ];
    for (const body of cases) {
      const contact = await createContact(p.token, body);
      expect(await termsIndexed(db, contact.id), JSON.stringify(body).slice(0, 60)).toEqual(contactTerms(contact));
    }
    // Updated, tagged, bulk-updated: the terms follow in the write's own batch.
    const [first] = (await json(await call("GET", "/v1/contacts?limit=100&sort=createdAt:asc", { token: p.token }))).data;
    let after = await updateContact(p.token, first.id, { lastName: "Nakamura", phone: null, notes: "Moved to Oak Ave" });
    expect(await termsIndexed(db, first.id)).toEqual(contactTerms(after));
    expect((await call("POST", `/v1/contacts/${first.id}/tags`, { token: p.token, body: { tags: ["Referral-Partner"] } })).status).toBe(
      200,
    );
    after = await getContact(p.token, first.id);
    expect(await termsIndexed(db, first.id)).toEqual(contactTerms(after));
    expect(contactTerms(after)).toContain("partner");
    expect(
      (
        await call("PATCH", "/v1/contacts/bulk", {
          token: p.token,
          body: { contactIds: [first.id], updates: { notes: "Bulk note about Pine" } },
        })
      ).status,
    ).toBe(200);
    after = await getContact(p.token, first.id);
    expect(await termsIndexed(db, first.id)).toEqual(contactTerms(after));
    expect(contactTerms(after)).toContain("pine");
  });

  it("index a deal's title and a listing's address and MLS id, and follow their changes", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const deal = await createDeal(p.token, { title: "Condo purchase — Bloor St." });
    expect(await termsIndexed(db, deal.id)).toEqual(["bloor", "condo", "purchase", "st"]);
    expect((await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { title: "Lakeshore lease" } })).status).toBe(200);
    expect(await termsIndexed(db, deal.id)).toEqual(["lakeshore", "lease"]);
    const property = await createProperty(p.token, {
      mlsId: "C5-123456",
      address: { street: "12-14 Rue Sainte-Catherine", unit: "PH3", city: "Montréal", state: "QC", zipCode: "H3B 1A7" },
    });
    expect(await termsIndexed(db, property.id)).toEqual([
      "12",
      "123456",
      "14",
      "1a7",
      "c5",
      "catherine",
      "h3b",
      "montreal",
      "ph3",
      "qc",
      "rue",
      "sainte",
    ]);
    expect(
      (await call("PUT", `/v1/properties/${property.id}`, { token: p.token, body: { mlsId: null, address: { city: "Laval" } } })).status,
    ).toBe(200);
    expect(await termsIndexed(db, property.id)).toEqual(["12", "14", "1a7", "catherine", "h3b", "laval", "ph3", "qc", "rue", "sainte"]);
  });

  it("leave no term of a record that is gone, on the shard of any organization", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Gone", lastName: "Soon" });
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    for (const shard of [0, 1]) expect(await termsIndexed(shardDatabase(env, shard), contact.id)).toEqual([]);
  });
});
