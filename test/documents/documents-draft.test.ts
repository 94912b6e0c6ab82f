import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  AiGatewayStatusError,
  AiGatewayUnreachable,
  configuredGateway,
  DEFAULT_EMBEDDING_MODEL,
  EMBED_BATCH,
  openAiCompatibleGateway,
  workersAiGateway,
} from "../../src/ai/gateway";
import { leaseSchemaText, MAX_DRAFT_PROMPT_CHARS } from "../../src/documents/draft";
import { chatJsonAnswer, cosine, openAiGateway } from "../helpers/ai-gateway";
import { call, json } from "../helpers/client";
import { leaseCanonical } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { droppedFetch, refuseConnections } from "../helpers/outbound";

const PROMPT =
  "Lease of 1 Queen St W, Toronto ON from Lars Landlord (lars@landlord.test) to Tess Tenant (tess@tenant.test), from 2027-01-01 to 2027-12-31 at $2,500 a month, deposit $2,500";

const draft = (token: string, body: unknown, vars?: Record<string, string>) => call("POST", "/api/documents/draft", { token, body, vars });
const documentCount = async (organizationId: string) =>
  (await tenantDb(organizationId))
    .prepare("SELECT COUNT(*) AS n FROM documents WHERE organization_id = ?")
    .bind(organizationId)
    .first<number>("n");
const paths = (body: { issues: { path: (string | number)[] }[] }) => body.issues.map((i) => i.path.join(".")).sort();

afterEach(() => vi.restoreAllMocks());

