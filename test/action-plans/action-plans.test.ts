import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openMailbox } from "../helpers/receiver";
import { runDuePlanSteps } from "../../src/action-plans/runner";
import { MAX_SEND_ATTEMPTS } from "../../src/action-plans/steps";
import { createDb } from "../../src/db/client";
import type { Env } from "../../src/env";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, logCommunication } from "../helpers/contacts";
import { mailTo } from "../helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { eventsSettled } from "../helpers/shard-rows";

// Issue 46, part 3: /v1/action-plans, enrollments, the cron's step pass, triggers and the pause on a reply.

const MIN = 60_000;
const DAY = 86_400_000;
const at = (iso: string, plusMs: number) => new Date(Date.parse(iso) + plusMs);

const shardOf = async (organizationId: string) =>
  (await env.DB.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?").bind(organizationId).first<{ shard: number }>())!
    .shard;

async function pass(p: TestPrincipal, now: Date, on: Env = env as Env) {
  const ran = await runDuePlanSteps(on, createDb(await tenantDb(p.organizationId)), now);
  await eventsSettled(await shardOf(p.organizationId), p.organizationId);
  return ran;
}

async function createPlan(p: TestPrincipal, body: Record<string, unknown>) {
  const res = await call("POST", "/v1/action-plans", { token: p.token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

async function enroll(p: TestPrincipal, planId: string, contactId: string) {
  const res = await call("POST", `/v1/action-plans/${planId}/enrollments`, { token: p.token, body: { contactId } });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

async function enrollmentsOf(p: TestPrincipal, planId: string, query = "") {
  const res = await call("GET", `/v1/action-plans/${planId}/enrollments${query}`, { token: p.token });
  expect(res.status).toBe(200);
  return (await json(res)).data as any[];
}

async function eventTypes(p: TestPrincipal, prefix: string) {
  const { results } = await (await tenantDb(p.organizationId))
    .prepare("SELECT type FROM outbox_events WHERE organization_id = ? AND type LIKE ? ORDER BY occurred_at, rowid")
    .bind(p.organizationId, `${prefix}%`)
    .all<{ type: string }>();
  return results.map((r) => r.type);
}

const EMAIL_STEP = {
  type: "send_email",
  delay: "PT0S",
  email: { subject: "Hi {{contact.firstName}}", body: "Hello {{ contact.firstName }} {{contact.lastName}}, {{agent.name}} here." },
};

describe("/v1/action-plans", () => {
  it("an enrollment's pause, resume and stop honour If-Match with the enrollment's version", async () => {
    // A stale If-Match was ignored: a pause meant for the enrollment as it was read landed on one resumed since.
    const p = await createPrincipal();
    const plan = await createPlan(p, { name: "Moves", steps: [{ type: "notify", delay: "P1D" }] });
    const contact = await createContact(p.token);
    const enrollment = await enroll(p, plan.id, contact.id);
    const path = (move: string) => `/v1/action-plans/${plan.id}/enrollments/${enrollment.id}/${move}`;
    const stale = await call("POST", path("pause"), { token: p.token, headers: { "if-match": '"7"' } });
    expect(stale.status).toBe(412);
    const paused = await call("POST", path("pause"), { token: p.token, headers: { "if-match": `"${enrollment.version}"` } });
    expect(paused.status, await paused.clone().text()).toBe(200);
    expect(paused.headers.get("etag")).toBe(`"${enrollment.version + 1}"`);
    expect((await call("POST", path("stop"), { token: p.token, headers: { "if-match": `"${enrollment.version}"` } })).status).toBe(412);
    expect((await call("POST", path("resume"), { token: p.token, headers: { "if-match": paused.headers.get("etag")! } })).status).toBe(200);
  });

  it("honours If-Match on PATCH and DELETE with the version its reads answer as ETag", async () => {
    // A stale or garbage If-Match was ignored (the ETag was a hash of the answer): a lost update RFC 9110 forbids.
    const p = await createPrincipal();
    const created = await call("POST", "/v1/action-plans", {
      token: p.token,
      body: { name: "Nurture", steps: [{ type: "notify", delay: "P1D" }] },
    });
    const id = (await json(created)).data.id as string;
    expect(created.headers.get("etag")).toBe('"1"');
    const read = await call("GET", `/v1/action-plans/${id}`, { token: p.token });
    expect(read.headers.get("etag")).toBe('"1"');
    const first = await call("PATCH", `/v1/action-plans/${id}`, {
      token: p.token,
      body: { name: "Nurture 2" },
      headers: { "if-match": '"1"' },
    });
    expect(first.status, await first.clone().text()).toBe(200);
    expect(first.headers.get("etag")).toBe('"2"');
    for (const stale of ['"1"', 'W/"junk"']) {
      const again = await call("PATCH", `/v1/action-plans/${id}`, {
        token: p.token,
        body: { name: "Nurture 2" },
        headers: { "if-match": stale },
      });
      expect((await json(again)).error.code).toBe("precondition_failed");
      const gone = await call("DELETE", `/v1/action-plans/${id}`, { token: p.token, headers: { "if-match": stale } });
      expect(gone.status).toBe(412);
    }
    expect((await call("DELETE", `/v1/action-plans/${id}`, { token: p.token, headers: { "if-match": '"2"' } })).status).toBe(200);
  });

  it("creates, reads, lists, changes and deletes a plan", async () => {
    const p = await createPrincipal();
    const plan = await createPlan(p, {
      name: "New buyer",
      steps: [EMAIL_STEP, { type: "create_task", delay: "P1D", task: { title: "Call them", type: "call" } }],
      triggers: [{ event: "contact.tagged", tag: "buyer" }],
    });
    expect(plan).toMatchObject({
      name: "New buyer",
      version: 1,
      createdBy: p.userId,
      triggers: [{ event: "contact.tagged", tag: "buyer" }],
    });
    const read = await json(await call("GET", `/v1/action-plans/${plan.id}`, { token: p.token }));
    expect(read.data).toEqual(plan);
    const list = await json(await call("GET", "/v1/action-plans", { token: p.token }));
    expect(list.data.map((x: any) => x.id)).toEqual([plan.id]);
    expect(list.pagination.total).toBe(1);
    const changed = await call("PATCH", `/v1/action-plans/${plan.id}`, { token: p.token, body: { name: "Buyers" } });
    // The fields not given stay as they were (the triggers too).
    expect((await json(changed)).data).toMatchObject({ name: "Buyers", version: 2, steps: plan.steps, triggers: plan.triggers });
    expect((await call("DELETE", `/v1/action-plans/${plan.id}`, { token: p.token })).status).toBe(200);
    expect((await call("GET", `/v1/action-plans/${plan.id}`, { token: p.token })).status).toBe(404);
  });

  it("lists every problem of a plan in one 422: delays out of range or not ISO 8601, unknown merge fields, bad steps", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/action-plans", {
      token: p.token,
      body: {
        name: "Broken",
        steps: [
          { type: "send_email", delay: "P366D", email: { subject: "Hi {{contact.nickname}}", body: "{{agent.phone}}" } },
          { type: "add_tag", delay: "two days", tag: "x" },
          { type: "set_status", delay: "P1M", status: "ACTIVE" },
          { type: "set_stage", delay: "PT1H", stage: "NOWHERE" },
        ],
        triggers: [{ event: "contact.tagged" }],
      },
    });
    const issues = await expectCrmError(res, 422, "validation_error");
    const byField = issues.map((i) => `${i.field} ${i.code}`).sort();
    expect(byField).toEqual(
      [
        "steps.0.delay too_big",
        "steps.0.email.subject unknown_merge_field",
        "steps.0.email.body unknown_merge_field",
        "steps.1.delay invalid_duration",
        "steps.2.delay invalid_duration",
        "steps.3.stage invalid_enum_value",
        "triggers.0.tag required",
      ].sort(),
    );
  });

  it("accepts the bounds PT0S and P365D", async () => {
    const p = await createPrincipal();
    await createPlan(p, {
      name: "Bounds",
      steps: [
        { type: "notify", delay: "PT0S" },
        { type: "notify", delay: "P365D" },
      ],
    });
  });
});

describe("enrollments", () => {
  it("enrolls a contact once at a time (409 while active or paused), and again after a stop", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Once", steps: [{ type: "notify", delay: "P1D" }] });
    const first = await enroll(p, plan.id, contact.id);
    expect(first).toMatchObject({ status: "active", contactId: contact.id, enrolledVia: "manual", nextStep: { index: 0, type: "notify" } });
    expect(Date.parse(first.nextStep.dueAt) - Date.parse(first.enrolledAt)).toBe(DAY);
    const again = await call("POST", `/v1/action-plans/${plan.id}/enrollments`, { token: p.token, body: { contactId: contact.id } });
    await expectCrmError(again, 409, "conflict_error");
    const paused = await json(await call("POST", `/v1/action-plans/${plan.id}/enrollments/${first.id}/pause`, { token: p.token }));
    expect(paused.data).toMatchObject({ status: "paused", pauseReason: "manual", nextStep: { index: 0, dueAt: null } });
    await expectCrmError(
      await call("POST", `/v1/action-plans/${plan.id}/enrollments`, { token: p.token, body: { contactId: contact.id } }),
      409,
      "conflict_error",
    );
    await expectCrmError(
      await call("POST", `/v1/action-plans/${plan.id}/enrollments/${first.id}/pause`, { token: p.token }),
      409,
      "conflict_error",
    );
    const stopped = await json(await call("POST", `/v1/action-plans/${plan.id}/enrollments/${first.id}/stop`, { token: p.token }));
    expect(stopped.data).toMatchObject({ status: "stopped", nextStep: null });
    const second = await enroll(p, plan.id, contact.id);
    expect(second.id).not.toBe(first.id);
    expect(await eventTypes(p, "action_plan.")).toEqual(["action_plan.enrolled", "action_plan.paused", "action_plan.enrolled"]);
  });

  it("twenty simultaneous enrollments of one contact: one 201, the rest 409", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Race", steps: [{ type: "notify", delay: "P1D" }] });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("POST", `/v1/action-plans/${plan.id}/enrollments`, { token: p.token, body: { contactId: contact.id } }).then((r) => r.status),
      ),
    );
    expect(answers.filter((s) => s === 201)).toHaveLength(1);
    expect(answers.filter((s) => s === 409)).toHaveLength(19);
    expect(await enrollmentsOf(p, plan.id)).toHaveLength(1);
  });

  it("refuses a contact of another organization as an invalid reference, and another organization's plan as 404", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const theirs = await createContact(other.token);
    const plan = await createPlan(p, { name: "Mine", steps: [{ type: "notify", delay: "P1D" }] });
    const issues = await expectCrmError(
      await call("POST", `/v1/action-plans/${plan.id}/enrollments`, { token: p.token, body: { contactId: theirs.id } }),
      422,
      "validation_error",
    );
    expect(issues).toEqual([expect.objectContaining({ field: "contactId", code: "invalid_reference" })]);
    expect(
      (await call("POST", `/v1/action-plans/${plan.id}/enrollments`, { token: other.token, body: { contactId: theirs.id } })).status,
    ).toBe(404);
  });
});

