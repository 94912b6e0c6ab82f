import { purgeTrash } from "../../src/trash/service";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { readConfig } from "../../src/env";
import { dispatchEvents } from "../../src/events/consumers";
import type { DomainEvent } from "../../src/events/event";
import { sha256Hex } from "../../src/lib/crypto";
import { surveyResponseConsumer } from "../../src/surveys/responses";
import { dealWonSurveyConsumer, expireSurveys, sendDueSurveys } from "../../src/surveys/scheduling";
import { chatJsonAnswer, type FakeAiAnswer, openAiGateway } from "../helpers/ai-gateway";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createDeal, moveDeal } from "../helpers/deals";
import { allOnShards, firstOnShards, freshIp, mailTo } from "../helpers/documents";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";
import { refuseConnections } from "../helpers/outbound";
import { aggregateOf } from "../helpers/testimonials";
import {
  createSurveyTemplate,
  makeDue,
  makeExpired,
  outboxEvents,
  publicSurvey,
  scheduleSurvey,
  STANDARD_QUESTIONS,
  surveyDetail,
  surveyRow,
} from "../helpers/surveys";

/** The organization's shard (issue 24), as the cron and queue consumers are handed it. */
const shardDb = async (p: TestPrincipal) => createDb(await tenantDb(p.organizationId));
const APP_URL = readConfig(env).APP_URL.replace(/\/$/, "");
const GONE = { state: "gone" };
const PRAISE = "Wonderful agent, great help, we love the house";

/** The survey link of the last mail `to` received, and its token. */
async function mailedLink(to: string) {
  const mail = await mailTo(to);
  const link = mail.at(-1)?.text.match(/https?:\/\/\S+\/survey\/\S+/)?.[0];
  expect(link, JSON.stringify(mail)).toBeDefined();
  return { link: link!, token: link!.slice(link!.lastIndexOf("/") + 1), count: mail.length };
}

const testimonialsOf = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/api/reputation/testimonials", { token: owner.token }))).testimonials as Record<string, any>[];
const surveysOf = async (owner: TestPrincipal, query = "") =>
  (await json(await call("GET", `/api/reputation/surveys${query}`, { token: owner.token }))).surveys as Record<string, any>[];
const templatesOf = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/api/reputation/surveys/templates", { token: owner.token }))).templates as Record<string, any>[];
const issuePaths = async (res: Response) =>
  [...new Set(((await json(res)).issues as { path: (string | number)[] }[]).map((i) => i.path.join(".")))].sort();

/** Opens a survey's link and answers it through the public route, as a client does (POST is taken only from OPENED); fails unless 200. */
async function answer(token: string, answers: Record<string, unknown>, vars?: Record<string, string>) {
  const ip = freshIp();
  const opened = await call("GET", `/api/public/survey/${token}`, { headers: { "cf-connecting-ip": ip }, vars });
  expect(opened.status, await opened.clone().text()).toBe(200);
  const res = await call("POST", `/api/public/survey/${token}`, { body: { answers }, headers: { "cf-connecting-ip": ip }, vars });
  expect(res.status, await res.clone().text()).toBe(200);
  expect(await json(res)).toEqual({ completed: true });
}

/** Runs the response workflow on every SURVEY_COMPLETED of the organization, past the dispatcher's claim (it is idempotent itself). */
async function analyse(owner: TestPrincipal) {
  const events = await outboxEvents(owner.organizationId, "SURVEY_COMPLETED");
  await surveyResponseConsumer.handle(events, { env, db: await shardDb(owner) });
  return events;
}

/**
 * An events queue that only swallows: the SURVEY_COMPLETED of a submission made with it reaches no consumer but the one
 * the test runs (with its fake gateway), never the Worker's own queue consumer (which has no gateway).
 */
const HELD_QUEUE = { EVENTS: { send: async () => {}, sendBatch: async () => {} } } as unknown as Record<string, string>;

async function expectGone(token: string) {
  const got = await publicSurvey("GET", token);
  const posted = await publicSurvey("POST", token, { answers: { overall: 5 } });
  expect([got.status, posted.status]).toEqual([404, 404]);
  expect([await json(got), await json(posted)]).toEqual([GONE, GONE]);
}

