import { describe, expect, it } from "vitest";
import { createContact } from "../helpers/contacts";
import { createDeal, createTask as createDealTask } from "../helpers/deals";
import { createPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { createTask } from "../helpers/tasks";

const DAY = 86_400_000;
const utcDay = (offset: number) => new Date(Date.now() + offset * DAY).toISOString().slice(0, 10);

describe("the daily brief's tasks", () => {
  it("holds the user's contact tasks and tasks on nothing due today or before, beside the deal tasks, soonest first", async () => {
    const me = await createPrincipal();
    const contact = await createContact(me.token);
    const deal = await createDeal(me.token, { contactId: contact.id, title: "My deal" });
    const call = await createTask(me.token, { title: "Call back", type: "call", contactId: contact.id, dueAt: `${utcDay(-2)}T15:00:00Z` });
    const dealTask = await createDealTask(me.token, deal.id, { title: "Order appraisal", dueDate: utcDay(-1), assignedTo: me.userId });
    const own = await createTask(me.token, { title: "Plan the week", dueAt: `${utcDay(-1)}T08:00:00Z` });
    await createTask(me.token, { title: "Tomorrow", contactId: contact.id, dueAt: `${utcDay(1)}T09:00:00Z` });
    await createTask(me.token, { title: "Undated", contactId: contact.id });

    const client = await connect(me.token);
    const brief = await tool(client, "daily_brief");
    expect(brief.isError, brief.text).toBe(false);
    expect(brief.data.tasksDue.total).toBe(3);
    expect(brief.data.tasksDue.items).toEqual([
      expect.objectContaining({ id: call.id, type: "call", contactId: contact.id, dealId: null, dealTitle: null, overdue: true }),
      expect.objectContaining({ id: dealTask.id, type: "other", dealId: deal.id, dealTitle: "My deal", overdue: true }),
      expect.objectContaining({ id: own.id, contactId: null, dealId: null, title: "Plan the week", overdue: true }),
    ]);
    await client.close();
  });
});
