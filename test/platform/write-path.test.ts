import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { expectDerivedFiguresExact } from "../helpers/derived-figures";
import { createPrincipal } from "../helpers/factories";
import { type ChildRace, eventCount, type IndependentRace, type OnceRace, type Params, PUBLIC_RACES, RACES } from "../helpers/race-table";
import { fillPath, ROUTES } from "../helpers/route-table";
import { TRASH_RACES } from "../helpers/trash-races";

const pathOf = (route: string) => route.slice(route.indexOf(" ") + 1);
const methodOf = (route: string) => route.slice(0, route.indexOf(" "));
/**
 * Each race with the shard its organization is placed on: the races of a table take turns, so every table runs on
 * both shards (issue 24) without running twice.
 */
const cases = <T extends { route: string }>(races: T[]) => races.map((r, i) => [r.route, i % 2, r] as const);
const named = <T extends { name: string }>(races: T[]) => races.map((r, i) => [r.name, i % 2, r] as const);

/** Sends every request at once through the Worker's fetch handler and reads each answer. */
async function race(
  requests: {
    method: string;
    path: string;
    token: string;
    body?: unknown;
    rawBody?: Uint8Array;
    headers?: Record<string, string>;
    vars?: Record<string, string>;
  }[],
) {
  return Promise.all(
    requests.map(async (r) => {
      const res = await call(r.method, r.path, { token: r.token, body: r.body, rawBody: r.rawBody, headers: r.headers, vars: r.vars });
      return { status: res.status, body: await res.text() };
    }),
  );
}

