import { describe, expect, it } from "vitest";
import { newId } from "../../src/lib/ids";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { createAppointment, ICAL, parseIcal } from "../helpers/appointments";

const DAY = 86_400_000;
const pathOf = (url: string) => new URL(url).pathname;

async function issueFeed(token: string): Promise<string> {
  const res = await call("POST", "/v1/users/me/calendar-feed", { token });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  expect(body.data.url).toMatch(/^https?:\/\/[^/]+\/calendar\/cal_[A-Za-z0-9_-]{43}\.ics$/);
  return body.data.url;
}

/** A task row as the tasks domain keeps it (the feed reads the table). */
async function seedTask(organizationId: string, task: { assignedTo: string; title: string; dueAt: string | null; completed?: boolean }) {
  const at = new Date().toISOString();
  await (await tenantDb(organizationId))
    .prepare(
      `INSERT INTO tasks (id, organization_id, title, type, due_at, priority, assigned_to, completed, created_at, updated_at, version)
       VALUES (?, ?, ?, 'call', ?, 'MEDIUM', ?, ?, ?, ?, 1)`,
    )
    .bind(newId(), organizationId, task.title, task.dueAt, task.assignedTo, task.completed ? 1 : 0, at, at)
    .run();
}

async function fetchFeed(url: string): Promise<Response> {
  return call("GET", pathOf(url));
}

