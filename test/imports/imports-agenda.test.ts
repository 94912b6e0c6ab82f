// A Follow Up Boss book's tasks and appointments (issue 46 part 6): imported after its people, linked to them by
// e-mail or phone, written once however often the same export is imported, with no per-record event and no
// invitation mailed (Follow Up Boss sent those).
import { describe, expect, it } from "vitest";
import { uniqueEmail } from "../helpers/contacts";
import { createPrincipal, type TestPrincipal, tenantDb } from "../helpers/factories";
import { importErrors, settledImport, startCsvImport, startRowsImport } from "../helpers/imports";

const rowsOf = async (organizationId: string, sql: string, ...binds: unknown[]) =>
  (
    await (
      await tenantDb(organizationId)
    )
      .prepare(sql)
      .bind(organizationId, ...binds)
      .all<Record<string, any>>()
  ).results;

/** The people first, as a migration does: Ada (with a phone) and Bob. */
async function people(owner: TestPrincipal) {
  const ada = uniqueEmail("ada");
  const bob = uniqueEmail("bob");
  const started = await startRowsImport(owner, {
    kind: "contacts",
    rows: [
      { "First Name": "Ada", "Last Name": "Lovelace", "Email 1": ada, "Phone 1": "+1 416 555 0101" },
      { "First Name": "Bob", "Last Name": "Builder", "Email 1": bob },
    ],
  });
  expect(await settledImport(owner, started.id)).toMatchObject({ status: "completed", created: 2 });
  const [a, b] = await rowsOf(
    owner.organizationId,
    "SELECT id, email FROM contacts WHERE organization_id = ? AND email IN (?, ?) ORDER BY first_name",
    ada,
    bob,
  );
  return { ada, bob, adaId: a!.id as string, bobId: b!.id as string };
}

const eventTypes = async (organizationId: string) =>
  (await rowsOf(organizationId, "SELECT type FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at")).map(
    (r) => r.type as string,
  );

describe("POST /v1/imports (Follow Up Boss tasks)", () => {
  it("maps its tasks onto the people, reports what it could not, and a re-run writes nothing twice", async () => {
    const owner = await createPrincipal();
    const { ada, adaId } = await people(owner);
    const ownerEmail = `${owner.userId}@example.test`;
    const rows = [
      // Follow Up Boss's own fields, as GET /v1/tasks answers them, plus the person's e-mail or phone.
      {
        id: 101,
        name: "Call back about the offer",
        type: "Call",
        dueDateTime: "2027-03-08T15:00:00-05:00",
        isCompleted: false,
        assignedTo: ownerEmail,
        personEmail: ada.toUpperCase(),
      },
      { id: 102, name: "Send the CMA", type: "Email", dueDate: "2026-01-02", isCompleted: true, personEmail: ada },
      { id: 103, name: "Nobody's task", type: "Call", personEmail: uniqueEmail("stranger") },
      {
        id: 104,
        name: "Thank-you card",
        type: "Thank You",
        dueDate: "2020-05-01",
        isCompleted: false,
        personPhone: "(416) 555-0101",
        assignedTo: "Someone Unknown",
      },
    ];
    const first = await settledImport(owner, (await startRowsImport(owner, { kind: "tasks", rows })).id);
    expect(first).toMatchObject({ status: "completed", kind: "tasks", format: "followupboss", processed: 4, created: 3, failed: 1 });
    expect(await importErrors(owner, first.id)).toEqual([
      ["4", "personEmail", "contact_not_found: no contact has this e-mail or phone; import the people first, then this file again"],
      ["5", "assignedTo", "unknown_user: no single user of the organization has this id, e-mail or name; imported unassigned"],
    ]);

    const tasks = await rowsOf(owner.organizationId, "SELECT * FROM tasks WHERE organization_id = ? ORDER BY title");
    expect(tasks.map((t) => [t.title, t.type, t.contact_id, t.due_at, t.completed, t.assigned_to, t.priority])).toEqual([
      ["Call back about the offer", "call", adaId, "2027-03-08T20:00:00.000Z", 0, owner.userId, "MEDIUM"],
      ["Send the CMA", "email", adaId, "2026-01-02", 1, null, "MEDIUM"],
      ["Thank-you card", "other", adaId, "2020-05-01", 0, null, "MEDIUM"],
    ]);
    const [call, cma, card] = tasks;
    expect(cma!.completed_at).not.toBeNull();
    // Came due in Follow Up Boss already: not announced again; the one still ahead is left to the due pass.
    expect(card!.due_announced_at).not.toBeNull();
    expect(call!.due_announced_at).toBeNull();
    // One event for the import, none per task.
    expect((await eventTypes(owner.organizationId)).filter((t) => t.startsWith("task."))).toEqual([]);

    const again = await settledImport(owner, (await startRowsImport(owner, { kind: "tasks", rows })).id);
    expect(again).toMatchObject({ status: "completed", created: 0, skipped: 3, failed: 1 });
    expect(await rowsOf(owner.organizationId, "SELECT id FROM tasks WHERE organization_id = ?")).toHaveLength(3);

    // onDuplicate=update: the changed task is written over (its version moves), the others are left alone.
    const changed = rows.map((r) => (r.id === 101 ? { ...r, name: "Call back about the counter-offer", isCompleted: true } : r));
    const updated = await settledImport(owner, (await startRowsImport(owner, { kind: "tasks", rows: changed, onDuplicate: "update" })).id);
    expect(updated).toMatchObject({ status: "completed", created: 0, updated: 1, skipped: 2 });
    const after = await rowsOf(owner.organizationId, "SELECT * FROM tasks WHERE organization_id = ? AND id = ?", call!.id);
    expect(after[0]).toMatchObject({ title: "Call back about the counter-offer", completed: 1, version: 2 });
    expect(after[0]!.completed_at).not.toBeNull();
    expect((await eventTypes(owner.organizationId)).filter((t) => t === "import.completed")).toHaveLength(4);
  });
});

