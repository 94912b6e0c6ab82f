import { shownCustomFields } from "../crm/custom-fields";
import type { contacts } from "../db/schema";
import type { Contact } from "./schemas";

export type ContactRecord = typeof contacts.$inferSelect;

/** A contacts row as raw D1 returns it (snake_case, JSON columns as text), for the hand-written list query. */
export interface ContactRow {
  id: string;
  organization_id: string;
  first_name: string;
  last_name: string;
  email: string;
  email_key: string;
  phone: string | null;
  secondary_phone: string | null;
  phone_key: string | null;
  secondary_phone_key: string | null;
  address: string | null;
  type: string;
  status: string;
  source: string | null;
  lead_score: number | null;
  lead_score_auto: number;
  tags: string;
  notes: string | null;
  preferences: string | null;
  assigned_to: string | null;
  created_at: string;
  updated_at: string;
  last_contacted_at: string | null;
  pond_id: string | null;
  custom_fields: string | null;
  version: number;
}

const parse = <T>(v: string | null): T | null => (v === null ? null : (JSON.parse(v) as T));

export function fromRow(r: ContactRow): ContactRecord {
  return {
    id: r.id,
    organizationId: r.organization_id,
    firstName: r.first_name,
    lastName: r.last_name,
    email: r.email,
    emailKey: r.email_key,
    phone: r.phone,
    secondaryPhone: r.secondary_phone,
    phoneKey: r.phone_key,
    secondaryPhoneKey: r.secondary_phone_key,
    address: parse(r.address),
    type: r.type,
    status: r.status,
    source: r.source,
    leadScore: r.lead_score,
    leadScoreRank: r.lead_score ?? -1,
    leadScoreAuto: r.lead_score_auto === 1,
    tags: parse<string[]>(r.tags) ?? [],
    notes: r.notes,
    preferences: parse(r.preferences),
    assignedTo: r.assigned_to,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastContactedAt: r.last_contacted_at,
    pondId: r.pond_id,
    customFields: parse(r.custom_fields),
    version: r.version,
  };
}

export function toContact(r: ContactRecord | ContactRow): Contact {
  const c = "organization_id" in r ? fromRow(r) : r;
  return {
    id: c.id,
    organizationId: c.organizationId,
    firstName: c.firstName,
    lastName: c.lastName,
    email: c.email,
    phone: c.phone,
    secondaryPhone: c.secondaryPhone,
    address: c.address,
    type: c.type as Contact["type"],
    status: c.status as Contact["status"],
    source: c.source,
    leadScore: c.leadScore,
    tags: c.tags,
    notes: c.notes,
    preferences: c.preferences as Contact["preferences"],
    assignedTo: c.assignedTo,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    lastContactedAt: c.lastContactedAt,
    customFields: shownCustomFields(c.customFields),
  };
}