describe("surveys: the state table end to end (spec: Survey, States and transitions, Rules 1, Events)", () => {
  it("a won deal is surveyed once: SCHEDULED, mailed by the cron (SENT), OPENED, COMPLETED, and a PENDING testimonial", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const contact = await createContact(owner.token, { firstName: "Casey", lastName: "Client" });
    const deal = await createDeal(owner.token, { contactId: contact.id, assignedTo: owner.userId });
    await moveDeal(owner.token, deal.id, "CLOSED");
    const [won, ...more] = await outboxEvents(owner.organizationId, "DEAL_WON");
    expect(more).toEqual([]);

    // DEAL_WON delivered twice at once, through the dispatcher and past its claim: one survey, one standard template.
    await Promise.all([
      dispatchEvents([dealWonSurveyConsumer], [won!, won!], env, db),
      dealWonSurveyConsumer.handle([won!], { env, db }),
      dealWonSurveyConsumer.handle([won!], { env, db }),
    ]);
    const listed = await surveysOf(owner);
    expect(listed).toHaveLength(1);
    const survey = listed[0]!;
    expect(survey).toMatchObject({
      trigger: "DEAL_WON",
      channel: "EMAIL",
      status: "SCHEDULED",
      dealId: deal.id,
      agentUserId: owner.userId,
      recipientPersonId: contact.id,
      sentAt: null,
      openedAt: null,
    });
    expect(Date.parse(survey.sendAt) - Date.parse(survey.createdAt)).toBe(168 * 3_600_000);
    expect(Date.parse(survey.expiresAt) - Date.parse(survey.createdAt)).toBe(30 * 86_400_000);
    expect(await templatesOf(owner)).toEqual([
      expect.objectContaining({ id: survey.templateId, isDefault: true, builtIn: true, sendDelayHours: 168 }),
    ]);
    expect(await outboxEvents(owner.organizationId, "SURVEY_SCHEDULED")).toHaveLength(1);

    // Another survey of the organization, to show the public page never carries it.
    const other = await scheduleSurvey(owner, {
      templateId: (await createSurveyTemplate(owner, { name: "Second template for the open house" })).id,
      channel: "EMAIL",
    });

    // The cron mails nothing before sendAt; once it is due, the link to the contact, once.
    await sendDueSurveys(env, db);
    expect(await mailTo(contact.email)).toEqual([]);
    await makeDue(survey.id);
    await sendDueSurveys(env, db);
    const { link, token, count } = await mailedLink(contact.email);
    expect(count).toBe(1);
    expect(token).toMatch(/^srv_[A-Za-z0-9_-]{43}$/);
    expect(link).toBe(`${APP_URL}/survey/${token}`);
    expect(await surveyDetail(owner, survey.id)).toMatchObject({ status: "SENT", sentAt: expect.any(String), response: null });
    await sendDueSurveys(env, db);
    expect(await mailTo(contact.email)).toHaveLength(1);

    // Opened by several requests at once: all see the questions, one SURVEY_OPENED.
    const opens = await Promise.all(Array.from({ length: 5 }, () => publicSurvey("GET", token)));
    expect(opens.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(opens[0]!.headers.get("cache-control")).toBe("no-store");
    expect(opens[0]!.headers.get("referrer-policy")).toBe("no-referrer");
    const page = await json(opens[0]!);
    expect(Object.keys(page).sort()).toEqual(["branding", "survey"]);
    expect(page.branding).toEqual({ brokerage: `Org ${owner.organizationId}` });
    expect(Object.keys(page.survey).sort()).toEqual(["description", "expiresAt", "questions", "title"]);
    expect(page.survey.questions.map((q: { id: string }) => q.id)).toEqual(["overall", "recommend", "comments", "publish"]);
    const shown = JSON.stringify(page);
    for (const secret of [
      owner.userId,
      `${owner.userId}@example.test`,
      "Test Agent",
      survey.id,
      deal.id,
      contact.id,
      contact.email,
      other.id,
      "open house",
    ])
      expect(shown).not.toContain(secret);
    expect(await outboxEvents(owner.organizationId, "SURVEY_OPENED")).toHaveLength(1);
    expect(await surveyDetail(owner, survey.id)).toMatchObject({ status: "OPENED", openedAt: expect.any(String) });

    // Answered: COMPLETED, the response stored, SURVEY_COMPLETED; the link is gone from now on.
    const answers = { overall: 5, recommend: 10, comments: PRAISE, publish: true };
    await answer(token, answers);
    expect(await surveyDetail(owner, survey.id)).toMatchObject({
      status: "COMPLETED",
      completedAt: expect.any(String),
      response: { answers },
    });
    const completed = await outboxEvents(owner.organizationId, "SURVEY_COMPLETED");
    expect(completed).toHaveLength(1);
    await expectGone(token);

    // The response workflow, delivered twice at once and past the claim: one PENDING testimonial.
    await Promise.all([
      dispatchEvents([surveyResponseConsumer], completed, env, db),
      surveyResponseConsumer.handle(completed, { env, db }),
      surveyResponseConsumer.handle(completed, { env, db }),
    ]);
    const testimonials = await testimonialsOf(owner);
    expect(testimonials).toHaveLength(1);
    expect(testimonials[0]).toMatchObject({
      status: "PENDING",
      visibility: "PRIVATE",
      source: "SURVEY",
      dealId: deal.id,
      agentUserId: owner.userId,
      authorPersonId: contact.id,
      rating: 5,
      body: PRAISE,
      category: "BUYER",
    });
    const detail = await surveyDetail(owner, survey.id);
    expect(detail.response).toMatchObject({
      answers,
      sentiment: "POSITIVE",
      sentimentSource: "lexicon",
      testimonialId: testimonials[0]!.id,
    });
    expect(detail.response!.sentimentScore).toBeGreaterThan(0);

    // One survey sent, one answered, one promoter.
    for (const agent of [undefined, owner.userId]) expect(await aggregateOf(owner, agent)).toMatchObject({ nps: 100, responseRate: 1 });
  });

  it("a link never opened takes no answers: POST before any GET is 409 invalid_state and writes nothing; opened, it is answered", async () => {
    const owner = await createPrincipal();
    const template = await createSurveyTemplate(owner);
    const issued = [];
    for (const channel of ["LINK", "EMAIL"] as const) {
      const s = await scheduleSurvey(owner, { templateId: template.id, channel });
      issued.push(s);
      const before = await surveyRow(s.id);
      const aggregate = await aggregateOf(owner);
      const refused = await publicSurvey("POST", s.accessToken, { answers: { overall: 5, recommend: 10, publish: true } });
      expect(refused.status).toBe(409);
      expect(refused.headers.get("cache-control")).toBe("no-store");
      expect(await json(refused)).toEqual({ error: "invalid_state", message: expect.stringMatching(/open/i) });
      expect(await surveyRow(s.id)).toEqual(before);
      expect(await surveyDetail(owner, s.id)).toMatchObject({ status: "SCHEDULED", openedAt: null, completedAt: null, response: null });
      expect(await aggregateOf(owner)).toEqual(aggregate);
    }
    expect(await outboxEvents(owner.organizationId, "SURVEY_OPENED")).toEqual([]);
    expect(await outboxEvents(owner.organizationId, "SURVEY_COMPLETED")).toEqual([]);

    const first = issued[0]!;
    expect((await publicSurvey("GET", first.accessToken)).status).toBe(200);
    expect((await publicSurvey("POST", first.accessToken, { answers: { overall: 5, recommend: 10, publish: true } })).status).toBe(200);
    expect(await surveyDetail(owner, first.id)).toMatchObject({
      status: "COMPLETED",
      openedAt: expect.any(String),
      response: { answers: { overall: 5, recommend: 10, publish: true } },
    });
    expect(await outboxEvents(owner.organizationId, "SURVEY_OPENED")).toHaveLength(1);
    expect(await outboxEvents(owner.organizationId, "SURVEY_COMPLETED")).toHaveLength(1);
  });

  it("two deals won at once in an organization without templates: one standard template, one survey per deal", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const deals = [
      await createDeal(owner.token, { assignedTo: owner.userId }),
      await createDeal(owner.token, { assignedTo: owner.userId }),
    ];
    for (const d of deals) await moveDeal(owner.token, d.id, "CLOSED");
    const won = await outboxEvents(owner.organizationId, "DEAL_WON");
    expect(won).toHaveLength(2);
    await Promise.all([
      dealWonSurveyConsumer.handle([won[0]!], { env, db }),
      dealWonSurveyConsumer.handle([won[1]!], { env, db }),
      dealWonSurveyConsumer.handle([won[1]!, won[0]!], { env, db }),
    ]);
    const templates = await templatesOf(owner);
    expect(templates).toEqual([expect.objectContaining({ isDefault: true, builtIn: true })]);
    const surveys = await surveysOf(owner);
    expect(surveys.map((s) => s.dealId).sort()).toEqual(deals.map((d) => d.id).sort());
    for (const s of surveys) expect(s.templateId).toBe(templates[0]!.id);
  });
});