describe("the step pass", () => {
  it("runs each step once, on time to the minute, and completes the plan", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Ada", lastName: "King" });
    const plan = await createPlan(p, {
      name: "Drip",
      steps: [
        EMAIL_STEP,
        { type: "add_tag", delay: "P1D", tag: "nurtured" },
        { type: "create_task", delay: "PT0S", task: { title: "Call Ada", type: "call" } },
        { type: "set_status", delay: "PT0S", status: "INACTIVE" },
        { type: "notify", delay: "P2D" },
      ],
    });
    const e = await enroll(p, plan.id, contact.id);
    const t0 = e.enrolledAt as string;

    await pass(p, at(t0, -MIN));
    expect(await mailTo(contact.email)).toEqual([]);
    await pass(p, at(t0, MIN));
    await pass(p, at(t0, MIN)); // the same minute again: nothing twice
    expect(await mailTo(contact.email)).toEqual([{ subject: "Hi Ada", text: expect.stringMatching(/^Hello Ada King, \S.* here\.$/) }]);
    const comms = await json(await call("GET", `/v1/contacts/${contact.id}/communications`, { token: p.token }));
    expect(comms.data).toEqual([expect.objectContaining({ type: "email", direction: "outbound", subject: "Hi Ada" })]);

    let [now] = await enrollmentsOf(p, plan.id);
    // Due a day after the e-mail's due time (the enrollment), not after when the pass ran.
    expect(now.nextStep).toEqual({ index: 1, type: "add_tag", dueAt: at(t0, DAY).toISOString() });
    expect(now.history).toEqual([expect.objectContaining({ step: 0, type: "send_email", state: "done", dueAt: t0, attempts: 1 })]);

    await pass(p, at(t0, DAY + 30_000)); // the tag, then the PT0S task and status in the same pass
    const c = await json(await call("GET", `/v1/contacts/${contact.id}`, { token: p.token }));
    expect(c.data).toMatchObject({ tags: ["nurtured"], status: "INACTIVE" });
    const { results: taskRows } = await (await tenantDb(p.organizationId))
      .prepare("SELECT title, type, contact_id, assigned_to, due_at FROM tasks WHERE organization_id = ?")
      .bind(p.organizationId)
      .all();
    expect(taskRows).toEqual([
      { title: "Call Ada", type: "call", contact_id: contact.id, assigned_to: p.userId, due_at: at(t0, DAY).toISOString() },
    ]);

    [now] = await enrollmentsOf(p, plan.id);
    expect(now.nextStep).toEqual({ index: 4, type: "notify", dueAt: at(t0, 3 * DAY).toISOString() });
    await pass(p, at(t0, 3 * DAY - MIN));
    expect((await enrollmentsOf(p, plan.id))[0].nextStep.index).toBe(4);
    await pass(p, at(t0, 3 * DAY));
    [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({ status: "completed", nextStep: null });
    expect(now.history.map((h: any) => [h.step, h.state])).toEqual([
      [0, "done"],
      [1, "done"],
      [2, "done"],
      [3, "done"],
      [4, "done"],
    ]);
    expect(await eventTypes(p, "action_plan.")).toEqual(["action_plan.enrolled", "action_plan.step_due", "action_plan.completed"]);
    expect(await mailTo(contact.email)).toHaveLength(1);
  });

  it("two passes at once run a step once", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Twice", steps: [EMAIL_STEP, { type: "add_tag", delay: "PT0S", tag: "once" }] });
    const e = await enroll(p, plan.id, contact.id);
    const d1 = await tenantDb(p.organizationId);
    await Promise.all([0, 1, 2].map(() => runDuePlanSteps(env as Env, createDb(d1), at(e.enrolledAt, MIN))));
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    expect(await mailTo(contact.email)).toHaveLength(1);
    const [now] = await enrollmentsOf(p, plan.id);
    expect(now.status).toBe("completed");
    expect(now.history.map((h: any) => h.state)).toEqual(["done", "done"]);
    expect(await eventTypes(p, "contact.tagged")).toHaveLength(1);
  });

  it("a failed send is retried by the next pass and mailed once; a send that went out before its record is not sent again", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Flaky", steps: [EMAIL_STEP] });
    const e = await enroll(p, plan.id, contact.id);
    // A provider that answers 503 (a live fake: a refused connection makes workerd report an uncaught rejection of its own).
    const down = await openMailbox({ fallback: 503 });
    const failing = { ...env, EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "k", EMAIL_API_URL: down.url } as Env;
    await pass(p, at(e.enrolledAt, MIN), failing);
    expect(await mailTo(contact.email)).toEqual([]);
    let [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({ status: "active", nextStep: { index: 0 } });
    expect(now.history).toEqual([expect.objectContaining({ state: "running", attempts: 1 })]);

    await pass(p, at(e.enrolledAt, 2 * MIN));
    [now] = await enrollmentsOf(p, plan.id);
    expect(now.status).toBe("completed");
    expect(now.history).toEqual([expect.objectContaining({ state: "done", attempts: 2 })]);
    expect(await mailTo(contact.email)).toHaveLength(1);

    // The mail went out, then the pass died before recording it: its claim is taken again after the lease, and the
    // mailer's idempotency key keeps the retry from mailing twice.
    const d1 = await tenantDb(p.organizationId);
    await d1.batch([
      d1
        .prepare("UPDATE plan_step_runs SET state = 'running', finished_at = NULL, started_at = ? WHERE enrollment_id = ?")
        .bind(at(e.enrolledAt, 3 * MIN).toISOString(), e.id),
      d1
        .prepare("UPDATE plan_enrollments SET status = 'active', next_step = 0, next_run_at = ?, ended_at = NULL WHERE id = ?")
        .bind(e.enrolledAt, e.id),
      d1.prepare("DELETE FROM contact_communications WHERE contact_id = ?").bind(contact.id),
    ]);
    await pass(p, at(e.enrolledAt, 5 * MIN)); // the claim is still held: nothing happens
    expect((await enrollmentsOf(p, plan.id))[0]).toMatchObject({
      status: "active",
      history: [expect.objectContaining({ state: "running", attempts: 2 })],
    });
    await pass(p, at(e.enrolledAt, 20 * MIN));
    [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({ status: "completed", history: [expect.objectContaining({ state: "done", attempts: 3 })] });
    expect(await mailTo(contact.email)).toHaveLength(1);
    const comms = await json(await call("GET", `/v1/contacts/${contact.id}/communications`, { token: p.token }));
    expect(comms.data).toHaveLength(1);
  });

  it("a provider's 429 spends none of the step's attempts: past MAX_SEND_ATTEMPTS refusals it is still mailed once the provider takes it", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Busy provider", steps: [EMAIL_STEP] });
    const e = await enroll(p, plan.id, contact.id);
    const busy = await openMailbox({ script: Array(MAX_SEND_ATTEMPTS + 2).fill(429), fallback: 200 });
    const limited = { ...env, EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "k", EMAIL_API_URL: busy.url } as Env;
    for (let i = 1; i <= MAX_SEND_ATTEMPTS + 2; i++) await pass(p, at(e.enrolledAt, i * MIN), limited);
    let [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({ status: "active", history: [expect.objectContaining({ state: "running", attempts: 0 })] });
    await pass(p, at(e.enrolledAt, (MAX_SEND_ATTEMPTS + 3) * MIN), limited);
    [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({ status: "completed", history: [expect.objectContaining({ state: "done", attempts: 1 })] });
    expect(await busy.count()).toBe(MAX_SEND_ATTEMPTS + 3);
  });

  it("stops the enrollment of a contact that was deleted", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Gone", steps: [{ type: "add_tag", delay: "PT0S", tag: "x" }] });
    const e = await enroll(p, plan.id, contact.id);
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    await pass(p, at(e.enrolledAt, MIN));
    const [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({
      status: "stopped",
      history: [expect.objectContaining({ state: "skipped", outcome: { reason: "contact_gone" } })],
    });
  });

  it("moves the contact's latest open deal on a set_stage step", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const deal = await json(
      await call("POST", "/v1/deals", {
        token: p.token,
        body: { title: "Buy", type: "PURCHASE", contactId: contact.id, stage: "LEAD", amount: 500000 },
      }),
    );
    expect(deal.success, JSON.stringify(deal)).toBe(true);
    const plan = await createPlan(p, { name: "Stage", steps: [{ type: "set_stage", delay: "PT0S", stage: "QUALIFIED" }] });
    const e = await enroll(p, plan.id, contact.id);
    await pass(p, at(e.enrolledAt, MIN));
    const read = await json(await call("GET", `/v1/deals/${deal.data.id}`, { token: p.token }));
    expect(read.data.stage).toBe("QUALIFIED");
    const [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({
      status: "completed",
      history: [expect.objectContaining({ state: "done", outcome: { dealId: deal.data.id, stage: "QUALIFIED" } })],
    });
  });
});

/**
 * A D1 binding whose first batch of more than `over` statements (a round's shared batch, not one enrollment's) finds
 * `meanwhile` run just before it: a write that lands between the round's read and its commit.
 */
function racingFirstBatch(d1: D1Database, over: number, meanwhile: () => Promise<unknown>): D1Database {
  let raced = false;
  return new Proxy(d1, {
    get(target, prop) {
      if (prop === "batch")
        return async (stmts: D1PreparedStatement[]) => {
          if (!raced && stmts.length > over) {
            raced = true;
            await meanwhile();
          }
          return target.batch(stmts);
        };
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** Three contacts enrolled in a one-step plan; `latest`: the last enrollment's time, when all three steps fall due. */
async function threeEnrolled(name: string, step: Record<string, unknown>) {
  const p = await createPrincipal();
  const contacts = [await createContact(p.token), await createContact(p.token), await createContact(p.token)];
  const plan = await createPlan(p, { name, steps: [step] });
  const enrolled = [];
  for (const c of contacts) enrolled.push(await enroll(p, plan.id, c.id));
  const latest = enrolled
    .map((e) => e.enrolledAt as string)
    .sort()
    .at(-1)!;
  return { p, contacts, plan, d1: await tenantDb(p.organizationId), latest };
}

describe("a round's shared batches", () => {
  it("a contact written between the round's read and its batch: every enrollment of the batch still runs, once", async () => {
    const { p, contacts, plan, d1, latest } = await threeEnrolled("Tags", { type: "add_tag", delay: "PT0S", tag: "warm" });
    const raced = racingFirstBatch(d1, 15, () =>
      call("PUT", `/v1/contacts/${contacts[1]!.id}`, { token: p.token, body: { notes: "Called meanwhile" } }),
    );
    expect(await runDuePlanSteps(env as Env, createDb(raced), at(latest, MIN))).toBe(3);
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    for (const c of contacts) {
      const read = (await json(await call("GET", `/v1/contacts/${c.id}`, { token: p.token }))).data;
      expect(read.tags).toEqual(["warm"]);
    }
    expect((await json(await call("GET", `/v1/contacts/${contacts[1]!.id}`, { token: p.token }))).data.notes).toBe("Called meanwhile");
    const now = await enrollmentsOf(p, plan.id);
    expect(now.map((e: any) => [e.status, e.history.map((h: any) => h.state)])).toEqual([
      ["completed", ["done"]],
      ["completed", ["done"]],
      ["completed", ["done"]],
    ]);
    expect(await eventTypes(p, "contact.tagged")).toHaveLength(3);
  });

  it("an e-mail batch whose record fails a guard: each mail went once and is recorded on its own", async () => {
    const { p, contacts, plan, d1, latest } = await threeEnrolled("Mails", EMAIL_STEP);
    const raced = racingFirstBatch(d1, 15, () =>
      call("PUT", `/v1/contacts/${contacts[0]!.id}`, { token: p.token, body: { notes: "Changed while the mail was out" } }),
    );
    expect(await runDuePlanSteps(env as Env, createDb(raced), at(latest, MIN))).toBe(3);
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    for (const c of contacts) {
      expect(await mailTo(c.email)).toHaveLength(1);
      const comms = await json(await call("GET", `/v1/contacts/${c.id}/communications`, { token: p.token }));
      expect(comms.data).toHaveLength(1);
    }
    const now = await enrollmentsOf(p, plan.id);
    expect(now.map((e: any) => [e.status, e.history.map((h: any) => [h.state, h.attempts])])).toEqual([
      ["completed", [["done", 1]]],
      ["completed", [["done", 1]]],
      ["completed", [["done", 1]]],
    ]);
    expect(await eventTypes(p, "communication.email_sent")).toHaveLength(3);
  });

  it("one contact in two plans due in the same round: both steps run in that pass", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const a = await createPlan(p, { name: "A", steps: [{ type: "add_tag", delay: "PT0S", tag: "a" }] });
    const b = await createPlan(p, { name: "B", steps: [{ type: "add_tag", delay: "PT0S", tag: "b" }, EMAIL_STEP] });
    const first = await enroll(p, a.id, contact.id);
    await enroll(p, b.id, contact.id);
    expect(await pass(p, at(first.enrolledAt, MIN))).toBe(3);
    const read = (await json(await call("GET", `/v1/contacts/${contact.id}`, { token: p.token }))).data;
    expect([...read.tags].sort()).toEqual(["a", "b"]);
    expect(await mailTo(contact.email)).toHaveLength(1);
    expect((await enrollmentsOf(p, a.id))[0].status).toBe("completed");
    expect((await enrollmentsOf(p, b.id))[0].status).toBe("completed");
  });
});

describe("pauses, resumes and triggers", () => {
  it("pauses when the contact's e-mail reply is logged, and resumes with the wait it had left", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Reply", steps: [{ ...EMAIL_STEP, delay: "P1D" }] });
    const e = await enroll(p, plan.id, contact.id);
    await logCommunication(p.token, contact.id, { type: "email", direction: "inbound", subject: "Re: hello" });
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    let [now] = await enrollmentsOf(p, plan.id);
    expect(now).toMatchObject({ status: "paused", pauseReason: "communication.email_received", nextStep: { index: 0, dueAt: null } });
    await pass(p, at(e.enrolledAt, 2 * DAY));
    expect(await mailTo(contact.email)).toEqual([]);

    const resumed = await json(await call("POST", `/v1/action-plans/${plan.id}/enrollments/${e.id}/resume`, { token: p.token }));
    const left = DAY - (Date.parse(now.pausedAt) - Date.parse(e.enrolledAt));
    expect(Date.parse(resumed.data.nextStep.dueAt) - Date.parse(resumed.data.updatedAt)).toBe(left);
    await pass(p, new Date(Date.parse(resumed.data.nextStep.dueAt) + MIN));
    [now] = await enrollmentsOf(p, plan.id);
    expect(now.status).toBe("completed");
    expect(await mailTo(contact.email)).toHaveLength(1);
    expect(await eventTypes(p, "action_plan.")).toEqual(["action_plan.enrolled", "action_plan.paused", "action_plan.completed"]);
  });

  it.each([
    [{ type: "sms", direction: "inbound", body: "yes" }, "communication.sms_received"],
    [{ type: "call", direction: "inbound" }, "communication.call_started"],
  ])("pauses on %o", async (body, reason) => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Reply", steps: [{ type: "notify", delay: "P1D" }] });
    await enroll(p, plan.id, contact.id);
    await logCommunication(p.token, contact.id, body);
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    expect((await enrollmentsOf(p, plan.id))[0]).toMatchObject({ status: "paused", pauseReason: reason });
  });

  it("an outbound e-mail or call does not pause", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Out", steps: [{ type: "notify", delay: "P1D" }] });
    await enroll(p, plan.id, contact.id);
    await logCommunication(p.token, contact.id, { type: "call", direction: "outbound" });
    await logCommunication(p.token, contact.id, { type: "email", direction: "outbound", subject: "hi" });
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    expect((await enrollmentsOf(p, plan.id))[0].status).toBe("active");
  });

  it("an enrollment racing a reply: the step runs at most once and the enrollment ends paused", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Race", steps: [EMAIL_STEP, { ...EMAIL_STEP, delay: "PT0S" }] });
    const e = await enroll(p, plan.id, contact.id);
    const d1 = await tenantDb(p.organizationId);
    await Promise.all([
      runDuePlanSteps(env as Env, createDb(d1), at(e.enrolledAt, MIN)),
      logCommunication(p.token, contact.id, { type: "email", direction: "inbound", subject: "stop" }),
    ]);
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    const [now] = await enrollmentsOf(p, plan.id);
    const mails = (await mailTo(contact.email)).length;
    expect(mails).toBe(now.history.filter((h: any) => h.state === "done").length);
    expect(["paused", "completed"]).toContain(now.status);
    if (now.status === "paused") {
      await pass(p, at(e.enrolledAt, DAY));
      expect((await mailTo(contact.email)).length).toBe(mails);
    }
  });

  it("enrolls by a tag, a deal's stage and a new contact's source (lead intake's rule), once per plan", async () => {
    const p = await createPrincipal();
    const tagged = await createPlan(p, {
      name: "VIP",
      steps: [{ type: "notify", delay: "P1D" }],
      triggers: [{ event: "contact.tagged", tag: "vip" }],
    });
    const staged = await createPlan(p, {
      name: "Qualified",
      steps: [{ type: "notify", delay: "P1D" }],
      triggers: [{ event: "deal.stage_changed", stage: "QUALIFIED" }],
    });
    const zillow = await createPlan(p, {
      name: "Zillow",
      steps: [{ type: "notify", delay: "P1D" }],
      triggers: [{ event: "contact.created", source: "ZILLOW" }],
    });
    const a = await createContact(p.token, { source: "ZILLOW" });
    const b = await createContact(p.token, { source: "WEB" });
    expect((await call("POST", `/v1/contacts/${b.id}/tags`, { token: p.token, body: { tags: ["vip"] } })).status).toBe(200);
    const deal = await json(
      await call("POST", "/v1/deals", {
        token: p.token,
        body: { title: "Sale", type: "SALE", contactId: a.id, stage: "LEAD", amount: 500000 },
      }),
    );
    expect((await call("POST", `/v1/deals/${deal.data.id}/move`, { token: p.token, body: { stage: "QUALIFIED" } })).status).toBe(200);
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    expect((await enrollmentsOf(p, tagged.id)).map((x) => [x.contactId, x.enrolledVia])).toEqual([[b.id, "trigger"]]);
    expect((await enrollmentsOf(p, staged.id)).map((x) => [x.contactId, x.enrolledVia])).toEqual([[a.id, "trigger"]]);
    expect((await enrollmentsOf(p, zillow.id)).map((x) => [x.contactId, x.enrolledVia])).toEqual([[a.id, "intake"]]);
    // Tagged again (after an untag): already in the plan, so not enrolled twice.
    await call("PATCH", `/v1/contacts/${b.id}`, { token: p.token, body: { tags: [] } });
    await call("POST", `/v1/contacts/${b.id}/tags`, { token: p.token, body: { tags: ["vip"] } });
    await eventsSettled(await shardOf(p.organizationId), p.organizationId);
    expect(await enrollmentsOf(p, tagged.id)).toHaveLength(1);
  });
});

