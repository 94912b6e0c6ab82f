/**
 * The permissions a credential may carry (the spec leaves the set open: "the set of permission values: not shown").
 * An OAuth access token carries the ones the user approved, an API key the ones it was created with; a bearer session
 * (npm run token) has them all. Whatever the credential, its reach is its permissions ∩ what its user's role allows
 * (`ROLE_PERMISSIONS`). Every authenticated route needs one (`routePermission`): outside the credential's, 403
 * `insufficient_permission`; outside the role's, 403 `insufficient_role`.
 */
export const PERMISSIONS = {
  "contacts:read": "Read contacts and their activities",
  "contacts:write": "Create and change contacts, log activities",
  "leads:write": "Send leads in (POST /v1/leads): match, create and route contacts, log the message; alone, a website form's key",
  "contacts:erase":
    "Erase a person for good on request (privacy erasure): their contact, activities and every copy of their name and address",
  "deals:read": "Read deals, the pipeline and analytics",
  "deals:write": "Create, change and move deals",
  "properties:read": "Read property listings",
  "properties:write": "Create and change property listings",
  "documents:read": "Read and search documents and their obligations",
  "documents:write": "Generate and draft documents",
  "envelopes:send": "Send documents for signature, to signers the application names",
  "signatures:read": "Read signature envelopes, their audit trails and sealed documents",
  "signatures:write": "Void envelopes, resend signing codes, open embedded and in-person signing sessions, and change signature settings",
  "templates:read": "Read document templates and their public links",
  "templates:write": "Create, change and delete document templates, use them and issue their public links",
  "clickwrap:read": "Read clickwrap agreements and their acceptances",
  "clickwrap:write": "Create, version and (de)activate clickwrap agreements",
  "reputation:read": "Read testimonials, surveys, referrals and the agent profile",
  "reputation:write": "Moderate testimonials, schedule surveys, edit and publish the agent profile",
  "plants:read": "Read the sample plant store",
  "plants:write": "Change the sample plant store",
  "webhooks:manage": "Manage webhook subscriptions",
  "events:read": "Read the organization's event log",
  "integrations:read": "See the applications and keys connected to the organization",
  "organization:read": "Read the organization, its settings and its users",
  "organization:manage": "Change the organization's name, time zone and settings",
  "users:manage": "Invite users and change their roles",
  "api-keys:manage": "Create and delete API keys",
  "custom-fields:read": "Read the organization's custom field definitions",
  "custom-fields:manage": "Define and delete custom fields on contacts, deals and properties",
  "imports:manage": "Import a book of contacts or properties (CSV or JSON rows), follow and cancel imports",
  "tasks:read": "Read tasks and who they are assigned to",
  "tasks:write": "Create, change, complete and delete tasks",
  "appointments:read": "Read appointments and the calendar",
  "appointments:write": "Schedule, change and cancel appointments (invitations are e-mailed to contact attendees)",
  "action-plans:manage": "Create action plans and enroll, pause, resume and stop contacts in them",
  "smart-lists:read": "Read saved smart lists, their counts and contacts",
  "smart-lists:write": "Save, change and delete smart lists",
  "ponds:manage": "Create and change lead ponds and their members",
  "exports:read":
    "Export records as CSV or NDJSON, a person's data (right of access) and, for owners and admins, the whole organization's archive",
} as const;

export type Permission = keyof typeof PERMISSIONS;
export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];
/** Granted only when the client asks for them by name: a request without `scope` does not get them. */
export const EXPLICIT_PERMISSIONS: readonly Permission[] = ["contacts:erase", "organization:manage", "users:manage", "api-keys:manage"];
/** What a request without `scope` asks for. */
export const DEFAULT_PERMISSIONS = PERMISSION_NAMES.filter((p) => !EXPLICIT_PERMISSIONS.includes(p));
export const isPermission = (value: string): value is Permission => Object.hasOwn(PERMISSIONS, value);

/**
 * A user's role in the organization (docs/decisions/0018-roles-permissions-and-api-keys.md). Every user `npm run token`
 * mints, and every user before roles, is an owner.
 */
export const ROLES = ["owner", "admin", "agent"] as const;
export type Role = (typeof ROLES)[number];

/** What only owners and admins may do: manage users, keys, webhooks, custom fields, ponds and the organization, see its integrations, erase a person, import a book. */
const MANAGING: readonly Permission[] = [
  "organization:manage",
  "users:manage",
  "api-keys:manage",
  "webhooks:manage",
  "integrations:read",
  "contacts:erase",
  "custom-fields:manage",
  "imports:manage",
  "ponds:manage",
];

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: PERMISSION_NAMES,
  admin: PERMISSION_NAMES,
  agent: PERMISSION_NAMES.filter((p) => !MANAGING.includes(p)),
};

