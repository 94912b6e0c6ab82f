import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { backfillRollupsSql } from "../../src/deals/rollups";
import { signedFileUrl } from "../../src/files/signed-url";
import { purgeTrash } from "../../src/trash/service";
import { call, json } from "../helpers/client";
import { expectCrmError, issuePairs, tick } from "../helpers/contacts";
import { addAgent, createDeal, createTask, type DealJson, documentForm, getDeal, moveDeal, PDF_BYTES, updateDeal } from "../helpers/deals";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
const DAY = 86_400_000;
const DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const MiB = 1024 * 1024;

/** The outbox of an organization for one event type, in the order the events were written. */
async function eventsOf(organizationId: string, type: string): Promise<Record<string, any>[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = ? ORDER BY occurred_at, rowid")
    .bind(organizationId, type)
    .all<{ data: string }>();
  return results.map((r) => JSON.parse(r.data));
}

const filesUnder = async (prefix: string) => (await env.FILES.list({ prefix })).objects.map((o) => o.key);
const dealFiles = (p: TestPrincipal, dealId: string) => filesUnder(`deals/${p.organizationId}/${dealId}/`);

/** The path and query of a signed link (what `call` takes). */
const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;
const FILES_PREFIX = "/api/public/files/";
/** The R2 key a signed link names. */
const keyOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(FILES_PREFIX.length));
/** The link with one query parameter replaced. */
function withParam(url: string, name: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set(name, value);
  return u.pathname + u.search;
}

/** The link fetched through the Worker as a browser would (no contract check: a test of bytes and headers). */
const download = (path: string) => exports.default.fetch(new Request(`http://api.test${path}`));

async function expectRefusedLink(path: string): Promise<void> {
  const res = await call("GET", path);
  expect(res.status).toBe(404);
  expect(await json(res)).toEqual({ error: "not_found", message: expect.any(String) });
}

async function upload(token: string, dealId: string, form: FormData): Promise<Response> {
  return call("POST", `/v1/deals/${dealId}/documents`, { token, body: form });
}

async function uploadOk(token: string, dealId: string, form: FormData): Promise<Record<string, any>> {
  const res = await upload(token, dealId, form);
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data;
}

