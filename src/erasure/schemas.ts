import { z } from "@hono/zod-openapi";
import { Communication } from "../communications/schemas";
import { Activity, Contact } from "../contacts/schemas";
import { RETAINED_KINDS } from "../crm/erasure";

// DELETE /v1/contacts/{id}?erase=true and GET /v1/contacts/{id}/export (declared with the contact routes, contacts/routes.ts).

/** What an erasure removed, by kind and count, and what it kept because the business must keep it. */
export const Erasure = z
  .object({
    id: z.string(),
    deleted: z.literal(true),
    erased: z
      .record(z.string(), z.int())
      .openapi({ description: "Records removed or cleaned of the person's name, e-mail and phone, by kind" }),
    retained: z.array(z.enum(RETAINED_KINDS)).openapi({
      description: "The kinds of record kept as they are, which still name the person (how many and why in `retainedRecords`)",
    }),
    retainedRecords: z.array(z.object({ kind: z.enum(RETAINED_KINDS), count: z.int().min(1), reason: z.string() })).openapi({
      description:
        "Per kind in `retained`: how many records name the person and why they are kept — a completed envelope is a signed, sealed record (signers, audit trail, the document they signed and its PDFs); a clickwrap acceptance is immutable (spec); an unsigned document or uncompleted envelope that names their name but not their e-mail or phone may be someone else's (`documents_by_name`); texts that name a name another contact also has are kept as written (`name_mentions`)",
    }),
  })
  .openapi("Erasure");
export type Erasure = z.infer<typeof Erasure>;

const records = (description: string) => z.array(z.record(z.string(), z.unknown())).openapi({ description });
/** GET /v1/contacts/{id}/export (the right of access, access.ts). */
export const PersonalData = z
  .object({
    exportedAt: z.string(),
    contact: Contact.extend({ inTrash: z.boolean() }),
    activities: z.array(Activity),
    communications: z.array(Communication),
    mails: records(
      "Mail sent to them: id, subject, createdAt, bodies left out: they hold links (with `documents:read`, `signatures:read` and `reputation:read`: subjects name documents, envelopes and surveys)",
    ).optional(),
    leadReviews: records("Leads waiting for review with one of their phone numbers"),
    deals: records("Deals whose contact they are (with `deals:read`)").optional(),
    testimonials: records("Testimonials they wrote (with `reputation:read`)").optional(),
    referrals: records("Referrals that name them, as the lead made or by e-mail or phone (with `reputation:read`)").optional(),
    surveys: records("Surveys sent to them, link tokens left out (with `reputation:read`)").optional(),
    surveyResponses: records("Their answers (with `reputation:read`)").optional(),
    clickwrapAcceptances: records("Acceptances recorded under their id, e-mail or phone (with `clickwrap:read`)").optional(),
    documents: records(
      "Documents that name their e-mail or phone, or a name no other contact has: id, createdAt (with `documents:read`)",
    ).optional(),
    envelopes: records("Signature envelopes that name them the same way: id, status (with `signatures:read`)").optional(),
    tasks: records("The tasks on their contact (with `tasks:read`)").optional(),
    appointments: records("Appointments they attend, with every attendee (with `appointments:read`)").optional(),
    omitted: z
      .array(
        z.enum([
          "mails",
          "deals",
          "testimonials",
          "referrals",
          "surveys",
          "surveyResponses",
          "clickwrapAcceptances",
          "documents",
          "envelopes",
          "tasks",
          "appointments",
        ]),
      )
      .openapi({ description: "The parts left out because the credential lacks their read permission (empty: the export is complete)" }),
  })
  .openapi("PersonalData");