describe("POST /api/documents/draft", () => {
  it("drafts a lease through the gateway: bearer token, JSON mode, the schema in the system prompt, the prompt as the user's message", async () => {
    const { token, organizationId } = await createPrincipal();
    // The model claims it did not draft it; the service states provenance itself.
    const gateway = await openAiGateway({
      token: "t",
      script: [chatJsonAnswer({ ...leaseCanonical(), provenance: { aiDrafted: false } })],
    });
    const res = await draft(token, { prompt: PROMPT }, gateway.vars);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ formKey: "on/standard-lease", canonical: { ...leaseCanonical(), provenance: { aiDrafted: true } } });

    const [request, ...more] = await gateway.requests();
    expect(more).toEqual([]);
    expect(request!.path).toBe("chat/completions");
    expect(request!.headers.authorization).toBe("Bearer t");
    expect(request!.body.response_format).toEqual({ type: "json_object" });
    expect(request!.body.model).toBe(env.AI_CHAT_MODEL);
    const [system, user] = request!.body.messages as { role: string; content: string }[];
    expect(system!.role).toBe("system");
    // The schema is derived from LeaseCanonical: its fields and bounds are in the prompt verbatim.
    expect(system!.content).toContain(leaseSchemaText());
    expect(JSON.parse(leaseSchemaText())).toMatchObject({
      properties: { lease: { required: ["tenants", "landlords", "property", "term", "monthlyRent"] } },
    });
    expect(user).toEqual({ role: "user", content: PROMPT });
    // Never stored: a draft is not a document.
    expect(await documentCount(organizationId)).toBe(0);
  });

  it("takes a draft wrapped in a code fence, and one missing provenance", async () => {
    const { token } = await createPrincipal();
    const { provenance: _, ...withoutProvenance } = leaseCanonical();
    const gateway = await openAiGateway({ script: [{ content: `\`\`\`json\n${JSON.stringify(withoutProvenance)}\n\`\`\`` }] });
    const res = await draft(token, { prompt: PROMPT }, gateway.vars);
    expect(res.status).toBe(200);
    expect((await json(res)).canonical.provenance).toEqual({ aiDrafted: true });
  });

  it("answers 422 no_json when the model's answer is not JSON", async () => {
    const { token, organizationId } = await createPrincipal();
    const gateway = await openAiGateway({ script: [{ content: "Sure! Here is a lease for Tess: rent $2,500." }] });
    const res = await draft(token, { prompt: PROMPT }, gateway.vars);
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({ error: "draft_failed", reason: "no_json", issues: [{ message: expect.any(String), path: [] }] });
    expect(await documentCount(organizationId)).toBe(0);
  });

  it("answers 422 invalid_draft listing every schema issue, with paths as POST /api/documents gives them", async () => {
    const { token, organizationId } = await createPrincipal();
    const canonical = leaseCanonical() as Record<string, any>;
    canonical.lease.tenants = [];
    canonical.lease.monthlyRent = { cents: 2500.5 };
    canonical.lease.term.commencement = { year: 2027, month: 2, day: 30 };
    canonical.lease.landlords[0].email = "not an address";
    canonical.lease.pets = "yes";
    delete canonical.lease.property;
    const gateway = await openAiGateway({ script: [chatJsonAnswer(canonical)] });
    const res = await draft(token, { prompt: PROMPT }, gateway.vars);
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body).toMatchObject({ error: "draft_failed", reason: "invalid_draft" });
    expect(paths(body)).toEqual([
      "canonical.lease.landlords.0.email",
      "canonical.lease.monthlyRent.cents",
      "canonical.lease.pets",
      "canonical.lease.property",
      "canonical.lease.tenants",
      "canonical.lease.term.commencement",
    ]);
    expect(body.issues.every((i: { message: string }) => i.message.length > 0)).toBe(true);
    // The same draft sent for generation is refused with the same problems.
    const generate = await call("POST", "/api/documents", {
      token,
      body: { formKey: "on/standard-lease", canonical: { ...canonical, provenance: { aiDrafted: true } } },
    });
    expect(generate.status).toBe(400);
    expect(paths(await json(generate))).toEqual(paths(body));
    expect(await documentCount(organizationId)).toBe(0);
  });

  it("answers 422 invalid_draft when the JSON is not an object", async () => {
    const { token } = await createPrincipal();
    const gateway = await openAiGateway({ script: [{ content: "[1, 2]" }] });
    const body = await json(await draft(token, { prompt: PROMPT }, gateway.vars));
    expect(body).toMatchObject({ error: "draft_failed", reason: "invalid_draft" });
    expect(paths(body)).toEqual(["canonical"]);
  });

  it("answers 422 error after one retry when the gateway fails with 5xx twice", async () => {
    const { token } = await createPrincipal();
    const gateway = await openAiGateway({
      script: [
        { status: 500, body: { error: { message: "overloaded" } } },
        { status: 503, body: "busy" },
        chatJsonAnswer(leaseCanonical()),
      ],
    });
    const res = await draft(token, { prompt: PROMPT }, gateway.vars);
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({
      error: "draft_failed",
      reason: "error",
      issues: [{ message: "The AI gateway answered HTTP 503", path: [] }],
    });
    expect((await gateway.requests()).length).toBe(2);
  });

  it("succeeds when the retry after one 5xx does", async () => {
    const { token } = await createPrincipal();
    const gateway = await openAiGateway({ script: [{ status: 502, body: "bad gateway" }, chatJsonAnswer(leaseCanonical())] });
    const res = await draft(token, { prompt: PROMPT }, gateway.vars);
    expect(res.status).toBe(200);
    expect((await gateway.requests()).length).toBe(2);
  });

  it("answers 422 error without retrying a 4xx (a wrong token)", async () => {
    const { token } = await createPrincipal();
    const gateway = await openAiGateway({ token: "right" });
    const res = await draft(token, { prompt: PROMPT }, { ...gateway.vars, AI_GATEWAY_TOKEN: "wrong" });
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({
      error: "draft_failed",
      reason: "error",
      issues: [{ message: "The AI gateway answered HTTP 401", path: [] }],
    });
    expect((await gateway.requests()).length).toBe(1);
  });

  it("answers 422 error when the gateway's answer is not a chat completion", async () => {
    const { token } = await createPrincipal();
    const gateway = await openAiGateway({ script: [{ status: 200, body: "<html>login</html>" }] });
    const body = await json(await draft(token, { prompt: PROMPT }, gateway.vars));
    expect(body).toMatchObject({ error: "draft_failed", reason: "error" });
    expect(body.issues[0].message).toMatch(/unusable: not JSON/);
  });

  it("answers 422 error when the gateway is unreachable, and logs no prompt text", async () => {
    const { token } = await createPrincipal();
    const logged: string[] = [];
    for (const level of ["log", "info", "warn", "error"] as const)
      vi.spyOn(console, level).mockImplementation((...args) => void logged.push(args.join(" ")));
    const secret = "Tenant-secret-7c1e9 at 99 Hidden Lane";
    const refused = refuseConnections("http://127.0.0.1:1");
    const res = await draft(token, { prompt: secret }, { AI_GATEWAY_URL: "http://127.0.0.1:1", AI_GATEWAY_TOKEN: "t" });
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({
      error: "draft_failed",
      reason: "error",
      issues: [{ message: "The AI gateway could not be reached (connection failed)", path: [] }],
    });
    expect(refused).toEqual(["http://127.0.0.1:1/chat/completions", "http://127.0.0.1:1/chat/completions"]); // one retry
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.join("\n")).not.toContain("7c1e9");
  });

  it("answers 422 error when no gateway is configured", async () => {
    const { token, organizationId } = await createPrincipal();
    expect(env.AI_GATEWAY_URL).toBeUndefined();
    expect(env.AI).toBeUndefined();
    const res = await draft(token, { prompt: PROMPT });
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({
      error: "draft_failed",
      reason: "error",
      issues: [{ message: expect.stringContaining("No AI gateway is configured"), path: [] }],
    });
    expect(await documentCount(organizationId)).toBe(0);
  });

  it("answers 400 for a prompt over the limit, an empty or missing prompt, and unknown fields, without calling the gateway", async () => {
    const { token } = await createPrincipal();
    const gateway = await openAiGateway();
    const cases: [unknown, string[]][] = [
      [{ prompt: "x".repeat(MAX_DRAFT_PROMPT_CHARS + 1) }, ["prompt"]],
      [{ prompt: "   " }, ["prompt"]],
      [{}, ["prompt"]],
      [{ prompt: 42 }, ["prompt"]],
      [{ prompt: PROMPT, formKey: "on/standard-lease" }, ["formKey"]],
    ];
    for (const [body, expected] of cases) {
      const res = await draft(token, body, gateway.vars);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const answer = await json(res);
      expect(answer.error).toBe("invalid_request");
      expect(paths(answer)).toEqual(expected);
    }
    expect(await json(await draft(token, {}, gateway.vars))).toEqual({
      error: "invalid_request",
      issues: [{ field: "prompt", path: ["prompt"], code: "required", message: "Required" }],
    });
    expect((await draft(token, { prompt: "x".repeat(MAX_DRAFT_PROMPT_CHARS) }, gateway.vars)).status).toBe(422); // at the limit: sent ("{}" is no lease)
    expect((await gateway.requests()).length).toBe(1);
  });

  it("answers 401 without a token", async () => {
    const res = await call("POST", "/api/documents/draft", { body: { prompt: PROMPT } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({ error: "Unauthorized" });
  });
});

