/**
 * The permissions an OAuth client may be granted (the spec leaves the set open: "the set of permission values: not
 * shown"). An access token carries the ones the user approved; a bearer session (npm run token) has them all. A route
 * or MCP tool outside the granted ones answers 403 `insufficient_permission`.
 */
export const PERMISSIONS = {
  "contacts:read": "Read contacts and their activities",
  "contacts:write": "Create and change contacts, log activities",
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
export const isPermission = (value: string): value is Permission => Object.hasOwn(PERMISSIONS, value);
