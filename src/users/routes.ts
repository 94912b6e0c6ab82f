import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmError, crmSuccess, keptAnswer } from "../crm/body";
import type { Context } from "hono";
import { serviceContext } from "../platform/auth";
import { admitForAddress } from "../platform/rate-limit";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, instantFacet, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { CreateUser, UpdateUser, User, UserIdParam, UserList, UserListQuery } from "./schemas";
import { type AdmitMail, createUser, getUser, listUsers, resendInvitation, updateUser } from "./service";

const tags = ["Users"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No user with this id in your organization") };
const OWNERS_ONLY = "only an owner may make or unmake an owner (403 insufficient_role)";
const MAIL_BOUND =
  "An address gets at most 3 invitation mails a day from your organization and 10 from all (a `+tag` in it, or at Gmail a dot, counts as the address; 429 with Retry-After beyond; nothing is written).";
const TOO_MANY_MAILS = {
  429: crmError("This address has had its invitation mails for the last 24 hours (rate_limited): retry after Retry-After seconds"),
};

/** Domains whose mailboxes ignore dots in the local part, all one inbox (Gmail). */
const DOTLESS = new Set(["gmail.com", "googlemail.com"]);

/**
 * The inbox an address reaches, as far as counting mails goes: case and a `+tag` of its local part ignored, and at
 * Gmail the dots of it too (`j.ane@googlemail.com` is `jane@gmail.com`).
 */
const inboxOf = (email: string) => {
  const at = email.lastIndexOf("@");
  const domain = email.slice(at + 1).toLowerCase();
  const local = email.slice(0, at).split("+")[0]!.toLowerCase();
  return DOTLESS.has(domain) ? `${local.replaceAll(".", "")}@gmail.com` : `${local}@${domain}`;
};

/** Invitation mails count per recipient, from this organization and from all, in the per-address limiter (platform/rate-limit.ts). */
const invitationMails =
  (c: Context<AppBindings>): AdmitMail =>
  async (email) => {
    await admitForAddress(c, "invitation-mail:organization-email", `${c.get("organization").id}:${inboxOf(email)}`);
    await admitForAddress(c, "invitation-mail:email", inboxOf(email));
  };

const list = defineRoute(CRM, {
  operationId: "listUsers",
  method: "get",
  path: "/v1/users",
  tags,
  security,
  summary: "List your organization's users",
  description: "Newest first, keyset-paginated (pass `pagination.nextCursor` back as `cursor`). Needs `organization:read`.",
  request: { query: UserListQuery },
  responses: { 200: { description: "A page of users", content: { "application/json": { schema: UserList } } } },
});

const read = defineRoute(CRM, {
  operationId: "getUser",
  method: "get",
  path: "/v1/users/{id}",
  tags,
  security,
  summary: "Read a user",
  request: { params: UserIdParam },
  responses: { 200: crmSuccess("The user", User, ETAG_HEADER), ...NOT_FOUND },
});

const create = defineRoute(CRM, {
  operationId: "createUser",
  method: "post",
  path: "/v1/users",
  tags,
  security,
  summary: "Invite a user",
  description: `Creates the user (\`role\` agent unless said) and mails them a one-time sign-in link valid 7 days: opening it sends a code to their address, and the right code signs them in with a new 30-day session token (README "Users and roles"). The link is in the mail only. Emits \`user.created\`. Owners and admins (\`users:manage\`); ${OWNERS_ONLY}. ${MAIL_BOUND}`,
  request: jsonBody(CreateUser),
  responses: {
    201: crmSuccess("The invited user", User, ETAG_HEADER),
    403: crmError("Only an owner may make an owner (insufficient_role)"),
    409: crmError(
      "A user of your organization has this e-mail address (duplicate_email), or too many concurrent changes (concurrent_modification; retry)",
    ),
    ...TOO_MANY_MAILS,
  },
});

const update = defineRoute(CRM, {
  operationId: "updateUser",
  method: "patch",
  path: "/v1/users/{id}",
  tags,
  security,
  summary: "Change a user's name, role or whether they take leads",
  description: `Only what is sent changes. The organization keeps at least one owner. Emits \`user.updated\` when something changed. Send the ETag in \`If-Match\` to make it conditional. Owners and admins (\`users:manage\`); ${OWNERS_ONLY}.`,
  request: { params: UserIdParam, ...jsonBody(UpdateUser) },
  responses: {
    200: crmSuccess("The user", User, ETAG_HEADER),
    403: crmError("Only an owner may make or unmake an owner (insufficient_role)"),
    ...NOT_FOUND,
    409: crmError(
      "The change would leave the organization without an owner (last_owner), or too many concurrent changes (concurrent_modification; retry)",
    ),
    ...CRM_PRECONDITION_ERROR,
  },
});

const resend = defineRoute(CRM, {
  operationId: "resendInvitation",
  method: "post",
  path: "/v1/users/{id}/invitation",
  tags,
  security,
  summary: "Mail a user a new invitation link",
  description:
    "For a user who has not signed in yet (an expired or lost link): a new link valid 7 days is mailed, and the earlier one stops working (a refused resend leaves it working). Owners and admins (`users:manage`). " +
    MAIL_BOUND,
  request: { params: UserIdParam },
  responses: {
    200: crmSuccess("The user, still invited, with the new link's expiry", User, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("The user has signed in already (user_active)"),
    ...TOO_MANY_MAILS,
  },
});

export const userRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listUsers(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(read, async (c) => {
    const user = await getUser(serviceContext(c), c.req.valid("param").id);
    // An invited user's status and invitationExpiresAt live in the directory, outside the version.
    return c.json({ success: true as const, data: withEtag(c, user, instantFacet("i", user.invitationExpiresAt)) }, 200);
  })
  .openapi(create, async (c) => {
    const { ctx, answer } = keptAnswer<User>(c, 201);
    return c.json(answer(withEtag(c, await createUser(ctx, c.req.valid("json"), invitationMails(c)))), 201);
  })
  .openapi(resend, async (c) =>
    c.json(
      { success: true as const, data: withEtag(c, await resendInvitation(serviceContext(c), c.req.valid("param").id, invitationMails(c))) },
      200,
    ),
  )
  .openapi(update, async (c) =>
    c.json(
      { success: true as const, data: withEtag(c, await updateUser(serviceContext(c), c.req.valid("param").id, c.req.valid("json"))) },
      200,
    ),
  );