describe("the OpenAI-compatible gateway client", () => {
  it("embeds texts in the order given, whatever order the answer lists them in", async () => {
    const gateway = await openAiGateway({ reverseEmbeddings: true, dimensions: 64 });
    const client = openAiCompatibleGateway({ baseUrl: gateway.url, token: gateway.token });
    const texts = ["monthly rent and security deposit of the lease", "tomato plants in the garden", "the lease: rent, deposit"];
    const vectors = await client.embed(texts);
    expect(vectors).toHaveLength(3);
    for (const v of vectors) {
      expect(v).toHaveLength(64);
      expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    }
    // The same text, embedded on its own, gives the same vector at the same position.
    expect(await client.embed([texts[1]!])).toEqual([vectors[1]]);
    expect(cosine(vectors[0]!, vectors[2]!)).toBeGreaterThan(cosine(vectors[0]!, vectors[1]!));

    const [request] = await gateway.requests();
    expect(request).toMatchObject({
      path: "embeddings",
      headers: { authorization: `Bearer ${gateway.token}` },
      body: { model: DEFAULT_EMBEDDING_MODEL, input: texts },
    });
  });

  it(`sends more than ${EMBED_BATCH} texts in batches and keeps their order`, async () => {
    const gateway = await openAiGateway({ dimensions: 16 });
    const client = openAiCompatibleGateway({ baseUrl: `${gateway.url}/`, token: gateway.token });
    const texts = Array.from({ length: EMBED_BATCH + 20 }, (_, i) => `document number ${i}`);
    const vectors = await client.embed(texts);
    expect(vectors).toHaveLength(texts.length);
    const requests = await gateway.requests();
    expect(requests.map((r) => r.body.input.length)).toEqual([EMBED_BATCH, 20]);
    expect(vectors[EMBED_BATCH + 5]).toEqual((await client.embed([texts[EMBED_BATCH + 5]!]))[0]);
  });

  it("throws typed errors: upstream status after one retry, unreachable", async () => {
    const gateway = await openAiGateway({ script: [{ status: 500 }, { status: 500 }] });
    const client = openAiCompatibleGateway({ baseUrl: gateway.url, token: gateway.token });
    await expect(client.embed(["a"])).rejects.toBeInstanceOf(AiGatewayStatusError);
    expect((await gateway.requests()).length).toBe(2);
    const dropped = vi.fn(droppedFetch);
    await expect(openAiCompatibleGateway({ baseUrl: "http://127.0.0.1:1", fetchFn: dropped }).embed(["a"])).rejects.toBeInstanceOf(
      AiGatewayUnreachable,
    );
    expect(dropped).toHaveBeenCalledTimes(2); // one retry after a failed connection
  });

  it("gives up after its deadline without a retry", async () => {
    const gateway = await openAiGateway({ script: [{ delayMs: 1_000 }] });
    const client = openAiCompatibleGateway({ baseUrl: gateway.url, token: gateway.token, timeoutMs: 100 });
    await expect(client.chatJson([{ role: "user", content: "hi" }])).rejects.toThrow("no answer within 100 ms");
    expect((await gateway.requests()).length).toBe(1);
  });
});

