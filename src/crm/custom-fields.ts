import { z } from "@hono/zod-openapi";
import { and, eq, isNull, sql } from "drizzle-orm";
import { customFieldDefinitions } from "../db/schema";
import { guard, type Statement } from "../db/write";
import { Conflict, type FieldIssue, Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import type { KeysetTable, SortKey, Where } from "./keyset";

/**
 * Custom field values on contacts, deals and properties (docs/domains/search-and-custom-fields.md): the input and output
 * schemas, the check of a write's values against the organization's definitions, and the list filters and sorts on
 * them. The values are a JSON object on the record's own row (`custom_fields`); lists read them with json_extract
 * over the organization's rows. The definitions themselves are managed in src/custom-fields.
 */
export const CUSTOM_FIELD_OBJECTS = ["contact", "deal", "property"] as const;
export type CustomFieldObject = (typeof CUSTOM_FIELD_OBJECTS)[number];
export const CUSTOM_FIELD_TYPES = ["text", "number", "date", "boolean", "select"] as const;
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number];
export type CustomValue = string | number | boolean;
export type CustomValues = Record<string, CustomValue>;

/** A safe identifier: it is written into JSON paths and query parameter names as it is. */
export const KEY_PATTERN = /^[a-z][a-z0-9_]{0,39}$/;
/** Definitions an organization may hold per object: bounds a record's values, a write's check and the list query. */
export const MAX_DEFINITIONS_PER_OBJECT = 100;
export const MAX_TEXT_CHARS = 1000;

export interface FieldDefinition {
  id: string;
  key: string;
  type: CustomFieldType;
  options: string[] | null;
}

/** The table of each object, for the sweep of a deleted definition's values. */
export const OBJECT_TABLES: Record<CustomFieldObject, "contacts" | "deals" | "properties"> = {
  contact: "contacts",
  deal: "deals",
  property: "properties",
};

export const CustomFieldValues = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).openapi("CustomFieldValues", {
  description:
    "The organization's custom fields (GET /v1/custom-fields) by key: text, date (YYYY-MM-DD) and select as strings, number, boolean",
  example: { budget: 450000, move_in: "2027-03-01", pre_approved: true },
});

export const CustomFieldsInput = z
  .record(z.string().max(100), z.union([z.string().max(MAX_TEXT_CHARS), z.number(), z.boolean(), z.null()]))
  .refine((v) => Object.keys(v).length <= MAX_DEFINITIONS_PER_OBJECT, {
    message: `At most ${MAX_DEFINITIONS_PER_OBJECT} custom fields`,
    params: { code: "too_big" },
  })
  .openapi("CustomFieldsInput", {
    description: `Values by key of the organization's custom fields, each checked against its definition (422 naming customFields.<key>); null removes a value, keys not sent keep theirs`,
    example: { budget: 450000, pre_approved: true, old_field: null },
  });
export type CustomFieldsInput = z.infer<typeof CustomFieldsInput>;

/** The organization's definitions of `object`: one index range (the unique index on organization, object, key). */
export async function readDefinitions(ctx: ServiceContext, object: CustomFieldObject): Promise<FieldDefinition[]> {
  const rows = await ctx.db
    .select({
      id: customFieldDefinitions.id,
      key: customFieldDefinitions.key,
      type: customFieldDefinitions.type,
      options: customFieldDefinitions.options,
    })
    .from(customFieldDefinitions)
    .where(
      and(
        eq(customFieldDefinitions.organizationId, ctx.organizationId),
        eq(customFieldDefinitions.object, object),
        isNull(customFieldDefinitions.deletedAt),
      ),
    );
  return rows as FieldDefinition[];
}

const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
const isDate = (v: string) => DATE.test(v) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v);

/** Why `value` is not a value of `def`, or null when it is. */
function valueProblem(def: FieldDefinition, value: CustomValue): { code: string; message: string } | null {
  switch (def.type) {
    case "text":
      return typeof value === "string" && value.trim().length > 0 ? null : { code: "invalid_type", message: "Must be a non-empty string" };
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : { code: "invalid_type", message: "Must be a number" };
    case "boolean":
      return typeof value === "boolean" ? null : { code: "invalid_type", message: "Must be true or false" };
    case "date":
      return typeof value === "string" && isDate(value) ? null : { code: "invalid_date", message: "Must be a date as YYYY-MM-DD" };
    case "select":
      return typeof value === "string" && def.options?.includes(value)
        ? null
        : { code: "invalid_enum_value", message: `Must be one of ${(def.options ?? []).join(", ")}` };
  }
}

