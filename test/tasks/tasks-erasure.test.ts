import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createDeal } from "../helpers/deals";
import { answerOf, erase, newPerson } from "../helpers/erasure";
import { createPrincipal } from "../helpers/factories";
import { createTask, expectError, listTasks } from "../helpers/tasks";

describe("a person's tasks", () => {
  it("stay on their contact in the trash (listed, still completable); an erasure takes them, and a deal's task no longer names them", async () => {
    const p = await createPrincipal();
    const person = newPerson();
    const contact = await createContact(p.token, { firstName: person.firstName, lastName: person.lastName, email: person.email });
    const other = await createContact(p.token);
    const deal = await createDeal(p.token, { contactId: other.id });
    const call1 = await createTask(p.token, { title: `Call ${person.fullName}`, contactId: contact.id, dueAt: "2030-01-01T09:00:00Z" });
    const onDeal = await createTask(p.token, { title: "Walkthrough", contactId: contact.id, dealId: deal.id });
    const unrelated = await createTask(p.token, { title: "Unrelated", contactId: other.id });

    // The right of access lists them.
    const held = (await json(await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token }))).data;
    expect(held.tasks.map((t: { id: string }) => t.id).sort()).toEqual([call1.id, onDeal.id].sort());

    // To the trash: the tasks stay, naming the contact, as a deal does (the contact reads as deleted).
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    expect((await listTasks(p.token, `?contactId=${contact.id}`)).pagination.total).toBe(2);
    expect((await json(await call("GET", `/v1/tasks/${call1.id}`, { token: p.token }))).data.contactId).toBe(contact.id);
    // Completed without an activity: its contact is in the trash.
    expect((await call("POST", `/v1/tasks/${onDeal.id}/complete`, { token: p.token })).status).toBe(200);

    const res = await erase(p, contact.id);
    const answer = await answerOf(res);
    expect(res.status, JSON.stringify(answer)).toBe(200);
    expect(answer.erased).toMatchObject({ contacts: 1, tasks: 1 });
    await expectError(await call("GET", `/v1/tasks/${call1.id}`, { token: p.token }), 404, "not_found");
    const kept = (await json(await call("GET", `/v1/tasks/${onDeal.id}`, { token: p.token }))).data;
    expect(kept).toMatchObject({ id: onDeal.id, dealId: deal.id, contactId: null, title: "Walkthrough", status: "completed" });
    expect((await json(await call("GET", `/v1/tasks/${unrelated.id}`, { token: p.token }))).data.contactId).toBe(other.id);
    expect((await listTasks(p.token, `?contactId=${contact.id}`)).pagination.total).toBe(0);
  });
});