// Issue 40 (second adversarial pass): an agent sent a LINK survey about a colleague to a client, answered it (a
// pending testimonial about the colleague, their NPS moved), re-issued and skipped the colleague's surveys.
describe("whose surveys a caller may send", () => {
  it("an agent sends, re-issues and skips only the surveys about themselves; owners and admins any", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    await createSurveyTemplate(owner);
    const client = await createContact(owner.token);
    const theirs = await scheduleSurvey(owner, { recipientPersonId: client.id });
    const attempts: [string, unknown][] = [
      ["/api/reputation/surveys", { agentUserId: owner.userId, recipientPersonId: client.id, channel: "LINK" }],
      [`/api/reputation/surveys/${theirs.id}/reissue`, undefined],
      [`/api/reputation/surveys/${theirs.id}/skip`, undefined],
    ];
    for (const [path, body] of attempts) {
      const res = await call("POST", path, { token: agent.token, body });
      expect(res.status, path).toBe(403);
      expect(JSON.stringify(await json(res)), path).toContain("insufficient_role");
    }
    // The client's link still works, and nothing was scheduled about the owner by the agent.
    expect((await publicSurvey("GET", theirs.accessToken)).status).toBe(200);
    expect(
      (await json(await call("GET", `/api/reputation/surveys?agentUserId=${owner.userId}`, { token: owner.token }))).surveys,
    ).toHaveLength(1);
    // Their own, and an admin's on anyone's.
    const own = await scheduleSurvey(agent, { recipientPersonId: client.id });
    expect((await call("POST", `/api/reputation/surveys/${own.id}/reissue`, { token: agent.token })).status).toBe(200);
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    expect((await call("POST", `/api/reputation/surveys/${own.id}/skip`, { token: admin.token })).status).toBe(200);
  });

  // Third adversarial pass: an agent made their own template the organization's default, and won a deal of a contact
  // they control assigned to a colleague, so the DEAL_WON survey about the colleague came to them to answer.
  it("the templates are the organization's to change, and a deal another agent wins surveys nobody about its assignee", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const template = await call("POST", "/api/reputation/surveys/templates", {
      token: agent.token,
      body: { name: "Mine", questions: STANDARD_QUESTIONS, isDefault: true },
    });
    expect(template.status).toBe(403);
    expect(JSON.stringify(await json(template))).toContain("insufficient_role");
    expect((await call("GET", "/api/reputation/surveys/templates", { token: agent.token })).status).toBe(200);

    const db = await shardDb(owner);
    const puppet = await createContact(agent.token, { firstName: "Pup", lastName: "Pet" });
    const deal = await createDeal(agent.token, { contactId: puppet.id, assignedTo: owner.userId });
    await moveDeal(agent.token, deal.id, "CLOSED");
    const [won] = await outboxEvents(owner.organizationId, "DEAL_WON");
    await dealWonSurveyConsumer.handle([won!], { env, db });
    expect((await json(await call("GET", `/api/reputation/surveys?agentUserId=${owner.userId}`, { token: owner.token }))).surveys).toEqual(
      [],
    );
    // The assignee winning it, or an owner for them, surveys as before.
    const theirs = await createDeal(agent.token, { contactId: puppet.id, assignedTo: agent.userId });
    await moveDeal(agent.token, theirs.id, "CLOSED");
    const forOwner = await createDeal(owner.token, { contactId: (await createContact(owner.token)).id, assignedTo: agent.userId });
    await moveDeal(owner.token, forOwner.id, "CLOSED");
    const [, ...rest] = await outboxEvents(owner.organizationId, "DEAL_WON");
    await dealWonSurveyConsumer.handle(rest, { env, db });
    expect(
      (await json(await call("GET", `/api/reputation/surveys?agentUserId=${agent.userId}`, { token: owner.token }))).surveys,
    ).toHaveLength(2);

    // Fourth pass: the consumer runs a moment after the win, and a contact swapped onto the deal meanwhile received
    // the survey. It surveys the deal as it was won.
    const client = await createContact(owner.token, { firstName: "Real", lastName: "Client" });
    const real = await createDeal(owner.token, { contactId: client.id, assignedTo: owner.userId });
    await moveDeal(owner.token, real.id, "CLOSED");
    expect((await call("PUT", `/v1/deals/${real.id}`, { token: agent.token, body: { contactId: puppet.id } })).status).toBe(200);
    const latest = (await outboxEvents(owner.organizationId, "DEAL_WON")).at(-1)!;
    await dealWonSurveyConsumer.handle([latest], { env, db });
    const [surveyed] = (await json(await call("GET", `/api/reputation/surveys?agentUserId=${owner.userId}`, { token: owner.token })))
      .surveys;
    expect(surveyed).toMatchObject({ dealId: real.id, recipientPersonId: client.id });

    // Fifth pass: the agent re-addressed the client (or merged them into their own contact) before the mail went out,
    // and the link came to them. It goes only to the address it was scheduled for; else the survey is skipped.
    const stolen = `stolen.${crypto.randomUUID().slice(0, 8)}@agent.test`;
    expect((await call("PUT", `/v1/contacts/${client.id}`, { token: agent.token, body: { email: stolen } })).status).toBe(200);
    const second = await createContact(owner.token, { firstName: "Other", lastName: "Client" });
    const mine = await createContact(agent.token, {
      firstName: "Agent",
      lastName: "Inbox",
      email: `inbox.${crypto.randomUUID().slice(0, 8)}@agent.test`,
    });
    const merged = await scheduleSurvey(owner, { recipientPersonId: second.id, channel: "EMAIL" });
    expect((await call("POST", `/v1/contacts/${mine.id}/merge`, { token: agent.token, body: { sourceIds: [second.id] } })).status).toBe(
      200,
    );
    for (const id of [surveyed.id, merged.id]) await makeDue(id);
    await sendDueSurveys(env, db);
    expect(await mailTo(stolen)).toEqual([]);
    expect(await mailTo(mine.email)).toEqual([]);
    for (const id of [surveyed.id, merged.id]) expect(await surveyDetail(owner, id)).toMatchObject({ status: "SKIPPED" });
    // Sixth pass: re-addressed in the moment between the win and the survey's scheduling, the survey took the new
    // address. It is held to the address the client had when the deal was won.
    const quick = await createContact(owner.token, { firstName: "Quick", lastName: "Client" });
    const raced = await createDeal(owner.token, { contactId: quick.id, assignedTo: owner.userId });
    await moveDeal(owner.token, raced.id, "CLOSED");
    const raceStolen = `raced.${crypto.randomUUID().slice(0, 8)}@agent.test`;
    expect((await call("PUT", `/v1/contacts/${quick.id}`, { token: agent.token, body: { email: raceStolen } })).status).toBe(200);
    await dealWonSurveyConsumer.handle([(await outboxEvents(owner.organizationId, "DEAL_WON")).at(-1)!], { env, db });
    const racedSurvey = (
      await json(await call("GET", `/api/reputation/surveys?agentUserId=${owner.userId}`, { token: owner.token }))
    ).surveys.find((x: { dealId: string }) => x.dealId === raced.id);
    await makeDue(racedSurvey.id);
    await sendDueSurveys(env, db);
    expect(await mailTo(raceStolen)).toEqual([]);
    expect(await surveyDetail(owner, racedSurvey.id)).toMatchObject({ status: "SKIPPED" });
    // Seventh pass: a contact in the trash at the win had no address to hold the survey to, and one restored and
    // re-addressed then got it; an erasure cleared a live survey's address, and it went anywhere.
    const trashed = await createContact(owner.token, { firstName: "Trashed", lastName: "Client" });
    const lost = await createDeal(owner.token, { contactId: trashed.id, assignedTo: owner.userId });
    expect((await call("DELETE", `/v1/contacts/${trashed.id}`, { token: agent.token })).status).toBe(200);
    await moveDeal(owner.token, lost.id, "CLOSED");
    expect((await call("POST", `/v1/contacts/${trashed.id}/restore`, { token: agent.token })).status).toBe(200);
    await dealWonSurveyConsumer.handle([(await outboxEvents(owner.organizationId, "DEAL_WON")).at(-1)!], { env, db });
    expect(
      (await json(await call("GET", `/api/reputation/surveys?agentUserId=${owner.userId}`, { token: owner.token }))).surveys.some(
        (x: { dealId: string }) => x.dealId === lost.id,
      ),
    ).toBe(false);
    const held = await createContact(owner.token, { firstName: "Held", lastName: "Client" });
    const steadyBefore = await createContact(owner.token, { firstName: "Sent", lastName: "Client" });
    const heldSurvey = await scheduleSurvey(owner, { recipientPersonId: held.id, channel: "EMAIL" });
    const oldAddress = held.email;
    expect(
      (
        await call("PUT", `/v1/contacts/${held.id}`, {
          token: agent.token,
          body: { email: `held.${crypto.randomUUID().slice(0, 8)}@agent.test` },
        })
      ).status,
    ).toBe(200);
    const decoy = await createContact(agent.token, { firstName: "Decoy", lastName: "Person", email: oldAddress });
    // Eighth pass: one already mailed kept its status, and a re-issue then mailed it anywhere.
    const mailed = await scheduleSurvey(owner, { recipientPersonId: steadyBefore.id, channel: "EMAIL" });
    await makeDue(mailed.id);
    await sendDueSurveys(env, db);
    expect(await surveyDetail(owner, mailed.id)).toMatchObject({ status: "SENT" });
    const taken = `taken.${crypto.randomUUID().slice(0, 8)}@agent.test`;
    expect((await call("PUT", `/v1/contacts/${steadyBefore.id}`, { token: agent.token, body: { email: taken } })).status).toBe(200);
    const decoy2 = await createContact(agent.token, { firstName: "Decoy", lastName: "Two", email: steadyBefore.email });
    expect((await call("DELETE", `/v1/contacts/${decoy.id}?erase=true`, { token: owner.token })).status).toBe(200);
    expect((await call("DELETE", `/v1/contacts/${decoy2.id}?erase=true`, { token: owner.token })).status).toBe(200);
    expect(await surveyDetail(owner, heldSurvey.id)).toMatchObject({ status: "SKIPPED" });
    expect((await call("POST", `/api/reputation/surveys/${mailed.id}/reissue`, { token: owner.token })).status).toBe(200);
    expect(await mailTo(taken)).toEqual([]);
    // An unchanged one is mailed as before.
    const steady = await createContact(owner.token, { firstName: "Steady", lastName: "Client" });
    const kept = await scheduleSurvey(owner, { recipientPersonId: steady.id, channel: "EMAIL" });
    await makeDue(kept.id);
    await sendDueSurveys(env, db);
    expect(await mailTo(steady.email)).toHaveLength(1);
  });
});

