// An action plan run against the clock (issue 46, "Done when"): `npm run --silent cron -- --at <ISO time>` runs the
// scheduled passes against the plain `npm run dev` as if at that time, and `npm run --silent mail -- --to <email>`
// reads what the development mailer kept. The plan's first e-mail goes once however often the pass runs in its minute;
// the contact's reply, logged as an inbound e-mail, pauses the plan (the second e-mail is not sent though its time has
// come); resumed, the second e-mail goes at its new time and the plan completes.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { npmRunMail as readMail } from "./helpers/dev-server";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";

const run = promisify(execFile);
const MIN = 60_000;
const DAY = 86_400_000;

/** The passes once, as if at `at`. */
async function cronAt(at: Date): Promise<void> {
  const { stdout } = await run("npm", ["run", "--silent", "cron", "--", "--at", at.toISOString()], {
    env: { ...process.env, PORT: dev.port },
  });
  expect(JSON.parse(stdout)).toEqual({ ok: true, at: at.toISOString() });
}

async function api(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${dev.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = (await res.json()) as any;
  return { status: res.status, payload };
}

describe("an action plan against the clock (npm run cron, npm run mail)", () => {
  it("mails its first step once, pauses on the contact's e-mail reply, resumes and completes", { timeout: 180_000 }, async () => {
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const { token } = await mintToken(`Plan Realty ${stamp}`, `agent.${stamp}@plans.test`);
    const email = `ada.${stamp}@plans.test`;
    const contact = await api(token, "POST", "/v1/contacts", { firstName: "Ada", lastName: "King", email });
    expect(contact.status, JSON.stringify(contact.payload)).toBe(201);
    const contactId = contact.payload.data.id as string;
    const plan = await api(token, "POST", "/v1/action-plans", {
      name: "New lead",
      steps: [
        {
          type: "send_email",
          delay: "PT0S",
          email: { subject: "Welcome, {{contact.firstName}}", body: "Hi {{contact.firstName}}, {{agent.name}} here." },
        },
        { type: "send_email", delay: "P1D", email: { subject: "Still looking, {{contact.firstName}}?", body: "Just checking in." } },
      ],
    });
    expect(plan.status, JSON.stringify(plan.payload)).toBe(201);
    const planId = plan.payload.data.id as string;
    const enrolled = await api(token, "POST", `/v1/action-plans/${planId}/enrollments`, { contactId });
    expect(enrolled.status, JSON.stringify(enrolled.payload)).toBe(201);
    const enrollmentId = enrolled.payload.data.id as string;
    const t0 = Date.parse(enrolled.payload.data.enrolledAt);
    const enrollment = async () => (await api(token, "GET", `/v1/action-plans/${planId}/enrollments`)).payload.data[0];

    // The first step's minute, twice: one mail.
    await cronAt(new Date(t0 + MIN));
    await cronAt(new Date(t0 + MIN));
    const first = await readMail(email, 10);
    expect(first.map((m) => m.subject)).toEqual(["Welcome, Ada"]);
    expect(first[0]!.text).toMatch(/^Hi Ada, \S.* here\.$/);
    expect((await enrollment()).nextStep).toEqual({ index: 1, type: "send_email", dueAt: new Date(t0 + DAY).toISOString() });
    const sent = await api(token, "GET", `/v1/contacts/${contactId}/communications`);
    expect(sent.payload.data).toEqual([expect.objectContaining({ type: "email", direction: "outbound", subject: "Welcome, Ada" })]);

    // Ada answers: the reply logged on her pauses the plan (through the events queue), and the next step's time passes unsent.
    const reply = await api(token, "POST", `/v1/contacts/${contactId}/communications`, {
      type: "email",
      direction: "inbound",
      subject: "Re: Welcome, Ada",
      body: "Yes, call me.",
    });
    expect(reply.status).toBe(201);
    let paused: any;
    for (let i = 0; i < 60; i++) {
      paused = await enrollment();
      if (paused.status === "paused") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(paused).toMatchObject({ status: "paused", pauseReason: "communication.email_received", nextStep: { index: 1, dueAt: null } });
    await cronAt(new Date(t0 + 2 * DAY));
    expect(await readMail(email, 10)).toHaveLength(1);

    // Resumed: the wait it had left when it paused, from now; the pass at that time mails the second step.
    const resumed = await api(token, "POST", `/v1/action-plans/${planId}/enrollments/${enrollmentId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.payload)).toBe(200);
    const due = Date.parse(resumed.payload.data.nextStep.dueAt);
    expect(due).toBeGreaterThan(Date.now());
    await cronAt(new Date(due - MIN));
    expect(await readMail(email, 10)).toHaveLength(1);
    await cronAt(new Date(due + MIN));
    expect((await readMail(email, 10)).map((m) => m.subject)).toEqual(["Still looking, Ada?", "Welcome, Ada"]);
    expect(await enrollment()).toMatchObject({ status: "completed", nextStep: null });
  });
});
