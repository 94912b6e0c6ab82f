import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import type { DomainEvent } from "../../src/events/event";
import { MAX_SEND_ATTEMPTS, stageEvents } from "../../src/events/outbox";
import worker from "../../src/index";
import { encodeCursor } from "../../src/lib/cursor";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, issuePairs } from "../helpers/contacts";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { openMailbox } from "../helpers/receiver";

// Issue 15, "Found": each case below was reproduced over HTTP against npm run dev before the write path was hardened.

const unsent = async (organizationId: string) =>
  (await tenantDb(organizationId))
    .prepare("SELECT id, send_attempts, next_attempt_at, dead_at, sent_at FROM outbox_events WHERE organization_id = ? ORDER BY id")
    .bind(organizationId)
    .all<{ id: string; send_attempts: number; next_attempt_at: string | null; dead_at: string | null; sent_at: string | null }>()
    .then((r) => r.results);

async function stageDue(organizationId: string, n: number, dueAgoSeconds: number): Promise<DomainEvent[]> {
  const occurredAt = new Date(Date.now() - (dueAgoSeconds + 30) * 1000).toISOString();
  const events = Array.from({ length: n }, () => ({
    id: crypto.randomUUID(),
    type: "plant.created",
    organizationId,
    actor: { type: "system" as const, userId: null },
    occurredAt,
    data: { object: { id: 1 } },
  }));
  const db = createDb(await tenantDb(organizationId));
  for (let i = 0; i < events.length; i += 100)
    await db.batch(stageEvents(db, events.slice(i, i + 100)) as [ReturnType<typeof stageEvents>[number]]);
  return events;
}

/**
 * The cron pass with an events queue that refuses the messages of `refused` ids (a queue rejecting them), recording
 * the rest of `organizations`' (the pass runs over the whole shard, where other tests keep events of their own).
 */
async function cronPass(refused: Set<string>, organizations: string[]) {
  const sent: string[] = [];
  const queue = {
    async sendBatch(messages: { body: { id: string; organizationId: string } }[]) {
      if (messages.some((m) => refused.has(m.body.id))) throw new Error("queue refused the batch");
      sent.push(...messages.filter((m) => organizations.includes(m.body.organizationId)).map((m) => m.body.id));
    },
  };
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "* * * * *" }), { ...env, EVENTS: queue as unknown as Queue<unknown> }, ctx);
  await waitOnExecutionContext(ctx);
  return sent;
}

describe("events always leave", () => {
  it("an update whose event is larger than a queue message (128 KB) is still delivered to webhooks", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    await call("POST", "/v1/webhooks", { token: owner.token, body: { url: box.url, events: ["contact.updated"] } });
    // Control characters are valid in JSON strings and cost six bytes each once escaped; the event of a change carries
    // the contact and the previous values, so both copies count.
    // Locations are one-line text, so they take a three-byte character instead.
    const filled = (ch: string, wide: string) => ({
      notes: ch.repeat(10_000),
      preferences: { locations: Array.from({ length: 50 }, () => wide.repeat(100)) },
    });
    const contact = await createContact(owner.token, filled("\u0001", "€"));
    const notes = filled("\u0002", "£").notes;
    expect((await call("PUT", `/v1/contacts/${contact.id}`, { token: owner.token, body: filled("\u0002", "£") })).status).toBe(200);
    await vi.waitFor(async () => expect(await box.count()).toBe(1), { timeout: 15_000, interval: 100 });
    const [delivery] = await box.received();
    expect(new TextEncoder().encode(delivery!.body).length).toBeGreaterThan(128 * 1024);
    expect(JSON.parse(delivery!.body).data.object.notes).toBe(notes);
  });

  it("an organization's events go out in the cron pass however many of another's refuse to send; those back off", async () => {
    const poisoned = await createPrincipal();
    const healthy = await createPrincipal();
    const poison = await stageDue(poisoned.organizationId, 600, 120);
    const [good] = await stageDue(healthy.organizationId, 1, 10);
    const log = vi.spyOn(console, "warn").mockImplementation(() => {});
    const sent = await cronPass(new Set(poison.map((e) => e.id)), [healthy.organizationId, poisoned.organizationId]);
    log.mockRestore();
    expect(sent).toEqual([good!.id]);
    expect((await unsent(healthy.organizationId))[0]!.sent_at).not.toBeNull();
    // A share of the poisoned organization's rows was tried, alone each, and pushed back; none was lost.
    const rows = await unsent(poisoned.organizationId);
    const tried = rows.filter((r) => r.send_attempts === 1);
    expect(tried.length).toBeGreaterThan(0);
    expect(tried.length).toBeLessThan(600);
    for (const r of tried) expect(r.next_attempt_at! > new Date().toISOString()).toBe(true);
    expect(rows.every((r) => r.sent_at === null && r.dead_at === null)).toBe(true);
  });

  it(`dead-letters an event after ${MAX_SEND_ATTEMPTS} failed sends, with a log line, and re-sends it no more`, async () => {
    const owner = await createPrincipal();
    const [event] = await stageDue(owner.organizationId, 1, 60);
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE outbox_events SET send_attempts = ? WHERE id = ?")
      .bind(MAX_SEND_ATTEMPTS - 1, event!.id)
      .run();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    await cronPass(new Set([event!.id]), [owner.organizationId]);
    const lines = errors.mock.calls.map((c) => String(c[0]));
    errors.mockRestore();
    const [row] = await unsent(owner.organizationId);
    expect(row).toMatchObject({ send_attempts: MAX_SEND_ATTEMPTS, next_attempt_at: null, sent_at: null });
    expect(row!.dead_at).not.toBeNull();
    expect(lines.some((l) => l.includes("event dead-lettered") && l.includes(event!.id) && l.includes(owner.organizationId))).toBe(true);
    expect(await cronPass(new Set(), [owner.organizationId])).not.toContain(event!.id);
  });

  it("refuses a plant name of 200 KB (every stored field has a maximum)", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/plants", { token, body: { id: 1, name: "x".repeat(200_000) } });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ error: 400, message: expect.stringContaining("name") });
  });
});