describe("the response workflow (spec: Testimonial state table, survey response consumer)", () => {
  const NPS_ONLY = [
    { id: "recommend", type: "nps", label: "Would you recommend us?", required: true },
    { id: "words", type: "text", label: "Anything to add?" },
    { id: "ok", type: "yes_no", label: "May we quote you?", purpose: "publishConsent" },
  ];

  it("promotes only opted-in, highly rated, non-negative text; the sentiment is stored every time", async () => {
    const owner = await createPrincipal();
    const standard = await createSurveyTemplate(owner);
    const npsOnly = await createSurveyTemplate(owner, { name: "NPS only", questions: NPS_ONLY });
    const cases = [
      {
        name: "not opted in",
        template: standard.id,
        answers: { overall: 5, recommend: 10, comments: PRAISE, publish: false },
        sentiment: "POSITIVE",
        promoted: false,
      },
      {
        name: "rated 3 (overallRating decides, not the NPS 10)",
        template: standard.id,
        answers: { overall: 3, recommend: 10, comments: PRAISE, publish: true },
        sentiment: "POSITIVE",
        promoted: false,
      },
      {
        name: "rated 4",
        template: standard.id,
        answers: { overall: 4, recommend: 6, comments: PRAISE, publish: true },
        sentiment: "POSITIVE",
        promoted: true,
        rating: 4,
      },
      {
        name: "negative text",
        template: standard.id,
        answers: { overall: 5, recommend: 10, comments: "terrible, awful, never again", publish: true },
        sentiment: "NEGATIVE",
        promoted: false,
      },
      { name: "no text", template: standard.id, answers: { overall: 5, recommend: 10, publish: true }, sentiment: null, promoted: false },
      {
        name: "blank text",
        template: standard.id,
        answers: { overall: 5, recommend: 10, comments: "   ", publish: true },
        sentiment: null,
        promoted: false,
      },
      { name: "NPS 8", template: npsOnly.id, answers: { recommend: 8, words: PRAISE, ok: true }, sentiment: "POSITIVE", promoted: false },
      {
        name: "NPS 9",
        template: npsOnly.id,
        answers: { recommend: 9, words: PRAISE, ok: true },
        sentiment: "POSITIVE",
        promoted: true,
        rating: 5,
      },
    ];
    const surveys: string[] = [];
    for (const c of cases) {
      const s = await scheduleSurvey(owner, { templateId: c.template });
      await answer(s.accessToken, c.answers);
      surveys.push(s.id);
    }
    await analyse(owner);

    const testimonials = await testimonialsOf(owner);
    for (const [i, c] of cases.entries()) {
      const { response } = await surveyDetail(owner, surveys[i]!);
      expect(response, c.name).toMatchObject({ sentiment: c.sentiment, sentimentSource: c.sentiment ? "lexicon" : null });
      const analysed =
        (await firstOnShards<{ analyzed_at: string | null }>("SELECT analyzed_at FROM survey_responses WHERE survey_id = ?", surveys[i]))
          ?.analyzed_at ?? null;
      expect(analysed, c.name).toEqual(expect.any(String));
      if (!c.promoted) {
        expect(response!.testimonialId, c.name).toBeNull();
        continue;
      }
      const made = testimonials.find((t) => t.id === response!.testimonialId);
      expect(made, c.name).toMatchObject({
        status: "PENDING",
        source: "SURVEY",
        rating: c.rating,
        body: PRAISE,
        agentUserId: owner.userId,
        dealId: null,
      });
    }
    expect(testimonials).toHaveLength(cases.filter((c) => c.promoted).length);
  });

  it("uses the AI gateway's classification when one is configured, and the lexicon when it answers garbage or fails", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const template = await createSurveyTemplate(owner);
    const run = async (script: FakeAiAnswer[], chat?: string) => {
      const gateway = await openAiGateway({ script, chat });
      const s = await scheduleSurvey(owner, { templateId: template.id });
      await answer(s.accessToken, { overall: 5, recommend: 10, comments: PRAISE, publish: true }, HELD_QUEUE);
      const events = (await outboxEvents(owner.organizationId, "SURVEY_COMPLETED")).filter(
        (e: DomainEvent) => (e.data as { surveyId: string }).surveyId === s.id,
      );
      expect(events).toHaveLength(1);
      await surveyResponseConsumer.handle(events, { env: { ...env, ...gateway.vars }, db });
      return { response: (await surveyDetail(owner, s.id)).response!, requests: await gateway.requests() };
    };

    // The gateway reads praise as negative: its word is taken, so no testimonial.
    const classified = await run([chatJsonAnswer({ sentiment: "negative", score: -0.6 })]);
    expect(classified.response).toMatchObject({
      sentiment: "NEGATIVE",
      sentimentScore: -0.6,
      sentimentSource: "ai-gateway",
      testimonialId: null,
    });
    expect(classified.requests).toHaveLength(1);
    expect(JSON.stringify(classified.requests[0]!.body.messages)).toContain(PRAISE);

    const garbage = await run([{ content: "Sounds quite positive to me!" }]);
    expect(garbage.response).toMatchObject({ sentiment: "POSITIVE", sentimentSource: "lexicon", testimonialId: expect.any(String) });
    expect(garbage.requests.length).toBeGreaterThan(0);

    const failing = await run([{ status: 500 }, { status: 500 }], "not json either");
    expect(failing.response).toMatchObject({ sentiment: "POSITIVE", sentimentSource: "lexicon", testimonialId: expect.any(String) });
    expect(failing.requests.length).toBeGreaterThan(0);
  });
});