/** Every problem of a write's values against the definitions, each naming customFields.<key>. */
export function customFieldIssues(
  defs: FieldDefinition[],
  input: CustomFieldsInput,
  object: CustomFieldObject,
  prefix: string[] = [],
): FieldIssue[] {
  const byKey = new Map(defs.map((d) => [d.key, d]));
  const issues: FieldIssue[] = [];
  for (const [key, value] of Object.entries(input)) {
    const path = [...prefix, "customFields", key];
    const at = { field: path.join("."), path };
    const def = byKey.get(key);
    if (!def)
      issues.push({
        ...at,
        code: "unknown_field",
        message: `No custom field '${key}' on ${OBJECT_TABLES[object]} (GET /v1/custom-fields?object=${object})`,
      });
    else if (value !== null) {
      const problem = valueProblem(def, value);
      if (problem) issues.push({ ...at, ...problem });
    }
  }
  return issues;
}

/**
 * Values read from text (a CSV cell) as their fields' types take them: a number field's "450000" is 450000, a boolean's
 * true/false/yes/no/1/0 is true or false; anything else stays text, so the check that follows names what is wrong.
 */
export function customFieldsFromText(defs: FieldDefinition[], values: Record<string, string>): CustomFieldsInput {
  const byKey = new Map(defs.map((d) => [d.key, d]));
  return Object.fromEntries(
    Object.entries(values).map(([key, text]) => {
      const type = byKey.get(key)?.type;
      const t = text.trim();
      if (type === "number" && t !== "" && Number.isFinite(Number(t.replace(/,/g, "")))) return [key, Number(t.replace(/,/g, ""))];
      if (type === "boolean" && /^(true|yes|y|1)$/i.test(t)) return [key, true];
      if (type === "boolean" && /^(false|no|n|0)$/i.test(t)) return [key, false];
      return [key, t];
    }),
  );
}

/** The values after a write: the record's values of keys still defined, with the input's set and its nulls removed. */
export function mergeCustomFields(before: CustomValues | null, input: CustomFieldsInput, defs: FieldDefinition[]): CustomValues {
  const defined = new Set(defs.map((d) => d.key));
  const next: CustomValues = Object.fromEntries(Object.entries(before ?? {}).filter(([k]) => defined.has(k)));
  for (const [key, value] of Object.entries(input)) {
    if (value === null) delete next[key];
    else next[key] = typeof value === "string" ? value.trim() : value;
  }
  return next;
}

/**
 * A write's custom fields: the definitions read (one query, only for a write that sends customFields), its values
 * checked (422 listing every problem), and the guard for its batch that each definition it sets still exists, so a
 * value never lands after its definition's delete swept the records (custom-fields/service.ts).
 */
export async function checkCustomFields(
  ctx: ServiceContext,
  object: CustomFieldObject,
  input: CustomFieldsInput | undefined,
  prefix: string[] = [],
): Promise<CheckedCustomFields | null> {
  if (input === undefined) return null;
  const defs = await readDefinitions(ctx, object);
  const issues = customFieldIssues(defs, input, object, prefix);
  if (issues.length) throw new Validation(issues);
  const ids = defs.filter((d) => input[d.key] !== undefined && input[d.key] !== null).map((d) => d.id);
  if (ids.length === 0) return { input, defs, guard: [] };
  const list = JSON.stringify(ids);
  return {
    input,
    defs,
    guard: [
      guard(
        ctx.db,
        sql`(SELECT COUNT(*) FROM ${customFieldDefinitions} WHERE ${customFieldDefinitions.organizationId} = ${ctx.organizationId} AND ${customFieldDefinitions.id} IN (SELECT value FROM json_each(${list})) AND ${customFieldDefinitions.deletedAt} IS NULL) = ${ids.length}`,
      ),
    ],
  };
}

