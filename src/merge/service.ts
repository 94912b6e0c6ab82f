// Two records of one person become one: the duplicates list finds them (duplicates.ts), the merge joins them
// (merge.ts). The routes are the contact routes' (contacts/routes.ts), beside the contact they change.
export { listDuplicates } from "./duplicates";
export { mergeErasable } from "./erasure";
export { mergeContacts } from "./merge";
