import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { properties } from "../db/schema";
import { reportsPrefix } from "../files/keys";

// The listings' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): their texts that name them. A listing
// sheet prints the marketing texts and features: the listing's reports go before its text is rewritten. Not here:
// the photos, whose names and bytes stay together in R2.
const COPIES: Copy[] = [
  {
    kind: "property_texts",
    table: properties,
    key: "id",
    column: "marketing",
    versioned: true,
    files: reportsPrefix,
    listed: "properties",
  },
  { kind: "property_texts", table: properties, key: "id", column: "features", versioned: true, files: reportsPrefix, listed: "properties" },
  { kind: "property_texts", table: properties, key: "id", column: "disclosure", versioned: true, listed: "properties" },
  { kind: "property_texts", table: properties, key: "id", column: "hoa", versioned: true, listed: "properties" },
  { kind: "property_texts", table: properties, key: "id", column: "media", versioned: true, listed: "properties" },
  { kind: "property_texts", table: properties, key: "id", column: "listing", versioned: true, listed: "properties" },
];

export const propertiesErasable: Erasable = {
  erase: async (ctx, scrub, counted) => ({ name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) }),
};
