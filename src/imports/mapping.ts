import { APPOINTMENT_TARGETS, FOLLOW_UP_BOSS_APPOINTMENT, FOLLOW_UP_BOSS_TASK, TASK_TARGETS } from "./agenda-columns";

/**
 * Which field each column of an import feeds: defaults for Follow Up Boss and kvCORE exports and for the
 * API's own field names, detected from the header; the caller's `mapping` (column → field, or "ignore") wins.
 */

export const CONTACT_TARGETS = [
  "firstName",
  "lastName",
  "fullName",
  "email",
  "otherEmail",
  "phone",
  "secondaryPhone",
  "otherPhone",
  "tags",
  "type",
  "status",
  "stage",
  "source",
  "assignedTo",
  "address.street",
  "address.city",
  "address.state",
  "address.zipCode",
  "address.country",
  "notes",
  "leadScore",
  "ignore",
] as const;

export const PROPERTY_TARGETS = [
  "mlsId",
  "address.street",
  "address.unit",
  "address.city",
  "address.state",
  "address.zipCode",
  "address.country",
  "details.propertyType",
  "details.bedrooms",
  "details.bathrooms",
  "details.squareFootage",
  "details.yearBuilt",
  "listing.listPrice",
  "listing.listDate",
  "marketing.description",
  "ignore",
] as const;

export type ImportKind = "contacts" | "properties" | "tasks" | "appointments";

const TARGETS: Record<ImportKind, readonly string[]> = {
  contacts: CONTACT_TARGETS,
  properties: PROPERTY_TARGETS,
  tasks: TASK_TARGETS,
  appointments: APPOINTMENT_TARGETS,
};

/**
 * A target the caller may name: one of the kind's, or `customFields.<key>` for contacts and properties (validated by
 * the record's schema).
 */
export const isTarget = (kind: ImportKind, target: string): boolean =>
  TARGETS[kind].includes(target) ||
  ((kind === "contacts" || kind === "properties") && /^customFields\.[a-zA-Z][a-zA-Z0-9_]{0,49}$/.test(target));

/** "Address 1 - Zip", "address_1_zip" and "address1Zip" are one column name. */
const norm = (column: string) => column.toLowerCase().replace(/[^a-z0-9]/g, "");

/** Follow Up Boss "People" export columns. */
const FOLLOW_UP_BOSS: Record<string, string> = {
  "First Name": "firstName",
  "Last Name": "lastName",
  Name: "fullName",
  "Email 1": "email",
  "Email 2": "otherEmail",
  "Email 3": "otherEmail",
  "Phone 1": "phone",
  "Phone 2": "secondaryPhone",
  "Phone 3": "otherPhone",
  Tags: "tags",
  Stage: "stage",
  Source: "source",
  "Lead Source": "source",
  "Assigned To": "assignedTo",
  "Address 1 - Street": "address.street",
  "Address 1 - City": "address.city",
  "Address 1 - State": "address.state",
  "Address 1 - Zip": "address.zipCode",
  "Address 1 - Country": "address.country",
  Notes: "notes",
  Background: "notes",
};

/** kvCORE contact export columns. */
const KVCORE: Record<string, string> = {
  first_name: "firstName",
  last_name: "lastName",
  email: "email",
  secondary_email: "otherEmail",
  phone: "phone",
  cell_phone: "secondaryPhone",
  work_phone: "otherPhone",
  home_phone: "otherPhone",
  address: "address.street",
  city: "address.city",
  state: "address.state",
  zip: "address.zipCode",
  country: "address.country",
  source: "source",
  tags: "tags",
  status: "stage",
  agent: "assignedTo",
  assigned_agent: "assignedTo",
  notes: "notes",
};

/** The API's own field names (a spreadsheet made for us). */
const NATIVE_CONTACT: Record<string, string> = {
  firstName: "firstName",
  lastName: "lastName",
  email: "email",
  phone: "phone",
  secondaryPhone: "secondaryPhone",
  type: "type",
  status: "status",
  source: "source",
  tags: "tags",
  notes: "notes",
  assignedTo: "assignedTo",
  leadScore: "leadScore",
  street: "address.street",
  city: "address.city",
  state: "address.state",
  zipCode: "address.zipCode",
  country: "address.country",
};