describe("calendar feed", () => {
  it("is issued once as a URL, then only its existence and date are told", async () => {
    const p = await createPrincipal();
    const before = await json(await call("GET", "/v1/users/me/calendar-feed", { token: p.token }));
    expect(before).toEqual({ success: true, data: { exists: false, createdAt: null } });
    const url = await issueFeed(p.token);
    const after = await json(await call("GET", "/v1/users/me/calendar-feed", { token: p.token }));
    expect(after.data).toEqual({ exists: true, createdAt: expect.any(String) });
    expect(JSON.stringify(after)).not.toContain(url.split("/").pop()!.slice(0, 10));
    const res = await fetchFeed(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/calendar; charset=utf-8");
    expect(await res.text()).toMatch(/^BEGIN:VCALENDAR\r\n/);
  });

  it("is issued only to a credential that may read tasks too: the feed serves the user's tasks, notes included", async () => {
    // A key holding appointments:read alone (403 on /v1/tasks) read every dated task's title and notes through it.
    const p = await createPrincipal();
    const narrow = await createApiKey(p.token, ["appointments:read"]);
    const refused = await call("POST", "/v1/users/me/calendar-feed", { token: narrow.key });
    const body = await json(refused);
    expect(refused.status, JSON.stringify(body)).toBe(403);
    expect(body.error.code).toBe("insufficient_permission");
    expect(body.error.detail).toContain("tasks:read");
    expect((await json(await call("GET", "/v1/users/me/calendar-feed", { token: p.token }))).data.exists).toBe(false);
    const wide = await createApiKey(p.token, ["appointments:read", "tasks:read"]);
    await issueFeed(wide.key);
  });

  it("serves the user's appointments in their zones (VTIMEZONE with and without DST) and dated open tasks, folded at 75 octets", async () => {
    const p = await createPrincipal();
    const colleague = await createPrincipal({ organizationId: p.organizationId });
    const contact = await createContact(p.token, { firstName: "Émilie", lastName: "Þórsdóttir" });
    const now = Date.now();
    const day = (n: number, hourUtc: number) => {
      const d = new Date(now + n * DAY);
      d.setUTCHours(hourUtc, 0, 0, 0);
      return d.toISOString();
    };
    const notes = `Gate code 4411; ring twice, then wait\nSecond line, with commas; semicolons \\ and a backslash — ${"ünïcödé ✓ ".repeat(12)}`;
    const ny = await createAppointment(p.token, {
      title: "Showing at the lake house",
      startsAt: day(3, 18),
      endsAt: day(3, 19),
      timeZone: "America/New_York",
      attendees: [{ contactId: contact.id }],
      notes,
    });
    const tokyo = await createAppointment(p.token, { startsAt: day(10, 1), endsAt: day(10, 2), timeZone: "Asia/Tokyo" });
    const invited = await createAppointment(colleague.token, {
      attendees: [{ userId: p.userId }],
      timeZone: "UTC",
      startsAt: day(5, 9),
      endsAt: day(5, 10),
    });
    const theirs = await createAppointment(colleague.token, { startsAt: day(4, 9), endsAt: day(4, 10) });
    const tooFar = await createAppointment(p.token, { startsAt: day(400, 9), endsAt: day(400, 10) });
    const cancelled = await createAppointment(p.token, { startsAt: day(6, 9), endsAt: day(6, 10) });
    await call("POST", `/v1/appointments/${cancelled.id}/cancel`, { token: p.token });
    const dueAt = day(2, 15);
    const dueDay = day(7, 0).slice(0, 10);
    await seedTask(p.organizationId, { assignedTo: p.userId, title: "Call the lender", dueAt });
    await seedTask(p.organizationId, { assignedTo: p.userId, title: "Order the sign", dueAt: dueDay });
    await seedTask(p.organizationId, { assignedTo: p.userId, title: "Done already", dueAt, completed: true });
    await seedTask(p.organizationId, { assignedTo: p.userId, title: "Someday", dueAt: null });
    await seedTask(p.organizationId, { assignedTo: colleague.userId, title: "Not mine", dueAt });

    const text = await (await fetchFeed(await issueFeed(p.token))).text();
    const cal = parseIcal(text);
    expect(cal.getFirstPropertyValue("method")).toBeNull();
    for (const zone of cal.getAllSubcomponents("vtimezone")) ICAL.TimezoneService.register(zone);
    const events = cal.getAllSubcomponents("vevent").map((v) => new ICAL.Event(v));
    const uids = events.map((e) => e.uid);
    for (const shown of [ny, tokyo, invited]) expect(uids.some((u) => u.includes(shown.id))).toBe(true);
    for (const hidden of [theirs, tooFar, cancelled]) expect(uids.some((u) => u.includes(hidden.id))).toBe(false);
    expect(
      events
        .map((e) => e.summary)
        .filter((s) => s.startsWith("Task: "))
        .sort(),
    ).toEqual(["Task: Call the lender", "Task: Order the sign"]);

    const nyEvent = events.find((e) => e.uid.includes(ny.id))!;
    expect(nyEvent.description).toContain(notes.trim());
    expect(nyEvent.description).toContain("Émilie Þórsdóttir");
    expect(nyEvent.startDate.zone?.tzid).toBe("America/New_York");
    expect(nyEvent.startDate.toJSDate().toISOString()).toBe(ny.startsAt);
    const tokyoEvent = events.find((e) => e.uid.includes(tokyo.id))!;
    expect(tokyoEvent.startDate.zone?.tzid).toBe("Asia/Tokyo");
    expect(tokyoEvent.startDate.toJSDate().toISOString()).toBe(tokyo.startsAt);
    expect(tokyoEvent.startDate.hour).toBe(10);
    const utcEvent = events.find((e) => e.uid.includes(invited.id))!;
    expect(utcEvent.startDate.toJSDate().toISOString()).toBe(invited.startsAt);

    const zones = Object.fromEntries(cal.getAllSubcomponents("vtimezone").map((z) => [z.getFirstPropertyValue("tzid"), z]));
    expect(Object.keys(zones).sort()).toEqual(["America/New_York", "Asia/Tokyo"]);
    const kinds = (z: ICAL.Component) => new Set(z.getAllSubcomponents().map((s) => s.name));
    expect(kinds(zones["America/New_York"]!)).toEqual(new Set(["standard", "daylight"]));
    const tokyoObservances = zones["Asia/Tokyo"]!.getAllSubcomponents();
    expect(tokyoObservances.map((o: ICAL.Component) => [o.name, o.getFirstPropertyValue("tzoffsetto")?.toString()])).toEqual([
      ["standard", "+09:00"],
    ]);

    const timedTask = events.find((e) => e.summary === "Task: Call the lender")!;
    expect(timedTask.startDate.toJSDate().toISOString()).toBe(dueAt);
    const dayTask = events.find((e) => e.summary === "Task: Order the sign")!;
    expect(dayTask.startDate.isDate).toBe(true);
    expect(dayTask.startDate.toString()).toBe(dueDay);
  });

  it("issuing again stops the old URL; of racing issues one URL is live; DELETE stops it", async () => {
    const p = await createPrincipal();
    const first = await issueFeed(p.token);
    const second = await issueFeed(p.token);
    expect((await fetchFeed(first)).status).toBe(404);
    expect((await fetchFeed(second)).status).toBe(200);

    const raced = await Promise.all(Array.from({ length: 5 }, () => issueFeed(p.token)));
    const live = [];
    for (const url of [second, ...raced]) if ((await fetchFeed(url)).status === 200) live.push(url);
    expect(live).toHaveLength(1);

    const res = await call("DELETE", "/v1/users/me/calendar-feed", { token: p.token });
    expect((await json(res)).data).toEqual({ exists: false, createdAt: null });
    expect((await fetchFeed(live[0]!)).status).toBe(404);
    expect((await fetchFeed("http://api.test/calendar/cal_unknown.ics")).status).toBe(404);
    expect((await fetchFeed("http://api.test/calendar/nothing")).status).toBe(404);
  });
});