describe("the MCP tool and a person's erasure", () => {
  it("enroll_in_action_plan enrolls, and answers already_enrolled the second time", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "By MCP", steps: [{ type: "notify", delay: "P1D" }] });
    const client = await connect(p.token);
    const first = await tool(client, "enroll_in_action_plan", { planId: plan.id, contactId: contact.id });
    expect(first.isError, first.text).toBe(false);
    expect(first.data.enrollment).toMatchObject({ contactId: contact.id, status: "active", nextStep: { index: 0, type: "notify" } });
    const second = await tool(client, "enroll_in_action_plan", { planId: plan.id, contactId: contact.id });
    expect(second.isError).toBe(true);
    expect(second.text).toContain("already_enrolled");
    await client.close();
  });

  it("erasing a person takes their enrollments and step history; the plan stays", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token);
    const plan = await createPlan(p, { name: "Erased", steps: [EMAIL_STEP, { type: "notify", delay: "P1D" }] });
    const e = await enroll(p, plan.id, contact.id);
    await pass(p, at(e.enrolledAt, MIN));
    const res = await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: p.token });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.erased).toMatchObject({ plan_enrollments: 1 });
    expect(await enrollmentsOf(p, plan.id)).toEqual([]);
    const d1 = await tenantDb(p.organizationId);
    expect(await d1.prepare("SELECT COUNT(*) AS n FROM plan_step_runs WHERE enrollment_id = ?").bind(e.id).first("n")).toBe(0);
    expect((await call("GET", `/v1/action-plans/${plan.id}`, { token: p.token })).status).toBe(200);
  });
});