describe("bounded input and output", () => {
  const nest = (depth: number) => {
    let v: unknown = "bottom";
    for (let i = 0; i < depth; i++) v = { a: v };
    return v as Record<string, unknown>;
  };

  it("refuses activity metadata nested 10,000 deep, and the contacts list keeps answering", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    const errors = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/activities`, { token, body: { type: "NOTE", metadata: nest(10_000) } }),
      422,
      "validation_error",
    );
    expect(errors.map((e) => e.code)).toContain("too_deep");
    const big = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/activities`, { token, body: { type: "NOTE", metadata: { blob: "x".repeat(9000) } } }),
      422,
      "validation_error",
    );
    expect(issuePairs(big)).toEqual(["metadata:too_big"]);
    expect((await call("POST", `/v1/contacts/${c.id}/activities`, { token, body: { type: "NOTE", metadata: nest(6) } })).status).toBe(201);
    expect((await call("GET", "/v1/contacts?include=activities", { token })).status).toBe(200);
  });

  it("refuses any JSON body nested deeper than 32 levels with 422, never a 5xx", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/v1/contacts", {
      token,
      body: { firstName: "a", lastName: "b", email: "deep@example.test", address: nest(100_000) },
    });
    expect(res.status).toBe(422);
  });

  it("pages through a contact's activities; include=activities embeds the 5 newest", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    for (let i = 0; i < 12; i++)
      expect((await call("POST", `/v1/contacts/${c.id}/activities`, { token, body: { type: "NOTE", description: `n${i}` } })).status).toBe(
        201,
      );
    const first = await json(await call("GET", `/v1/contacts/${c.id}/activities?limit=5`, { token }));
    expect(first.data).toHaveLength(5);
    expect(first.pagination).toMatchObject({ hasMore: true, total: 12, limit: 5 });
    const seen = [...first.data];
    let cursor = first.pagination.nextCursor;
    while (cursor) {
      const page = await json(await call("GET", `/v1/contacts/${c.id}/activities?limit=5&cursor=${cursor}`, { token }));
      seen.push(...page.data);
      cursor = page.pagination.nextCursor;
    }
    expect(seen.map((a) => a.description)).toEqual(Array.from({ length: 12 }, (_, i) => `n${11 - i}`));
    expect((await json(await call("GET", `/v1/contacts/${c.id}/activities`, { token }))).pagination.limit).toBe(25);
    expect((await call("GET", `/v1/contacts/${c.id}/activities?limit=101`, { token })).status).toBe(422);
    const listed = await json(await call("GET", "/v1/contacts?include=activities", { token }));
    expect(listed.data[0].activities.map((a: { description: string }) => a.description)).toEqual(["n11", "n10", "n9", "n8", "n7"]);
  });

  it("pages through the tag list, and a tag nobody carries any more leaves it", async () => {
    const { token } = await createPrincipal();
    const a = await createContact(token, { tags: ["alpha", "beta", "gamma"] });
    await createContact(token, { tags: ["beta"] });
    const first = await json(await call("GET", "/v1/contacts/tags?limit=2", { token }));
    expect(first.data.map((t: { name: string; count: number }) => [t.name, t.count])).toEqual([
      ["beta", 2],
      ["alpha", 1],
    ]);
    expect(first.pagination).toMatchObject({ hasMore: true, total: 3, limit: 2 });
    const second = await json(await call("GET", `/v1/contacts/tags?limit=2&cursor=${first.pagination.nextCursor}`, { token }));
    expect(second.data.map((t: { name: string }) => t.name)).toEqual(["gamma"]);
    expect(second.pagination).toMatchObject({ hasMore: false, nextCursor: null });
    await call("DELETE", `/v1/contacts/${a.id}`, { token });
    const after = await json(await call("GET", "/v1/contacts/tags", { token }));
    expect(after.data.map((t: { name: string; count: number }) => [t.name, t.count])).toEqual([["beta", 1]]);
    expect(after.pagination.total).toBe(1);
    expect((await call("GET", "/v1/contacts/tags?colour=red", { token })).status).toBe(422);
    const forged = encodeCursor({ sort: "count:desc,name:asc", values: ["many"], id: "beta" });
    expect(
      issuePairs(await expectCrmError(await call("GET", `/v1/contacts/tags?cursor=${forged}`, { token }), 422, "validation_error")),
    ).toEqual(["cursor:invalid_cursor"]);
  });

  it("refuses strings that are not well-formed Unicode (lone surrogates), in values and in keys, and stores nothing", async () => {
    const { token, organizationId } = await createPrincipal();
    const c = await createContact(token, { firstName: "Before" });
    const raw = (body: string) =>
      call("PUT", `/v1/contacts/${c.id}`, { token, rawBody: body, headers: { "content-type": "application/json" } });
    const value = await expectCrmError(await raw('{"firstName":"x\\ud800y","notes":"\\udc00"}'), 422, "validation_error");
    expect(issuePairs(value)).toEqual(["firstName:invalid_unicode", "notes:invalid_unicode"]);
    const key = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/activities`, {
        token,
        rawBody: '{"type":"NOTE","metadata":{"k\\ud800":1}}',
        headers: { "content-type": "application/json" },
      }),
      422,
      "validation_error",
    );
    expect(key.map((e) => e.code)).toEqual(["invalid_unicode"]);
    expect((await json(await call("GET", `/v1/contacts/${c.id}`, { token }))).data.firstName).toBe("Before");
    // NUL nowhere; line breaks, other control characters and bidi overrides (text that reads reversed) not in one-line
    // fields such as names; right-to-left text itself is fine.
    const controls = await expectCrmError(
      await call("PUT", `/v1/contacts/${c.id}`, { token, body: { firstName: "a\nb", lastName: "\u202eok", notes: "nul\u0000" } }),
      422,
      "validation_error",
    );
    expect(issuePairs(controls)).toEqual(["firstName:invalid_character", "lastName:invalid_character", "notes:invalid_character"]);
    expect((await call("PUT", `/v1/contacts/${c.id}`, { token, body: { lastName: "حداد" } })).status).toBe(200);
    // Characters outside the Basic Multilingual Plane are well-formed (a surrogate pair) and come back intact.
    const emoji = "🏡".repeat(50);
    const ok = await call("PUT", `/v1/contacts/${c.id}`, { token, body: { firstName: emoji } });
    expect(ok.status).toBe(200);
    expect((await json(await call("GET", `/v1/contacts/${c.id}`, { token }))).data.firstName).toBe(emoji);
    const stored = await (await tenantDb(organizationId))
      .prepare("SELECT length(first_name) AS n FROM contacts WHERE id = ?")
      .bind(c.id)
      .first<{ n: number }>();
    expect(stored!.n).toBe(50);
  });
});

describe("bounds found attacking npm run dev", () => {
  it("caps a contact's tags at 50 however they arrive, and refuses a comma in a tag (the filter splits on commas)", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { tags: Array.from({ length: 45 }, (_, i) => `t${i}`) });
    const over = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/tags`, { token, body: { tags: Array.from({ length: 10 }, (_, i) => `n${i}`) } }),
      422,
      "validation_error",
    );
    expect(issuePairs(over)).toEqual(["tags:too_big"]);
    expect((await call("POST", `/v1/contacts/${c.id}/tags`, { token, body: { tags: ["n1", "n2", "n3", "n4", "n5"] } })).status).toBe(200);
    expect(
      issuePairs(
        await expectCrmError(await call("PUT", `/v1/contacts/${c.id}`, { token, body: { tags: ["a,b"] } }), 422, "validation_error"),
      ),
    ).toEqual(["tags.0:invalid_character"]);
  });

  it("refuses NUL in field names, and phone numbers without digits or with line breaks", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    const key = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/activities`, {
        token,
        rawBody: '{"type":"NOTE","metadata":{"a\\u0000b":1}}',
        headers: { "content-type": "application/json" },
      }),
      422,
      "validation_error",
    );
    expect(key.map((e) => e.code)).toEqual(["invalid_character"]);
    for (const phone of ["555-1234\nx12", "((()))", "-- --", "...", "555-1234\u000bext.99"]) {
      expect(
        issuePairs(await expectCrmError(await call("PUT", `/v1/contacts/${c.id}`, { token, body: { phone } }), 422, "validation_error")),
        phone,
      ).toEqual(["phone:invalid_phone"]);
    }
    expect((await call("PUT", `/v1/contacts/${c.id}`, { token, body: { phone: "+1 (416) 555-0100 ext. 12" } })).status).toBe(200);
  });

  it("compares If-Match strictly: a padded version is another tag, and lists a bounded number of problems", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    expect((await call("PUT", `/v1/contacts/${c.id}`, { token, body: { notes: "x" }, headers: { "if-match": '"01"' } })).status).toBe(412);
    const many = Array.from({ length: 3000 }, (_, i) => `p${i}=1`).join("&");
    const errors = await expectCrmError(await call("GET", `/v1/contacts?${many}`, { token }), 422, "validation_error");
    expect(errors).toHaveLength(101);
    expect(errors.at(-1)).toMatchObject({ code: "too_many_problems" });
  });
});

describe("one strict list-query parser", () => {
  it("reports an unknown fields or include value as invalid, not as missing", async () => {
    const { token } = await createPrincipal();
    await createContact(token);
    expect(issuePairs(await expectCrmError(await call("GET", "/v1/contacts?fields=password", { token }), 422, "validation_error"))).toEqual(
      ["fields.0:invalid_enum_value"],
    );
    expect(issuePairs(await expectCrmError(await call("GET", "/v1/contacts?include=secret", { token }), 422, "validation_error"))).toEqual([
      "include.0:invalid_enum_value",
    ]);
  });

  it("takes only decimal integers for limit and refuses unknown parameters on the webhook lists", async () => {
    const owner = await createPrincipal();
    const id = (
      await json(
        await call("POST", "/v1/webhooks", {
          token: owner.token,
          body: { url: "http://127.0.0.1:9/hooks/q", events: ["contact.created"], enabled: false },
        }),
      )
    ).data.id;
    for (const path of ["/v1/webhooks", `/v1/webhooks/${id}/deliveries`]) {
      for (const limit of ["0x10", "1e2", "%205", "5.0", "0", "101", "-1", "", "05", "%2B5", "-0"]) {
        const errors = await expectCrmError(await call("GET", `${path}?limit=${limit}`, { token: owner.token }), 422, "validation_error");
        expect(
          errors.map((e) => e.field),
          `${path} limit=${limit}`,
        ).toEqual(["limit"]);
      }
      expect(
        issuePairs(await expectCrmError(await call("GET", `${path}?colour=red`, { token: owner.token }), 422, "validation_error")),
      ).toEqual(["colour:unknown_field"]);
      expect((await call("GET", `${path}?limit=5`, { token: owner.token })).status).toBe(200);
    }
  });
});
