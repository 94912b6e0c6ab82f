/**
 * The permissions an OAuth client may be granted (the spec leaves the set open: "the set of permission values: not
 * shown"). An access token carries the ones the user approved; a bearer session (npm run token) has them all. A route
 * or MCP tool outside the granted ones answers 403 `insufficient_permission`.
 */
export const PERMISSIONS = {
  "contacts:read": "Read contacts and their activities",
  "contacts:write": "Create and change contacts, log activities",
  "contacts:erase": "Erase a person for good on request (privacy erasure): their contact, activities and every copy of their name and address",
  "deals:read": "Read deals, the pipeline and analytics",
  "deals:write": "Create, change and move deals",
  "properties:read": "Read property listings",
  "properties:write": "Create and change property listings",
  "documents:read": "Read and search documents and their obligations",
  "envelopes:send": "Send documents for signature, to signers the application names",
  "webhooks:manage": "Manage webhook subscriptions",
} as const;

export type Permission = keyof typeof PERMISSIONS;
export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];
/** Granted only when the client asks for them by name: a request without `scope` does not get them. */
export const EXPLICIT_PERMISSIONS: readonly Permission[] = ["contacts:erase"];
/** What a request without `scope` asks for. */
export const DEFAULT_PERMISSIONS = PERMISSION_NAMES.filter((p) => !EXPLICIT_PERMISSIONS.includes(p));
export const isPermission = (value: string): value is Permission => Object.hasOwn(PERMISSIONS, value);