/** Rows of a deal in one of its tables, read on its organization's shard. */
const dealRows = async (organizationId: string, table: string, dealId: string) =>
  (await (
    await tenantDb(organizationId)
  )
    .prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE deal_id = ?`)
    .bind(dealId)
    .first<{ n: number }>())!.n;

// ---------------------------------------------------------------------------------------------------------------------

describe("deal tasks", () => {
  it("creates a task with the defaults: priority MEDIUM, not completed, no due date; the deal's lastActivityAt moves", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await tick();
    const res = await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: "Order inspection" } });
    expect(res.status).toBe(201);
    const task = (await json(res)).data;
    expect(task).toEqual({
      id: expect.any(String),
      title: "Order inspection",
      description: null,
      dueDate: null,
      completed: false,
      completedAt: null,
      assignedTo: null,
      priority: "MEDIUM",
      createdAt: expect.stringMatching(ISO),
    });
    const read = await getDeal(p.token, deal.id);
    expect(read.lastActivityAt > deal.lastActivityAt).toBe(true);
    expect(read.lastActivityAt).toBe(task.createdAt);
    expect((await getDeal(p.token, deal.id, "?include=tasks")).tasks).toEqual([task]);
  });

  it("stores every field given: description, due date (a date, or a timestamp kept in UTC), priority, an agent of the organization", async () => {
    const p = await createPrincipal();
    const agent = await addAgent(p.organizationId, "Tasha Tasker");
    const deal = await createDeal(p.token);
    const full = await createTask(p.token, deal.id, {
      title: "Call lender",
      description: "About the rate lock",
      dueDate: "2030-01-15",
      priority: "HIGH",
      assignedTo: agent,
    });
    expect(full).toMatchObject({
      title: "Call lender",
      description: "About the rate lock",
      dueDate: "2030-01-15",
      priority: "HIGH",
      assignedTo: agent,
      completed: false,
    });
    const timed = await createTask(p.token, deal.id, { title: "Walkthrough", dueDate: "2030-01-15T09:30:00+02:00", priority: "URGENT" });
    expect(timed).toMatchObject({ dueDate: "2030-01-15T07:30:00.000Z", priority: "URGENT", assignedTo: null });
  });

  it("lists every problem of a body at once in one 422, and writes nothing", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const res = await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { priority: "CRITICAL", dueDate: "next week" } });
    const errors = await expectCrmError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual(["dueDate:invalid_date", "priority:invalid_enum_value", "title:required"]);
    const unknown = await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: "x", colour: "red" } });
    expect(issuePairs(await expectCrmError(unknown, 422, "validation_error"))).toEqual(["colour:unknown_field"]);
    expect((await json(await call("GET", `/v1/deals/${deal.id}/tasks`, { token: p.token }))).data).toEqual([]);
    expect(await eventsOf(p.organizationId, "deal.task_created")).toEqual([]);
  });

  it("an assignee who is not a user of the organization is a 422 invalid_reference on assignedTo, and nothing is written", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const deal = await createDeal(p.token);
    for (const assignedTo of [stranger.userId, UNKNOWN_ID]) {
      const res = await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: "Sign", assignedTo } });
      const errors = await expectCrmError(res, 422, "validation_error");
      expect(issuePairs(errors)).toEqual(["assignedTo:invalid_reference"]);
    }
    expect(await dealRows(p.organizationId, "tasks", deal.id)).toBe(0);
    expect(await eventsOf(p.organizationId, "deal.task_created")).toEqual([]);
    expect((await getDeal(p.token, deal.id)).lastActivityAt).toBe(deal.lastActivityAt);
  });

  it("lists a deal's tasks oldest first, only its own", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const other = await createDeal(p.token);
    const created = [];
    for (const title of ["First", "Second", "Third"]) {
      created.push(await createTask(p.token, deal.id, { title }));
      await createTask(p.token, other.id, { title: `Other ${title}` });
      await tick();
    }
    const res = await call("GET", `/v1/deals/${deal.id}/tasks`, { token: p.token });
    expect(res.status).toBe(200);
    const listed = (await json(res)).data;
    expect(listed.map((t: { title: string }) => t.title)).toEqual(["First", "Second", "Third"]);
    expect(listed).toEqual(created);
  });

  it("completes a task once: completed true, completedAt set, a TASK_COMPLETED activity; again is a 409 task_already_completed", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const task = await createTask(p.token, deal.id, { title: "Order appraisal" });
    const keep = await createTask(p.token, deal.id, { title: "Still open" });
    await tick();
    const res = await call("POST", `/v1/deals/${deal.id}/tasks/${task.id}/complete`, { token: p.token });
    expect(res.status).toBe(200);
    const done = (await json(res)).data;
    expect(done).toEqual({ ...task, completed: true, completedAt: expect.stringMatching(ISO) });
    expect(done.completedAt > task.createdAt).toBe(true);
    const listed = (await json(await call("GET", `/v1/deals/${deal.id}/tasks`, { token: p.token }))).data;
    expect(listed).toEqual([done, keep]);
    const read = await getDeal(p.token, deal.id, "?include=activities");
    expect(read.lastActivityAt).toBe(done.completedAt);
    const completedActivities = read.activities.filter((a: { type: string }) => a.type === "TASK_COMPLETED");
    expect(completedActivities).toEqual([
      {
        id: expect.any(String),
        type: "TASK_COMPLETED",
        description: expect.stringContaining("Order appraisal"),
        createdAt: done.completedAt,
        userId: p.userId,
        metadata: { taskId: task.id },
      },
    ]);

    const again = await call("POST", `/v1/deals/${deal.id}/tasks/${task.id}/complete`, { token: p.token });
    const body = await json(again);
    expect(again.status).toBe(409);
    expect(body.error).toMatchObject({ type: "conflict_error", code: "task_already_completed", status: 409 });
    // Nothing changed by the refused completion.
    expect((await json(await call("GET", `/v1/deals/${deal.id}/tasks`, { token: p.token }))).data).toEqual([done, keep]);
    expect((await getDeal(p.token, deal.id)).lastActivityAt).toBe(done.completedAt);
  });

  it("an unknown task, a task of another deal, and a deal of another organization answer 404", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const deal = await createDeal(p.token);
    const other = await createDeal(p.token);
    const otherTask = await createTask(p.token, other.id);
    const foreign = await createDeal(stranger.token);
    const foreignTask = await createTask(stranger.token, foreign.id);
    await expectCrmError(
      await call("POST", `/v1/deals/${deal.id}/tasks/${UNKNOWN_ID}/complete`, { token: p.token }),
      404,
      "not_found_error",
    );
    await expectCrmError(
      await call("POST", `/v1/deals/${deal.id}/tasks/${otherTask.id}/complete`, { token: p.token }),
      404,
      "not_found_error",
    );
    await expectCrmError(
      await call("POST", `/v1/deals/${foreign.id}/tasks/${foreignTask.id}/complete`, { token: p.token }),
      404,
      "not_found_error",
    );
    await expectCrmError(await call("GET", `/v1/deals/${foreign.id}/tasks`, { token: p.token }), 404, "not_found_error");
    await expectCrmError(
      await call("POST", `/v1/deals/${foreign.id}/tasks`, { token: p.token, body: { title: "Sneak in" } }),
      404,
      "not_found_error",
    );
    await expectCrmError(await call("GET", `/v1/deals/${UNKNOWN_ID}/tasks`, { token: p.token }), 404, "not_found_error");
    // The other deal's task and the stranger's task are untouched.
    expect((await json(await call("GET", `/v1/deals/${other.id}/tasks`, { token: p.token }))).data[0].completed).toBe(false);
    expect((await json(await call("GET", `/v1/deals/${foreign.id}/tasks`, { token: stranger.token }))).data).toEqual([foreignTask]);
    expect(await dealRows(stranger.organizationId, "tasks", foreign.id)).toBe(1);
  });

  it("of concurrent completions of one task exactly one lands: one 200, the others 409, one event, one activity", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const task = await createTask(p.token, deal.id);
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() => call("POST", `/v1/deals/${deal.id}/tasks/${task.id}/complete`, { token: p.token })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    expect(await eventsOf(p.organizationId, "deal.task_completed")).toHaveLength(1);
    const activities = await (await tenantDb(p.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ? AND type = 'TASK_COMPLETED'")
      .bind(deal.id)
      .first<{ n: number }>();
    expect(activities!.n).toBe(1);
  });

  it("concurrent task creations all land, each with its activity and its deal.task_created", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const answers = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: `Task ${i}` } })),
    );
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    const listed = (await json(await call("GET", `/v1/deals/${deal.id}/tasks`, { token: p.token }))).data;
    expect(listed.map((t: { title: string }) => t.title).sort()).toEqual(["Task 1", "Task 2", "Task 3", "Task 4", "Task 5"]);
    expect(await eventsOf(p.organizationId, "deal.task_created")).toHaveLength(5);
    const activities = await (await tenantDb(p.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ? AND type = 'TASK_CREATED'")
      .bind(deal.id)
      .first<{ n: number }>();
    expect(activities!.n).toBe(5);
  });

  it("emits deal.task_created and deal.task_completed exactly once each, carrying the deal and the task", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const task = await createTask(p.token, deal.id, { title: "Book movers", priority: "LOW" });
    const done = (await json(await call("POST", `/v1/deals/${deal.id}/tasks/${task.id}/complete`, { token: p.token }))).data;
    expect((await call("POST", `/v1/deals/${deal.id}/tasks/${task.id}/complete`, { token: p.token })).status).toBe(409);
    const created = await eventsOf(p.organizationId, "deal.task_created");
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      object: { id: deal.id, stage: "LEAD" },
      task: { id: task.id, title: "Book movers", priority: "LOW", completed: false },
    });
    const completed = await eventsOf(p.organizationId, "deal.task_completed");
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ object: { id: deal.id }, task: { id: task.id, completed: true, completedAt: done.completedAt } });
  });
});

// ---------------------------------------------------------------------------------------------------------------------

describe("deal documents", () => {
  it("uploads a PDF with name, type, stage and signedAt, and downloads it back byte for byte through its signed link", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await tick();
    const form = documentForm(
      PDF_BYTES,
      { name: "Purchase agreement", type: "CONTRACT", stage: "CONTRACT", signedAt: "2026-05-01T10:00:00+02:00" },
      "scan-0001.pdf",
    );
    const res = await upload(p.token, deal.id, form);
    expect(res.status).toBe(201);
    const doc = (await json(res)).data;
    expect(doc).toEqual({
      id: expect.any(String),
      name: "Purchase agreement",
      type: "CONTRACT",
      stage: "CONTRACT",
      size: PDF_BYTES.byteLength,
      mimeType: "application/pdf",
      // On the configured origin (APP_URL), whatever host the upload came through.
      url: expect.stringContaining(`${env.APP_URL}${FILES_PREFIX}`),
      signedAt: "2026-05-01T08:00:00.000Z",
      uploadedAt: expect.stringMatching(ISO),
    });
    expect(keyOf(doc.url).startsWith(`deals/${p.organizationId}/${deal.id}/`)).toBe(true);

    const file = await call("GET", pathOf(doc.url));
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("application/pdf");
    expect(file.headers.get("content-disposition")).toBe("inline; filename*=UTF-8''Purchase%20agreement");
    expect(file.headers.get("x-content-type-options")).toBe("nosniff");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(PDF_BYTES);
    expect((await getDeal(p.token, deal.id)).lastActivityAt > deal.lastActivityAt).toBe(true);
  });

  it("a link with a tampered signature, a changed expiry, another file's key, or an expiry in the past answers 404", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const doc = await uploadOk(p.token, deal.id, documentForm());
    const second = await uploadOk(p.token, deal.id, documentForm(PDF_BYTES, {}, "other.pdf"));
    const url = new URL(doc.url);
    const signature = url.searchParams.get("signature")!;
    const expires = url.searchParams.get("expires")!;
    // The genuine link works (so the refusals below are about the link, not the file).
    expect((await download(pathOf(doc.url))).status).toBe(200);

    const flipped = signature.slice(0, -1) + (signature.endsWith("0") ? "1" : "0");
    await expectRefusedLink(withParam(doc.url, "signature", flipped));
    await expectRefusedLink(withParam(doc.url, "signature", signature.slice(0, -2)));
    await expectRefusedLink(withParam(doc.url, "expires", String(Number(expires) + 300)));
    await expectRefusedLink(withParam(doc.url, "expires", String(Number(expires) - 300)));
    // A genuine signature does not open another file.
    await expectRefusedLink(`${new URL(second.url).pathname}?expires=${expires}&signature=${signature}`);

    // A link signed with the real secret but already expired.
    const expired = await signedFileUrl(env, "http://api.test", keyOf(doc.url), -600);
    expect(Number(new URL(expired.url).searchParams.get("expires"))).toBeLessThan(Date.now() / 1000);
    await expectRefusedLink(pathOf(expired.url));
    // The same key signed for the future (the default lifetime) opens the file: only the expiry refused it.
    const fresh = await signedFileUrl(env, "http://api.test", keyOf(doc.url));
    const ok = await download(pathOf(fresh.url));
    expect(ok.status).toBe(200);
    expect(new Uint8Array(await ok.arrayBuffer())).toEqual(PDF_BYTES);
  });

  it("defaults: the name is the file's name, the type OTHER, no stage and no signedAt", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const doc = await uploadOk(p.token, deal.id, documentForm(PDF_BYTES, {}, "inspection-report.pdf"));
    expect(doc).toMatchObject({
      name: "inspection-report.pdf",
      type: "OTHER",
      stage: null,
      signedAt: null,
      size: PDF_BYTES.byteLength,
      mimeType: "application/pdf",
    });
  });

  it("judges the type by the bytes: an HTML page or a text file named .pdf is a 422 unsupported_document_type; an empty file a 422; nothing is stored", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const html = new TextEncoder().encode("<!doctype html><html><script>alert(1)</script></html>");
    const text = new TextEncoder().encode("just some text, honest\n");
    const zip = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 1, 2, 3, 4, 5, 6]);
    for (const [bytes, name, type] of [
      [html, "page.html", "text/html"],
      [html, "contract.pdf", "application/pdf"],
      [text, "contract.pdf", "application/pdf"],
      [zip, "archive.zip", "application/zip"],
    ] as const) {
      const res = await upload(p.token, deal.id, documentForm(bytes, { type: "CONTRACT" }, name, type));
      expect(issuePairs(await expectCrmError(res, 422, "validation_error")), name).toEqual(["file:unsupported_document_type"]);
    }
    const empty = await upload(p.token, deal.id, documentForm(new Uint8Array(0), {}, "empty.pdf"));
    expect(issuePairs(await expectCrmError(empty, 422, "validation_error"))).toEqual(["file:empty_file"]);
    expect(await dealFiles(p, deal.id)).toEqual([]);
    expect(await dealRows(p.organizationId, "deal_documents", deal.id)).toBe(0);
    expect(await eventsOf(p.organizationId, "deal.document_uploaded")).toEqual([]);
    expect((await json(await call("GET", `/v1/deals/${deal.id}/documents`, { token: p.token }))).data).toEqual([]);
  });

  it("refuses bad form fields (no file, a lower-case type, an unknown stage, a bad signedAt) in one 422", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const noFile = new FormData();
    noFile.append("name", "Nothing attached");
    expect(
      issuePairs(await expectCrmError(await upload(p.token, deal.id, noFile), 422, "validation_error")).map((x) => x.split(":")[0]),
    ).toEqual(["file"]);
    const bad = await upload(p.token, deal.id, documentForm(PDF_BYTES, { type: "contract", stage: "SIGNED", signedAt: "yesterday" }));
    expect(issuePairs(await expectCrmError(bad, 422, "validation_error")).map((x) => x.split(":")[0])).toEqual([
      "signedAt",
      "stage",
      "type",
    ]);
    expect(await dealFiles(p, deal.id)).toEqual([]);
  });

  it("accepts a Word file (zip container named .docx) with its OOXML type, served as an attachment", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const docx = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00, 0x08, 0x00, 0, 0, 0x21, 0, 9, 8, 7, 6, 5]);
    const doc = await uploadOk(p.token, deal.id, documentForm(docx, { type: "ADDENDUM" }, "addendum.docx", "application/octet-stream"));
    expect(doc).toMatchObject({ name: "addendum.docx", type: "ADDENDUM", mimeType: DOCX_MIME, size: docx.byteLength });
    const file = await download(pathOf(doc.url));
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe(DOCX_MIME);
    expect(file.headers.get("content-disposition")).toBe("attachment; filename*=UTF-8''addendum.docx");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(docx);
  });

  it("an Office document's signed link answers as the API document declares for GET /api/public/files/{key}", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const docx = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00, 0x08, 0x00, 1, 2, 3]);
    const doc = await uploadOk(p.token, deal.id, documentForm(docx, {}, "addendum.docx"));
    // `call` checks the answer against /openapi.json: the download's declared content types must include this one.
    const file = await call("GET", pathOf(doc.url));
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe(DOCX_MIME);
  });

  it("a file over 25 MiB is a 413 in the CRM error body and nothing is stored; a request over the body limit too", {
    timeout: 60_000,
  }, async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const big = new Uint8Array(25 * MiB + 1);
    big.set(PDF_BYTES);
    const res = await upload(p.token, deal.id, documentForm(big, { name: "Too big", type: "CONTRACT" }, "big.pdf"));
    const body = await json(res);
    expect(res.status).toBe(413);
    expect(body).toEqual({
      success: false,
      error: {
        type: "invalid_request_error",
        code: "payload_too_large",
        title: expect.any(String),
        status: 413,
        detail: expect.any(String),
        errors: [],
      },
    });
    const huge = new Uint8Array(27 * MiB);
    huge.set(PDF_BYTES);
    const over = await upload(p.token, deal.id, documentForm(huge, {}, "huge.pdf"));
    expect(over.status).toBe(413);
    expect((await json(over)).error).toMatchObject({ code: "payload_too_large", status: 413 });
    expect(await dealFiles(p, deal.id)).toEqual([]);
    expect(await dealRows(p.organizationId, "deal_documents", deal.id)).toBe(0);
    expect(await eventsOf(p.organizationId, "deal.document_uploaded")).toEqual([]);
  });

  it("a file of exactly 25 MiB is accepted and stored whole", { timeout: 60_000 }, async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const max = new Uint8Array(25 * MiB);
    max.set(PDF_BYTES);
    max[max.length - 1] = 0x2a;
    const doc = await uploadOk(p.token, deal.id, documentForm(max, {}, "max.pdf"));
    expect(doc.size).toBe(25 * MiB);
    const stored = await env.FILES.head(keyOf(doc.url));
    expect(stored?.size).toBe(25 * MiB);
  });

  it("an upload to an unknown deal or one of another organization is a 404 and stores nothing", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const foreign = await createDeal(stranger.token);
    await expectCrmError(await upload(p.token, UNKNOWN_ID, documentForm()), 404, "not_found_error");
    await expectCrmError(await upload(p.token, foreign.id, documentForm()), 404, "not_found_error");
    await expectCrmError(await call("GET", `/v1/deals/${foreign.id}/documents`, { token: p.token }), 404, "not_found_error");
    expect(await filesUnder(`deals/${p.organizationId}/`)).toEqual([]);
    expect(await filesUnder(`deals/${stranger.organizationId}/`)).toEqual([]);
  });

  it("emits deal.document_uploaded once (without the link) and records a DOCUMENT_UPLOADED activity", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const doc = await uploadOk(p.token, deal.id, documentForm(PDF_BYTES, { name: "Disclosure", type: "DISCLOSURE" }));
    const events = await eventsOf(p.organizationId, "deal.document_uploaded");
    expect(events).toHaveLength(1);
    const { url: _url, ...withoutUrl } = doc;
    expect(events[0]).toMatchObject({ object: { id: deal.id }, document: withoutUrl });
    expect(events[0]!.document.url).toBeUndefined();
    const activities = (await json(await call("GET", `/v1/deals/${deal.id}/activities`, { token: p.token }))).data;
    expect(activities.filter((a: { type: string }) => a.type === "DOCUMENT_UPLOADED")).toEqual([
      {
        id: expect.any(String),
        type: "DOCUMENT_UPLOADED",
        description: expect.stringContaining("Disclosure"),
        createdAt: expect.stringMatching(ISO),
        userId: p.userId,
        metadata: { documentId: doc.id, type: "DISCLOSURE" },
      },
    ]);
  });

  it("GET …/documents lists the deal's documents oldest first, each with a working signed link", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const other = await createDeal(p.token);
    const bytesOf = (n: number) => new TextEncoder().encode(`%PDF-1.7\n% document ${n}\n%%EOF\n`);
    const uploaded = [];
    for (const n of [1, 2, 3]) {
      uploaded.push(await uploadOk(p.token, deal.id, documentForm(bytesOf(n), { name: `Doc ${n}` }, `doc-${n}.pdf`)));
      await uploadOk(p.token, other.id, documentForm(bytesOf(10 + n), {}, "other.pdf"));
      await tick();
    }
    const res = await call("GET", `/v1/deals/${deal.id}/documents`, { token: p.token });
    expect(res.status).toBe(200);
    const listed = (await json(res)).data;
    expect(listed.map((d: { name: string }) => d.name)).toEqual(["Doc 1", "Doc 2", "Doc 3"]);
    expect(listed.map(({ url: _u, ...rest }: Record<string, unknown>) => rest)).toEqual(uploaded.map(({ url: _u, ...rest }) => rest));
    // Fresh links, valid 10 to 15 minutes from now.
    for (const d of listed) {
      const left = Number(new URL(d.url).searchParams.get("expires")) - Date.now() / 1000;
      expect(left).toBeGreaterThan(10 * 60 - 5);
      expect(left).toBeLessThanOrEqual(15 * 60);
    }
    for (const [i, d] of listed.entries()) {
      const file = await download(pathOf(d.url));
      expect(file.status).toBe(200);
      expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytesOf(i + 1));
    }
    // The deal read with include=documents carries the same documents.
    const read = await getDeal(p.token, deal.id, "?include=documents");
    expect(read.documents.map((d: { id: string }) => d.id)).toEqual(uploaded.map((d) => d.id));
  });

  it("concurrent uploads to one deal all land, each with its file, activity and event", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const answers = await Promise.all(
      [1, 2, 3, 4].map((i) => upload(p.token, deal.id, documentForm(PDF_BYTES, { name: `Doc ${i}` }, `doc-${i}.pdf`))),
    );
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    const listed = (await json(await call("GET", `/v1/deals/${deal.id}/documents`, { token: p.token }))).data;
    expect(listed.map((d: { name: string }) => d.name).sort()).toEqual(["Doc 1", "Doc 2", "Doc 3", "Doc 4"]);
    expect(await dealFiles(p, deal.id)).toHaveLength(4);
    expect(await eventsOf(p.organizationId, "deal.document_uploaded")).toHaveLength(4);
  });

  it("without FILES_URL_SECRET an upload is a 503 not_configured and stores nothing", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const res = await call("POST", `/v1/deals/${deal.id}/documents`, {
      token: p.token,
      body: documentForm(),
      vars: { FILES_URL_SECRET: "" },
    });
    expect(res.status).toBe(503);
    expect((await json(res)).error).toMatchObject({ type: "api_error", code: "not_configured", status: 503 });
    expect(await dealFiles(p, deal.id)).toEqual([]);
  });

  it("without FILES_URL_SECRET the documents list answers 503 not_configured, as the API document declares", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await uploadOk(p.token, deal.id, documentForm());
    // `call` checks the answer against /openapi.json: the list must declare the 503 its signer throws.
    const res = await call("GET", `/v1/deals/${deal.id}/documents`, { token: p.token, vars: { FILES_URL_SECRET: "" } });
    expect(res.status).toBe(503);
    expect((await json(res)).error).toMatchObject({ code: "not_configured" });
  });

  it("deleting the deal keeps its files in R2 for a restore, its links answer 404 meanwhile; the purge removes them; other deals' files stay", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const keep = await createDeal(p.token);
    const a = await uploadOk(p.token, deal.id, documentForm());
    const b = await uploadOk(p.token, deal.id, documentForm(PDF_BYTES, {}, "b.pdf"));
    const kept = await uploadOk(p.token, keep.id, documentForm());
    expect(await dealFiles(p, deal.id)).toHaveLength(2);
    expect((await call("DELETE", `/v1/deals/${deal.id}`, { token: p.token })).status).toBe(200);
    await expectRefusedLink(pathOf(a.url));
    await expectRefusedLink(pathOf(b.url));
    expect(await dealFiles(p, deal.id)).toHaveLength(2);
    // Restored: the same links serve again.
    expect((await call("POST", `/v1/deals/${deal.id}/restore`, { token: p.token })).status).toBe(200);
    expect((await download(pathOf(a.url))).status).toBe(200);
    expect((await call("DELETE", `/v1/deals/${deal.id}`, { token: p.token })).status).toBe(200);
    const db = await tenantDb(p.organizationId);
    await db
      .prepare("UPDATE trash_entries SET restorable_until = ? WHERE record_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), deal.id)
      .run();
    await purgeTrash(env, createDb(db));
    expect(await dealFiles(p, deal.id)).toEqual([]);
    await expectRefusedLink(pathOf(a.url));
    expect(await dealFiles(p, keep.id)).toHaveLength(1);
    expect((await download(pathOf(kept.url))).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------------------------

interface ActivityPage {
  data: { id: string; type: string; metadata: Record<string, unknown> | null; createdAt: string; userId: string | null }[];
  pagination: { hasMore: boolean; nextCursor: string | null; total: number; limit: number };
}

describe("deal activities", () => {
  it("are listed newest first; walking with limit=2 and the cursor returns every activity once, with the total on every page", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const other = await createDeal(p.token);
    await tick();
    await moveDeal(p.token, deal.id, "QUALIFIED", { reason: "Pre-approved" });
    await tick();
    await moveDeal(p.token, other.id, "APPOINTMENT");
    await moveDeal(p.token, deal.id, "APPOINTMENT");
    await tick();
    await updateDeal(p.token, deal.id, { stage: "NEGOTIATION", reason: "Offer made" });
    await tick();
    const task = await createTask(p.token, deal.id, { title: "Inspection" });
    await tick();
    await call("POST", `/v1/deals/${deal.id}/tasks/${task.id}/complete`, { token: p.token });
    await tick();
    const doc = await uploadOk(p.token, deal.id, documentForm());

    const first = await call("GET", `/v1/deals/${deal.id}/activities`, { token: p.token });
    expect(first.status).toBe(200);
    const all = (await json(first)) as ActivityPage & { success: boolean };
    expect(all.success).toBe(true);
    expect(all.pagination).toEqual({ hasMore: false, nextCursor: null, total: 7, limit: 25 });
    expect(all.data.map((a) => a.type)).toEqual([
      "DOCUMENT_UPLOADED",
      "TASK_COMPLETED",
      "TASK_CREATED",
      "STAGE_CHANGED",
      "STAGE_CHANGED",
      "STAGE_CHANGED",
      "DEAL_CREATED",
    ]);
    expect(all.data.map((a) => a.metadata)).toEqual([
      { documentId: doc.id, type: "OTHER" },
      { taskId: task.id },
      { taskId: task.id },
      { previousStage: "APPOINTMENT", newStage: "NEGOTIATION", reason: "Offer made" },
      { previousStage: "QUALIFIED", newStage: "APPOINTMENT", reason: null },
      { previousStage: "LEAD", newStage: "QUALIFIED", reason: "Pre-approved" },
      { stage: "LEAD" },
    ]);
    expect(all.data.every((a) => a.userId === p.userId)).toBe(true);
    const times = all.data.map((a) => a.createdAt);
    expect(times).toEqual([...times].sort().reverse());

    const walked: ActivityPage["data"] = [];
    const pages: ActivityPage["pagination"][] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const res = await call("GET", `/v1/deals/${deal.id}/activities?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
        token: p.token,
      });
      expect(res.status).toBe(200);
      const page = (await json(res)) as ActivityPage;
      walked.push(...page.data);
      pages.push(page.pagination);
      if (!page.pagination.hasMore) break;
      cursor = page.pagination.nextCursor;
    }
    expect(pages.map((x) => [x.hasMore, x.total, x.limit])).toEqual([
      [true, 7, 2],
      [true, 7, 2],
      [true, 7, 2],
      [false, 7, 2],
    ]);
    expect(pages.at(-1)!.nextCursor).toBeNull();
    expect(walked.map((a) => a.id)).toEqual(all.data.map((a) => a.id));
    expect(new Set(walked.map((a) => a.id)).size).toBe(7);
  });

  it("activities written in the same millisecond are each walked exactly once, in the order of the unpaged list", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    for (const stage of ["QUALIFIED", "APPOINTMENT", "NEGOTIATION", "CONTRACT"]) await moveDeal(p.token, deal.id, stage);
    await createTask(p.token, deal.id);
    // Every activity of the deal at one instant: the order falls to the tie-break alone.
    await (await tenantDb(p.organizationId))
      .prepare("UPDATE deal_activities SET created_at = ? WHERE deal_id = ?")
      .bind(deal.createdAt, deal.id)
      .run();
    const all = ((await json(await call("GET", `/v1/deals/${deal.id}/activities`, { token: p.token }))) as ActivityPage).data.map(
      (a) => a.id,
    );
    expect(all).toHaveLength(6);
    const walked: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const page = (await json(
        await call("GET", `/v1/deals/${deal.id}/activities?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
          token: p.token,
        }),
      )) as ActivityPage;
      walked.push(...page.data.map((a) => a.id));
      if (!page.pagination.hasMore) break;
      cursor = page.pagination.nextCursor;
    }
    expect(walked).toEqual(all);
  });

  it("a bad limit or cursor is a 422; an unknown deal or one of another organization a 404", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const deal = await createDeal(p.token);
    const foreign = await createDeal(stranger.token);
    for (const q of ["limit=0", "limit=101", "limit=abc", "cursor=not-a-cursor"]) {
      const res = await call("GET", `/v1/deals/${deal.id}/activities?${q}`, { token: p.token });
      expect(res.status, q).toBe(422);
    }
    await expectCrmError(await call("GET", `/v1/deals/${UNKNOWN_ID}/activities`, { token: p.token }), 404, "not_found_error");
    await expectCrmError(await call("GET", `/v1/deals/${foreign.id}/activities`, { token: p.token }), 404, "not_found_error");
  });
});

// ---------------------------------------------------------------------------------------------------------------------

const STAGES = [
  "LEAD",
  "QUALIFIED",
  "APPOINTMENT",
  "NEGOTIATION",
  "CONTRACT",
  "INSPECTION",
  "APPRAISAL",
  "FINANCING",
  "CLOSING",
  "CLOSED",
  "LOST",
];

async function pipeline(token: string): Promise<Record<string, any>> {
  const res = await call("GET", "/v1/deals/pipeline", { token });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  expect(payload.success).toBe(true);
  return payload.data;
}

describe("GET /v1/deals/pipeline", () => {
  it("an organization without deals answers zeros, every stage listed in pipeline order", async () => {
    const p = await createPrincipal();
    await createDeal((await createPrincipal()).token); // another organization's deal never counts
    expect(await pipeline(p.token)).toEqual({
      totalValue: 0,
      totalDeals: 0,
      averageDealSize: 0,
      conversionRate: 0,
      stages: STAGES.map((stage) => ({ stage, count: 0, value: 0, averageProbability: 0 })),
    });
  });

  it("counts, values and probabilities per stage follow creates, moves, updates and deletes exactly", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const foreign = await createDeal(stranger.token, { amount: 9_999_999 });
    await moveDeal(stranger.token, foreign.id, "CLOSED");

    await createDeal(p.token, { amount: 100_000 }); // LEAD, 10
    await createDeal(p.token, { amount: 200_000, probability: 15 }); // LEAD, 15
    const p3 = await createDeal(p.token, { amount: 300_000, stage: "QUALIFIED" }); // QUALIFIED, 20
    await updateDeal(p.token, p3.id, { amount: 350_000 });
    const p4 = await createDeal(p.token, { amount: 400_000 });
    await moveDeal(p.token, p4.id, "NEGOTIATION", { probability: 55 });
    const p5 = await createDeal(p.token, { amount: 500_000 });
    await moveDeal(p.token, p5.id, "CONTRACT");
    await moveDeal(p.token, p5.id, "CLOSED"); // CLOSED, 100
    const p6 = await createDeal(p.token, { amount: 600_000 });
    await moveDeal(p.token, p6.id, "LOST"); // LOST, 0
    const p7 = await createDeal(p.token, { amount: 700_000 });
    await updateDeal(p.token, p7.id, { stage: "CLOSED" }); // CLOSED, 100
    const p8 = await createDeal(p.token, { amount: 800_000 });
    await moveDeal(p.token, p8.id, "FINANCING");
    expect((await call("DELETE", `/v1/deals/${p8.id}`, { token: p.token })).status).toBe(200);
    const p9 = await createDeal(p.token, { amount: 50_000 });
    await moveDeal(p.token, p9.id, "NEGOTIATION"); // 50
    await updateDeal(p.token, p9.id, { probability: 40 }); // NEGOTIATION, 40
    const p10 = await createDeal(p.token, { amount: 90_000 });
    await moveDeal(p.token, p10.id, "CLOSED");
    await moveDeal(p.token, p10.id, "CLOSING"); // reopened: CLOSING, 90
    const p11 = await createDeal(p.token, { amount: 100_000 });
    await updateDeal(p.token, p11.id, { stage: "INSPECTION", amount: 250_000, probability: 77 }); // INSPECTION, 77

    const figures = await pipeline(p.token);
    expect(figures.stages).toEqual([
      { stage: "LEAD", count: 2, value: 300_000, averageProbability: 12.5 },
      { stage: "QUALIFIED", count: 1, value: 350_000, averageProbability: 20 },
      { stage: "APPOINTMENT", count: 0, value: 0, averageProbability: 0 },
      { stage: "NEGOTIATION", count: 2, value: 450_000, averageProbability: 47.5 },
      { stage: "CONTRACT", count: 0, value: 0, averageProbability: 0 },
      { stage: "INSPECTION", count: 1, value: 250_000, averageProbability: 77 },
      { stage: "APPRAISAL", count: 0, value: 0, averageProbability: 0 },
      { stage: "FINANCING", count: 0, value: 0, averageProbability: 0 },
      { stage: "CLOSING", count: 1, value: 90_000, averageProbability: 90 },
      { stage: "CLOSED", count: 2, value: 1_200_000, averageProbability: 100 },
      { stage: "LOST", count: 1, value: 600_000, averageProbability: 0 },
    ]);
    expect(figures).toMatchObject({ totalDeals: 10, totalValue: 3_240_000, averageDealSize: 324_000, conversionRate: 66.67 });

    // Consistent with the deals that exist, as the list reads them.
    const list = (await json(await call("GET", "/v1/deals?limit=100", { token: p.token }))).data as DealJson[];
    expect(list).toHaveLength(figures.totalDeals);
    expect(list.reduce((s, d) => s + d.amount, 0)).toBe(figures.totalValue);
    for (const s of figures.stages) {
      const inStage = list.filter((d) => d.stage === s.stage);
      expect(inStage.length, s.stage).toBe(s.count);
      expect(
        inStage.reduce((sum, d) => sum + d.amount, 0),
        s.stage,
      ).toBe(s.value);
    }

    // Another decided deal moves the conversion rate: 2 won of 4 decided.
    const p12 = await createDeal(p.token, { amount: 10_000 });
    await moveDeal(p.token, p12.id, "LOST");
    expect((await pipeline(p.token)).conversionRate).toBe(50);
  });

  it("rounds: conversion rate to 2 decimals, average probability and deal size too", async () => {
    const p = await createPrincipal();
    const won = await createDeal(p.token, { amount: 100 });
    await moveDeal(p.token, won.id, "CLOSED");
    for (let i = 0; i < 2; i++) await moveDeal(p.token, (await createDeal(p.token, { amount: 100 })).id, "LOST");
    await createDeal(p.token, { amount: 0.01, probability: 1 });
    await createDeal(p.token, { amount: 0.01, probability: 1 });
    await createDeal(p.token, { amount: 0.02, probability: 2 });
    const figures = await pipeline(p.token);
    expect(figures.conversionRate).toBe(33.33);
    expect(figures.stages[0]).toEqual({ stage: "LEAD", count: 3, value: 0.04, averageProbability: 1.33 });
    expect(figures).toMatchObject({ totalDeals: 6, totalValue: 300.04, averageDealSize: 50.01 });
  });
});

// ---------------------------------------------------------------------------------------------------------------------

async function analytics(token: string, query = ""): Promise<Record<string, any>> {
  const res = await call("GET", `/v1/deals/analytics${query ? `?${query}` : ""}`, { token });
  const payload = await json(res);
  expect(res.status, `${query}: ${JSON.stringify(payload)}`).toBe(200);
  expect(payload.success).toBe(true);
  return payload.data;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Puts a deal's creation, and its (last) entry into CLOSED or LOST, `daysAgo` in the past (straight in D1: the history row and the deal's decided_at/closed_at). */
async function backdate(
  organizationId: string,
  dealId: string,
  createdDaysAgo: number,
  decided?: { stage: "CLOSED" | "LOST"; daysAgo: number },
  now = Date.now(),
): Promise<void> {
  const db = await tenantDb(organizationId);
  const statements = [db.prepare("UPDATE deals SET created_at = ? WHERE id = ?").bind(iso(now - createdDaysAgo * DAY), dealId)];
  if (decided) {
    const at = iso(now - decided.daysAgo * DAY);
    statements.push(db.prepare("UPDATE deal_stage_changes SET at = ? WHERE deal_id = ? AND to_stage = ?").bind(at, dealId, decided.stage));
    statements.push(db.prepare("UPDATE deals SET decided_at = ? WHERE id = ?").bind(at, dealId));
    if (decided.stage === "CLOSED") statements.push(db.prepare("UPDATE deals SET closed_at = ? WHERE id = ?").bind(at, dealId));
  }
  // Backdating rewrites the deal past the write path: its organization's analytics rollups are rebuilt from its deals,
  // as the migration that added them built them.
  const org = "organization_id = (SELECT organization_id FROM deals WHERE id = ?)";
  for (const table of ["deal_created_rollups", "deal_decided_rollups"])
    statements.push(db.prepare(`DELETE FROM ${table} WHERE ${org}`).bind(dealId));
  for (const sql of backfillRollupsSql(org)) statements.push(db.prepare(sql).bind(dealId));
  await db.batch(statements);
}

describe("GET /v1/deals/analytics", () => {
  it("an organization without deals answers zeros for the default period 30d", async () => {
    const p = await createPrincipal();
    expect(await analytics(p.token)).toEqual({
      period: "30d",
      totalDeals: 0,
      closedDeals: 0,
      totalValue: 0,
      closedValue: 0,
      averageTimeToClose: null,
      conversionRate: 0,
      topPerformers: [],
    });
  });

  it("an unknown period, type or parameter is a 422, never a 5xx", async () => {
    const p = await createPrincipal();
    for (const q of ["period=2w", "period=30", "period=", "period=7D", "type=CONDO", "colour=red", "period=1y&period=7d"]) {
      const res = await call("GET", `/v1/deals/analytics?${q}`, { token: p.token });
      const body = await json(res);
      expect(res.status, `${q}: ${JSON.stringify(body)}`).toBe(422);
      expect(body.error.type).toBe("validation_error");
    }
  });

  it("figures over 7d, 30d, 90d and 1y from the deals built for the test, with the assignedTo and type filters", async () => {
    const p = await createPrincipal();
    const ann = p.userId; // "Test Agent"
    const bea = await addAgent(p.organizationId, "Bea Broker");
    const now = Date.now();
    const closed = async (overrides: Record<string, unknown>, createdDaysAgo: number, closedDaysAgo: number) => {
      const d = await createDeal(p.token, overrides);
      await moveDeal(p.token, d.id, "CLOSED");
      await backdate(p.organizationId, d.id, createdDaysAgo, { stage: "CLOSED", daysAgo: closedDaysAgo }, now);
      return d;
    };
    const lost = async (overrides: Record<string, unknown>, createdDaysAgo: number, lostDaysAgo: number) => {
      const d = await createDeal(p.token, overrides);
      await moveDeal(p.token, d.id, "LOST");
      await backdate(p.organizationId, d.id, createdDaysAgo, { stage: "LOST", daysAgo: lostDaysAgo }, now);
      return d;
    };
    await closed({ type: "SALE", amount: 100_000, assignedTo: ann }, 10, 4); // D1: 6 days to close
    await closed({ type: "PURCHASE", amount: 300_000, assignedTo: bea }, 20, 5); // D2: 15 days
    await closed({ type: "SALE", amount: 200_000, assignedTo: bea }, 50, 40); // D3: 10 days
    await lost({ type: "SALE", amount: 50_000, assignedTo: ann }, 2, 1); // D4
    const d5 = await createDeal(p.token, { type: "LEASE", amount: 10_000, assignedTo: ann }); // D5: open, created now
    await moveDeal(p.token, d5.id, "QUALIFIED");
    await closed({ type: "SALE", amount: 450_000, assignedTo: ann }, 300, 200); // D6: 100 days
    const d7 = await createDeal(p.token, { type: "PURCHASE", amount: 70_000, assignedTo: bea }); // D7: closed, then reopened
    await backdate(p.organizationId, d7.id, 5, undefined, now);
    await closed({ type: "RENTAL", amount: 5_000 }, 40, 3); // D8: no agent, 37 days
    await lost({ type: "SALE", amount: 80_000, assignedTo: ann }, 100, 60); // D9

    // Another organization's closed deal never counts.
    const stranger = await createPrincipal();
    const foreign = await createDeal(stranger.token, { amount: 1_000_000, assignedTo: stranger.userId });
    await moveDeal(stranger.token, foreign.id, "CLOSED");

    // D7 closed counts while it is closed...
    await moveDeal(p.token, d7.id, "CLOSED");
    expect(await analytics(p.token, "period=7d")).toMatchObject({ closedDeals: 4, closedValue: 475_000 });
    // ...and no longer once reopened.
    await moveDeal(p.token, d7.id, "NEGOTIATION");

    const sevenDays = await analytics(p.token, "period=7d");
    expect(sevenDays).toEqual({
      period: "7d",
      totalDeals: 3, // D4, D5, D7
      closedDeals: 3, // D1, D2, D8
      totalValue: 130_000,
      closedValue: 405_000,
      averageTimeToClose: 19.3, // (6 + 15 + 37) / 3
      conversionRate: 75, // 3 won, 1 lost (D4)
      topPerformers: [
        { agentId: bea, name: "Bea Broker", deals: 1, closedValue: 300_000 },
        { agentId: ann, name: "Test Agent", deals: 1, closedValue: 100_000 },
      ],
    });
    // 30d: D1 and D2 created in it too; D3 closed 40 days ago does not count yet.
    const thirty = { ...sevenDays, period: "30d", totalDeals: 5, totalValue: 530_000 };
    expect(await analytics(p.token, "period=30d")).toEqual(thirty);
    expect(await analytics(p.token)).toEqual(thirty);

    expect(await analytics(p.token, "period=90d")).toEqual({
      period: "90d",
      totalDeals: 7, // + D3, D8
      closedDeals: 4, // + D3
      totalValue: 735_000,
      closedValue: 605_000,
      averageTimeToClose: 17, // (6 + 15 + 37 + 10) / 4
      conversionRate: 66.67, // 4 won, 2 lost (D4, D9)
      topPerformers: [
        { agentId: bea, name: "Bea Broker", deals: 2, closedValue: 500_000 },
        { agentId: ann, name: "Test Agent", deals: 1, closedValue: 100_000 },
      ],
    });
    expect(await analytics(p.token, "period=1y")).toEqual({
      period: "1y",
      totalDeals: 9, // + D6, D9
      closedDeals: 5, // + D6
      totalValue: 1_265_000,
      closedValue: 1_055_000,
      averageTimeToClose: 33.6, // (6 + 15 + 37 + 10 + 100) / 5
      conversionRate: 71.43, // 5 / 7
      topPerformers: [
        { agentId: ann, name: "Test Agent", deals: 2, closedValue: 550_000 },
        { agentId: bea, name: "Bea Broker", deals: 2, closedValue: 500_000 },
      ],
    });

    // assignedTo narrows every figure to that agent's deals.
    expect(await analytics(p.token, `period=90d&assignedTo=${bea}`)).toEqual({
      period: "90d",
      totalDeals: 3, // D2, D3, D7
      closedDeals: 2,
      totalValue: 570_000,
      closedValue: 500_000,
      averageTimeToClose: 12.5,
      conversionRate: 100,
      topPerformers: [{ agentId: bea, name: "Bea Broker", deals: 2, closedValue: 500_000 }],
    });
    // type too.
    expect(await analytics(p.token, "period=1y&type=SALE")).toEqual({
      period: "1y",
      totalDeals: 5, // D1, D3, D4, D6, D9
      closedDeals: 3, // D1, D3, D6
      totalValue: 880_000,
      closedValue: 750_000,
      averageTimeToClose: 38.7, // (6 + 10 + 100) / 3
      conversionRate: 60, // 3 won, 2 lost
      topPerformers: [
        { agentId: ann, name: "Test Agent", deals: 2, closedValue: 550_000 },
        { agentId: bea, name: "Bea Broker", deals: 1, closedValue: 200_000 },
      ],
    });
    // Both at once.
    expect(await analytics(p.token, `period=7d&type=SALE&assignedTo=${ann}`)).toEqual({
      period: "7d",
      totalDeals: 1, // D4
      closedDeals: 1, // D1
      totalValue: 50_000,
      closedValue: 100_000,
      averageTimeToClose: 6,
      conversionRate: 50,
      topPerformers: [{ agentId: ann, name: "Test Agent", deals: 1, closedValue: 100_000 }],
    });
    // A type without deals in the period, and an agent of another organization, answer zeros.
    expect(await analytics(p.token, "period=7d&type=LEASE")).toMatchObject({
      totalDeals: 1,
      closedDeals: 0,
      closedValue: 0,
      averageTimeToClose: null,
      conversionRate: 0,
      topPerformers: [],
    });
    expect(await analytics(p.token, `period=1y&assignedTo=${stranger.userId}`)).toEqual({
      period: "1y",
      totalDeals: 0,
      closedDeals: 0,
      totalValue: 0,
      closedValue: 0,
      averageTimeToClose: null,
      conversionRate: 0,
      topPerformers: [],
    });
  });

  it("a deal closed twice in the period counts once; one lost then won counts as won only", async () => {
    const p = await createPrincipal();
    const twice = await createDeal(p.token, { amount: 1_000, assignedTo: p.userId });
    await moveDeal(p.token, twice.id, "CLOSED");
    await moveDeal(p.token, twice.id, "CLOSING");
    await moveDeal(p.token, twice.id, "CLOSED");
    const comeback = await createDeal(p.token, { amount: 2_000, assignedTo: p.userId });
    await moveDeal(p.token, comeback.id, "LOST");
    await moveDeal(p.token, comeback.id, "CLOSED");
    expect(await analytics(p.token, "period=7d")).toMatchObject({
      totalDeals: 2,
      closedDeals: 2,
      closedValue: 3_000,
      conversionRate: 100,
      topPerformers: [{ agentId: p.userId, name: "Test Agent", deals: 2, closedValue: 3_000 }],
    });
  });
});

describe("deals under adversarial input (found by an HTTP pass)", () => {
  it("answers impossible calendar dates with a 422, never a 500", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    for (const date of ["2026-13-01", "2026-00-10", "2026-02-30", "2026-01-32", "0000-01-01"]) {
      const put = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { timeline: { closingDate: date } } });
      expect(issuePairs(await expectCrmError(put, 422, "validation_error")), date).toEqual(["timeline.closingDate:invalid_date"]);
      const task = await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: "T", dueDate: date } });
      expect(issuePairs(await expectCrmError(task, 422, "validation_error")), date).toEqual(["dueDate:invalid_date"]);
      const list = await call("GET", `/v1/deals?closingDate[gte]=${date}`, { token: p.token });
      expect(list.status, date).toBe(422);
    }
    expect(
      (await call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: "T", dueDate: "2026-13-01T10:00:00Z" } })).status,
    ).toBe(422);
  });

  it("60 concurrent tasks on one deal all land at once, and the cap holds under a race", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => call("POST", `/v1/deals/${deal.id}/tasks`, { token: p.token, body: { title: `T${i}` } })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 60 }, () => 201));
    expect(await dealRows(p.organizationId, "tasks", deal.id)).toBe(60);
    // 195 tasks held, 20 more at once: exactly 5 land, the others are told the deal is full.
    const other = await createDeal(p.token);
    await (await tenantDb(p.organizationId))
      .prepare(
        `INSERT INTO tasks (id, organization_id, deal_id, title, priority, completed, created_at, updated_at)
       WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 195)
       SELECT lower(hex(randomblob(16))), ?, ?, 'Prefilled ' || n, 'MEDIUM', 0, ?3, ?3 FROM seq`,
      )
      .bind(p.organizationId, other.id, new Date().toISOString())
      .run();
    const raced = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call("POST", `/v1/deals/${other.id}/tasks`, { token: p.token, body: { title: `R${i}` } })),
    );
    expect(raced.filter((a) => a.status === 201)).toHaveLength(5);
    expect(raced.filter((a) => a.status === 422)).toHaveLength(15);
    expect(await dealRows(p.organizationId, "tasks", other.id)).toBe(200);
  });

  it("a file name that could not be a document name is refused unless a name is given", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const spoofed = await call("POST", `/v1/deals/${deal.id}/documents`, {
      token: p.token,
      body: documentForm(PDF_BYTES, {}, "\u202Efdp.exe"),
    });
    expect(issuePairs(await expectCrmError(spoofed, 422, "validation_error"))).toEqual(["name:invalid_name"]);
    const named = await call("POST", `/v1/deals/${deal.id}/documents`, {
      token: p.token,
      body: documentForm(PDF_BYTES, { name: "Purchase contract" }, "\u202Efdp.exe"),
    });
    expect(named.status).toBe(201);
    expect((await json(named)).data.name).toBe("Purchase contract");
  });

  it("a signed link has one spelling: a leading zero in expires is refused", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const doc = (await json(await call("POST", `/v1/deals/${deal.id}/documents`, { token: p.token, body: documentForm() }))).data;
    const url = new URL(doc.url);
    expect((await download(url.pathname + url.search)).status).toBe(200);
    url.searchParams.set("expires", `0${url.searchParams.get("expires")}`);
    expect((await download(url.pathname + url.search)).status).toBe(404);
  });

  it("routes without query parameters refuse unknown ones, as the lists do", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    for (const path of ["/v1/deals/pipeline?x=1", `/v1/deals/${deal.id}/tasks?x=1`, `/v1/deals/${deal.id}/documents?x=1`]) {
      expect((await call("GET", path, { token: p.token })).status, path).toBe(422);
    }
  });
});
