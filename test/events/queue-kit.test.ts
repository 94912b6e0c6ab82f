import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { queueConsumer } from "../../src/events/queue-consumer";
import worker from "../../src/index";
import { createLogger } from "../../src/lib/log";
import { EXPORT_RUN } from "../../src/lib/retry";

/**
 * The queue kit (src/events/queue-consumer.ts) and the logger (src/lib/log.ts): every queue's messages are parsed by
 * its schema, a body that does not parse is logged and dead-lettered without failing its batch, and no log line
 * carries a field named like a secret.
 */

afterEach(() => vi.restoreAllMocks());

/** Every line written at `level` while `run` runs, parsed. */
async function linesOf(level: "error" | "warn", run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const spy = vi.spyOn(console, level).mockImplementation(() => {});
  await run();
  const lines = spy.mock.calls.map((args) => JSON.parse(String(args[0])) as Record<string, unknown>);
  spy.mockRestore();
  return lines;
}

/** Bodies no producer sends: not an object, a field of the wrong type, a field missing, an empty id. */
const MALFORMED: Record<string, unknown[]> = {
  events: ["plain text", { not: "an event" }, { id: 42, organizationId: "org" }],
  "webhook-deliveries": [null, { deliveryId: 7 }, { deliveryId: "d", organizationId: "o", chain: "two" }],
  "webhook-deliveries-dlq": [[1, 2, 3], { organizationId: "o" }],
  imports: [{ importId: "i" }, { importId: "", organizationId: "o" }, "imp"],
  "organization-exports": [{ exportId: 5, organizationId: "o" }, { organizationId: "o" }, {}],
};

describe("a message its queue's schema refuses", () => {
  it.each(Object.entries(MALFORMED))(
    "on %s: logged by id and dead-lettered (acked unread), the batch not failed",
    async (queue, bodies) => {
      const batch = createMessageBatch(
        queue,
        bodies.map((body, i) => ({ id: `bad-${i}`, timestamp: new Date(), attempts: 1, body })),
      );
      const errors = await linesOf("error", () => worker.queue(batch, env));
      const result = await getQueueResult(batch, createExecutionContext());
      expect(result.explicitAcks.sort()).toEqual(bodies.map((_, i) => `bad-${i}`));
      expect(result.retryMessages).toEqual([]);
      expect(result.retryBatch.retry).toBe(false);
      const deadLettered = errors.filter((l) => l.msg === "queue message unreadable; dead-lettered");
      expect(deadLettered.map((l) => l.messageId).sort()).toEqual(bodies.map((_, i) => `bad-${i}`));
      for (const line of deadLettered) {
        expect(line).toMatchObject({ level: "error", queue, attempts: 1 });
        expect((line.issues as unknown[]).length).toBeGreaterThan(0);
      }
    },
  );

  it("leaves the readable messages of its batch to the handler, which sees only parsed bodies", async () => {
    const seen: unknown[] = [];
    const consume = queueConsumer({ schema: z.object({ n: z.number() }), retry: EXPORT_RUN }, async (messages) => {
      seen.push(...messages.map((m) => m.body));
    });
    const batch = createMessageBatch("organization-exports", [
      { id: "good", timestamp: new Date(), attempts: 1, body: { n: 1, extra: "dropped" } },
      { id: "bad", timestamp: new Date(), attempts: 1, body: { n: "1" } },
    ]);
    await linesOf("error", () => consume(batch, env));
    expect(seen).toEqual([{ n: 1 }]);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks.sort()).toEqual(["bad", "good"]);
  });
});

describe("the consumer skeleton", () => {
  it("retries what a throwing handler left unsettled on the queue's named schedule, and keeps what it settled", async () => {
    const consume = queueConsumer({ schema: z.object({ n: z.number() }), retry: EXPORT_RUN }, async (messages) => {
      messages[0]!.ack();
      throw new Error("D1 is down");
    });
    const batch = createMessageBatch("organization-exports", [
      { id: "done", timestamp: new Date(), attempts: 1, body: { n: 1 } },
      { id: "again", timestamp: new Date(), attempts: 3, body: { n: 2 } },
    ]);
    const retry = vi.spyOn(batch.messages[1]!, "retry");
    const errors = await linesOf("error", () => consume(batch, env));
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks).toEqual(["done"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["again"]);
    expect(retry).toHaveBeenCalledWith({ delaySeconds: EXPORT_RUN.delaySeconds(3) });
    expect(EXPORT_RUN.delaySeconds(3)).toBe(240);
    expect(errors).toContainEqual(expect.objectContaining({ msg: "queue batch failed; its messages retried", schedule: "export-run" }));
  });
});

describe("the logger", () => {
  it("writes one JSON line with level, message, request id, organization and fields, at the console method of its level", () => {
    const info = vi.spyOn(console, "info").mockImplementation(() => {});
    createLogger({ requestId: "req-1", organizationId: "org-1" }).info("contact merged", { contactId: "c-1", count: 2 });
    expect(info).toHaveBeenCalledTimes(1);
    expect(JSON.parse(String(info.mock.calls[0]![0]))).toEqual({
      level: "info",
      msg: "contact merged",
      requestId: "req-1",
      organizationId: "org-1",
      contactId: "c-1",
      count: 2,
    });
  });

  it("never writes a field named like a secret, at any depth, whatever its case or separators", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const secrets = ["s3cr3t-a", "s3cr3t-b", "s3cr3t-c", "s3cr3t-d", "s3cr3t-e", "s3cr3t-f", "s3cr3t-g", "s3cr3t-h", "s3cr3t-i"];
    createLogger({ requestId: "req-2" }).warn("webhook call failed", {
      subscriptionId: "sub-1",
      secret: secrets[0],
      accessToken: secrets[1],
      "x-api-key": secrets[2],
      headers: { Authorization: `Bearer ${secrets[3]}`, cookie: secrets[4], accept: "application/json" },
      attempts: [{ signature: secrets[5], status: 500 }],
      PASSWORD: secrets[6],
      refresh_token: secrets[7],
      previousSecretCiphertext: secrets[8],
    });
    const line = String(warn.mock.calls[0]![0]);
    for (const s of secrets) expect(line).not.toContain(s);
    const parsed = JSON.parse(line);
    expect(parsed).toMatchObject({
      level: "warn",
      msg: "webhook call failed",
      requestId: "req-2",
      subscriptionId: "sub-1",
      headers: { accept: "application/json" },
      attempts: [{ status: 500 }],
    });
    const names = (value: unknown): string[] =>
      value && typeof value === "object" ? Object.entries(value).flatMap(([k, v]) => [k, ...names(v)]) : [];
    expect(names(parsed).filter((k) => /secret|token|key|authorization|cookie|signature|password|ciphertext/i.test(k))).toEqual([]);
    expect(parsed.withheld).toHaveLength(9);
  });

  it("writes an error as its message, without the bound values a query error carries", () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    createLogger().error("write failed", {
      error: new Error("Failed query: insert into contacts (email) values (?)\nparams: ann@private.test"),
    });
    const line = String(error.mock.calls[0]![0]);
    expect(line).toContain("Failed query");
    expect(line).not.toContain("ann@private.test");
  });
});