describe("concurrent writes (the race table)", () => {
  it("covers every write route of the route table", () => {
    const writes = ROUTES.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path}`);
    const raced = new Set(RACES.map((r) => r.route));
    expect(writes.filter((w) => !raced.has(w))).toEqual([]);
  });

  it.each(cases(RACES.filter((r): r is IndependentRace => r.kind === "independent")))(
    "%s (shard %i): concurrent independent changes all land",
    async (route, shard, entry) => {
      const owner = await createPrincipal({ shard });
      const params = await entry.seed(owner);
      const changes = await entry.changes(owner, params);
      const token = entry.token ? await entry.token(owner) : owner.token;
      const answers = await race(
        changes.map((c) => ({
          method: methodOf(route),
          path: c.path ?? fillPath(pathOf(route), params),
          token,
          body: c.body,
          rawBody: c.rawBody,
          headers: c.headers,
          vars: entry.vars?.(params),
        })),
      );
      for (const a of answers) expect(a.status, a.body).toBeLessThan(300);
      await entry.verify(owner, params);
      await expectDerivedFiguresExact(owner.organizationId);
    },
  );

  it.each(cases(RACES.filter((r): r is OnceRace => r.kind === "once")))(
    "%s (shard %i): of concurrent copies exactly one succeeds; counters and events move once",
    async (route, shard, entry) => {
      const owner = await createPrincipal({ shard });
      const objects: Params[] = [];
      for (let i = 0; i < (entry.objects ?? 10); i++) objects.push(await entry.seed(owner));
      const before = entry.counter ? await entry.counter.read(owner) : 0;
      const copies = entry.copies ?? 5;
      const requests = objects.flatMap((params) =>
        Array.from({ length: copies }, () => ({
          method: methodOf(route),
          path: fillPath(entry.path ?? pathOf(route), params),
          token: owner.token,
          body: typeof entry.body === "function" ? entry.body(params) : entry.body,
        })),
      );
      const answers = await race(requests);
      for (const a of answers) expect([200, 201, 202, 204, 404, 409], a.body).toContain(a.status);
      let moves = objects.length;
      if (entry.serial) {
        // A copy reached after the first move ended may rightly move again; no two moves may have run at once.
        moves = answers.filter((a) => a.status < 300).length;
        expect(moves, JSON.stringify(answers)).toBeGreaterThanOrEqual(1);
        const spans = await entry.serial(owner);
        expect(spans).toHaveLength(moves);
        for (let i = 1; i < spans.length; i++) expect(spans[i]!.start >= spans[i - 1]!.end!, JSON.stringify(spans)).toBe(true);
      } else {
        for (let i = 0; i < objects.length; i++) {
          const mine = answers.slice(i * copies, (i + 1) * copies);
          expect(
            mine.filter((a) => a.status < 300),
            JSON.stringify(mine),
          ).toHaveLength(1);
        }
      }
      if (entry.counter) expect(await entry.counter.read(owner)).toBe(before + moves * entry.counter.perMove);
      if (entry.event) expect(await eventCount(owner.organizationId, entry.event)).toBe(moves);
      await expectDerivedFiguresExact(owner.organizationId);
    },
  );

  it.each(cases(RACES.filter((r): r is ChildRace => r.kind === "child")))(
    "%s (shard %i) racing the parent's delete leaves nothing behind",
    async (route, shard, entry) => {
      const owner = await createPrincipal({ shard });
      const params = await entry.seed(owner);
      const children = Array.from({ length: 10 }, (_, i) => ({
        method: methodOf(route),
        path: fillPath(pathOf(route), params),
        token: owner.token,
        body: entry.body(i, params),
        vars: entry.vars?.(params),
      }));
      const remove = { method: "DELETE", path: fillPath(entry.parentDelete, params), token: owner.token };
      // The delete goes out in the middle of the child writes.
      const answers = await race([...children.slice(0, 5), remove, ...children.slice(5)]);
      expect(answers[5]!.status, answers[5]!.body).toBe(200);
      for (const a of answers) expect([200, 201, 202, 404], a.body).toContain(a.status);
      const leftovers = await entry.leftovers(owner, params);
      expect(leftovers).toEqual(Object.fromEntries(Object.keys(leftovers).map((k) => [k, 0])));
      await expectDerivedFiguresExact(owner.organizationId);
    },
  );
});

describe("trash, references and erasure under concurrency (issue 21)", () => {
  it.each(named(TRASH_RACES))("%s (shard %i)", async (_, shard, entry) => {
    const owner = await createPrincipal({ shard });
    await entry.run(owner);
    await expectDerivedFiguresExact(owner.organizationId);
  });
});

describe("lost updates and double writes reported in issue 15", () => {
  it("a rotated secret is the one deliveries sign with, whatever description changes race it", async () => {
    const { openMailbox } = await import("../helpers/receiver");
    const { verifyWebhook } = await import("../../src/webhooks/verify");
    for (let trial = 0; trial < 3; trial++) {
      const owner = await createPrincipal();
      const box = await openMailbox();
      const created = await json(
        await call("POST", "/v1/webhooks", { token: owner.token, body: { url: box.url, events: ["contact.created"] } }),
      );
      const id = created.data.id;
      const requests = [
        ...Array.from({ length: 4 }, (_, i) => ({ body: { description: `d${i}` } })),
        { body: { rotateSecret: true } },
        ...Array.from({ length: 5 }, (_, i) => ({ body: { description: `e${i}` } })),
      ];
      const answers = await Promise.all(
        requests.map(async (r) => json(await call("PATCH", `/v1/webhooks/${id}`, { token: owner.token, body: r.body }))),
      );
      const secret = answers[4].data.secret as string;
      expect(secret).toMatch(/^whsec_/);
      expect((await call("POST", `/v1/webhooks/${id}/test`, { token: owner.token })).status).toBe(202);
      let received: Awaited<ReturnType<typeof box.received>> = [];
      for (let i = 0; i < 100 && received.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        received = await box.received();
      }
      const delivery = received[0]!;
      expect((await verifyWebhook(secret, delivery.headers, delivery.body)).ok).toBe(true);
      expect((await verifyWebhook(created.data.secret, delivery.headers, delivery.body)).ok).toBe(false);
    }
  });

  it("50 concurrent bulk updates replacing 20 contacts' tags leave the tag counts exact", async () => {
    const owner = await createPrincipal();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push(
        (
          await json(
            await call("POST", "/v1/contacts", {
              token: owner.token,
              body: { firstName: "B", lastName: `${i}`, email: `bulk${i}@race.test` },
            }),
          )
        ).data.id,
      );
    const answers = await race(
      Array.from({ length: 50 }, (_, i) => ({
        method: "PATCH",
        path: "/v1/contacts/bulk",
        token: owner.token,
        body: { contactIds: ids, updates: { tags: [`tag-${i % 7}`] } },
      })),
    );
    // Under this much contention a request may give up with a 409 the client can retry; none is half-applied.
    for (const a of answers) expect([200, 409], a.body).toContain(a.status);
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0);
    const carried = new Map<string, number>();
    for (const id of ids) {
      const c = (await json(await call("GET", `/v1/contacts/${id}`, { token: owner.token }))).data;
      expect(c.tags).toHaveLength(1);
      carried.set(c.tags[0], (carried.get(c.tags[0]) ?? 0) + 1);
      const filtered = await json(
        await call("GET", `/v1/contacts?tags=${encodeURIComponent(c.tags[0])}&limit=100`, { token: owner.token }),
      );
      expect(filtered.data.map((x: { id: string }) => x.id)).toContain(id);
    }
    const listed = (await json(await call("GET", "/v1/contacts/tags?limit=100", { token: owner.token }))).data;
    expect(new Map(listed.map((t: { name: string; count: number }) => [t.name, t.count]))).toEqual(carried);
  });

  it("concurrent posts of one new plant id create it once", async () => {
    const owner = await createPrincipal();
    const answers = await race(
      Array.from({ length: 20 }, (_, i) => ({ method: "POST", path: "/plants", token: owner.token, body: { id: 7, name: `Fern ${i}` } })),
    );
    for (const a of answers) expect(a.status, a.body).toBe(200);
    expect(await eventCount(owner.organizationId, "plant.created")).toBe(1);
    expect(await eventCount(owner.organizationId, "plant.updated")).toBe(19);
  });

  it("concurrent creates with one e-mail make one contact; the others are 409 and the counter is exact", async () => {
    const owner = await createPrincipal();
    const answers = await race(
      Array.from({ length: 20 }, (_, i) => ({
        method: "POST",
        path: "/v1/contacts",
        token: owner.token,
        body: { firstName: "Dup", lastName: `${i}`, email: "same@race.test" },
      })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(19);
    expect((await json(await call("GET", "/v1/contacts", { token: owner.token }))).pagination.total).toBe(1);
  });
});

describe("ETag and If-Match", () => {
  it("reads and writes carry the version; a write with a stale If-Match is a 412 and changes nothing", async () => {
    const owner = await createPrincipal();
    const created = await call("POST", "/v1/contacts", {
      token: owner.token,
      body: { firstName: "E", lastName: "Tag", email: "etag@example.test" },
    });
    expect(created.headers.get("etag")).toBe('"1"');
    const id = (await json(created)).data.id;
    const read = await call("GET", `/v1/contacts/${id}`, { token: owner.token });
    expect(read.headers.get("etag")).toBe('"1"');

    const first = await call("PUT", `/v1/contacts/${id}`, { token: owner.token, body: { notes: "first" }, headers: { "if-match": '"1"' } });
    expect(first.status).toBe(200);
    expect(first.headers.get("etag")).toBe('"2"');
    const stale = await call("PUT", `/v1/contacts/${id}`, { token: owner.token, body: { notes: "lost" }, headers: { "if-match": '"1"' } });
    expect(stale.status).toBe(412);
    expect((await json(stale)).error).toMatchObject({ type: "precondition_failed_error", status: 412 });
    expect((await json(await call("GET", `/v1/contacts/${id}`, { token: owner.token }))).data.notes).toBe("first");

    for (const ifMatch of ['W/"2"', "2", '"nonsense"']) {
      expect(
        (await call("PUT", `/v1/contacts/${id}`, { token: owner.token, body: { notes: "x" }, headers: { "if-match": ifMatch } })).status,
        ifMatch,
      ).toBe(412);
    }
    expect(
      (await call("POST", `/v1/contacts/${id}/tags`, { token: owner.token, body: { tags: ["a"] }, headers: { "if-match": '"1", "2"' } }))
        .status,
    ).toBe(200);
    expect(
      (await call("POST", `/v1/contacts/${id}/activities`, { token: owner.token, body: { type: "NOTE" }, headers: { "if-match": '"2"' } }))
        .status,
    ).toBe(412);
    expect((await call("DELETE", `/v1/contacts/${id}`, { token: owner.token, headers: { "if-match": '"2"' } })).status).toBe(412);
    expect((await call("DELETE", `/v1/contacts/${id}`, { token: owner.token, headers: { "if-match": "*" } })).status).toBe(200);
  });

  it("webhook subscriptions carry an ETag and honour If-Match", async () => {
    const owner = await createPrincipal();
    const created = await call("POST", "/v1/webhooks", {
      token: owner.token,
      body: { url: "http://127.0.0.1:9/hooks/etag", events: ["contact.created"], enabled: false },
    });
    const id = (await json(created)).data.id;
    expect(created.headers.get("etag")).toBe('"1"');
    expect((await call("GET", `/v1/webhooks/${id}`, { token: owner.token })).headers.get("etag")).toBe('"1"');
    const patched = await call("PATCH", `/v1/webhooks/${id}`, {
      token: owner.token,
      body: { description: "v2" },
      headers: { "if-match": '"1"' },
    });
    expect(patched.headers.get("etag")).toBe('"2"');
    expect(
      (await call("PATCH", `/v1/webhooks/${id}`, { token: owner.token, body: { description: "v3" }, headers: { "if-match": '"1"' } }))
        .status,
    ).toBe(412);
    expect((await call("DELETE", `/v1/webhooks/${id}`, { token: owner.token, headers: { "if-match": '"1"' } })).status).toBe(412);
    expect((await call("DELETE", `/v1/webhooks/${id}`, { token: owner.token, headers: { "if-match": '"2"' } })).status).toBe(200);
  });
});

describe("public writes under concurrency (issue 23)", () => {
  it.each(named(PUBLIC_RACES))("%s (shard %i)", async (_, shard, entry) => {
    const owner = await createPrincipal({ shard });
    await entry.run(owner);
    await expectDerivedFiguresExact(owner.organizationId);
  });
});
