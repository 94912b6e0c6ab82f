import { env, exports } from "cloudflare:workers";
import { getTableConfig } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { columnName } from "../../src/db/row-json";
import { Conflict } from "../../src/lib/errors";
import { shardDatabase } from "../../src/shards/bindings";
import { syncBatch } from "../../src/shards/copy";
import { MOVED_TABLES, NOT_MOVED } from "../../src/shards/moved-tables";
import { startMove, stepMove } from "../../src/shards/move";
import { call, json } from "../helpers/client";
import { createContact, uniqueEmail } from "../helpers/contacts";
import { createDeal, documentForm } from "../helpers/deals";
import { createDocument, publicSign, sendForSignature, tokenOf } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { publishedProfile } from "../helpers/profiles";
import { eventsSettled, seedEveryTable, snapshot, unseeded } from "../helpers/shard-rows";

const admin = (method: string, path: string, body?: unknown, token: string | undefined = env.ADMIN_TOKEN) =>
  exports.default.fetch(
    new Request(`http://api.test${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }),
  );

const placement = (organizationId: string) =>
  env.DB.prepare("SELECT shard, fenced_at AS fencedAt FROM organization_shards WHERE organization_id = ?")
    .bind(organizationId)
    .first<{ shard: number; fencedAt: string | null }>();

const nonEmpty = (snap: Record<string, string[]>) => Object.fromEntries(Object.entries(snap).filter(([, rows]) => rows.length > 0));

/** The operator's command: the move route called until it stops answering 202 (done, or refused). */
async function moveToEnd(organizationId: string, to: number): Promise<Response> {
  let res: Response | undefined;
  for (let calls = 0; calls < 200; calls++) {
    res = await admin("POST", "/admin/shards/moves", { organizationId, to, drainSeconds: 0 });
    if (res.status !== 202) break;
  }
  return res!;
}

/** Numbers of the seeded rows: organizations seeded with the same number hold rows with the same `seq`. */
let seedNumber = 1_000_000;

/** An organization with contacts, a deal and a deal document whose file is in R2. */
async function populated() {
  const p = await createPrincipal();
  const contacts = [];
  for (let i = 0; i < 3; i++) contacts.push(await createContact(p.token, { tags: ["vip", `t${i}`] }));
  const deal = await createDeal(p.token, { contactId: contacts[0]!.id });
  const upload = await call("POST", `/v1/deals/${deal.id}/documents`, { token: p.token, body: documentForm() });
  expect(upload.status).toBe(201);
  const from = (await placement(p.organizationId))!.shard;
  return { ...p, contacts, deal, from, to: 1 - from };
}

async function expectR2Present(shard: number, organizationId: string) {
  // Rows seeded with SQL (helpers/shard-rows.ts) name no object: the API stores every file under deals/.
  const keys = await shardDatabase(env, shard)
    .prepare("SELECT key FROM deal_documents WHERE organization_id = ? AND key LIKE 'deals/%'")
    .bind(organizationId)
    .all<{ key: string }>();
  expect(keys.results.length).toBeGreaterThan(0);
  for (const { key } of keys.results) expect(await env.FILES.head(key), key).not.toBeNull();
}

describe("the move list", () => {
  it("names every table of a tenant shard, and each carries the fence triggers", async () => {
    const db = shardDatabase(env, 0);
    const tables = (
      await db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'",
        )
        .all<{ name: string }>()
    ).results.map((r) => r.name);
    const moved = MOVED_TABLES.map((t) => getTableConfig(t.table).name);
    expect(tables.filter((name) => !NOT_MOVED.has(name)).sort()).toEqual([...moved].sort());
    const triggers = new Set(
      (await db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all<{ name: string }>()).results.map((r) => r.name),
    );
    const missing = moved
      .flatMap((name) => ["insert", "update", "delete"].map((op) => `${name}_fence_${op}`))
      .filter((name) => !triggers.has(name));
    expect(missing).toEqual([]);
  });

  // The schema side is checked when src/shards/moved-tables.ts loads (refuseCounterKey); this checks the shards' own tables.
  it("keys every moved table by values unique across shards, never by a number each database counts", async () => {
    const db = shardDatabase(env, 0);
    const counted: string[] = [];
    for (const t of MOVED_TABLES) {
      const { sql: ddl } = (await db
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?")
        .bind(t.name)
        .first<{ sql: string }>())!;
      const pk = (
        await db.prepare(`SELECT name, type FROM pragma_table_info('${t.name}') WHERE pk > 0`).all<{ name: string; type: string }>()
      ).results;
      // One INTEGER primary key column is the rowid: each shard counts it from 1.
      if (/AUTOINCREMENT/i.test(ddl) || (pk.length === 1 && pk[0]!.type.toUpperCase() === "INTEGER")) counted.push(t.name);
    }
    expect(counted).toEqual([]);
  });
});

describe("POST /admin/shards/moves", () => {
  it("moves an organization while it is read and written: no lost or duplicated row, no failed read, 503 only while fenced", async () => {
    const p = await populated();
    const written: string[] = [];
    const refused: { start: number; end: number }[] = [];
    const failures: string[] = [];
    let paused = false;
    let stop = false;
    let idle: Promise<void> = Promise.resolve();

    const load = (async () => {
      while (!stop) {
        if (paused) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        let done!: () => void;
        idle = new Promise((resolve) => (done = resolve));
        try {
          const read = await call("GET", `/v1/contacts/${p.contacts[0]!.id}`, { token: p.token });
          if (read.status !== 200) failures.push(`GET contact ${read.status}`);
          const list = await call("GET", "/v1/contacts?limit=5", { token: p.token });
          if (list.status !== 200) failures.push(`GET list ${list.status}`);
          const start = Date.now();
          const email = uniqueEmail("load");
          const res = await call("POST", "/v1/contacts", { token: p.token, body: { firstName: "Load", lastName: "Writer", email } });
          if (res.status === 201) written.push((await json(res)).data.id);
          else if (res.status === 503 && res.headers.get("retry-after")) refused.push({ start, end: Date.now() });
          else failures.push(`POST ${res.status} ${await res.text()}`);
        } catch (err) {
          failures.push(String(err));
        } finally {
          done();
        }
      }
    })();

    // One batch per call, so the test knows when the next one flips the directory: writes pause for that call, and
    // the two shards can be compared with nothing in between.
    let answer: Record<string, any> = {};
    let compared = false;
    try {
      for (let calls = 0; calls < 5000; calls++) {
        const fencedAndLast = answer.phase === "fenced" && answer.tablesDone === answer.tables;
        if (fencedAndLast) {
          paused = true;
          await idle;
        }
        const res = await admin("POST", "/admin/shards/moves", {
          organizationId: p.organizationId,
          to: p.to,
          maxBatches: 1,
          drainSeconds: 1,
        });
        answer = await json(res);
        expect([200, 202], JSON.stringify(answer)).toContain(res.status);
        if (fencedAndLast) {
          expect(answer.phase).toBe("flipped");
          expect(await placement(p.organizationId)).toEqual({ shard: p.to, fencedAt: null });
          // The old shard is frozen since the fence, the new one unwritten since the flip: an exact copy.
          expect(await snapshot(p.to, p.organizationId)).toEqual(await snapshot(p.from, p.organizationId));
          compared = true;
          paused = false;
        }
        if (res.status === 200) break;
        // While the old rows drain the route answers 202 with Retry-After at once: call again (no timer here: in the test
        // pool a timer does not fire while the load loop keeps the isolate busy).
      }
    } finally {
      // Also when an assertion fails: the loop must not outlive the test.
      stop = true;
      await load;
    }
    expect(answer.phase).toBe("done");
    expect(compared).toBe(true);
    expect(failures).toEqual([]);

    // Writes were refused (the loop ran through the fence), and only between the fence and the flip, each with Retry-After.
    expect(refused.length).toBeGreaterThan(0);
    expect(written.length).toBeGreaterThan(0);
    const fence = await shardDatabase(env, p.from)
      .prepare("SELECT fenced_at AS fencedAt FROM shard_fences WHERE organization_id = ?")
      .bind(p.organizationId)
      .first<{ fencedAt: string }>();
    const move = await env.DB.prepare("SELECT cursor FROM shard_moves WHERE organization_id = ?")
      .bind(p.organizationId)
      .first<{ cursor: string }>();
    const flippedAt = Date.parse(JSON.parse(move!.cursor).drainUntil) - 1000;
    for (const r of refused)
      expect(r.end >= Date.parse(fence!.fencedAt) && r.start <= flippedAt, JSON.stringify({ r, fence, flippedAt })).toBe(true);

    // Every accepted write is there once, on the new shard; nothing of the organization is left on the old one.
    const after = await snapshot(p.to, p.organizationId);
    const ids = after.contacts!.map((r) => JSON.parse(r).id as string);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [...written, ...p.contacts.map((c) => c.id)]) expect(ids).toContain(id);
    expect(ids.length).toBe(written.length + p.contacts.length);
    expect(nonEmpty(await snapshot(p.from, p.organizationId))).toEqual({});
    await expectR2Present(p.to, p.organizationId);
    const docs = await call("GET", `/v1/deals/${p.deal.id}/documents`, { token: p.token });
    expect((await json(docs)).data).toHaveLength(1);
    expect((await call("GET", "/v1/contacts?limit=1", { token: p.token })).status).toBe(200);
  });

  it("resumes after a crash at the batch where it stopped, with the same result", async () => {
    const p = await populated();
    const before = nonEmpty(await snapshot(p.from, p.organizationId));
    await startMove(env, p.organizationId, p.to);
    // A run that dies after each batch: the next picks up from shard_moves.
    let progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    expect(progress.phase).toBe("copying");
    while (progress.phase === "copying") progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    expect(progress.phase).toBe("fenced");

    // The fence holds at the shard too, for a writer that never passes authentication (a queue consumer, the cron).
    const source = shardDatabase(env, p.from);
    await expect(
      source.prepare("UPDATE contacts SET first_name = 'Late' WHERE organization_id = ?").bind(p.organizationId).run(),
    ).rejects.toThrow(/organization_moving/);
    const refused = await call("POST", "/v1/contacts", { token: p.token, body: { firstName: "A", lastName: "B", email: uniqueEmail() } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect((await call("GET", `/v1/contacts/${p.contacts[0]!.id}`, { token: p.token })).status).toBe(200);

    while (progress.phase === "fenced") progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    expect(progress.phase).toBe("flipped");
    // The same call the operator makes resumes it to the end.
    const res = await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: p.to });
    expect(res.status).toBe(200);
    expect(nonEmpty(await snapshot(p.to, p.organizationId))).toEqual(before);
    expect(nonEmpty(await snapshot(p.from, p.organizationId))).toEqual({});
    await expectR2Present(p.to, p.organizationId);
    // Stale writers holding the old placement are refused there for good; the organization writes on its new shard.
    await expect(
      source.prepare("INSERT INTO tags (organization_id, name, contact_count) VALUES (?, 'late', 0)").bind(p.organizationId).run(),
    ).rejects.toThrow(/organization_moving/);
    expect(
      (await call("POST", "/v1/contacts", { token: p.token, body: { firstName: "A", lastName: "B", email: uniqueEmail() } })).status,
    ).toBe(201);
    const status = await admin("GET", `/admin/shards/moves/${p.organizationId}`);
    expect(await json(status)).toMatchObject({ phase: "done", from: p.from, to: p.to });

    // And back again: the tombstone fence on the old shard is lifted for the return.
    const back = await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: p.from, drainSeconds: 0 });
    expect(back.status).toBe(200);
    expect((await placement(p.organizationId))!.shard).toBe(p.from);
    expect(nonEmpty(await snapshot(p.to, p.organizationId))).toEqual({});
  });

  it("holds when two operators drive the same move at once, batch by batch: one exact copy, nothing left behind, counters right", async () => {
    const p = await createPrincipal({ shard: 0 });
    for (let i = 0; i < 3; i++) await createContact(p.token, { tags: [`r${i}`] });
    const before = nonEmpty(await snapshot(0, p.organizationId));
    const counts = () =>
      env.DB.prepare("SELECT shard, organizations FROM shard_placements ORDER BY shard").all<{ shard: number; organizations: number }>();
    const countsBefore = (await counts()).results;
    const drive = async () => {
      for (let calls = 0; calls < 1000; calls++) {
        const res = await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: 1, maxBatches: 1, drainSeconds: 0 });
        expect([200, 202], await res.clone().text()).toContain(res.status);
        if (res.status === 200) return (await json(res)).phase as string;
      }
      return "unfinished";
    };
    expect(await Promise.all([drive(), drive()])).toEqual(["done", "done"]);
    expect(await placement(p.organizationId)).toEqual({ shard: 1, fencedAt: null });
    expect(nonEmpty(await snapshot(1, p.organizationId))).toEqual(before);
    expect(nonEmpty(await snapshot(0, p.organizationId))).toEqual({});
    // The placement counters moved once: one organization fewer on shard 0, one more on shard 1.
    const after = (await counts()).results;
    expect(after.find((c) => c.shard === 0)!.organizations).toBe(countsBefore.find((c) => c.shard === 0)!.organizations - 1);
    expect(after.find((c) => c.shard === 1)?.organizations ?? 0).toBe((countsBefore.find((c) => c.shard === 1)?.organizations ?? 0) + 1);
  });

  it("refuses, not overwrites, a row whose unique value another organization's row holds on the target; goes on once mended", async () => {
    const mover = await createPrincipal({ shard: 0 });
    const other = await createPrincipal({ shard: 1 });
    const slug = `collide-${crypto.randomUUID().slice(0, 8)}`;
    await publishedProfile(other, { displayName: "Other Agent" }, slug);
    await publishedProfile(mover, { displayName: "Mover Agent" });
    // Out of step with the directory (a hand edit, a restore from backup): the mover's shard row holds the other's slug.
    await shardDatabase(env, 0)
      .prepare("UPDATE agent_profiles SET slug = ? WHERE organization_id = ?")
      .bind(slug, mover.organizationId)
      .run();
    let res = await moveToEnd(mover.organizationId, 1);
    expect(res.status).toBe(409);
    expect((await json(res)).error).toBe("move_collision");
    // The other organization's profile is untouched, and the mover still lives (and writes) where it was.
    expect((await json(await call("GET", `/api/public/reviews/${slug}`))).agent.displayName).toBe("Other Agent");
    expect((await placement(mover.organizationId))!.shard).toBe(0);
    expect(
      (await call("POST", "/v1/contacts", { token: mover.token, body: { firstName: "Still", lastName: "Here", email: uniqueEmail() } }))
        .status,
    ).toBe(201);
    // Mended, the same call goes on to the end.
    await shardDatabase(env, 0)
      .prepare("UPDATE agent_profiles SET slug = ? WHERE organization_id = ?")
      .bind(`${slug}-mover`, mover.organizationId)
      .run();
    res = await moveToEnd(mover.organizationId, 1);
    expect(res.status).toBe(200);
    expect((await json(await call("GET", `/api/public/reviews/${slug}`))).agent.displayName).toBe("Other Agent");
    // Asked again once done: the same answer, not a conflict.
    expect((await admin("POST", "/admin/shards/moves", { organizationId: mover.organizationId, to: 1 })).status).toBe(200);
  });

  it("leaves another organization's trash whole: its trashed contact still restores after a move onto its shard", async () => {
    const mover = await createPrincipal({ shard: 0 });
    const other = await createPrincipal({ shard: 1 });
    const theirs = await createContact(other.token, { tags: ["kept"] });
    expect((await call("DELETE", `/v1/contacts/${theirs.id}`, { token: other.token })).status).toBe(200);
    // Each shard numbers its own rows; the mover trashes until its shard's count reaches the other's, so a per-shard
    // counter as the key would give the mover's kept rows the same keys as the other's.
    const rowsOn = async (shard: number) =>
      (await shardDatabase(env, shard).prepare("SELECT COALESCE(MAX(rowid), 0) AS n FROM trash_rows").first<{ n: number }>())!.n;
    const target = await rowsOn(1);
    while ((await rowsOn(0)) < target) {
      const mine = await createContact(mover.token, { tags: ["gone"] });
      expect((await call("DELETE", `/v1/contacts/${mine.id}`, { token: mover.token })).status).toBe(200);
    }
    const res = await moveToEnd(mover.organizationId, 1);
    expect(res.status, await res.clone().text()).toBe(200);
    const listed = (await json(await call("GET", "/v1/trash", { token: other.token }))).data as { id: string }[];
    expect(listed.map((e) => e.id)).toContain(theirs.id);
    const restored = await call("POST", `/v1/contacts/${theirs.id}/restore`, { token: other.token });
    expect(restored.status, await restored.clone().text()).toBe(200);
    expect((await call("GET", `/v1/contacts/${theirs.id}`, { token: other.token })).status).toBe(200);
  });

  it("leaves no kept row behind when a record is restored mid-move: trashed again on the new shard, it restores again", async () => {
    const p = await populated();
    const contact = p.contacts[1]!;
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    await startMove(env, p.organizationId, p.to);
    // Copy every table (its kept rows included), then restore on the old shard before the fence: the entry and its
    // rows leave the source, and the fenced pass must take both off the target.
    let progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    while (progress.tablesDone < progress.tables) progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    expect(progress.phase).toBe("copying");
    expect((await call("POST", `/v1/contacts/${contact.id}/restore`, { token: p.token })).status).toBe(200);
    const kept = (shard: number) =>
      shardDatabase(env, shard).prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ?").bind(contact.id).first<{ n: number }>();
    expect((await kept(p.to))!.n).toBeGreaterThan(0);
    // The operator's command re-fences and finishes.
    const res = await moveToEnd(p.organizationId, p.to);
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await placement(p.organizationId))!.shard).toBe(p.to);
    expect((await kept(p.to))!.n).toBe(0);
    expect(nonEmpty(await snapshot(p.from, p.organizationId))).toEqual({});
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    const again = await call("POST", `/v1/contacts/${contact.id}/restore`, { token: p.token });
    expect(again.status, await again.clone().text()).toBe(200);
  });

  it("moves one organization whole and leaves every other organization's rows on both shards byte for byte: every moved table seeded, trash included", async () => {
    const mover = await createPrincipal({ shard: 0 });
    const neighbour = await createPrincipal({ shard: 0 });
    const host = await createPrincipal({ shard: 1 });
    // Through the API on each side: contacts with tags, a deal with its document in R2, a contact in the trash.
    const trashed = new Map<TestPrincipal, string>();
    for (const p of [mover, neighbour, host]) {
      const kept = await createContact(p.token, { tags: ["vip"] });
      const deal = await createDeal(p.token, { contactId: kept.id });
      expect((await call("POST", `/v1/deals/${deal.id}/documents`, { token: p.token, body: documentForm() })).status).toBe(201);
      const gone = await createContact(p.token, { tags: ["gone"] });
      expect((await call("DELETE", `/v1/contacts/${gone.id}`, { token: p.token })).status).toBe(200);
      trashed.set(p, gone.id);
    }
    await Promise.all([
      eventsSettled(0, mover.organizationId),
      eventsSettled(0, neighbour.organizationId),
      eventsSettled(1, host.organizationId),
    ]);
    // And a row in every moved table with SQL. The host's rows carry the mover's numbers, so the kept rows of both
    // trashes hold the same `seq`s.
    const n = seedNumber++;
    seedNumber++;
    await seedEveryTable(0, { organizationId: mover.organizationId, tag: `mover-${n}`, n });
    await seedEveryTable(0, { organizationId: neighbour.organizationId, tag: `neighbour-${n}`, n: n + 1 });
    await seedEveryTable(1, { organizationId: host.organizationId, tag: `host-${n}`, n });
    expect({
      mover: await unseeded(0, mover.organizationId),
      neighbour: await unseeded(0, neighbour.organizationId),
      host: await unseeded(1, host.organizationId),
    }).toEqual({ mover: [], neighbour: [], host: [] });
    const before = {
      mover: await snapshot(0, mover.organizationId),
      neighbour: await snapshot(0, neighbour.organizationId),
      host: await snapshot(1, host.organizationId),
    };

    const res = await moveToEnd(mover.organizationId, 1);
    expect(res.status, await res.clone().text()).toBe(200);

    expect(await snapshot(1, host.organizationId)).toEqual(before.host);
    expect(await snapshot(0, neighbour.organizationId)).toEqual(before.neighbour);
    expect(await snapshot(1, mover.organizationId)).toEqual(before.mover);
    expect(nonEmpty(await snapshot(0, mover.organizationId))).toEqual({});
    await expectR2Present(1, mover.organizationId);
    // What each organization would notice: its trashed contact comes back.
    for (const p of [mover, neighbour, host]) {
      const restored = await call("POST", `/v1/contacts/${trashed.get(p)}/restore`, { token: p.token });
      expect(restored.status, await restored.clone().text()).toBe(200);
    }
  });

  it("refuses, not replaces, a row whose primary key another organization's row holds on the target: 409 move_collision, both rows intact", async () => {
    const mover = await createPrincipal({ shard: 0 });
    const other = await createPrincipal({ shard: 1 });
    const mine = await createContact(mover.token, { firstName: "Mover" });
    const theirs = await createContact(other.token, { firstName: "Other" });
    // Out of step (a restore from backup, an id written by hand): the other organization's contact has the mover's id.
    const target = shardDatabase(env, 1);
    await target.prepare("UPDATE contacts SET id = ? WHERE id = ?").bind(mine.id, theirs.id).run();
    const row = async () => (await target.prepare("SELECT * FROM contacts WHERE id = ?").bind(mine.id).all()).results;
    const before = await row();
    const res = await moveToEnd(mover.organizationId, 1);
    expect(res.status).toBe(409);
    expect((await json(res)).error).toBe("move_collision");
    expect(await row()).toEqual(before);
    expect((await json(await call("GET", `/v1/contacts/${mine.id}`, { token: other.token }))).data.firstName).toBe("Other");
    expect((await placement(mover.organizationId))!.shard).toBe(0);
    expect((await json(await call("GET", `/v1/contacts/${mine.id}`, { token: mover.token }))).data.firstName).toBe("Mover");
  });

  it("refuses a key another organization holds on the target in every table a move carries, tables scoped through a parent included", async () => {
    const mover = await createPrincipal({ shard: 0 });
    const other = await createPrincipal({ shard: 1 });
    const n = seedNumber++;
    const keys = `shared-${n}`;
    await seedEveryTable(0, { organizationId: mover.organizationId, tag: `mover-${n}`, keys, n });
    await seedEveryTable(1, { organizationId: other.organizationId, tag: `other-${n}`, keys, n });
    // A key that holds the organization (its own id, or organization_id in it) cannot be another organization's.
    const colliding = MOVED_TABLES.filter((t) => t.name !== "organizations" && !t.key.some((c) => columnName(c) === "organization_id"));
    expect(colliding.filter((t) => t.through).length).toBe(MOVED_TABLES.filter((t) => t.through).length);
    const before = await snapshot(1, other.organizationId);
    const sync = (t: (typeof MOVED_TABLES)[number]) =>
      syncBatch(shardDatabase(env, 0), shardDatabase(env, 1), t, mover.organizationId, null);
    // The organization's own row first, as a move copies it (its members reference it).
    await sync(MOVED_TABLES.find((t) => t.name === "organizations")!);
    const refused: string[] = [];
    for (const t of colliding) {
      const error = await sync(t).then(
        () => null,
        (err: unknown) => err,
      );
      if (error instanceof Conflict && error.code === "move_collision") refused.push(t.name);
      else if (error) throw error;
    }
    expect(refused).toEqual(colliding.map((t) => t.name));
    expect(await snapshot(1, other.organizationId)).toEqual(before);
  });

  it("answers a signer during the fence with 503 and Retry-After, opened or not, and signs after the move", async () => {
    const p = await createPrincipal({ shard: 0 });
    const links = (await sendForSignature(p.token, (await createDocument(p.token)).id)).links;
    const opened = tokenOf(links[0]!.url);
    const fresh = tokenOf(links[1]!.url);
    expect((await publicSign("GET", opened)).status).toBe(200);
    await startMove(env, p.organizationId, 1);
    let progress = await stepMove(env, p.organizationId, { drainMs: 0, maxBatches: 1 });
    while (progress.phase === "copying") progress = await stepMove(env, p.organizationId, { drainMs: 0, maxBatches: 1 });
    expect(progress.phase).toBe("fenced");
    for (const [token, method, body] of [
      [fresh, "GET", undefined],
      [opened, "POST", { action: "authenticate", codeVerified: true }],
    ] as const) {
      const res = await publicSign(method, token, body);
      expect(res.status, `${method} ${await res.clone().text()}`).toBe(503);
      expect(res.headers.get("retry-after")).toBeTruthy();
    }
    expect((await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: 1, drainSeconds: 0 })).status).toBe(200);
    expect((await publicSign("GET", fresh)).status).toBe(200);
    expect((await publicSign("POST", opened, { action: "authenticate", codeVerified: true })).status).toBe(200);
  });

  it("refuses an unknown option instead of running with its default", async () => {
    const p = await createPrincipal();
    const res = await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: 1, drainSecond: 0 });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await json(res))).toContain("drainSecond");
  });

  it("answers clear errors: unknown organization, its own shard, a shard that does not exist, no or a wrong token", async () => {
    const p = await createPrincipal();
    const here = (await placement(p.organizationId))!.shard;
    const unknown = await admin("POST", "/admin/shards/moves", { organizationId: "no-such-org", to: 0 });
    expect(unknown.status).toBe(404);
    const same = await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: here });
    expect(same.status).toBe(409);
    expect((await json(same)).error).toBe("already_on_shard");
    const nowhere = await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: 7 });
    expect(nowhere.status).toBe(400);
    expect(JSON.stringify(await json(nowhere))).toContain("unknown_shard");
    expect((await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: 1 - here }, "")).status).toBe(401);
    expect((await admin("POST", "/admin/shards/moves", { organizationId: p.organizationId, to: 1 - here }, "wrong")).status).toBe(401);
    expect((await admin("GET", `/admin/shards/moves/${p.organizationId}`)).status).toBe(404);
    expect((await call("GET", "/openapi.json")).status).toBe(200);
    expect(JSON.stringify(await json(await call("GET", "/openapi.json")))).not.toContain("/admin/");
  });
});