/** A read (GET, HEAD) needs `read`, any other method `write`. */
interface Need {
  read: Permission;
  write: Permission;
}
const both = (p: Permission): Need => ({ read: p, write: p });

/**
 * The permission each authenticated route needs, by the first path segments after its family: the longest prefix
 * listed wins. A path no entry covers needs a permission no credential has (`null`: refused), so a new route is
 * closed until it is listed here (test/platform/permissions.test.ts walks the route table).
 */
const ROUTE_NEEDS: Record<string, Need> = {
  "/v1/contacts": { read: "contacts:read", write: "contacts:write" },
  "/v1/leads": both("leads:write"),
  // The leads intake kept for review name people: the team reads them as contacts and settles them as contact writes.
  "/v1/leads/reviews": { read: "contacts:read", write: "contacts:write" },
  "/v1/contacts/export": both("exports:read"),
  // And contacts:read; each other domain's part of it only with that domain's read permission (erasure/access.ts).
  "/v1/contacts/*/export": both("exports:read"),
  "/v1/deals": { read: "deals:read", write: "deals:write" },
  "/v1/deals/export": both("exports:read"),
  "/v1/properties": { read: "properties:read", write: "properties:write" },
  "/v1/properties/export": both("exports:read"),
  // And every write of a subscription the read permission of each event it holds or sends (webhooks/reach.ts).
  "/v1/webhooks": both("webhooks:manage"),
  "/v1/events": both("events:read"),
  "/v1/organization": { read: "organization:read", write: "organization:manage" },
  // An organization's archive: exports:read, and owners and admins only (exports/service.ts).
  "/v1/organization/export": both("exports:read"),
  "/v1/organization/exports": both("exports:read"),
  "/v1/users": { read: "organization:read", write: "users:manage" },
  "/v1/integrations": both("integrations:read"),
  "/v1/api-keys": both("api-keys:manage"),
  "/v1/custom-fields": { read: "custom-fields:read", write: "custom-fields:manage" },
  "/v1/imports": both("imports:manage"),
  "/v1/tasks": { read: "tasks:read", write: "tasks:write" },
  "/v1/appointments": { read: "appointments:read", write: "appointments:write" },
  // A user's own calendar feed: issuing it answers its secret URL (appointments/feed.ts), which serves their tasks too:
  // the issuing route also asks for tasks:read (appointments/feed-routes.ts).
  "/v1/users/me/calendar-feed": both("appointments:read"),
  "/v1/action-plans": both("action-plans:manage"),
  "/v1/smart-lists": { read: "smart-lists:read", write: "smart-lists:write" },
  "/v1/ponds": { read: "contacts:read", write: "ponds:manage" },
  // What intake would do with a lead, creating nothing: the routing's readers are the team's.
  "/v1/leads/route-preview": both("contacts:read"),
  "/api/documents": { read: "documents:read", write: "documents:write" },
  "/api/documents/*/signatures": { read: "signatures:read", write: "envelopes:send" },
  "/api/documents/*/signature": { read: "signatures:read", write: "envelopes:send" },
  "/api/signatures": { read: "signatures:read", write: "signatures:write" },
  // The organization's defaults for every envelope (how signers prove who they are): the organization's to set.
  "/api/signatures/settings": { read: "signatures:read", write: "organization:manage" },
  "/api/templates": { read: "templates:read", write: "templates:write" },
  // A use sends an envelope: envelopes:send, and templates:read to read the template it is made from (templates/routes.ts).
  "/api/templates/*/use": both("envelopes:send"),
  "/api/clickwrap": { read: "clickwrap:read", write: "clickwrap:write" },
  "/api/reputation": { read: "reputation:read", write: "reputation:write" },
  // The organization's survey templates, its default among them, shape every agent's surveys.
  "/api/reputation/surveys/templates": { read: "reputation:read", write: "organization:manage" },
  "/plants": { read: "plants:read", write: "plants:write" },
};

/** Patterns of ROUTE_NEEDS as segment lists, longest first (`*` matches one segment). */
const PATTERNS = Object.entries(ROUTE_NEEDS)
  .map(([pattern, need]) => ({ segments: pattern.split("/").slice(1), need }))
  .sort((a, b) => b.segments.length - a.segments.length);

/**
 * The permission `method path` needs, or null when no entry covers it. The trash (`/v1/trash`) is left to its route:
 * it lists several kinds and asks for the read permission of each kind it lists (`"per-kind"`).
 */
export function routePermission(method: string, path: string): Permission | "per-kind" | null {
  const segments = path.split("/").slice(1);
  if (segments[0] === "v1" && segments[1] === "trash") return method === "GET" || method === "HEAD" ? "per-kind" : null;
  const entry = PATTERNS.find((p) => p.segments.every((s, i) => (s === "*" ? segments[i] !== undefined : s === segments[i])));
  if (!entry) return null;
  return method === "GET" || method === "HEAD" ? entry.need.read : entry.need.write;
}
