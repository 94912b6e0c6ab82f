import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";
import { erase, newPerson, whereFound } from "../helpers/erasure";
import { createAppointment, deliverInvitations, mailWithAttachments, patchAppointment } from "../helpers/appointments";

describe("erasing a person who attends appointments", () => {
  it("takes out their attendee rows, the invitations mailed to them and their name in the appointments' texts", async () => {
    const p = await createPrincipal();
    const person = newPerson();
    const contact = await createContact(p.token, {
      firstName: person.firstName,
      lastName: person.lastName,
      email: person.email,
      phone: person.phone,
    });
    const other = await createContact(p.token, { firstName: "Other", lastName: "Buyer" });
    const appointment = await createAppointment(p.token, {
      title: `Consultation with ${person.fullName}`,
      notes: `Call ${person.phone} or write to ${person.email} first`,
      attendees: [{ contactId: contact.id }, { contactId: other.id }, { userId: p.userId }],
    });
    await deliverInvitations(p.organizationId);
    await patchAppointment(p.token, appointment.id, { location: "Their kitchen" });
    await deliverInvitations(p.organizationId);
    expect(await mailWithAttachments(person.email)).toHaveLength(2);
    expect(await whereFound(person.needles)).not.toEqual([]);
    // The right of access shows the appointments they attend.
    const access = (await json(await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token }))).data;
    expect(access.appointments.map((x: { id: string }) => x.id)).toEqual([appointment.id]);

    const res = await erase(p, contact.id);
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.erased).toMatchObject({ appointment_attendees: 1, mails: 2 });
    expect(await whereFound(person.needles)).toEqual([]);
    expect(await mailWithAttachments(person.email)).toEqual([]);

    const after = (await json(await call("GET", `/v1/appointments/${appointment.id}`, { token: p.token }))).data;
    expect(after.title).toBe("Consultation with [erased]");
    expect(after.attendees.map((a: { contactId: string | null }) => a.contactId)).toEqual([other.id, null]);
    // The others keep their invitations; nobody is mailed on the erased person's behalf.
    expect(await mailWithAttachments(other.email)).toHaveLength(2);
  });
});
