import { z } from "zod";
import { Pagination } from "../crm/body";
import { CUSTOM_FIELD_OBJECTS } from "../crm/custom-fields";
import { CustomField, CustomFieldListQuery } from "../custom-fields/schemas";
import { listCustomFields } from "../custom-fields/service";
import { User, UserListQuery } from "../users/schemas";
import { listUsers } from "../users/service";
import { defineTool, definedOnly, parseWith, pageInputs } from "./tool";

// Users to assign work to, custom fields to fill.

export const listUsersTool = defineTool({
  name: "list_users",
  route: "GET /v1/users",
  title: "List the organization's users",
  description:
    "The organization's users, newest first, one keyset page at a time with a total: id, name, e-mail, role (owner, admin or agent), whether lead routing may give them new leads (acceptsLeads) and whether they have signed in yet (status invited or active). The id is what assignedTo takes on contacts, deals and tasks.",
  permission: "organization:read",
  effect: "read",
  input: z.strictObject({ ...pageInputs }),
  output: z.object({ users: z.array(User), pagination: Pagination }),
  async run({ limit, cursor }, { ctx }) {
    // GET /v1/users' own query schema.
    const page = await listUsers(ctx, parseWith(UserListQuery, definedOnly({ limit: String(limit), cursor })));
    return { users: page.data, pagination: page.pagination };
  },
});

export const listCustomFieldsTool = defineTool({
  name: "list_custom_fields",
  route: "GET /v1/custom-fields",
  title: "List custom fields",
  description:
    "The organization's own fields on contacts, deals or properties, newest first, one keyset page at a time with a total: each with its key (the name to use in customFields when creating or updating a record, and in find filters), label, type (text, number, date as YYYY-MM-DD, boolean, or select with its options) and the kind of record it is on.",
  permission: "custom-fields:read",
  effect: "read",
  input: z.strictObject({
    object: z.enum(CUSTOM_FIELD_OBJECTS).optional().describe("Only the fields of this kind of record"),
    ...pageInputs,
  }),
  output: z.object({ customFields: z.array(CustomField), pagination: Pagination }),
  async run({ object, limit, cursor }, { ctx }) {
    // GET /v1/custom-fields' own query schema.
    const query = parseWith(CustomFieldListQuery, definedOnly({ object, limit: String(limit), cursor }));
    const page = await listCustomFields(ctx, query);
    return { customFields: page.data, pagination: page.pagination };
  },
});

export const orgTools = [listUsersTool, listCustomFieldsTool];
