import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact, uniqueEmail } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";
import { createAppointment, deliverInvitations, mailWithAttachments, parseIcal, storedEvents } from "../helpers/appointments";

describe("appointments under concurrency", () => {
  it("a cancel racing updates of the place: every update before the cancel lands, every one after is refused, SEQUENCE counts them", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("raced");
    const contact = await createContact(p.token, { email });
    const a = await createAppointment(p.token, { attendees: [{ contactId: contact.id }] });
    await deliverInvitations(p.organizationId);
    const updates = Array.from({ length: 6 }, (_, i) =>
      call("PATCH", `/v1/appointments/${a.id}`, { token: p.token, body: { location: `Place ${i}` } }),
    );
    const cancel = call("POST", `/v1/appointments/${a.id}/cancel`, { token: p.token });
    const [cancelled, ...patched] = await Promise.all([cancel, ...updates]);
    expect(cancelled!.status).toBe(200);
    const landed = patched.filter((r) => r.status === 200).length;
    for (const r of patched) expect([200, 409]).toContain(r.status);
    const final = (await json(await call("GET", `/v1/appointments/${a.id}`, { token: p.token }))).data;
    expect(final).toMatchObject({ status: "cancelled", sequence: landed + 1, version: landed + 2 });
    expect(await storedEvents(p.organizationId, ["appointment.updated"])).toHaveLength(landed);
    expect(await storedEvents(p.organizationId, ["appointment.cancelled"])).toHaveLength(1);

    // However the events are handled, the contact invited before the race is mailed one CANCEL, at the final SEQUENCE
    // (the consumer mails the appointment as it is now, not each intermediate place).
    await deliverInvitations(p.organizationId);
    await deliverInvitations(p.organizationId);
    const mails = await mailWithAttachments(email);
    const methods = mails.map((m) => parseIcal(m.attachments[0]!.content).getFirstPropertyValue("method"));
    expect(methods).toEqual(["REQUEST", "CANCEL"]);
    const sequences = mails.map((m) =>
      parseIcal(m.attachments[0]!.content).getFirstSubcomponent("vevent")!.getFirstPropertyValue("sequence"),
    );
    expect(sequences).toEqual([0, landed + 1]);
  });
});
