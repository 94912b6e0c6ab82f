import type { Permission } from "../platform/permissions";

/**
 * The catalogue: every event name a subscription may ask for (spec: Events, Webhook events), grouped as the
 * spec groups them; the `.restored` events (a record back from the trash) are ours, and so are the document desk's
 * and the reputation suite's. docs/guides/receiving-webhooks.md has the table of when each fires and what its
 * `data.object` is; test/node/catalogue-emitters.test.ts fails for a name no code emits.
 */
export const CATALOGUE = [
  "contact.created",
  "contact.updated",
  "contact.deleted",
  "contact.restored",
  "contact.tagged",
  "contact.untagged",
  "contact.assigned",
  // Ours (issue 46): a lead waiting in a pond or offered first-to-claim was claimed (data.claimedBy, data.pondId).
  "contact.claimed",
  "deal.created",
  "deal.updated",
  "deal.deleted",
  "deal.restored",
  "deal.stage_changed",
  "deal.won",
  "deal.lost",
  "deal.task_created",
  "deal.task_completed",
  "deal.closed",
  "deal.document_uploaded",
  "property.created",
  "property.updated",
  "property.deleted",
  "property.restored",
  "property.status_changed",
  "property.price_changed",
  "property.photos_uploaded",
  "property.inquiry_received",
  "property.showing_scheduled",
  "property.offer_received",
  "communication.email_sent",
  "communication.email_received",
  "communication.sms_sent",
  "communication.sms_received",
  "communication.call_started",
  "communication.call_ended",
  "communication.voicemail_received",
  "organization.updated",
  "user.created",
  "user.updated",
  "integration.connected",
  "integration.disconnected",
  "envelope.sent",
  "envelope.opened",
  "envelope.signer_signed",
  // Ours: an approver of an uploaded document approved it (data.signer); a rejection is envelope.declined.
  "envelope.approved",
  "envelope.completed",
  "envelope.sealed",
  "envelope.declined",
  "envelope.voided",
  "envelope.expired",
  "document.created",
  // Ours: an upload's text tags found by the queue consumer (issue 45): fields, tagsStatus and the stored PDF changed.
  "document.updated",
  // Ours: the document desk's templates (issue 45); a template back from the trash is template.restored.
  "template.created",
  "template.updated",
  "template.deleted",
  "template.restored",
  "obligation.due_soon",
  "obligation.overdue",
  "clickwrap.accepted",
  "testimonial.approved",
  "testimonial.published",
  "survey.completed",
  "referral.received",
  // Ours (issue 46): a contact started or stopped matching a smart list (data.object: the list, with contactId).
  "smart_list.entered",
  "smart_list.exited",
  // Ours: the agent's day (issue 46); a showing of a property also emits property.showing_scheduled.
  "appointment.created",
  "appointment.updated",
  "appointment.cancelled",
  // Ours: one per import, with its counts; the imported records emit none of their own.
  "import.completed",
  // Ours (issue 46): tasks on contacts, deals and properties; task.due once, by the cron, when its due time comes.
  "task.created",
  "task.updated",
  "task.completed",
  "task.deleted",
  "task.due",
  // Ours (issue 46): a contact enrolled in an action plan, paused (by hand or by its reply), through its last step;
  // step_due is a plan's `notify` step, for integrators.
  "action_plan.enrolled",
  "action_plan.paused",
  "action_plan.completed",
  "action_plan.step_due",
  // Ours: sent to every other enabled endpoint of the organization, subscribed or not (webhooks/healing.ts).
  "webhook.endpoint_disabled",
] as const;

export type CatalogueName = (typeof CATALOGUE)[number];

const KNOWN = new Set<string>(CATALOGUE);
export const inCatalogue = (type: string): type is CatalogueName => KNOWN.has(type);

/** The resource an event is about: `contact` for `contact.created`. Filter paths start with it. */
export const resourceOf = (event: string): string => event.slice(0, event.indexOf("."));

export const CATALOGUE_RESOURCES = [...new Set(CATALOGUE.map(resourceOf))];

/**
 * The permission that reads each resource's object where the API shows it: GET /v1/events lists a caller only the
 * events it could read there (a credential's reach is its permissions ∩ its role's), as the trash does per kind.
 */
const READ_PERMISSION: Record<string, Permission> = {
  contact: "contacts:read",
  communication: "contacts:read",
  deal: "deals:read",
  task: "tasks:read",
  property: "properties:read",
  organization: "organization:read",
  user: "organization:read",
  integration: "integrations:read",
  webhook: "webhooks:manage",
  document: "documents:read",
  obligation: "documents:read",
  envelope: "signatures:read",
  template: "templates:read",
  clickwrap: "clickwrap:read",
  testimonial: "reputation:read",
  survey: "reputation:read",
  referral: "reputation:read",
  import: "imports:manage",
  smart_list: "smart-lists:read",
  appointment: "appointments:read",
  action_plan: "action-plans:manage",
};

export const readPermissionOf = (event: CatalogueName): Permission => READ_PERMISSION[resourceOf(event)]!;

/**
 * The check a subscription's writes run (routes.ts builds it from the caller's credential): it throws 403 unless the
 * caller may read the objects of every event named. A subscription sends its events' objects to its URL, so whoever
 * points it somewhere, replays to it or holds its secret must be able to read them: `webhooks:manage` alone may not
 * turn an owner's contact subscription into a feed of contacts to its own receiver.
 */
export type DeliveryReach = (events: readonly string[]) => void;

/** An endpoint the service turned off after 5 days of failed deliveries; its object is the endpoint as GET shows it. */
export const ENDPOINT_DISABLED = "webhook.endpoint_disabled" satisfies CatalogueName;

/** Sent by POST /v1/webhooks/{id}/test only; no domain event carries it, so nobody can subscribe to it. */
export const TEST_EVENT = "webhook.test";

/**
 * Whether the subscription, as it is now, still carries this delivery's event: one it names, or one sent to every
 * endpoint whatever it names (a test, another endpoint turned off). A delivery of an event it dropped since is not
 * sent, retried, replayed or recovered: whoever narrows a subscription and points it elsewhere receives only what
 * it may read.
 */
export const carries = (subscribed: readonly string[], event: string): boolean =>
  event === TEST_EVENT || event === ENDPOINT_DISABLED || subscribed.includes(event);

/** Payload `apiVersion` (spec: Versioning 2, year and month). */
export const WEBHOOK_API_VERSION = "2026-11";
