import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { createDb } from "../../src/db/client";
import { purgeTrash } from "../../src/trash/service";
import { call, json } from "./client";
import { createContact } from "./contacts";
import { createDeal, documentForm } from "./deals";
import { tenantDb, type TestPrincipal } from "./factories";
import { eventCount } from "./race-table";

/**
 * Races of the trash, references and erasure (issue 21), beside RACES: each pits two different writes against each
 * other and checks that whichever lands first, the other sees it — nothing dangling, nothing half-restored, counters
 * and events exact.
 */
export interface VersusRace {
  name: string;
  run(owner: TestPrincipal): Promise<void>;
}

/** A count on the owner's shard. */
const count = async (owner: TestPrincipal, sql: string, ...binds: unknown[]) =>
  (await (
    await tenantDb(owner.organizationId)
  )
    .prepare(sql)
    .bind(...binds)
    .first<{ n: number }>())!.n;

async function settle(requests: { method: string; path: string; token: string; body?: unknown }[]) {
  return Promise.all(
    requests.map(async (r) => {
      const res = await call(r.method, r.path, { token: r.token, body: r.body });
      return { status: res.status, body: await res.text() };
    }),
  );
}

const dealsOf = (owner: TestPrincipal) => count(owner, "SELECT COUNT(*) AS n FROM deals WHERE organization_id = ?", owner.organizationId);
const totalOf = async (owner: TestPrincipal, list: string) =>
  (await json(await call("GET", `${list}?limit=1`, { token: owner.token }))).pagination.total as number;