describe("gone links (spec: Errors, 404 state 'gone', uniform)", () => {
  it("unknown, malformed, completed, skipped and expired tokens answer the same 404 on GET and POST; closed surveys refuse re-issue and skip (409)", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const template = await createSurveyTemplate(owner);
    const issue = (overrides: Record<string, unknown> = {}) => scheduleSurvey(owner, { templateId: template.id, ...overrides });

    await expectGone(`srv_${"A".repeat(43)}`);
    for (const malformed of ["nope", "srv_short", `srv_${"a".repeat(60)}`, "srv_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"])
      await expectGone(malformed);

    const completed = await issue();
    await answer(completed.accessToken, { overall: 4, recommend: 8, publish: false });
    await expectGone(completed.accessToken);

    const skipped = await issue();
    const skip = await call("POST", `/api/reputation/surveys/${skipped.id}/skip`, { token: owner.token });
    expect(skip.status).toBe(200);
    expect(await json(skip)).toMatchObject({ id: skipped.id, status: "SKIPPED", skippedAt: expect.any(String) });
    await expectGone(skipped.accessToken);

    // Past expiresAt the link is gone at once, before the cron has marked the survey EXPIRED.
    const expired = await issue();
    await makeExpired(expired.id);
    await expectGone(expired.accessToken);
    expect((await surveyDetail(owner, expired.id)).status).toBe("SCHEDULED");
    await expireSurveys(db);
    expect(await surveyDetail(owner, expired.id)).toMatchObject({ status: "EXPIRED", expiredAt: expect.any(String) });
    await expectGone(expired.accessToken);

    // Closed surveys cannot be re-issued or skipped.
    for (const closed of [completed, skipped, expired]) {
      for (const verb of ["reissue", "skip"]) {
        const res = await call("POST", `/api/reputation/surveys/${closed.id}/${verb}`, { token: owner.token });
        expect(res.status, `${verb} ${closed.id}`).toBe(409);
        expect(await json(res), `${verb} ${closed.id}`).toMatchObject({
          error: "survey_closed",
          message: expect.stringMatching(/survey/i),
        });
      }
    }
  });

  it("a token too long to be one answers the same uniform 404, not a 400", async () => {
    await expectGone(`srv_${"a".repeat(197)}`);
    await expectGone("x".repeat(1000));
  });

  it("a re-issue kills the old token at once; a survey already mailed is mailed the new link now, one not mailed yet at its time", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const template = await createSurveyTemplate(owner);

    const contact = await createContact(owner.token);
    const sent = await scheduleSurvey(owner, { templateId: template.id, recipientPersonId: contact.id, channel: "EMAIL" });
    await makeDue(sent.id);
    await sendDueSurveys(env, db);
    const first = await mailedLink(contact.email);
    expect(first.token).toBe(sent.accessToken);
    const res = await call("POST", `/api/reputation/surveys/${sent.id}/reissue`, { token: owner.token });
    const reissued = await json(res);
    expect(res.status, JSON.stringify(reissued)).toBe(200);
    expect(reissued).toMatchObject({ id: sent.id, status: "SENT", surveyUrl: `${APP_URL}/survey/${reissued.accessToken}` });
    expect(reissued.accessToken).not.toBe(sent.accessToken);
    const second = await mailedLink(contact.email);
    expect(second).toMatchObject({ count: 2, token: reissued.accessToken });
    await expectGone(sent.accessToken);
    expect((await publicSurvey("GET", reissued.accessToken)).status).toBe(200);
    expect((await surveyDetail(owner, sent.id)).status).toBe("OPENED");

    // Not mailed yet: the re-issue mails nothing now; the cron later mails the new link, never the old one.
    const waiting = await createContact(owner.token);
    const scheduled = await scheduleSurvey(owner, { templateId: template.id, recipientPersonId: waiting.id, channel: "EMAIL" });
    const again = await json(await call("POST", `/api/reputation/surveys/${scheduled.id}/reissue`, { token: owner.token }));
    expect(again.status).toBe("SCHEDULED");
    expect(await mailTo(waiting.email)).toEqual([]);
    await makeDue(scheduled.id);
    await sendDueSurveys(env, db);
    expect(await mailedLink(waiting.email)).toMatchObject({ count: 1, token: again.accessToken });
    await expectGone(scheduled.accessToken);
  });

  it("of concurrent re-issues every one answers, and exactly one token is live afterwards", async () => {
    const owner = await createPrincipal();
    const s = await scheduleSurvey(owner, { templateId: (await createSurveyTemplate(owner)).id });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => call("POST", `/api/reputation/surveys/${s.id}/reissue`, { token: owner.token })),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const tokens = await Promise.all(answers.map(async (r) => (await json(r)).accessToken as string));
    expect(new Set(tokens).size).toBe(5);
    const opened = await Promise.all([s.accessToken, ...tokens].map(async (t) => (await publicSurvey("GET", t)).status));
    expect(opened.filter((status) => status === 200)).toHaveLength(1);
    expect(opened.filter((status) => status === 404)).toHaveLength(5);
  });
});

