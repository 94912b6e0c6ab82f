import { z } from "@hono/zod-openapi";
import { Page } from "../crm/body";
import { listQuery } from "../crm/list-query";
import { oneLineText } from "../lib/validation";
import { ROLES } from "../platform/permissions";

const Role = z.enum(ROLES).openapi({
  description: "owner and admin manage the organization, its users, keys and webhooks; agent works with the CRM and documents",
});

export const User = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    role: Role,
    acceptsLeads: z.boolean().openapi({ description: "Whether lead routing may assign new leads to this user" }),
    status: z.enum(["invited", "active"]).openapi({ description: "invited: has not yet signed in with the link mailed to them" }),
    invitationExpiresAt: z.string().nullable().openapi({ description: "While invited: when the link mailed to them stops working" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("User");
export type User = z.infer<typeof User>;

export const UserList = Page(User).openapi("UserList");

export const UserListQuery = listQuery({});

export const UserIdParam = z.object({ id: z.uuid().openapi({ param: { name: "id", in: "path" } }) });

/** POST /v1/users. */
export const CreateUser = z
  .strictObject({
    email: z.email().max(254).openapi({ description: "Where the sign-in link goes; unique in the organization, whatever its case" }),
    name: oneLineText(200),
    role: Role.default("agent"),
  })
  .openapi("CreateUser");
export type CreateUser = z.infer<typeof CreateUser>;

/** PATCH /v1/users/{id}: only what is sent changes. */
export const UpdateUser = z
  .strictObject({
    name: oneLineText(200).optional(),
    role: Role.optional(),
    acceptsLeads: z.boolean().optional(),
  })
  .refine((u) => Object.keys(u).length > 0, { message: "Nothing to update", params: { code: "empty_update" } })
  .openapi("UpdateUser");
export type UpdateUser = z.infer<typeof UpdateUser>;
