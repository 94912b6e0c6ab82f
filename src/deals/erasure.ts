import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { dealActivities, deals, tasks } from "../db/schema";

// The deals' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): their texts, tasks and activities that
// name them. A deal whose contact they were stays, as every reference to an erased contact does. Not here: uploaded
// files (a deal's documents), whose names and bytes stay together in R2.
const COPIES: Copy[] = [
  { kind: "deal_texts", table: deals, key: "id", column: "title", versioned: true, listed: "deals" },
  { kind: "deal_texts", table: deals, key: "id", column: "description", versioned: true, listed: "deals" },
  { kind: "deal_texts", table: deals, key: "id", column: "notes", versioned: true, listed: "deals" },
  { kind: "deal_texts", table: tasks, key: "id", column: "title" },
  { kind: "deal_texts", table: tasks, key: "id", column: "notes" },
  { kind: "activity_texts", table: dealActivities, key: "id", column: "description" },
  { kind: "activity_texts", table: dealActivities, key: "id", column: "metadata" },
];

export const dealsErasable: Erasable = {
  erase: async (ctx, scrub, counted) => ({ name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) }),
};