const NATIVE_PROPERTY: Record<string, string> = {
  mlsId: "mlsId",
  street: "address.street",
  unit: "address.unit",
  city: "address.city",
  state: "address.state",
  zipCode: "address.zipCode",
  zip: "address.zipCode",
  country: "address.country",
  propertyType: "details.propertyType",
  bedrooms: "details.bedrooms",
  bathrooms: "details.bathrooms",
  squareFootage: "details.squareFootage",
  yearBuilt: "details.yearBuilt",
  listPrice: "listing.listPrice",
  price: "listing.listPrice",
  listDate: "listing.listDate",
  description: "marketing.description",
};

const byNorm = (table: Record<string, string>) => new Map(Object.entries(table).map(([k, v]) => [norm(k), v]));
const FORMATS = { followupboss: byNorm(FOLLOW_UP_BOSS), kvcore: byNorm(KVCORE), native: byNorm(NATIVE_CONTACT) };
/** Tasks and appointments come from Follow Up Boss's API only (agenda-columns.ts); its names, normalized, are the defaults. */
const AGENDA = { tasks: byNorm(FOLLOW_UP_BOSS_TASK), appointments: byNorm(FOLLOW_UP_BOSS_APPOINTMENT) };

export interface ResolvedMapping {
  /** The field each column feeds, by column index (null: ignored). */
  targets: (string | null)[];
  format: "followupboss" | "kvcore" | "native" | "custom";
}

/** The format whose columns the header holds most of (a tie goes to the first listed). */
function detect(columns: string[], kind: ImportKind): ResolvedMapping["format"] {
  if (kind === "properties") return "native";
  let best: ResolvedMapping["format"] = "custom";
  let hits = 0;
  for (const [name, table] of Object.entries(FORMATS) as [keyof typeof FORMATS, Map<string, string>][]) {
    // Exact names first: "email" is kvCORE's and the API's; "Email 1" only Follow Up Boss's.
    const own = name === "followupboss" ? FOLLOW_UP_BOSS : name === "kvcore" ? KVCORE : NATIVE_CONTACT;
    const n = columns.filter((c) => Object.hasOwn(own, c.trim())).length + columns.filter((c) => table.has(norm(c))).length / 100;
    if (n > hits) (best = name), (hits = n);
  }
  return hits >= 1 ? best : "custom";
}

/** The target of each column: the caller's mapping, else the detected format's, else any format's by its normalized name. */
export function resolveMapping(kind: ImportKind, columns: string[], given: Record<string, string> | null): ResolvedMapping {
  if (kind === "tasks" || kind === "appointments") return resolveAgenda(AGENDA[kind], columns, given);
  const format = detect(columns, kind);
  const primary = kind === "properties" ? byNorm(NATIVE_PROPERTY) : format === "custom" ? new Map<string, string>() : FORMATS[format];
  const fallbacks = kind === "properties" ? [] : Object.values(FORMATS);
  const targets = columns.map((column) => {
    // Own keys only: a column named "constructor" or "toString" is not Object.prototype's (it crashed every retry of the chunk).
    const mine = given && Object.hasOwn(given, column) ? given[column] : undefined;
    if (mine !== undefined) return mine === "ignore" || mine === "" ? null : mine;
    const key = norm(column);
    return primary.get(key) ?? fallbacks.map((t) => t.get(key)).find((t) => t !== undefined) ?? null;
  });
  return { targets, format: given && Object.keys(given).length > 0 && format === "custom" ? "custom" : format };
}

/** A task or appointment header: the caller's mapping, else Follow Up Boss's field by its normalized name. */
function resolveAgenda(table: Map<string, string>, columns: string[], given: Record<string, string> | null): ResolvedMapping {
  let known = 0;
  const targets = columns.map((column) => {
    const mine = given && Object.hasOwn(given, column) ? given[column] : undefined;
    if (mine !== undefined) return mine === "ignore" || mine === "" ? null : mine;
    const target = table.get(norm(column)) ?? null;
    if (target) known++;
    return target;
  });
  return { targets, format: known > 0 ? "followupboss" : "custom" };
}

/** The stored mapping's targets by column index: own keys only (a column "constructor" is not Object.prototype's). */
export const targetsOf = (resolved: Record<string, string>, columns: string[]): (string | null)[] =>
  columns.map((c) => (Object.hasOwn(resolved, c) ? resolved[c]! : null));