describe("limits (spec: Limits)", () => {
  it("a body over 64 KB is 413 and a text over the question's maxLength is 400 at answers.<id>; the survey stays open", async () => {
    const owner = await createPrincipal();
    const template = await createSurveyTemplate(owner, {
      questions: STANDARD_QUESTIONS.map((q) => (q.id === "comments" ? { ...q, maxLength: 100 } : q)),
    });
    const s = await scheduleSurvey(owner, { templateId: template.id });
    expect((await publicSurvey("GET", s.accessToken)).status).toBe(200);
    // A body of exactly 64 KB is read (and refused for its unknown questions); one byte more is 413 before it is read.
    const sized = (bytes: number) => {
      const answers = {
        overall: 5,
        recommend: 9,
        publish: true,
        a: "x".repeat(20_000),
        b: "x".repeat(20_000),
        c: "x".repeat(20_000),
        d: "",
      };
      answers.d = "x".repeat(bytes - JSON.stringify(answers).length - JSON.stringify({ answers: {} }).length + 2);
      const raw = JSON.stringify({ answers });
      expect(new TextEncoder().encode(raw).length).toBe(bytes);
      return raw;
    };
    const post = (rawBody: string) =>
      call("POST", `/api/public/survey/${s.accessToken}`, {
        rawBody,
        headers: { "content-type": "application/json", "cf-connecting-ip": freshIp() },
      });
    const atLimit = await post(sized(64 * 1024));
    expect(atLimit.status).toBe(400);
    expect(await issuePaths(atLimit)).toEqual(["answers.a", "answers.b", "answers.c", "answers.d"]);
    expect((await post(sized(64 * 1024 + 1))).status).toBe(413);
    const long = await publicSurvey("POST", s.accessToken, {
      answers: { overall: 5, recommend: 9, publish: true, comments: "y".repeat(101) },
    });
    expect(long.status).toBe(400);
    expect(await issuePaths(long)).toEqual(["answers.comments"]);
    expect((await surveyDetail(owner, s.id)).status).toBe("OPENED");
    await answer(s.accessToken, { overall: 5, recommend: 9, publish: true, comments: `  ${"y".repeat(100)}  ` });
    expect((await surveyDetail(owner, s.id)).response!.answers.comments).toBe("y".repeat(100));
  });

  it("the 11th POST and the 61st GET within a minute from one address are 429; another address is not limited", async () => {
    const unknown = `srv_${"B".repeat(43)}`;
    const postIp = freshIp();
    const posts = await Promise.all(Array.from({ length: 11 }, () => publicSurvey("POST", unknown, { answers: {} }, postIp)));
    expect(posts.filter((r) => r.status === 404)).toHaveLength(10);
    const limited = posts.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    expect(await json(limited[0]!)).toMatchObject({ error: "rate_limited" });
    expect((await publicSurvey("POST", unknown, { answers: {} })).status).toBe(404);

    const getIp = freshIp();
    const gets = await Promise.all(Array.from({ length: 61 }, () => publicSurvey("GET", unknown, undefined, getIp)));
    expect(gets.filter((r) => r.status === 404)).toHaveLength(60);
    expect(gets.filter((r) => r.status === 429)).toHaveLength(1);
    expect((await publicSurvey("GET", unknown)).status).toBe(404);
  });
});

describe("validation: every problem in one 400", () => {
  it("a template with many problems lists each of them, and nothing is created", async () => {
    const owner = await createPrincipal();
    const res = await call("POST", "/api/reputation/surveys/templates", {
      token: owner.token,
      body: {
        name: "Broken",
        sendDelayHours: 28 * 24 + 1,
        questions: [
          { id: "score", type: "rating", label: "Score", purpose: "testimonial" },
          { id: "score", type: "nps", label: "Recommend?" },
          { id: "again", type: "nps", label: "Recommend again?" },
          { id: "lonely", type: "single_choice", label: "Pick", options: ["Only"] },
          { id: "twins", type: "single_choice", label: "Pick", options: ["Same", " Same "] },
          { id: "Bad-Id", type: "text", label: "Words" },
        ],
      },
    });
    expect(res.status).toBe(400);
    const { issues } = await json(res);
    const at = (path: string) =>
      issues.filter((i: { path: (string | number)[] }) => i.path.join(".") === path).map((i: { message: string }) => i.message);
    expect(at("sendDelayHours")).toHaveLength(1);
    expect(at("questions.0.purpose")).toHaveLength(1);
    expect(at("questions.1.id")).toEqual([expect.stringMatching(/duplicate/i)]);
    expect(at("questions.3.options")).toHaveLength(1);
    expect(at("questions.4.options")).toEqual([expect.stringMatching(/distinct/i)]);
    expect(at("questions.5.id")).toHaveLength(1);
    expect(at("questions")).toEqual(expect.arrayContaining([expect.stringMatching(/publishConsent/), expect.stringMatching(/nps/)]));
    expect(await templatesOf(owner)).toEqual([]);
  });

  it("a submission with many problems lists each at answers.<id>, and stores nothing", async () => {
    const owner = await createPrincipal();
    const questions = [
      ...STANDARD_QUESTIONS,
      { id: "area", type: "single_choice", label: "Where did you buy?", options: ["Downtown", "Suburbs"] },
    ];
    const s = await scheduleSurvey(owner, { templateId: (await createSurveyTemplate(owner, { questions })).id });
    expect((await publicSurvey("GET", s.accessToken)).status).toBe(200);
    const wrong = await publicSurvey("POST", s.accessToken, {
      answers: { recommend: 11, comments: 42, area: "Mars", publish: "yes", nope: 1 },
    });
    expect(wrong.status).toBe(400);
    expect(await issuePaths(wrong)).toEqual([
      "answers.area",
      "answers.comments",
      "answers.nope",
      "answers.overall",
      "answers.publish",
      "answers.recommend",
    ]);
    const ranges = await publicSurvey("POST", s.accessToken, { answers: { overall: 4.5, recommend: -1, publish: true } });
    expect(await issuePaths(ranges)).toEqual(["answers.overall", "answers.recommend"]);
    expect(await surveyDetail(owner, s.id)).toMatchObject({ status: "OPENED", response: null });
    expect(await outboxEvents(owner.organizationId, "SURVEY_COMPLETED")).toEqual([]);
  });
});