export const TRASH_RACES: VersusRace[] = [
  {
    name: "DELETE /v1/contacts/{id} racing 70 POST /v1/deals that reference it",
    async run(owner) {
      const contact = await createContact(owner.token);
      const create = (i: number) => ({
        method: "POST",
        path: "/v1/deals",
        token: owner.token,
        body: { title: `Raced ${i}`, type: "PURCHASE", amount: 1000 + i, contactId: contact.id },
      });
      const creates = Array.from({ length: 70 }, (_, i) => create(i));
      const answers = await settle([
        ...creates.slice(0, 35),
        { method: "DELETE", path: `/v1/contacts/${contact.id}`, token: owner.token },
        ...creates.slice(35),
      ]);
      const removed = answers.splice(35, 1)[0]!;
      expect(removed.status, removed.body).toBe(200);
      const made = answers.filter((a) => a.status === 201).map((a) => JSON.parse(a.body).data.id as string);
      for (const a of answers) {
        expect([201, 422], a.body).toContain(a.status);
        if (a.status === 422)
          expect(JSON.parse(a.body).error.errors).toEqual([expect.objectContaining({ field: "contactId", code: "invalid_reference" })]);
      }
      // Every deal made landed before the delete (the outbox keeps commit order): none names a contact already gone.
      const order = await (await tenantDb(owner.organizationId))
        .prepare(
          "SELECT type, rowid AS n FROM outbox_events WHERE organization_id = ? AND type IN ('deal.created', 'contact.deleted') ORDER BY rowid",
        )
        .bind(owner.organizationId)
        .all<{ type: string; n: number }>();
      expect(order.results.map((r) => r.type)).toEqual([...made.map(() => "deal.created"), "contact.deleted"]);
      // It is in the trash now, shown as deleted, and comes back whole.
      expect(await dealsOf(owner)).toBe(made.length);
      expect(await totalOf(owner, "/v1/deals")).toBe(made.length);
      expect(await eventCount(owner.organizationId, "deal.created")).toBe(made.length);
      const deletedAt = (await (
        await tenantDb(owner.organizationId)
      )
        .prepare("SELECT deleted_at FROM trash_entries WHERE record_id = ?")
        .bind(contact.id)
        .first<{ deleted_at: string }>())!.deleted_at;
      for (const id of made.slice(0, 5))
        expect((await json(await call("GET", `/v1/deals/${id}?include=contact`, { token: owner.token }))).data.contact).toEqual({
          id: contact.id,
          deleted: true,
          deletedAt,
        });
      // After the delete, a create is refused: none of the late ones slipped through.
      const late = await call("POST", "/v1/deals", { token: owner.token, body: create(99).body });
      expect(late.status).toBe(422);
      expect((await call("POST", `/v1/contacts/${contact.id}/restore`, { token: owner.token })).status).toBe(200);
      for (const id of made.slice(0, 5))
        expect((await json(await call("GET", `/v1/deals/${id}?include=contact`, { token: owner.token }))).data.contact).toMatchObject({
          id: contact.id,
          email: contact.email,
        });
    },
  },
  {
    name: "DELETE /v1/contacts/{id} racing POST /v1/contacts/{id}/restore",
    async run(owner) {
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const c = await createContact(owner.token, { tags: ["flip"] });
        expect((await call("DELETE", `/v1/contacts/${c.id}`, { token: owner.token })).status).toBe(200);
        ids.push(c.id);
      }
      const requests = ids.flatMap((id) =>
        Array.from({ length: 8 }, (_, i) =>
          i % 2 === 0
            ? { method: "POST", path: `/v1/contacts/${id}/restore`, token: owner.token }
            : { method: "DELETE", path: `/v1/contacts/${id}`, token: owner.token },
        ),
      );
      const answers = await settle(requests);
      for (const a of answers) expect([200, 404], a.body).toContain(a.status);
      const restored = answers.filter((a, i) => requests[i]!.method === "POST" && a.status === 200).length;
      const deleted = answers.filter((a, i) => requests[i]!.method === "DELETE" && a.status === 200).length;
      let live = 0;
      for (const id of ids) {
        const row = await count(owner, "SELECT COUNT(*) AS n FROM contacts WHERE id = ?", id);
        const entry = await count(owner, "SELECT COUNT(*) AS n FROM trash_entries WHERE record_id = ? AND state = 'trashed'", id);
        const kept = await count(owner, "SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ? AND table_name = 'contacts'", id);
        // Exactly one place: live, or in the trash with its rows.
        expect(row + entry, id).toBe(1);
        expect(kept, id).toBe(entry);
        live += row;
      }
      // Each object alternates: restores and deletes that succeeded differ by whether it ended live.
      expect(restored - deleted).toBe(live);
      expect(await totalOf(owner, "/v1/contacts")).toBe(live);
      expect(await eventCount(owner.organizationId, "contact.restored")).toBe(restored);
      expect(await eventCount(owner.organizationId, "contact.deleted")).toBe(ids.length + deleted);
      const tag = (await json(await call("GET", "/v1/contacts/tags", { token: owner.token }))).data.find(
        (t: { name: string }) => t.name === "flip",
      );
      expect(tag?.count ?? 0).toBe(live);
    },
  },
  {
    name: "the trash purge racing POST /v1/deals/{id}/restore",
    async run(owner) {
      const db = await tenantDb(owner.organizationId);
      for (let trial = 0; trial < 4; trial++) {
        const deal = await createDeal(owner.token);
        expect((await call("POST", `/v1/deals/${deal.id}/documents`, { token: owner.token, body: documentForm() })).status).toBe(201);
        expect((await call("DELETE", `/v1/deals/${deal.id}`, { token: owner.token })).status).toBe(200);
        // The purge runs on a clock just past the deadline (another isolate's), the restores on one just before it.
        const deadline = Date.now() + 60_000;
        await db
          .prepare("UPDATE trash_entries SET restorable_until = ? WHERE record_id = ?")
          .bind(new Date(deadline).toISOString(), deal.id)
          .run();
        const restores = Array.from({ length: 3 }, async (_, i) => {
          await new Promise((r) => setTimeout(r, i * trial));
          return (await call("POST", `/v1/deals/${deal.id}/restore`, { token: owner.token })).status;
        });
        const purge = (async () => {
          await new Promise((r) => setTimeout(r, trial));
          return purgeTrash(env, createDb(db), { now: new Date(deadline + 1) });
        })();
        const [statuses] = await Promise.all([Promise.all(restores), purge]);
        const files = (await env.FILES.list({ prefix: `deals/${owner.organizationId}/${deal.id}/` })).objects.length;
        const entry = await db.prepare("SELECT state FROM trash_entries WHERE record_id = ?").bind(deal.id).first<{ state: string }>();
        if (statuses.includes(200)) {
          // Restored: whole, with its file; the purge found nothing to take.
          expect(statuses.filter((s) => s === 200)).toHaveLength(1);
          expect(entry).toBeNull();
          expect(files).toBe(1);
          expect((await call("GET", `/v1/deals/${deal.id}?include=documents`, { token: owner.token })).status).toBe(200);
        } else {
          // Purged: a tombstone, the file gone, the deal not readable.
          expect(statuses).toEqual([404, 404, 404]);
          expect(entry).toEqual({ state: "purged" });
          expect(files).toBe(0);
          expect((await call("GET", `/v1/deals/${deal.id}`, { token: owner.token })).status).toBe(404);
        }
        expect(await count(owner, "SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ?", deal.id)).toBe(0);
      }
    },
  },
  {
    name: "DELETE /v1/contacts/{id}?erase=true racing PUT /v1/contacts/{id}",
    async run(owner) {
      const contact = await createContact(owner.token, { firstName: "Racedina", lastName: "Erasington", phone: "+1 416 555 0199" });
      const updates = Array.from({ length: 10 }, (_, i) => ({
        method: "PUT",
        path: `/v1/contacts/${contact.id}`,
        token: owner.token,
        body: { notes: `Racedina Erasington note ${i}`, phone: `+1 416 555 01${10 + i}` },
      }));
      const answers = await settle([
        ...updates.slice(0, 5),
        { method: "DELETE", path: `/v1/contacts/${contact.id}?erase=true`, token: owner.token },
        ...updates.slice(5),
      ]);
      const erased = answers.splice(5, 1)[0]!;
      expect(erased.status, erased.body).toBe(200);
      for (const a of answers) expect([200, 404], a.body).toContain(a.status);
      expect((await call("GET", `/v1/contacts/${contact.id}`, { token: owner.token })).status).toBe(404);
      // Whatever landed before the erasure was taken out with it: no event or stored answer names the person.
      for (const [table, column] of [
        ["outbox_events", "data"],
        ["idempotency_keys", "response_body"],
        ["webhook_deliveries", "body"],
      ] as const) {
        const left = await count(
          owner,
          `SELECT COUNT(*) AS n FROM ${table} WHERE organization_id = ? AND (instr(${column}, 'Racedina') > 0 OR instr(${column}, 'Erasington') > 0 OR instr(lower(${column}), ?) > 0)`,
          owner.organizationId,
          contact.email.toLowerCase(),
        );
        expect(left, table).toBe(0);
      }
      expect(
        await (await tenantDb(owner.organizationId))
          .prepare("SELECT state FROM trash_entries WHERE record_id = ?")
          .bind(contact.id)
          .first(),
      ).toEqual({ state: "erased" });
      expect(await totalOf(owner, "/v1/contacts")).toBe(0);
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM erasures WHERE organization_id = ? AND contact_id = ?",
          owner.organizationId,
          contact.id,
        ),
      ).toBe(1);
    },
  },
  {
    name: "DELETE /v1/contacts/{id}?erase=true racing itself (a client's retry): one erasure, counted once, both told the same",
    async run(owner) {
      const contact = await createContact(owner.token, { firstName: "Twicea", lastName: "Erasington" });
      const name = "Twicea Erasington";
      // A draft that names them by their e-mail goes whole (one naming the name alone would be kept: documents_by_name).
      const doc = await call("POST", "/api/documents", {
        token: owner.token,
        body: {
          formKey: "generic/free-form",
          canonical: {
            schemaVersion: 1,
            formKey: "generic/free-form",
            title: "Notes",
            body: `About ${name}, ${contact.email}`,
            provenance: { aiDrafted: false },
          },
        },
      });
      expect(doc.status).toBe(201);
      const other = await createContact(owner.token, { firstName: "Ned", lastName: "Other", notes: `Friend of ${name}` });
      const erase = { method: "DELETE", path: `/v1/contacts/${contact.id}?erase=true`, token: owner.token };
      const answers = await settle([erase, erase, erase]);
      // A copy that finds the erasure begun finishes it with the others; one that finds it done answers 404.
      const done = answers.filter((a) => a.status === 200);
      for (const a of answers) expect([200, 404], a.body).toContain(a.status);
      expect(done.length).toBeGreaterThanOrEqual(1);
      const erased = done.map((a) => JSON.stringify(JSON.parse(a.body).data.erased));
      expect(new Set(erased).size, erased.join("\n")).toBe(1);
      expect(JSON.parse(done[0]!.body).data.erased).toMatchObject({ contacts: 1, documents: 1, contact_notes: 1 });
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM erasures WHERE organization_id = ? AND contact_id = ? AND state = 'done'",
          owner.organizationId,
          contact.id,
        ),
      ).toBe(1);
      expect((await json(await call("GET", `/v1/contacts/${other.id}`, { token: owner.token }))).data.notes).toBe("Friend of [erased]");
    },
  },
  // Merge (issue 33): one guarded batch over the target and every source, so what lands before it moves with it and
  // what comes after finds the source gone; nothing is left under a merged source.
  {
    name: "POST /v1/contacts/{id}/merge racing updates of the target, and updates and activities of the source",
    async run(owner) {
      const target = await createContact(owner.token, { firstName: "Tess" });
      const source = await createContact(owner.token, { firstName: "Tess", notes: "original" });
      const onTarget = [{ lastName: "Raced" }, { source: "WEBSITE" }, { status: "INACTIVE" }, { tags: ["kept"] }].map((body) => ({
        method: "PUT",
        path: `/v1/contacts/${target.id}`,
        token: owner.token,
        body,
      }));
      const onSource = [
        ...Array.from({ length: 4 }, (_, i) => ({
          method: "PUT",
          path: `/v1/contacts/${source.id}`,
          token: owner.token,
          body: { notes: `source note ${i}` },
        })),
        ...Array.from({ length: 6 }, (_, i) => ({
          method: "POST",
          path: `/v1/contacts/${source.id}/activities`,
          token: owner.token,
          body: { type: "NOTE", description: `raced ${i}` },
        })),
      ];
      const merge = { method: "POST", path: `/v1/contacts/${target.id}/merge`, token: owner.token, body: { sourceIds: [source.id] } };
      const answers = await settle([...onTarget.slice(0, 2), ...onSource.slice(0, 5), merge, ...onTarget.slice(2), ...onSource.slice(5)]);
      const merged = answers.splice(7, 1)[0]!;
      expect(merged.status, merged.body).toBe(200);
      const targetAnswers = [...answers.slice(0, 2), ...answers.slice(7, 9)];
      const sourceAnswers = [...answers.slice(2, 7), ...answers.slice(9)];
      for (const a of targetAnswers) expect(a.status, a.body).toBe(200);
      const after = (await json(await call("GET", `/v1/contacts/${target.id}`, { token: owner.token }))).data;
      expect(after).toMatchObject({ lastName: "Raced", source: "WEBSITE", status: "INACTIVE" });
      expect(after.tags).toContain("kept");
      // A source note that landed before the merge is the one the target took; else the source's first one.
      const landed = sourceAnswers.filter((a) => a.status === 200).map((a) => JSON.parse(a.body).data.notes as string);
      expect(["original", ...landed]).toContain(after.notes);
      const activities = sourceAnswers.filter((a) => a.status === 201).length;
      for (const a of sourceAnswers) expect([200, 201, 404], a.body).toContain(a.status);
      expect(
        (await json(await call("GET", `/v1/contacts/${target.id}/activities?limit=100`, { token: owner.token }))).pagination.total,
      ).toBe(activities);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM contact_activities WHERE contact_id = ?", source.id)).toBe(0);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM contacts WHERE id = ?", source.id)).toBe(0);
      expect(await totalOf(owner, "/v1/contacts")).toBe(1);
    },
  },
  {
    name: "POST /v1/contacts/{id}/merge of one source into different targets at once: one wins, the others are told where it went",
    async run(owner) {
      const source = await createContact(owner.token, { tags: ["contested"] });
      const targets = [];
      for (let i = 0; i < 4; i++) targets.push(await createContact(owner.token));
      const answers = await settle(
        targets.flatMap((t) =>
          [0, 1].map(() => ({ method: "POST", path: `/v1/contacts/${t.id}/merge`, token: owner.token, body: { sourceIds: [source.id] } })),
        ),
      );
      const won = answers.filter((a) => a.status === 200);
      expect(won, JSON.stringify(answers)).toHaveLength(1);
      const winner = JSON.parse(won[0]!.body).data.id as string;
      for (const a of answers.filter((x) => x.status !== 200)) {
        expect(a.status, a.body).toBe(409);
        expect(JSON.parse(a.body).error.errors).toEqual([{ field: "mergedInto", code: "merged_contact", message: winner }]);
      }
      expect(await eventCount(owner.organizationId, "contact.deleted")).toBe(1);
      const tag = (await json(await call("GET", "/v1/contacts/tags", { token: owner.token }))).data.find(
        (t: { name: string }) => t.name === "contested",
      );
      expect(tag.count).toBe(1);
      expect(await totalOf(owner, "/v1/contacts")).toBe(4);
    },
  },
];