describe("the Workers AI gateway and the choice between them", () => {
  /** A stand-in for the `AI` binding (Workers AI has no local mode): records each run, answers from `answer`. */
  function fakeBinding(answer: (model: string, inputs: Record<string, any>, call: number) => unknown) {
    const runs: { model: string; inputs: Record<string, any> }[] = [];
    const ai = {
      async run(model: string, inputs: Record<string, any>) {
        runs.push({ model, inputs });
        return answer(model, inputs, runs.length);
      },
    };
    return { ai: ai as unknown as Ai, runs };
  }

  it("asks for the schema in JSON mode, takes an object or a text answer, and embeds in batches", async () => {
    const { ai, runs } = fakeBinding((model, inputs, n) => {
      if (model === "emb") return { shape: [inputs.text.length, 2], data: inputs.text.map((t: string) => [t.length, 1]) };
      return n === 1 ? { response: { a: 1 } } : { response: '{"b":2}' };
    });
    const gateway = workersAiGateway(ai, { chatModel: "chat", embeddingModel: "emb" });
    const schema = { type: "object" };
    expect(await gateway.chatJson([{ role: "user", content: "hi" }], { schema })).toBe('{"a":1}');
    expect(await gateway.chatJson([{ role: "user", content: "hi" }])).toBe('{"b":2}');
    expect(runs[0]).toEqual({
      model: "chat",
      inputs: { messages: [{ role: "user", content: "hi" }], response_format: { type: "json_schema", json_schema: schema } },
    });
    expect(runs[1]!.inputs.response_format).toEqual({ type: "json_object" });
    const texts = Array.from({ length: EMBED_BATCH + 1 }, (_, i) => "x".repeat(i + 1));
    const vectors = await gateway.embed(texts);
    expect(vectors.map((v) => v[0])).toEqual(texts.map((t) => t.length));
    expect(runs.slice(2).map((r) => r.inputs.text.length)).toEqual([EMBED_BATCH, 1]);
  });

  it("retries a failed run once, then reports it unreachable", async () => {
    const { ai, runs } = fakeBinding(() => {
      throw new Error("3040: capacity exceeded");
    });
    await expect(workersAiGateway(ai).chatJson([{ role: "user", content: "hi" }])).rejects.toBeInstanceOf(AiGatewayUnreachable);
    expect(runs.length).toBe(2);
  });

  it("uses AI_GATEWAY_URL when set, else the AI binding, else none", () => {
    const { ai } = fakeBinding(() => ({}));
    expect(configuredGateway({ ...env, AI_GATEWAY_URL: "https://gateway.test/v1", AI: ai })?.kind).toBe("openai-compatible");
    expect(configuredGateway({ ...env, AI: ai })?.kind).toBe("workers-ai");
    expect(configuredGateway({ ...env })).toBeNull();
  });
});
