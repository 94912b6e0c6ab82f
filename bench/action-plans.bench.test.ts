// The action-plan step pass (issue 46, "Done when"): 10,000 enrollments whose next step falls due within one minute,
// run by one cron pass (src/action-plans/runner.ts `runDuePlanSteps`) at the end of that minute: steps run per second,
// for a step that only writes (add_tag: claimed, written and advanced in one batch) and for an e-mail step (claimed
// running, mailed through the log provider with its idempotency key, logged as a communication and advanced). Seeded
// in SQL (contacts and enrollments made by a recursive SELECT): the pass is what is timed.
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { runDuePlanSteps } from "../src/action-plans/runner";
import { createDb } from "../src/db/client";
import type { Env } from "../src/env";
import { call, json } from "../test/helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";

const N = 10_000;
const MINUTE = 60_000;

async function seed(owner: TestPrincipal, step: Record<string, unknown>, start: Date) {
  const res = await call("POST", "/v1/action-plans", { token: owner.token, body: { name: `Bench ${step.type}`, steps: [step] } });
  const plan = (await json(res)).data;
  expect(res.status).toBe(201);
  const d1 = await tenantDb(owner.organizationId);
  const at = start.toISOString();
  const org = owner.organizationId;
  const numbers = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)`;
  await d1
    .prepare(
      `${numbers} INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, type, status, tags, created_at, updated_at, version)
       SELECT ?2 || '-c' || i, ?2, 'Fn' || i, 'Ln' || i, 'p' || i || '.' || ?3 || '@bench.test', 'p' || i || '.' || ?3 || '@bench.test', 'LEAD', 'ACTIVE', '[]', ?4, ?4, 1 FROM n`,
    )
    .bind(N, org, plan.id.slice(0, 8), at)
    .run();
  // Due within the minute after `start`, spread over its seconds.
  await d1
    .prepare(
      `${numbers} INSERT INTO plan_enrollments (id, organization_id, plan_id, contact_id, status, steps, next_step, next_run_at, enrolled_via, enrolled_by, enrolled_at, updated_at, version)
       SELECT ?2 || '-e' || i, ?2, ?3, ?2 || '-c' || i, 'active', ?4, 0, strftime('%Y-%m-%dT%H:%M:%fZ', ?5, '+' || (i % 60) || ' seconds'), 'manual', ?6, ?5, ?5, 1 FROM n`,
    )
    .bind(N, org, plan.id, JSON.stringify(plan.steps), at, owner.userId)
    .run();
  return { plan, d1 };
}

async function timedPass(owner: TestPrincipal, step: Record<string, unknown>) {
  const start = new Date(Date.now() + 7 * 86_400_000);
  const { d1 } = await seed(owner, step, start);
  const t = performance.now();
  const ran = await runDuePlanSteps(env as Env, createDb(d1), new Date(start.getTime() + MINUTE));
  const seconds = (performance.now() - t) / 1000;
  const left = await d1
    .prepare("SELECT COUNT(*) AS n FROM plan_enrollments WHERE organization_id = ? AND status = 'active'")
    .bind(owner.organizationId)
    .first<number>("n");
  const runs = await d1
    .prepare("SELECT COUNT(*) AS n FROM plan_step_runs WHERE organization_id = ? AND state = 'done'")
    .bind(owner.organizationId)
    .first<number>("n");
  return { ran, seconds, left, runs, perSecond: Math.round(ran / seconds) };
}

const report = (what: string, r: Awaited<ReturnType<typeof timedPass>>) =>
  console.log(
    `\nAction-plan step pass, ${N.toLocaleString("en")} ${what} steps due within one minute: ${r.ran} in ${r.seconds.toFixed(1)} s = ${r.perSecond} steps/s\n`,
  );

// One test each: each pass has the runner's 30 minutes to itself on a loaded machine.
it(`one pass runs ${N.toLocaleString("en")} add_tag steps due within one minute`, async () => {
  const tags = await timedPass(await createPrincipal({ shard: 0 }), { type: "add_tag", delay: "PT0S", tag: "nurtured" });
  report("add_tag", tags);
  expect(tags).toMatchObject({ ran: N, left: 0, runs: N });
});

it(`one pass runs ${N.toLocaleString("en")} send_email steps due within one minute (mailed, logged, advanced)`, async () => {
  const mails = await timedPass(await createPrincipal({ shard: 1 }), {
    type: "send_email",
    delay: "PT0S",
    email: { subject: "Hi {{contact.firstName}}", body: "Hello {{contact.firstName}} {{contact.lastName}}, {{agent.name}} here." },
  });
  report("send_email", mails);
  expect(mails).toMatchObject({ ran: N, left: 0, runs: N });
});
