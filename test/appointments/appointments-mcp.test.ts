import { describe, expect, it } from "vitest";
import { createContact, uniqueEmail } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { createProperty } from "../helpers/properties";
import { deliverInvitations, mailWithAttachments, parseIcal, storedEvents } from "../helpers/appointments";

describe("the schedule_showing MCP tool", () => {
  it("schedules a 30-minute showing of the property with the caller and the buyers, and the buyers are invited", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const email = uniqueEmail("buyer");
    const buyer = await createContact(p.token, { email });
    const client = await connect(p.token);
    const r = await tool(client, "schedule_showing", {
      propertyId: property.id,
      startsAt: "2027-06-01T16:00:00Z",
      timeZone: "America/Chicago",
      contactIds: [buyer.id],
    });
    expect(r.isError, r.text).toBe(false);
    expect(r.data.appointment).toMatchObject({
      type: "showing",
      propertyId: property.id,
      endsAt: "2027-06-01T16:30:00.000Z",
      attendees: [
        { userId: p.userId, response: "accepted" },
        { contactId: buyer.id, response: "needs_action" },
      ],
    });
    expect(await storedEvents(p.organizationId, ["property.showing_scheduled"])).toHaveLength(1);
    await deliverInvitations(p.organizationId);
    const [mail] = await mailWithAttachments(email);
    const cal = parseIcal(mail!.attachments[0]!.content);
    expect(cal.getFirstSubcomponent("vevent")!.getFirstPropertyValue("location")).toContain(property.address.street);

    const refused = await tool(client, "schedule_showing", {
      propertyId: "00000000-0000-4000-8000-000000000000",
      startsAt: "2027-06-01T16:00:00Z",
      timeZone: "America/Chicago",
    });
    expect(refused.isError).toBe(true);
    await client.close();
  });

  it("names every bad argument at once, as POST /v1/appointments does, the year past 9999 among them", async () => {
    // The tool's own looser check answered first and alone: a bad start hid a bad zone, title and notes.
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const client = await connect(p.token);
    const r = await tool(client, "schedule_showing", {
      propertyId: property.id,
      startsAt: "9999-12-31T23:45:00-14:00",
      timeZone: "Mars/Olympus_Mons",
      title: "Open\r\nhouse",
      notes: "a\u0007b",
    });
    expect(r.isError, r.text).toBe(true);
    expect(r.data.error).toBe("validation_error");
    expect((r.data.issues as { field: string; code: string }[]).map((i) => `${i.field} ${i.code}`).sort()).toEqual([
      "notes invalid_character",
      "startsAt out_of_range",
      "timeZone invalid_time_zone",
      "title invalid_character",
    ]);
    await client.close();
  });
});
