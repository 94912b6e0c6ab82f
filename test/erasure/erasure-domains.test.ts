// Issue 41 §5: a person's erasure is a workflow across the domains, each erasing its own tables through one interface
// (src/crm/erasure.ts `Erasable`) in the order src/erasure/domains.ts gives. What the order and the domains' shares of
// the redaction hold, checked where a reorder or a dropped part would not show in one erasure's end state.
import { describe, expect, it } from "vitest";
import { communicationsErasable } from "../../src/communications/service";
import { contactsErasable } from "../../src/contacts/service";
import { redactJson } from "../../src/crm/copies";
import { ERASED, type Person, scrubOf } from "../../src/crm/erasure";
import { documentsErasable } from "../../src/documents/service";
import { ERASABLES } from "../../src/erasure/domains";
import { platformErasable } from "../../src/erasure/platform";
import { importsErasable } from "../../src/imports/service";
import { leadsErasable } from "../../src/leads/service";
import { mergeErasable } from "../../src/merge/service";
import { signaturesErasable } from "../../src/signatures/service";
import { testimonialsErasable } from "../../src/testimonials/service";

const person: Person = {
  id: "c-ada",
  emailKey: "ada@example.test",
  fullName: "Ada Lovelace",
  phones: ["+1 416 555 0142"],
  words: ["+1 416 555 0142", "ada@example.test", "Ada Lovelace"],
};

const at = (domain: object) => ERASABLES.indexOf(domain as (typeof ERASABLES)[number]);

describe("the order of the domains' erasures (src/erasure/domains.ts)", () => {
  it("names each domain once", () => {
    expect(new Set(ERASABLES).size).toBe(ERASABLES.length);
    for (const domain of [importsErasable, signaturesErasable, documentsErasable, contactsErasable, platformErasable, leadsErasable])
      expect(at(domain)).toBeGreaterThanOrEqual(0);
  });

  it("asks the imports first: a running import refuses the erasure before any domain acts (signing links included)", () => {
    const acting = ERASABLES.filter((d) => d.begin && d !== importsErasable);
    expect(acting.length).toBeGreaterThan(0);
    for (const domain of acting) expect(at(importsErasable)).toBeLessThan(at(domain));
  });

  it("deletes the leads' reviews before the merged keys that find some of them, in begin's batch", () => {
    expect(at(leadsErasable)).toBeLessThan(at(mergeErasable));
  });

  it("erases envelopes and documents before the events' rewrite, which must find the event of the envelope's void", () => {
    expect(at(signaturesErasable)).toBeLessThan(at(platformErasable));
    expect(at(documentsErasable)).toBeLessThan(at(platformErasable));
  });
});

describe("the domains' shares of the redaction (Erasable.objects)", () => {
  const scrub = scrubOf(person, true, ERASABLES);

  it("empties the person's contact object, a communication with them and their testimonial's author display, and nobody else's", () => {
    const copy = JSON.stringify({
      contact: { id: person.id, firstName: "Ada", lastName: "Lovelace", phone: null, type: "LEAD" },
      communication: { id: "m1", contactId: person.id, type: "sms", direction: "inbound", body: "see you at 5", subject: null },
      testimonial: { id: "t1", authorPersonId: person.id, displayName: "A. L.", displayLocation: "Toronto", rating: 5 },
      other: { id: "c-bob", firstName: "Bob", notes: "met Ada Lovelace" },
    });
    expect(JSON.parse(redactJson(copy, scrub))).toEqual({
      contact: { id: person.id, firstName: ERASED, lastName: ERASED, phone: null, type: "LEAD" },
      communication: { id: "m1", contactId: person.id, type: "sms", direction: "inbound", body: ERASED, subject: null },
      testimonial: { id: "t1", authorPersonId: person.id, displayName: null, displayLocation: null, rating: 5 },
      other: { id: "c-bob", firstName: "Bob", notes: `met ${ERASED}` },
    });
  });

  it("comes from the domains: without them only the mentions go", () => {
    const copy = JSON.stringify({ id: "m1", contactId: person.id, type: "sms", direction: "inbound", body: "see you at 5" });
    expect(redactJson(copy, scrubOf(person, true))).toBe(copy);
    expect(JSON.parse(redactJson(copy, scrubOf(person, true, [communicationsErasable]))).body).toBe(ERASED);
    expect(
      JSON.parse(
        redactJson(JSON.stringify({ authorPersonId: person.id, displayName: "A." }), scrubOf(person, true, [testimonialsErasable])),
      ),
    ).toEqual({ authorPersonId: person.id, displayName: null });
  });

  it("lets the contacts rewrite a trashed contact's kept row: tags that name the person leave it", () => {
    const rewrite = scrub.trashedRows.get("contacts")!;
    const row = JSON.stringify({ id: "c-bob", tags: JSON.stringify(["vip", "friend of Ada Lovelace"]) });
    expect(JSON.parse(JSON.parse(rewrite(row, scrub)).tags)).toEqual(["vip"]);
  });
});