describe("organizations stay apart (spec: Authentication 1)", () => {
  it("another organization's survey is a 404 like an unknown one; its references are 400s; lists show only one's own", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const templateA = await createSurveyTemplate(a);
    const templateB = await createSurveyTemplate(b);
    const surveyA = await scheduleSurvey(a, { templateId: templateA.id });
    const surveyB = await scheduleSurvey(b, { templateId: templateB.id });

    for (const [method, suffix] of [
      ["GET", ""],
      ["POST", "/reissue"],
      ["POST", "/skip"],
    ] as const) {
      const foreign = await call(method, `/api/reputation/surveys/${surveyB.id}${suffix}`, { token: a.token });
      const unknown = await call(method, `/api/reputation/surveys/${crypto.randomUUID()}${suffix}`, { token: a.token });
      expect([foreign.status, unknown.status]).toEqual([404, 404]);
      expect(await foreign.text()).toBe(await unknown.text());
    }
    // B's survey is untouched: still scheduled, its token still opens it.
    expect((await publicSurvey("GET", surveyB.accessToken)).status).toBe(200);

    const dealB = await createDeal(b.token);
    const res = await call("POST", "/api/reputation/surveys", {
      token: a.token,
      body: { templateId: templateB.id, recipientPersonId: dealB.contactId, agentUserId: b.userId, dealId: dealB.id, channel: "LINK" },
    });
    expect(res.status).toBe(400);
    expect(await issuePaths(res)).toEqual(["agentUserId", "dealId", "recipientPersonId", "templateId"]);

    expect((await surveysOf(a)).map((s) => s.id)).toEqual([surveyA.id]);
    expect(await surveysOf(a, `?agentUserId=${b.userId}`)).toEqual([]);
    expect((await templatesOf(a)).map((t) => t.id)).toEqual([templateA.id]);
    expect((await surveysOf(b)).map((s) => s.id)).toEqual([surveyB.id]);
  });

  it("isDefault moves the default; concurrent creates leave exactly one default, which a survey without templateId uses", async () => {
    const owner = await createPrincipal();
    const without = await call("POST", "/api/reputation/surveys", {
      token: owner.token,
      body: { recipientPersonId: (await createContact(owner.token)).id, agentUserId: owner.userId, channel: "LINK" },
    });
    expect(without.status).toBe(400);
    expect(await issuePaths(without)).toEqual(["templateId"]);

    await Promise.all(Array.from({ length: 6 }, (_, i) => createSurveyTemplate(owner, { name: `Raced ${i}` })));
    expect((await templatesOf(owner)).filter((t) => t.isDefault)).toHaveLength(1);
    const chosen = await createSurveyTemplate(owner, { name: "Chosen", isDefault: true });
    expect((await templatesOf(owner)).filter((t) => t.isDefault).map((t) => t.id)).toEqual([chosen.id]);
    expect((await scheduleSurvey(owner)).templateId).toBe(chosen.id);

    await Promise.all(Array.from({ length: 5 }, (_, i) => createSurveyTemplate(owner, { name: `Default ${i}`, isDefault: true })));
    const defaults = (await templatesOf(owner)).filter((t) => t.isDefault);
    expect(defaults).toHaveLength(1);
    expect(defaults[0]!.name).toMatch(/^Default /);
  });
});

describe("channels and configuration", () => {
  it("a LINK survey is never mailed and counts as sent when created", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const contact = await createContact(owner.token);
    const s = await scheduleSurvey(owner, {
      templateId: (await createSurveyTemplate(owner)).id,
      recipientPersonId: contact.id,
      channel: "LINK",
    });
    expect(s).toMatchObject({ channel: "LINK", status: "SCHEDULED", surveyUrl: `${APP_URL}/survey/${s.accessToken}` });
    expect(await aggregateOf(owner)).toMatchObject({ responseRate: 0, nps: null });
    await makeDue(s.id);
    await sendDueSurveys(env, db);
    expect(await mailTo(contact.email)).toEqual([]);
    expect(await surveyDetail(owner, s.id)).toMatchObject({ status: "SCHEDULED", sentAt: null });
    await answer(s.accessToken, { overall: 2, recommend: 3, publish: false });
    expect(await aggregateOf(owner)).toMatchObject({ responseRate: 1, nps: -100 });
    expect((await surveysOf(owner, "?status=COMPLETED")).map((x) => x.id)).toEqual([s.id]);
    expect(await surveysOf(owner, "?status=SCHEDULED")).toEqual([]);
  });

  it("the response rate never exceeds 1: an EMAIL survey answered before its mail went out counts as sent", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const template = await createSurveyTemplate(owner);
    await scheduleSurvey(owner, { templateId: template.id, channel: "LINK" });
    const contacts = [await createContact(owner.token), await createContact(owner.token)];
    for (const c of contacts) {
      const early = await scheduleSurvey(owner, { templateId: template.id, recipientPersonId: c.id, channel: "EMAIL" });
      await answer(early.accessToken, { overall: 5, recommend: 9, publish: false });
      await makeDue(early.id);
    }
    const { responseRate } = await aggregateOf(owner);
    expect(responseRate).toBeLessThanOrEqual(1);
    expect(responseRate).toBeCloseTo(2 / 3, 3);
    // Answered already: the cron mails them nothing, and counts nothing more.
    await sendDueSurveys(env, db);
    for (const c of contacts) expect(await mailTo(c.email)).toEqual([]);
    expect((await aggregateOf(owner)).responseRate).toBeCloseTo(2 / 3, 3);
  });

  it("an EMAIL survey without SURVEY_TOKEN_KEY is 503 not_configured and nothing is created; LINK still works", async () => {
    const owner = await createPrincipal();
    const template = await createSurveyTemplate(owner);
    const recipientPersonId = (await createContact(owner.token)).id;
    for (const body of [{ channel: "EMAIL" }, {}]) {
      const res = await call("POST", "/api/reputation/surveys", {
        token: owner.token,
        body: { templateId: template.id, recipientPersonId, agentUserId: owner.userId, ...body },
        vars: { SURVEY_TOKEN_KEY: "" },
      });
      expect(res.status).toBe(503);
      expect(await json(res)).toMatchObject({ error: "not_configured" });
    }
    expect(await surveysOf(owner)).toEqual([]);
    const link = await call("POST", "/api/reputation/surveys", {
      token: owner.token,
      body: { templateId: template.id, recipientPersonId, agentUserId: owner.userId, channel: "LINK" },
      vars: { SURVEY_TOKEN_KEY: "" },
    });
    expect(link.status).toBe(201);
  });
});

