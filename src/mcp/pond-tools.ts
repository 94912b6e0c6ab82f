import { z } from "zod";
import { Contact } from "../contacts/schemas";
import { claimContact } from "../ponds/service";
import { defineTool } from "./tool";

export const claimLead = defineTool({
  name: "claim_lead",
  route: "POST /v1/contacts/{id}/claim",
  title: "Claim a lead from a pond or a first-to-claim offer",
  description:
    "Assigns to you a lead waiting in a pond you are a member of, or offered to you first-to-claim by the lead routing. Exactly one of concurrent claims wins; a lead claimed already answers already_claimed. Emits contact.assigned and contact.claimed.",
  permission: "contacts:write",
  input: z.strictObject({ contactId: z.string().min(1).max(100).describe("The lead's (contact's) id") }),
  output: z.object({ contact: Contact }),
  effect: "write",
  run: async ({ contactId }, { ctx }) => ({ contact: await claimContact(ctx, contactId) }),
});

export const pondTools = [claimLead];
