import { describe, expect, it } from "vitest";
import { createPrincipal } from "../helpers/factories";
import { connect, tool } from "../helpers/mcp";
import { seedPondLead } from "../helpers/ponds";

describe("MCP tool claim_lead", () => {
  it("claims a pond's lead for the caller, once; another organization's lead is not found", async () => {
    const owner = await createPrincipal();
    const { id } = await seedPondLead(owner);
    const client = await connect(owner.token);
    const claimed = await tool(client, "claim_lead", { contactId: id });
    expect(claimed.isError, claimed.text).toBe(false);
    expect(claimed.data.contact).toMatchObject({ id, assignedTo: owner.userId });
    expect(await tool(client, "claim_lead", { contactId: id })).toMatchObject({ isError: true, data: { error: "already_claimed" } });
    const stranger = await connect((await createPrincipal()).token);
    expect(await tool(stranger, "claim_lead", { contactId: id })).toMatchObject({ isError: true, data: { error: "not_found" } });
    await Promise.all([client.close(), stranger.close()]);
  });
});
