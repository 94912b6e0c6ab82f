import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, issuePairs, uniqueEmail } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import {
  appointmentBody,
  createAppointment,
  deliverInvitations,
  ICAL,
  mailWithAttachments,
  parseIcal,
  patchAppointment,
  storedEvents,
} from "../helpers/appointments";

const UNKNOWN = "00000000-0000-4000-8000-000000000000";

/** The one VEVENT of an invitation, with its calendar. */
function eventOf(ics: string) {
  const cal = parseIcal(ics);
  const vevent = cal.getFirstSubcomponent("vevent")!;
  return { cal, vevent, event: new ICAL.Event(vevent) };
}

describe("appointments", () => {
  it("schedules an appointment with a contact and a user; reads it back; lists it", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Ada", lastName: "Buyer" });
    const created = await createAppointment(p.token, {
      title: "First meeting",
      attendees: [{ userId: p.userId, response: "accepted" }, { contactId: contact.id }],
      notes: "Bring the pre-approval letter",
    });
    expect(created).toMatchObject({
      type: "buyer_consultation",
      title: "First meeting",
      startsAt: "2027-03-15T18:00:00.000Z",
      endsAt: "2027-03-15T19:00:00.000Z",
      timeZone: "America/New_York",
      location: "Office, 1 Main St",
      status: "scheduled",
      sequence: 0,
      outcome: null,
      createdBy: p.userId,
      version: 1,
    });
    expect(created.attendees).toEqual([
      expect.objectContaining({ userId: p.userId, contactId: null, response: "accepted", invitedSequence: null }),
      expect.objectContaining({ userId: null, contactId: contact.id, name: "Ada Buyer", email: contact.email, response: "needs_action" }),
    ]);
    const read = await call("GET", `/v1/appointments/${created.id}`, { token: p.token });
    expect(read.status).toBe(200);
    expect(read.headers.get("etag")).toBeTruthy();
    expect((await json(read)).data).toEqual(created);

    const listed = await json(await call("GET", "/v1/appointments?userId=me", { token: p.token }));
    expect(listed.success, JSON.stringify(listed)).toBe(true);
    expect(listed.data.map((a: { id: string }) => a.id)).toEqual([created.id]);
    expect(listed.pagination).toMatchObject({ total: 1, hasMore: false });
    const byContact = await json(await call("GET", `/v1/appointments?contactId=${contact.id}`, { token: p.token }));
    expect(byContact.pagination.total).toBe(1);
    const [event] = await storedEvents(p.organizationId, ["appointment.created"]);
    expect(event!.data).toMatchObject({ object: { id: created.id }, previousAttributes: null, changes: null });
  });

  it("refuses every bad reference and time at once (422), and another organization's appointment is a 404", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/appointments", {
      token: p.token,
      body: appointmentBody({
        endsAt: "2027-03-15T17:00:00Z",
        attendees: [{ contactId: UNKNOWN }, { userId: UNKNOWN }],
        propertyId: UNKNOWN,
      }),
    });
    const errors = await expectCrmError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual(
      [
        "attendees.0.contactId:invalid_reference",
        "attendees.1.userId:invalid_reference",
        "endsAt:ends_before_start",
        "propertyId:invalid_reference",
      ].sort(),
    );
    const zone = await call("POST", "/v1/appointments", { token: p.token, body: appointmentBody({ timeZone: "Mars/Olympus_Mons" }) });
    expect(issuePairs(await expectCrmError(zone, 422, "validation_error"))).toEqual(["timeZone:invalid_time_zone"]);
    const nowhere = await call("POST", "/v1/appointments", { token: p.token, body: appointmentBody({ location: undefined }) });
    expect(issuePairs(await expectCrmError(nowhere, 422, "validation_error"))).toEqual(["location:location_required"]);

    const mine = await createAppointment(p.token);
    const other = await createPrincipal();
    await expectCrmError(await call("GET", `/v1/appointments/${mine.id}`, { token: other.token }), 404, "not_found_error");
    await expectCrmError(
      await call("PATCH", `/v1/appointments/${mine.id}`, { token: other.token, body: { notes: "x" } }),
      404,
      "not_found_error",
    );
  });

  it("refuses times outside the years 1900 to 9999 in UTC, each named, and keeps a zone by its canonical name", async () => {
    // 9999-12-31T23:00-14:00 is in the year 10000: stored as "+010000-…" it listed first and was mailed as a 9-digit DTSTART.
    const p = await createPrincipal();
    const far = await call("POST", "/v1/appointments", {
      token: p.token,
      body: appointmentBody({ startsAt: "9999-12-31T23:00:00-14:00", endsAt: "9999-12-31T23:30:00-14:00" }),
    });
    expect(issuePairs(await expectCrmError(far, 422, "validation_error"))).toEqual(["endsAt:out_of_range", "startsAt:out_of_range"]);
    const mine = await createAppointment(p.token, { timeZone: "america/new_york" });
    expect(mine.timeZone).toBe("America/New_York");
    const moved = await call("PATCH", `/v1/appointments/${mine.id}`, { token: p.token, body: { endsAt: "+010000-01-01T00:00:00Z" } });
    expect((await json(moved)).success).toBe(false);
    expect(moved.status).toBe(422);
    const zone = await patchAppointment(p.token, mine.id, { timeZone: "europe/paris" });
    expect(zone.timeZone).toBe("Europe/Paris");
  });

  it("an appointment in the last days of 9999 keeps four-digit years in its zone and in the VTIMEZONE it is mailed with", async () => {
    // 9999-12-31T12:00Z is 10000-01-01 02:00 in Kiritimati (+14); a VTIMEZONE covering the year after 9999 wrote DST
    // changes in the year 10000. Both came out as 9-digit dates no calendar reads.
    const p = await createPrincipal();
    const late = await call("POST", "/v1/appointments", {
      token: p.token,
      body: appointmentBody({ startsAt: "9999-12-31T12:00:00Z", endsAt: "9999-12-31T13:00:00Z", timeZone: "Pacific/Kiritimati" }),
    });
    expect(issuePairs(await expectCrmError(late, 422, "validation_error"))).toEqual(["endsAt:out_of_range", "startsAt:out_of_range"]);
    const mine = await createAppointment(p.token, { timeZone: "Pacific/Kiritimati" });
    const moved = await call("PATCH", `/v1/appointments/${mine.id}`, {
      token: p.token,
      body: { startsAt: "9999-12-31T12:00:00Z", endsAt: "9999-12-31T13:00:00Z" },
    });
    expect(issuePairs(await expectCrmError(moved, 422, "validation_error"))).toEqual(["endsAt:out_of_range", "startsAt:out_of_range"]);

    const email = uniqueEmail("y9999");
    const buyer = await createContact(p.token, { email });
    await createAppointment(p.token, {
      startsAt: "9999-06-01T14:00:00Z",
      endsAt: "9999-06-01T15:00:00Z",
      timeZone: "America/New_York",
      attendees: [{ contactId: buyer.id }],
    });
    await deliverInvitations(p.organizationId);
    const [mail] = await mailWithAttachments(email);
    const ics = mail!.attachments[0]!.content;
    expect(ics.split("\r\n").filter((line) => /^DTSTART/.test(line) && !/:\d{8}T\d{6}Z?$/.test(line))).toEqual([]);
    expect(eventOf(ics).event.startDate.toString()).toBe("9999-06-01T10:00:00");
  });

  it("a list window that ends before it starts is a 422, as the contact list's ranges are, not an empty page", async () => {
    const p = await createPrincipal();
    await createAppointment(p.token);
    const res = await call("GET", "/v1/appointments?from=2027-03-16T00:00:00Z&to=2027-03-15T00:00:00Z", { token: p.token });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["from:invalid_range"]);
    const day = await call("GET", "/v1/appointments?from=2027-03-15T00:00:00Z&to=2027-03-16T00:00:00Z", { token: p.token });
    expect((await json(day)).pagination.total).toBe(1);
  });

  it("a showing of a property takes its address and emits property.showing_scheduled with the property", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const showing = await createAppointment(p.token, { type: "showing", location: undefined, propertyId: property.id });
    expect(showing.location).toContain(property.address.street);
    const [event] = await storedEvents(p.organizationId, ["property.showing_scheduled"]);
    expect(event!.data).toMatchObject({
      object: { id: property.id },
      appointment: { id: showing.id, startsAt: showing.startsAt, timeZone: "America/New_York" },
    });
    const byProperty = await json(await call("GET", `/v1/appointments?propertyId=${property.id}`, { token: p.token }));
    expect(byProperty.data.map((a: { id: string }) => a.id)).toEqual([showing.id]);
  });

  it("mails each contact attendee an iTIP REQUEST in the appointment's zone, once, however often the events are handled", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("invitee");
    const contact = await createContact(p.token, { firstName: "Zoë", lastName: "Ñandú, Jr.", email });
    const created = await createAppointment(p.token, {
      title: "Walk-through; bring keys, and the \\ backslash",
      attendees: [{ userId: p.userId }, { contactId: contact.id }],
    });
    await deliverInvitations(p.organizationId);
    await deliverInvitations(p.organizationId);
    const mails = await mailWithAttachments(email);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toBe("Invitation: Walk-through; bring keys, and the \\ backslash");
    expect(mails[0]!.attachments).toEqual([
      { filename: "invite.ics", contentType: "text/calendar; method=REQUEST; charset=UTF-8", content: expect.any(String) },
    ]);
    const ics = mails[0]!.attachments[0]!.content;
    const { cal, vevent, event } = eventOf(ics);
    expect(cal.getFirstPropertyValue("method")).toBe("REQUEST");
    expect(event.uid).toContain(created.id);
    expect(event.sequence).toBe(0);
    expect(event.summary).toBe("Walk-through; bring keys, and the \\ backslash");
    // 18:00 UTC on 15 March 2027 is 14:00 in New York (EDT since 14 March).
    const zone = cal.getFirstSubcomponent("vtimezone")!;
    expect(zone.getFirstPropertyValue("tzid")).toBe("America/New_York");
    expect(vevent.getFirstProperty("dtstart")!.getParameter("tzid")).toBe("America/New_York");
    expect(event.startDate.toString()).toBe("2027-03-15T14:00:00");
    ICAL.TimezoneService.register(zone);
    expect(event.startDate.toJSDate().toISOString()).toBe("2027-03-15T18:00:00.000Z");
    expect(event.endDate.toJSDate().toISOString()).toBe("2027-03-15T19:00:00.000Z");
    const attendees = vevent.getAllProperties("attendee").map((a) => a.getFirstValue());
    expect(attendees).toContain(`mailto:${email}`);
    expect(
      vevent
        .getAllProperties("attendee")
        .find((a) => a.getFirstValue() === `mailto:${email}`)!
        .getParameter("cn"),
    ).toBe("Zoë Ñandú, Jr.");
    expect(vevent.getFirstPropertyValue("organizer")).toMatch(/^mailto:/);
    const read = await json(await call("GET", `/v1/appointments/${created.id}`, { token: p.token }));
    expect(read.data.attendees.find((a: { contactId: string }) => a.contactId === contact.id).invitedSequence).toBe(0);
  });

  it("a change of time bumps SEQUENCE and mails the update; a response change alone does not; cancel mails METHOD:CANCEL", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("moved");
    const contact = await createContact(p.token, { email });
    const created = await createAppointment(p.token, { attendees: [{ contactId: contact.id }] });
    await deliverInvitations(p.organizationId);

    const answered = await patchAppointment(p.token, created.id, { attendees: [{ contactId: contact.id, response: "accepted" }] });
    expect(answered).toMatchObject({ sequence: 0, version: 2 });
    expect(answered.attendees[0]).toMatchObject({ response: "accepted", invitedSequence: 0 });

    const moved = await patchAppointment(p.token, created.id, { startsAt: "2027-03-16T18:00:00Z", endsAt: "2027-03-16T19:30:00Z" });
    expect(moved.sequence).toBe(1);
    await deliverInvitations(p.organizationId);
    let mails = await mailWithAttachments(email);
    expect(mails.map((m) => m.subject)).toEqual([
      "Invitation: Buyer consultation: Office, 1 Main St",
      "Updated invitation: Buyer consultation: Office, 1 Main St",
    ]);
    const update = eventOf(mails[1]!.attachments[0]!.content);
    expect(update.event.sequence).toBe(1);
    expect(update.event.startDate.toString()).toBe("2027-03-16T14:00:00");
    expect(update.event.uid).toBe(eventOf(mails[0]!.attachments[0]!.content).event.uid);

    const res = await call("POST", `/v1/appointments/${created.id}/cancel`, { token: p.token, body: { reason: "Buyer found another" } });
    expect(res.status).toBe(200);
    expect((await json(res)).data).toMatchObject({ status: "cancelled", sequence: 2 });
    await expectCrmError(await call("POST", `/v1/appointments/${created.id}/cancel`, { token: p.token }), 409, "conflict_error");
    await deliverInvitations(p.organizationId);
    mails = await mailWithAttachments(email);
    expect(mails).toHaveLength(3);
    expect(mails[2]!.subject).toMatch(/^Cancelled: /);
    expect(mails[2]!.attachments[0]!.contentType).toBe("text/calendar; method=CANCEL; charset=UTF-8");
    const cancel = eventOf(mails[2]!.attachments[0]!.content);
    expect(cancel.cal.getFirstPropertyValue("method")).toBe("CANCEL");
    expect(cancel.vevent.getFirstPropertyValue("status")).toBe("CANCELLED");
    expect(cancel.event.sequence).toBe(2);
    const [cancelled] = await storedEvents(p.organizationId, ["appointment.cancelled"]);
    expect(cancelled!.data).toMatchObject({ reason: "Buyer found another", changes: ["status"] });
  });

  it("an outcome waits until the appointment started; a cancelled one takes notes and outcome only", async () => {
    const p = await createPrincipal();
    const future = await createAppointment(p.token);
    const early = await call("PATCH", `/v1/appointments/${future.id}`, { token: p.token, body: { outcome: "Offer coming" } });
    expect(issuePairs(await expectCrmError(early, 422, "validation_error"))).toEqual(["outcome:not_happened_yet"]);
    const past = await createAppointment(p.token, { startsAt: "2024-01-10T15:00:00Z", endsAt: "2024-01-10T16:00:00Z" });
    expect((await patchAppointment(p.token, past.id, { outcome: "Offer coming" })).outcome).toBe("Offer coming");
    await call("POST", `/v1/appointments/${future.id}/cancel`, { token: p.token });
    const moved = await call("PATCH", `/v1/appointments/${future.id}`, { token: p.token, body: { location: "Elsewhere" } });
    await expectCrmError(moved, 409, "conflict_error");
    expect((await patchAppointment(p.token, future.id, { notes: "Rescheduling next week" })).notes).toBe("Rescheduling next week");
  });
});
