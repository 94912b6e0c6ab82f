// The task lists and the due pass each read one index range in order (tasks_*_idx, migration 0031): checked on the
// plan SQLite picks, so a filter that stopped using its index (an OR across ranges, a bound value where the partial
// index names a literal) is caught here rather than on a large book.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { queryPlan } from "../helpers/query-plan";
import { createDb } from "../../src/db/client";
import { zonedDay } from "../../src/lib/zoned-day";
import { dueTaskScan } from "../../src/tasks/due";
import { type TaskFilter, taskListStatements } from "../../src/tasks/list";

const db = createDb(env.DB_SHARD_0);
const now = new Date("2030-01-15T04:30:00Z");
const due = (window: "overdue" | "today" | "upcoming") => ({ window, now: now.toISOString(), day: zonedDay(now, "America/New_York") });
const base: TaskFilter = { organizationId: "org-plans", completed: false };
const CURSOR = "WyJkdWVBdDphc2MiLFsiMjAzMC0wMS0xNFQxMjowMDowMC4wMDBaIl0sImlkIl0";

const ASSIGNEE_RANGE =
  /SEARCH tasks USING (?:COVERING )?INDEX tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at[<>]\?/;
const CASES: [string, TaskFilter, RegExp][] = [
  ["my overdue tasks", { ...base, assignedTo: "u", due: due("overdue") }, ASSIGNEE_RANGE],
  ["my tasks today", { ...base, assignedTo: "u", due: due("today") }, ASSIGNEE_RANGE],
  ["my tasks today, second page", { ...base, assignedTo: "u", due: due("today"), cursor: CURSOR }, ASSIGNEE_RANGE],
  ["my upcoming tasks", { ...base, assignedTo: "u", due: due("upcoming") }, ASSIGNEE_RANGE],
  ["my open tasks", { ...base, assignedTo: "u" }, /tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\?\)/],
  [
    "the organization's overdue tasks",
    { ...base, due: due("overdue") },
    /tasks_org_due_idx \(organization_id=\? AND completed=\? AND due_at<\?\)/,
  ],
  ["a contact's tasks", { ...base, contactId: "c" }, /tasks_org_contact_idx \(organization_id=\? AND contact_id=\? AND completed=\?\)/],
];

describe("task list plans", () => {
  it.each(CASES)("%s: one index range in (dueAt, id) order, no scan, no sort", async (_, filter, expected) => {
    for (const statement of taskListStatements(db, filter, 25)) {
      const details = await queryPlan(statement);
      expect(details, details).toMatch(expected);
      expect(details, details).not.toMatch(/USE TEMP B-TREE|\bSCAN tasks\b/);
    }
  });

  it("a deal's tasks read its index (a deal holds at most 200, sorted in memory)", async () => {
    for (const statement of taskListStatements(db, { ...base, dealId: "d" }, 25)) {
      const details = await queryPlan(statement);
      expect(details, details).toMatch(/tasks_org_deal_idx \(organization_id=\? AND deal_id=\?\)/);
    }
  });

  it("the due pass walks the partial index of unannounced open tasks", async () => {
    const details = await queryPlan(dueTaskScan(db, now.toISOString(), 500));
    expect(details, details).toMatch(/SEARCH tasks USING INDEX tasks_due_pass_idx \(due_at>\? AND due_at<\?\)/);
    expect(details, details).not.toMatch(/USE TEMP B-TREE/);
  });
});