export interface CheckedCustomFields {
  input: CustomFieldsInput;
  defs: FieldDefinition[];
  guard: Statement[];
}

/** A create lost the race with a delete of a definition it sets (its guard failed): it may send the values again. */
export const customFieldDeleted = (object: CustomFieldObject) =>
  new Conflict(`A custom field this ${object} sets was deleted meanwhile; send it again`, "custom_field_deleted");

/** `record` with the checked values of its write merged in (unchanged without any). */
export const withCustomFields = <T extends { customFields: CustomValues | null }>(record: T, checked: CheckedCustomFields | null): T =>
  checked ? { ...record, customFields: mergeCustomFields(record.customFields, checked.input, checked.defs) } : record;

/** A record's stored values as the API shows them. */
export const shownCustomFields = (stored: CustomValues | string | null | undefined): CustomValues =>
  typeof stored === "string" ? (JSON.parse(stored) as CustomValues) : (stored ?? {});

// ---- Lists: customFields.<key>=v, customFields.<key>[gte|lte|gt|lt]=v, sort=customFields.<key> ----

const PARAM = /^customFields\.([a-z][a-z0-9_]{0,39})(?:\[(gte|lte|gt|lt)\])?$/;
export const CUSTOM_SORT_PATTERN = "customFields\\.[a-z][a-z0-9_]{0,39}";
export type CustomSortField = `customFields.${string}`;
const OPS = { gte: ">=", lte: "<=", gt: ">", lt: "<" } as const;

/**
 * A list query that also takes `customFields.<key>` and `customFields.<key>[op]` parameters; any other unknown
 * parameter is still a 422 unknown_field (crm/list-query.ts). Their values are checked against the definitions
 * when the list runs (`customFieldQuery`).
 */
export function withCustomFieldParams<S extends z.ZodRawShape>(schema: z.ZodObject<S, z.core.$strict>) {
  const known = new Set(Object.keys(schema.shape));
  return schema.catchall(z.unknown()).superRefine(
    (q, ctx) => {
      for (const [key, value] of Object.entries(q)) {
        if (known.has(key)) continue;
        if (!PARAM.test(key))
          ctx.addIssue({ code: "custom", path: [key], message: `Unknown field '${key}'`, params: { code: "unknown_field" } });
        else if (typeof value !== "string" || value.length > 200)
          ctx.addIssue({
            code: "custom",
            path: [key],
            message: "Must be given once, at most 200 characters",
            params: { code: "invalid_type" },
          });
      }
      // Also when another parameter failed (zod skips an object's refinements then): every problem is listed.
    },
    { when: () => true },
  );
}

/** Where a record without a value sorts: after every value ascending (a number sorts before any text in SQLite). */
const MISSING_NUMBER = "";
const MISSING_TEXT = "\u{10FFFF}";

function sortSql(alias: string, def: FieldDefinition): string {
  const value = `json_extract(${alias}.custom_fields, '$.${def.key}')`;
  if (def.type === "number" || def.type === "boolean") return `ifnull(${value}, '')`;
  return `ifnull(${value}, char(1114111))${def.type === "text" ? " COLLATE NOCASE" : ""}`;
}

function sortValue(def: FieldDefinition, stored: unknown): string | number {
  const values = shownCustomFields(stored as string | null);
  const v = values[def.key];
  if (def.type === "number" || def.type === "boolean")
    return v === undefined ? MISSING_NUMBER : typeof v === "boolean" ? Number(v) : (v as number);
  return v === undefined ? MISSING_TEXT : String(v);
}

