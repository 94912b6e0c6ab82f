import { describe, expect, it } from "vitest";
import { formJsonSchema } from "../../src/documents/form-catalog";
import { chatJsonAnswer, openAiGateway } from "../helpers/ai-gateway";
import { call, json } from "../helpers/client";
import { leaseCanonical } from "../helpers/documents";
import { createPrincipal } from "../helpers/factories";
import { amendmentCanonical, day, listingCanonical, purchaseCanonical, representationCanonical } from "../helpers/forms";

// POST /api/documents/draft picks the form (issue 31): the model is shown every typed form's schema, answers a
// canonical whose formKey names its choice, and the answer is validated against that form as POST /api/documents would.
const draft = (token: string, prompt: string, vars: Record<string, string>) =>
  call("POST", "/api/documents/draft", { token, body: { prompt }, vars });

const PROMPTS = [
  {
    formKey: "on/agreement-of-purchase-and-sale",
    canonical: purchaseCanonical,
    prompt:
      "Offer on 12 Elm St from Ana and Raj Patel to Lee Wong, $910,000, $45,000 deposit due in two days, financing condition for five business days, closing March 3",
  },
  {
    formKey: "on/listing-agreement",
    canonical: listingCanonical,
    prompt: "List 88 Harbour Rd, Kingston for Mira Okafor with Lakeshore Realty at $749,900 for 90 days, 2.5% commission, 60 days holdover",
  },
  {
    formKey: "on/buyer-representation-agreement",
    canonical: representationCanonical,
    prompt: "Sofia Lindqvist signs with Northgate Buyers Brokerage to find a detached house in Ottawa west, for four months",
  },
  {
    formKey: "on/amendment",
    canonical: () => amendmentCanonical("doc-123", { waives: [0], completion: day(45) }),
    prompt: "Amend the Elm St agreement doc-123: the buyers waive financing and closing moves to day 45",
  },
  {
    formKey: "on/standard-lease",
    canonical: leaseCanonical,
    prompt: "Lease of 1 Queen St W, Toronto from Lars Landlord to Tess Tenant at $2,500 a month for a year",
  },
];

describe("POST /api/documents/draft picks the form", () => {
  it.each(PROMPTS)("answers a $formKey draft from its prompt, shown every form's schema", async ({ formKey, canonical, prompt }) => {
    const { token } = await createPrincipal();
    const answer = canonical();
    const gateway = await openAiGateway({ script: [chatJsonAnswer(answer)] });
    const res = await draft(token, prompt, gateway.vars);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ formKey, canonical: { ...answer, provenance: { aiDrafted: true } } });
    const [request] = await gateway.requests();
    const [system, user] = request!.body.messages as { content: string }[];
    for (const key of PROMPTS.map((p) => p.formKey)) expect(system!.content).toContain(JSON.stringify(formJsonSchema(key)));
    expect(system!.content).not.toContain('"generic/free-form"');
    expect(user!.content).toBe(prompt);
  });

  it("an answer that breaks the chosen form's schema is invalid_draft with every issue; an unknown form names canonical.formKey", async () => {
    const { token } = await createPrincipal();
    const bad = purchaseCanonical() as Record<string, any>;
    bad.purchase.price = { cents: "910000" };
    delete bad.purchase.sellers;
    bad.purchase.conditions[0].type = "vibes";
    const gateway = await openAiGateway({
      script: [
        chatJsonAnswer(bad),
        chatJsonAnswer({ ...purchaseCanonical(), formKey: "on/bill-of-sale" }),
        chatJsonAnswer({ ...listingCanonical(), formKey: undefined }),
      ],
    });
    const res = await draft(token, PROMPTS[0]!.prompt, gateway.vars);
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body).toMatchObject({ error: "draft_failed", reason: "invalid_draft" });
    expect(body.issues.map((i: { path: unknown[] }) => i.path.join(".")).sort()).toEqual([
      "canonical.purchase.conditions.0.type",
      "canonical.purchase.price.cents",
      "canonical.purchase.sellers",
    ]);
    for (const _ of [1, 2]) {
      const unknown = await draft(token, PROMPTS[0]!.prompt, gateway.vars);
      expect(unknown.status).toBe(422);
      expect(await json(unknown)).toEqual({
        error: "draft_failed",
        reason: "invalid_draft",
        issues: [{ message: expect.stringContaining("on/agreement-of-purchase-and-sale"), path: ["canonical", "formKey"] }],
      });
    }
  });
});
