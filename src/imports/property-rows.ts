import { fromSpreadsheetSafe } from "../crm/export";
import { PropertyCreate } from "../properties/schemas";
import { planPropertyImport } from "../properties/service";
import { issuesFromZod } from "../lib/validation";
import type { ServiceContext } from "../service-context";
import type { RowIssue } from "./contact-rows";
import { targetsOf } from "./mapping";
import type { ImportRow } from "./service";

const NUMERIC = new Set(["details.bedrooms", "details.bathrooms", "details.squareFootage", "details.yearBuilt", "listing.listPrice"]);

/** "$1,250,000" → 1250000; anything else that is no number stays text, for the schema to name. */
const numberOf = (text: string): number | string => {
  const plain = text.replace(/[$,\s]/g, "");
  return /^-?\d+(\.\d+)?$/.test(plain) ? Number(plain) : text;
};

/** One CSV record as a property input (through PropertyCreate, as POST /v1/properties takes it). */
function propertyFromRecord(
  fields: string[],
  columns: string[],
  targets: (string | null)[],
): { ok: PropertyCreate } | { ok: null; errors: RowIssue[] } {
  const input: Record<string, Record<string, unknown> | unknown> = {};
  const from = new Map<string, string>();
  targets.forEach((target, i) => {
    const value = fromSpreadsheetSafe((fields[i] ?? "").trim());
    if (!target || value === "") return;
    const column = columns[i] ?? `column ${i + 1}`;
    from.set(target, column);
    if (target === "mlsId") {
      input.mlsId = value;
      return;
    }
    const [group, field] = target.split(".") as [string, string];
    const into = (input[group] ??= {}) as Record<string, unknown>;
    if (target === "details.propertyType") into[field] = value.toUpperCase().replace(/[\s-]+/g, "_");
    else into[field] = NUMERIC.has(target) ? numberOf(value) : value;
  });
  const parsed = PropertyCreate.safeParse(input);
  if (parsed.success) return { ok: parsed.data };
  return {
    ok: null,
    errors: issuesFromZod(parsed.error, input).map((issue) => {
      const field = issue.path.slice(0, 2).join(".");
      return { column: from.get(field) ?? field, reason: `${issue.code}: ${field} ${issue.message}`.slice(0, 300) };
    }),
  };
}

/** The statements and counts of one chunk's records of properties. */
export async function planPropertyRows(ctx: ServiceContext, job: ImportRow, records: string[][], firstRow: number) {
  const columns = job.columns!;
  const targets = targetsOf(job.resolvedMapping!, columns);
  const inputs: PropertyCreate[] = [];
  const issues: { row: number; issue: RowIssue }[] = [];
  let failed = 0;
  records.forEach((fields, i) => {
    const result = propertyFromRecord(fields, columns, targets);
    if (result.ok) inputs.push(result.ok);
    else {
      failed++;
      issues.push(...result.errors.map((issue) => ({ row: firstRow + i, issue })));
    }
  });
  const plan = inputs.length
    ? await planPropertyImport(ctx, inputs, job.onDuplicate as "skip" | "update" | "merge")
    : { statements: [], outcomes: [] };
  return { outcomes: plan.outcomes, failed, issues, statements: plan.statements };
}
