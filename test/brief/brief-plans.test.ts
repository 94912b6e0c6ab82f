// The daily brief's reads are each one index range, or two merged in order (migrations/tenant/0027_brief_indexes.sql):
// checked on the plan SQLite picks, so a read that stopped using its index (an OR, a bound value where the partial
// index names a literal) is caught here rather than on a large book.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { queryPlan } from "../helpers/query-plan";
import { briefReads } from "../../src/brief/service";
import { createDb } from "../../src/db/client";

const reads = briefReads(createDb(env.DB_SHARD_0), "org-plans", "user-plans", 10, new Date());
/** Every read's plan: no table scan, no sort, and each table through the index named. */
const EXPECTED: Record<keyof typeof reads, RegExp[]> = {
  leads: [
    /MERGE \(UNION ALL\)/,
    /SEARCH contacts USING INDEX contacts_org_uncontacted_leads_idx \(organization_id=\? AND assigned_to=\?\)/,
  ],
  mineLeadCount: [/contacts_org_uncontacted_leads_idx \(organization_id=\? AND assigned_to=\?\)/],
  nobodysLeadCount: [/contacts_org_uncontacted_leads_idx \(organization_id=\? AND assigned_to=\?\)/],
  tasks: [
    /MERGE \(UNION ALL\)/,
    /SEARCH tasks USING INDEX tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at>\? AND due_at<\?\)/,
    /SEARCH deals USING INDEX sqlite_autoindex_deals_1 \(id=\?\)/,
  ],
  mineTaskCount: [/tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at>\? AND due_at<\?\)/],
  nobodysTaskCount: [/tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at>\? AND due_at<\?\)/],
  obligations: [/SEARCH document_obligations USING INDEX document_obligations_org_due_idx \(organization_id=\? AND due_date<\?\)/],
  obligationCount: [/SEARCH document_obligations USING COVERING INDEX document_obligations_org_due_idx/],
  envelopes: [/SEARCH envelopes USING INDEX envelopes_org_status_idx \(organization_id=\? AND status=\?\)/],
  envelopeCount: [/SEARCH envelopes USING INDEX envelopes_org_status_idx \(organization_id=\? AND status=\?\)/],
  appointments: [/SEARCH appointments USING INDEX appointments_org_starts_idx \(organization_id=\? AND starts_at>\? AND starts_at<\?\)/],
  appointmentCount: [
    /SEARCH appointments USING INDEX appointments_org_starts_idx \(organization_id=\? AND starts_at>\? AND starts_at<\?\)/,
  ],
  signers: [
    /SEARCH envelope_signers USING INDEX envelope_signers_envelope_idx \(envelope_id=\?\)/,
    /SEARCH envelopes USING INDEX envelopes_org_status_idx \(organization_id=\? AND status=\?\)/,
  ],
};

describe("daily brief plans", () => {
  it.each(Object.keys(EXPECTED) as (keyof typeof reads)[])("%s reads its index in order, scanning and sorting nothing", async (name) => {
    const details = await queryPlan(reads[name]);
    for (const expected of EXPECTED[name]) expect(details, details).toMatch(expected);
    expect(details, details).not.toMatch(
      /USE TEMP B-TREE|\bSCAN (contacts|tasks|deals|envelopes|envelope_signers|document_obligations|appointments|appointment_attendees)\b/,
    );
  });
});