describe("access tokens (only the SHA-256 is stored)", () => {
  it("the raw token is in no column, event or stored mail; the sealed copy is erased once mailed or skipped", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const template = await createSurveyTemplate(owner);
    const contacts = [await createContact(owner.token), await createContact(owner.token), await createContact(owner.token)];
    const [toSend, toOpen, toSkip] = await Promise.all(
      contacts.map((c) => scheduleSurvey(owner, { templateId: template.id, recipientPersonId: c.id, channel: "EMAIL" })),
    );
    const link = await scheduleSurvey(owner, { templateId: template.id, channel: "LINK" });

    for (const s of [toSend!, toOpen!, toSkip!, link]) {
      const row = (await surveyRow(s.id))!;
      expect(JSON.stringify(row)).not.toContain(s.accessToken.slice(4));
      expect(row.access_token_hash).toBe(await sha256Hex(s.accessToken));
      // An EMAIL survey keeps its token sealed until the cron mails it; a LINK survey never keeps it.
      expect(row.pending_token).toEqual(s.channel === "EMAIL" ? expect.any(String) : null);
    }

    // Opened through the creating answer's link before the mail: still mailed at its time. Skipped: never mailed.
    expect((await publicSurvey("GET", toOpen!.accessToken)).status).toBe(200);
    expect((await call("POST", `/api/reputation/surveys/${toSkip!.id}/skip`, { token: owner.token })).status).toBe(200);
    expect(await surveyRow(toSkip!.id)).toMatchObject({ status: "SKIPPED", pending_token: null });
    for (const s of [toSend!, toOpen!, toSkip!]) await makeDue(s.id);
    await sendDueSurveys(env, db);
    expect(await surveyRow(toSend!.id)).toMatchObject({ status: "SENT", sent_at: expect.any(String), pending_token: null });
    expect(await surveyRow(toOpen!.id)).toMatchObject({ status: "OPENED", sent_at: expect.any(String), pending_token: null });
    expect(await surveyRow(toSkip!.id)).toMatchObject({ status: "SKIPPED", sent_at: null, pending_token: null });
    expect((await mailedLink(contacts[0]!.email)).token).toBe(toSend!.accessToken);
    expect((await mailedLink(contacts[1]!.email)).token).toBe(toOpen!.accessToken);
    expect(await mailTo(contacts[2]!.email)).toEqual([]);

    const { results: events } = await (await tenantDb(owner.organizationId))
      .prepare("SELECT data FROM outbox_events WHERE organization_id = ?")
      .bind(owner.organizationId)
      .all<{ data: string }>();
    const mail = await allOnShards<{ body: string }>(
      'SELECT body FROM mail_outbox WHERE "to" IN (?, ?)',
      contacts[0]!.email,
      contacts[1]!.email,
    );
    expect(mail).toHaveLength(2);
    for (const s of [toSend!, toOpen!, toSkip!, link]) {
      for (const e of events) expect(e.data).not.toContain(s.accessToken.slice(4));
      for (const m of mail) expect(m.body).not.toContain(s.accessToken.slice(4));
    }
  });
});

describe("found by an adversarial pass", () => {
  it("a re-issue whose mail fails still answers the new link, which works; a trashed recipient's survey waits, a purged one's is skipped, not retried", async () => {
    const owner = await createPrincipal();
    const db = await shardDb(owner);
    const template = await createSurveyTemplate(owner);
    const contact = await createContact(owner.token);
    const sent = await scheduleSurvey(owner, { templateId: template.id, recipientPersonId: contact.id, channel: "EMAIL" });
    await makeDue(sent.id);
    expect(await sendDueSurveys(env, db)).toBeGreaterThanOrEqual(1);
    // The mail provider is unreachable: the token is already replaced, so the answer must carry the new one.
    const refused = refuseConnections("http://127.0.0.1:9");
    const res = await call("POST", `/api/reputation/surveys/${sent.id}/reissue`, {
      token: owner.token,
      vars: { EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "re_test", EMAIL_API_URL: "http://127.0.0.1:9/" },
    });
    const reissued = await json(res);
    expect(res.status, JSON.stringify(reissued)).toBe(200);
    expect(refused).toEqual(["http://127.0.0.1:9/emails"]);
    expect((await publicSurvey("GET", reissued.accessToken)).status).toBe(200);

    const gone = await createContact(owner.token);
    const orphan = await scheduleSurvey(owner, { templateId: template.id, recipientPersonId: gone.id, channel: "EMAIL" });
    expect((await call("DELETE", `/v1/contacts/${gone.id}`, { token: owner.token })).status).toBe(200);
    // In the trash the contact may come back: the survey waits rather than being skipped.
    await makeDue(orphan.id);
    await sendDueSurveys(env, db);
    expect(await surveyRow(orphan.id)).toMatchObject({ status: "SCHEDULED", sent_at: null });
    // Purged: gone for good, so the survey is skipped.
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE trash_entries SET restorable_until = ? WHERE record_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), gone.id)
      .run();
    await purgeTrash(env, db);
    await makeDue(orphan.id);
    await sendDueSurveys(env, db);
    expect(await surveyRow(orphan.id)).toMatchObject({ status: "SKIPPED", pending_token: null });
    await expectGone(orphan.accessToken);
  });

  it("an answer of only invisible characters is no answer (no testimonial from it); options that read alike are refused", async () => {
    const owner = await createPrincipal();
    const template = await createSurveyTemplate(owner);
    const survey = await scheduleSurvey(owner, { templateId: template.id });
    await answer(survey.accessToken, { overall: 5, recommend: 10, comments: "\u200b\u200d\u2060", publish: true });
    await analyse(owner);
    expect((await surveyDetail(owner, survey.id)).response).toMatchObject({
      answers: { overall: 5, recommend: 10, publish: true },
      testimonialId: null,
    });
    expect(await testimonialsOf(owner)).toEqual([]);

    const alike = await call("POST", "/api/reputation/surveys/templates", {
      token: owner.token,
      body: {
        name: "Alike",
        questions: [
          ...STANDARD_QUESTIONS,
          { id: "pick", type: "single_choice", label: "Pick", options: ["é", "e\u0301"] },
          { id: "pick2", type: "single_choice", label: "Pick", options: ["a", "a\u200b"] },
        ],
      },
    });
    expect(alike.status).toBe(400);
    expect(await issuePaths(alike)).toEqual(["questions.4.options", "questions.5.options"]);
  });
});
