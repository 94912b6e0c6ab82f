import { fromSpreadsheetSafe } from "../crm/export";
import { ContactCreate } from "../contacts/schemas";
import type { IncomingContact } from "../intake/service";
import { issuesFromZod } from "../lib/validation";

/** A problem of one row, by the column it came from (never the value: the errors CSV holds no personal data). */
export interface RowIssue {
  column: string;
  reason: string;
}

export type RowResult = { ok: IncomingContact; warnings: RowIssue[] } | { ok: null; errors: RowIssue[] };

const TYPES = new Set(["LEAD", "CLIENT", "PAST_CLIENT", "REFERRAL", "VENDOR"]);
const STATUSES = new Set(["ACTIVE", "INACTIVE", "CONVERTED", "DISQUALIFIED", "DO_NOT_CONTACT"]);

/** Follow Up Boss stages and kvCORE statuses, as our type or status; any other stage becomes a tag. */
const STAGES: Record<string, { type?: string; status?: string }> = {
  lead: { type: "LEAD" },
  new: { type: "LEAD" },
  prospect: { type: "LEAD" },
  "hot prospect": { type: "LEAD" },
  nurture: { type: "LEAD" },
  "active client": { type: "CLIENT" },
  client: { type: "CLIENT" },
  "under contract": { type: "CLIENT" },
  pending: { type: "CLIENT" },
  closed: { type: "PAST_CLIENT" },
  "past client": { type: "PAST_CLIENT" },
  sphere: { type: "REFERRAL" },
  vendor: { type: "VENDOR" },
  trash: { status: "DISQUALIFIED" },
  unresponsive: { status: "INACTIVE" },
  inactive: { status: "INACTIVE" },
  "do not contact": { status: "DO_NOT_CONTACT" },
};

/** "Zillow Premier Agent" → ZILLOW_PREMIER_AGENT: the source code the API stores. */
export function sourceCode(text: string): string {
  const code = text
    .toUpperCase()
    .normalize("NFKD")
    .replace(/[^A-Z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 40);
  return /^[0-9]/.test(code) ? `S_${code}`.slice(0, 40) : code;
}

const splitList = (text: string) =>
  text
    .split(/[,;]/)
    .map((t) => t.trim())
    .filter(Boolean);

/**
 * One CSV record as a contact input, through ContactCreate like a POST /v1/contacts body (so a rule added to the schema,
 * custom fields' types say, holds for imports too). `targets` names each column's field; `userOf` resolves an assignee.
 */
export function contactFromRecord(
  fields: string[],
  columns: string[],
  targets: (string | null)[],
  userOf: (named: string) => string | null,
): RowResult {
  const input: Record<string, unknown> = {};
  const address: Record<string, string> = {};
  const customFields: Record<string, string> = {};
  const from = new Map<string, string>();
  const emails: string[] = [];
  const phones: string[] = [];
  const tags: string[] = [];
  const warnings: RowIssue[] = [];
  const set = (field: string, value: unknown, column: string) => {
    if (input[field] !== undefined) return;
    input[field] = value;
    from.set(field, column);
  };
  targets.forEach((target, i) => {
    const column = columns[i] ?? `column ${i + 1}`;
    const value = fromSpreadsheetSafe((fields[i] ?? "").trim());
    if (!target || value === "") return;
    if (target.startsWith("address.")) {
      address[target.slice(8)] ??= value;
      from.set(target, column);
    } else if (target.startsWith("customFields.")) {
      customFields[target.slice(13)] = value;
      from.set(target, column);
    } else if (target === "email") {
      emails.unshift(value);
      set("email", value, column);
    } else if (target === "otherEmail") emails.push(value);
    else if (target === "phone" || target === "secondaryPhone") {
      phones.push(value);
      set(target, value, column);
    } else if (target === "otherPhone") phones.push(value);
    else if (target === "fullName") {
      const [first, ...rest] = value.split(/\s+/);
      set("firstName", first, column);
      if (rest.length) set("lastName", rest.join(" "), column);
    } else if (target === "tags") {
      tags.push(...splitList(value));
      from.set("tags", column);
    } else if (target === "stage" || target === "type" || target === "status") {
      const upper = value.toUpperCase().replace(/[\s-]+/g, "_");
      const known = STAGES[value.toLowerCase()];
      if (TYPES.has(upper)) set("type", upper, column);
      else if (STATUSES.has(upper)) set("status", upper, column);
      else if (known?.type) set("type", known.type, column);
      else if (known?.status) set("status", known.status, column);
      else {
        tags.push(value.replaceAll(",", " ").slice(0, 50));
        from.set("tags", column);
      }
    } else if (target === "source") set("source", sourceCode(value) || null, column);
    else if (target === "assignedTo") {
      const id = userOf(value);
      if (id) set("assignedTo", id, column);
      else
        warnings.push({
          column,
          reason: "unknown_user: no single user of the organization has this id, e-mail or name; imported unassigned",
        });
    } else if (target === "leadScore") set("leadScore", /^\d+$/.test(value) ? Number(value) : value, column);
    else set(target, value, column);
  });
  if (emails.length === 0) {
    const column = columns[targets.indexOf("email")] ?? "email";
    return { ok: null, errors: [{ column, reason: "email_required: a contact needs an e-mail" }] };
  }
  if (Object.keys(address).length) input.address = address;
  if (Object.keys(customFields).length) input.customFields = customFields;
  if (tags.length) input.tags = [...new Set(tags)];
  const parsed = ContactCreate.safeParse(input);
  if (!parsed.success) {
    const errors = issuesFromZod(parsed.error, input).map((issue) => {
      const field = issue.path.slice(0, issue.path[0] === "address" || issue.path[0] === "customFields" ? 2 : 1).join(".");
      return {
        column: from.get(field) ?? from.get(String(issue.path[0])) ?? field,
        reason: `${issue.code}: ${field} ${issue.message}`.slice(0, 300),
      };
    });
    return { ok: null, errors };
  }
  return { ok: { input: parsed.data, emails, phones }, warnings };
}