/** A filter value as the type compares it, or the problem with it. */
function filterValue(
  def: FieldDefinition,
  raw: string,
  op: keyof typeof OPS | undefined,
): { value: string | number } | { code: string; message: string } {
  if (op && def.type !== "number" && def.type !== "date")
    return { code: "invalid_operator", message: `A ${def.type} field is filtered by equality only` };
  switch (def.type) {
    case "number":
      return /^-?\d{1,15}(\.\d{1,8})?$/.test(raw)
        ? { value: Number(raw) }
        : { code: "invalid_number", message: "Must be a decimal number" };
    case "boolean":
      return raw === "true" || raw === "false"
        ? { value: raw === "true" ? 1 : 0 }
        : { code: "invalid_boolean", message: "Must be true or false" };
    case "date":
      return isDate(raw) ? { value: raw } : { code: "invalid_date", message: "Must be a date as YYYY-MM-DD" };
    case "select":
      return def.options?.includes(raw)
        ? { value: raw }
        : { code: "invalid_enum_value", message: `Must be one of ${(def.options ?? []).join(", ")}` };
    case "text":
      return { value: raw };
  }
}

export interface CustomQuery {
  /** The filters on custom fields, for the page and the total. */
  where: Where;
  /** The list's keyset with the custom sort fields added. */
  keyset<F extends string, Row>(base: KeysetTable<F, Row>): KeysetTable<F | CustomSortField, Row>;
}

/**
 * The custom-field part of a list query, or null when it has none: one read of the definitions (only then), every
 * parameter and sort field checked against them (422 listing each unknown key or bad value).
 */
export async function customFieldQuery(
  ctx: ServiceContext,
  object: CustomFieldObject,
  alias: string,
  q: Record<string, unknown>,
  sort: SortKey<string>[] | undefined,
): Promise<CustomQuery | null> {
  const params = Object.entries(q).filter(([k]) => PARAM.test(k)) as [string, string][];
  const sortFields = (sort ?? []).map((s) => s.field).filter((f) => f.startsWith("customFields."));
  if (params.length === 0 && sortFields.length === 0) return null;
  const defs = new Map((await readDefinitions(ctx, object)).map((d) => [d.key, d]));
  const issues: FieldIssue[] = [];
  const unknown = (field: string, path: string[], key: string) =>
    issues.push({ field, path, code: "unknown_field", message: `No custom field '${key}' on ${OBJECT_TABLES[object]}` });
  const where: Where = { sql: [], params: [] };
  for (const [name, raw] of params) {
    const [, key, op] = name.match(PARAM)! as unknown as [string, string, keyof typeof OPS | undefined];
    const def = defs.get(key);
    if (!def) {
      unknown(name, [name], key);
      continue;
    }
    const parsed = filterValue(def, raw, op);
    if ("code" in parsed) {
      issues.push({ field: name, path: [name], ...parsed });
      continue;
    }
    where.sql.push(
      `json_extract(${alias}.custom_fields, '$.${key}') ${op ? OPS[op] : "="} ?${def.type === "text" ? " COLLATE NOCASE" : ""}`,
    );
    where.params.push(parsed.value);
  }
  const sorted = new Map<string, FieldDefinition>();
  for (const field of sortFields) {
    const key = field.slice("customFields.".length);
    const def = defs.get(key);
    if (def) sorted.set(field, def);
    else unknown("sort", ["sort"], key);
  }
  if (issues.length) throw new Validation(issues);
  return {
    where,
    keyset: <F extends string, Row>(base: KeysetTable<F, Row>) => {
      const extra = [...sorted];
      return {
        ...base,
        sql: { ...base.sql, ...Object.fromEntries(extra.map(([f, d]) => [f, sortSql(alias, d)])) },
        value: {
          ...base.value,
          ...Object.fromEntries(extra.map(([f, d]) => [f, (row: Row) => sortValue(d, (row as { custom_fields?: unknown }).custom_fields)])),
        },
      } as KeysetTable<F | CustomSortField, Row>;
    },
  };
}

/** The `custom` argument of crm/keyset.ts `sortParam` for the lists of records with custom fields. */
export const CUSTOM_SORT = {
  pattern: CUSTOM_SORT_PATTERN,
  description: "customFields.<key> sorts by a custom field's value; records without one come last ascending, first descending",
};

/** What a list route's description says of its custom-field parameters (they are not listed one by one: keys are the organization's). */
export const CUSTOM_FILTER_DOC =
  " Custom fields (GET /v1/custom-fields) filter as `customFields.<key>=value` (text case-insensitively, boolean true/false, select one of its options) and, on number and date fields, `customFields.<key>[gte|lte|gt|lt]=value`; an undefined key is a 422.";