describe("POST /v1/imports (Follow Up Boss appointments)", () => {
  it("makes appointments with their people and users as attendees, mails no invitation, and a re-run doubles nothing", async () => {
    const owner = await createPrincipal();
    const { ada, bob, adaId, bobId } = await people(owner);
    const ownerEmail = `${owner.userId}@example.test`;
    const rows = [
      {
        id: 9001,
        title: "Showing at 12 Elm",
        type: "Showing",
        start: "2027-03-10T14:00:00-05:00",
        end: "2027-03-10T15:00:00-05:00",
        location: "12 Elm St, Toronto",
        invitees: [
          { personId: 5, name: "Ada Lovelace", email: ada },
          { userId: 7, name: "Test Agent", email: ownerEmail },
          { personId: 9, name: "Stranger", email: uniqueEmail("stranger") },
        ],
      },
      {
        id: 9002,
        title: "Listing presentation",
        type: "Listing Appointment",
        start: "2027-03-11",
        allDay: true,
        timeZone: "America/Toronto",
        personEmail: bob,
      },
      { id: 9003, title: "No start" },
    ];
    const first = await settledImport(owner, (await startRowsImport(owner, { kind: "appointments", rows })).id);
    expect(first).toMatchObject({ status: "completed", kind: "appointments", processed: 3, created: 2, failed: 1 });
    expect(await importErrors(owner, first.id)).toEqual([
      ["2", "invitees", "unknown_invitee: neither a user nor a contact; left out of the attendees"],
      ["4", "start", "required: an appointment needs its start"],
    ]);

    const appointments = await rowsOf(owner.organizationId, "SELECT * FROM appointments WHERE organization_id = ? ORDER BY starts_at");
    expect(appointments.map((a) => [a.title, a.type, a.starts_at, a.ends_at, a.time_zone, a.location, a.status, a.sequence])).toEqual([
      ["Showing at 12 Elm", "showing", "2027-03-10T19:00:00.000Z", "2027-03-10T20:00:00.000Z", "UTC", "12 Elm St, Toronto", "scheduled", 0],
      // All day in Toronto: from its midnight to the next (EST, UTC-5).
      [
        "Listing presentation",
        "listing_presentation",
        "2027-03-11T05:00:00.000Z",
        "2027-03-12T05:00:00.000Z",
        "America/Toronto",
        null,
        "scheduled",
        0,
      ],
    ]);
    const attendees = async () =>
      (
        await rowsOf(
          owner.organizationId,
          "SELECT * FROM appointment_attendees WHERE organization_id = ? ORDER BY appointment_id, contact_id, user_id",
        )
      ).map((a) => [a.appointment_id, a.contact_id, a.user_id, a.invited_sequence]);
    const [showing, listing] = appointments;
    expect((await attendees()).sort()).toEqual(
      [
        [showing!.id, adaId, null, 0],
        [showing!.id, null, owner.userId, 0],
        [listing!.id, bobId, null, 0],
      ].sort(),
    );
    // Invited by Follow Up Boss: nothing is mailed for the import, and no per-record event goes out.
    expect(await rowsOf(owner.organizationId, 'SELECT id FROM mail_outbox WHERE organization_id = ? AND "to" IN (?, ?)', ada, bob)).toEqual(
      [],
    );
    expect((await eventTypes(owner.organizationId)).filter((t) => t.startsWith("appointment.") || t.startsWith("property."))).toEqual([]);

    const again = await settledImport(owner, (await startRowsImport(owner, { kind: "appointments", rows })).id);
    expect(again).toMatchObject({ status: "completed", created: 0, skipped: 2, failed: 1 });
    expect(await rowsOf(owner.organizationId, "SELECT id FROM appointments WHERE organization_id = ?")).toHaveLength(2);
    expect(await attendees()).toHaveLength(3);
  });

  it("reads a spreadsheet of them too: its column names, invitees separated by ;, times without an offset in the row's zone", async () => {
    const owner = await createPrincipal();
    const { ada, adaId } = await people(owner);
    const csv = [
      "Title,Type,Start,End,Time Zone,Invitees,Person Email",
      `Buyer consultation,Buyer Appointment,2027-07-01 09:30,2027-07-01 10:30,America/Vancouver,Test Agent <${owner.userId}@example.test>,${ada}`,
      `Bad end,Closing,2027-07-02T10:00:00Z,2027-07-02T09:00:00Z,,,${ada}`,
    ].join("\r\n");
    const done = await settledImport(owner, (await startCsvImport(owner, csv, "kind=appointments")).id);
    expect(done).toMatchObject({ status: "completed", format: "followupboss", created: 1, failed: 1 });
    expect(await importErrors(owner, done.id)).toEqual([["3", "End", "invalid_range: the end is before the start"]]);
    const [a] = await rowsOf(owner.organizationId, "SELECT * FROM appointments WHERE organization_id = ?");
    // 09:30 in Vancouver in July is PDT (UTC-7).
    expect(a).toMatchObject({ type: "buyer_consultation", starts_at: "2027-07-01T16:30:00.000Z", ends_at: "2027-07-01T17:30:00.000Z" });
    const people2 = await rowsOf(owner.organizationId, "SELECT contact_id, user_id FROM appointment_attendees WHERE organization_id = ?");
    expect(people2).toEqual(
      expect.arrayContaining([
        { contact_id: adaId, user_id: null },
        { contact_id: null, user_id: owner.userId },
      ]),
    );
  });
});
