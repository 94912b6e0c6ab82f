import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openMailbox } from "../helpers/receiver";
import { appointmentInvitationConsumer } from "../../src/appointments/invitations";
import { createDb } from "../../src/db/client";
import { dispatchEvents } from "../../src/events/consumers";
import { newId } from "../../src/lib/ids";
import { call, json } from "../helpers/client";
import { createContact, uniqueEmail } from "../helpers/contacts";
import { createPrincipal, tenantDb } from "../helpers/factories";
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

describe("an invitation whose send fails", () => {
  it("is retried with its event and mailed once when the mailer answers again", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("retried");
    const contact = await createContact(p.token, { email });
    // Written straight to D1 with an event of our own: no queue delivery of it runs beside this test.
    const id = newId();
    const at = new Date().toISOString();
    const d1 = await tenantDb(p.organizationId);
    await d1.batch([
      d1
        .prepare(
          `INSERT INTO appointments (id, organization_id, type, starts_at, ends_at, time_zone, location, status, sequence, created_by, created_at, updated_at, version)
           VALUES (?, ?, 'showing', '2027-04-01T15:00:00.000Z', '2027-04-01T15:30:00.000Z', 'Europe/London', '1 High St', 'scheduled', 0, ?, ?, ?, 1)`,
        )
        .bind(id, p.organizationId, p.userId, at, at),
      d1
        .prepare(
          "INSERT INTO appointment_attendees (appointment_id, id, organization_id, contact_id, email, name, response) VALUES (?, ?, ?, ?, ?, 'Retried Buyer', 'needs_action')",
        )
        .bind(id, newId(), p.organizationId, contact.id, email),
    ]);
    const event = {
      id: newId(),
      type: "appointment.created",
      organizationId: p.organizationId,
      actor: { type: "user" as const, userId: p.userId },
      occurredAt: at,
      data: { object: { id } },
    };
    const db = createDb(d1);
    // A provider that answers 503: the send throws, the event is left to be retried, nothing is recorded. (A live fake
    // rather than a closed port: a refused connection makes workerd report an uncaught rejection of its own.)
    const provider = await openMailbox({ fallback: 503 });
    const down = { ...env, EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "re_test", EMAIL_API_URL: provider.url } as typeof env;
    expect([...(await dispatchEvents([appointmentInvitationConsumer], [event], down, db))]).toEqual([event.id]);
    const read = async () => (await json(await call("GET", `/v1/appointments/${id}`, { token: p.token }))).data;
    expect((await read()).attendees[0].invitedSequence).toBeNull();
    expect(await mailWithAttachments(email)).toEqual([]);
    // The retry, and a redelivery after it: one mail.
    expect([...(await dispatchEvents([appointmentInvitationConsumer], [event], env, db))]).toEqual([]);
    expect([...(await dispatchEvents([appointmentInvitationConsumer], [event], env, db))]).toEqual([]);
    expect(await mailWithAttachments(email)).toHaveLength(1);
    expect((await read()).attendees[0].invitedSequence).toBe(0);
  });
});
