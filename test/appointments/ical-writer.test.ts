import { describe, expect, it } from "vitest";
import { escapeText, foldLine, writeIcal } from "../../src/lib/ical";
import { isTimeZone, vtimezone } from "../../src/lib/time-zones";
import { ICAL, parseIcal } from "../helpers/appointments";

const octets = (s: string) => new TextEncoder().encode(s).length;

describe("the iCalendar writer", () => {
  it("folds at 75 octets without splitting a UTF-8 character, and unfolding gives the line back", () => {
    for (const filler of ["a", "é", "✓", "😀"]) {
      for (let n = 60; n < 90; n++) {
        const line = `DESCRIPTION:${"x".repeat(n % 7)}${filler.repeat(n)}`;
        const folded = foldLine(line);
        const parts = folded.split("\r\n");
        for (const [i, part] of parts.entries()) {
          expect(octets(part)).toBeLessThanOrEqual(75);
          if (i > 0) expect(part.startsWith(" ")).toBe(true);
          expect(part).not.toContain("\uFFFD");
        }
        expect(parts.map((p, i) => (i === 0 ? p : p.slice(1))).join("")).toBe(line);
      }
    }
  });

  it("escapes backslash, semicolon, comma and every line break in TEXT, and a parser reads the text back", () => {
    const text = "a\\b;c,d\r\ne\nf\rg";
    expect(escapeText(text)).toBe("a\\\\b\\;c\\,d\\ne\\nf\\ng");
    const ics = writeIcal({
      name: "VCALENDAR",
      properties: [
        { name: "PRODID", value: "-//test//EN" },
        { name: "VERSION", value: "2.0" },
      ],
      components: [
        {
          name: "VEVENT",
          properties: [
            { name: "UID", value: "x@test" },
            { name: "DTSTAMP", value: "20270101T000000Z" },
            { name: "DTSTART", value: "20270101T100000Z" },
            { name: "SUMMARY", text },
            { name: "ORGANIZER", params: { CN: 'Pat "P" O\'Neil, Jr.; Broker' }, value: "mailto:pat@example.test" },
          ],
        },
      ],
    });
    const vevent = parseIcal(ics).getFirstSubcomponent("vevent")!;
    expect(vevent.getFirstPropertyValue("summary")).toBe("a\\b;c,d\ne\nf\ng");
    expect(vevent.getFirstProperty("organizer")!.getParameter("cn")).toBe("Pat P O'Neil, Jr.; Broker");
  });

  it("builds VTIMEZONE from the zone's real changes: New York's 2027 switches to the minute, one STANDARD for Tokyo", () => {
    const ny = new ICAL.Component(
      ICAL.parse(writeIcal({ name: "VCALENDAR", properties: [], components: [vtimezone("America/New_York", 2026, 2028)] })),
    ).getFirstSubcomponent("vtimezone")!;
    const onsets = ny
      .getAllSubcomponents()
      .map((o) => `${o.name} ${o.getFirstPropertyValue("dtstart")} ${o.getFirstPropertyValue("tzoffsetto")}`);
    expect(onsets).toContain("daylight 2027-03-14T02:00:00 -04:00");
    expect(onsets).toContain("standard 2027-11-07T02:00:00 -05:00");
    expect(onsets).toHaveLength(7);
    const zone = new ICAL.Timezone(ny);
    // 06:59 UTC on 14 March 2027 is still EST; 07:00 is the switch to EDT.
    expect(zone.utcOffset(ICAL.Time.fromDateTimeString("2027-03-14T01:59:00"))).toBe(-5 * 3600);
    expect(zone.utcOffset(ICAL.Time.fromDateTimeString("2027-03-14T03:00:00"))).toBe(-4 * 3600);
    const tokyo = vtimezone("Asia/Tokyo", 2026, 2028);
    expect(tokyo.components!.map((c) => c.name)).toEqual(["STANDARD"]);
    expect(isTimeZone("Asia/Kolkata")).toBe(true);
    expect(isTimeZone("+05:00")).toBe(false);
    expect(isTimeZone("Not/AZone")).toBe(false);
  });
});
