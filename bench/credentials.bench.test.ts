// Issue 32: what the per-credential quota costs an authenticated read (the Durable Object call beside the directory
// lookup), with and without the limiter, interleaved; and an API key's read beside a session's: the same D1 round trips.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { createApp } from "../src/app";
import type { Env } from "../src/env";
import type { RateLimiter } from "../src/platform/rate-limiter";
import { createApiKey } from "../test/helpers/api-keys";
import { createContact } from "../test/helpers/contacts";
import { createPrincipal } from "../test/helpers/factories";
import { countDurableObjectCalls, countReadsByDatabase, measureInterleaved, printTable } from "./harness";

/** "Without the limiter": every request admitted at once, no Durable Object call; the fields are still written. */
const noLimiter: RateLimiter = {
  consume: async (_key, rule) => ({ allowed: true, remaining: rule.limit - 1, retryAfterSeconds: 0, resetSeconds: rule.windowSeconds }),
};

const counted = countReadsByDatabase();
const objects = countDurableObjectCalls(env.RATE_LIMITER);
const benchEnv = { ...counted.env, RATE_LIMITER: objects.namespace } as Env;
const withLimiter = createApp();
const withoutLimiter = createApp({ credentialLimiter: noLimiter });

let session: string;
let key: string;
let contactId: string;

beforeAll(async () => {
  const owner = await createPrincipal({ shard: 1 });
  session = owner.token;
  key = (await createApiKey(owner.token, ["contacts:read"])).key;
  contactId = (await createContact(owner.token)).id;
});

async function read(app: ReturnType<typeof createApp>, token: string) {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`http://bench.test/v1/contacts/${contactId}`, { headers: { authorization: `Bearer ${token}` } }),
    benchEnv,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  if (res.status !== 200) throw new Error(`GET: ${res.status} ${await res.text()}`);
  return res.arrayBuffer();
}

it("an authenticated read with and without the credential limiter; a key's read beside a session's", async () => {
  const scenarios = [
    { name: "GET /v1/contacts/{id}, session, no limiter", fn: () => read(withoutLimiter, session) },
    { name: "GET /v1/contacts/{id}, session, limiter beside the lookup", fn: () => read(withLimiter, session) },
    { name: "GET /v1/contacts/{id}, API key, no limiter", fn: () => read(withoutLimiter, key) },
    { name: "GET /v1/contacts/{id}, API key, limiter beside the lookup", fn: () => read(withLimiter, key) },
  ];
  // Round trips of one request each, after one like it (the shard guess is warm and the key's last use stamped, as
  // on a live isolate: the stamp is at most one write a minute per key, after the answer).
  const trips: Record<string, ReturnType<typeof counted.figures> & { objectCalls: number }> = {};
  for (const s of scenarios) {
    await s.fn();
    counted.reset();
    objects.reset();
    await s.fn();
    trips[s.name] = { ...counted.figures(), objectCalls: objects.calls() };
  }
  const figures = await measureInterleaved(scenarios);
  printTable("An authenticated read: the per-credential quota beside the lookup", figures, figures[0]);
  console.log(
    [
      "\n== D1 round trips (directory, shard; waves: trips in flight together count once) and limiter calls per request",
      ...Object.entries(trips).map(
        ([name, f]) =>
          `  ${name.padEnd(58)} directory ${f.directoryReads + f.directoryWrites}  shard ${f.shardReads + f.shardWrites}  waves ${f.waves}  limiter calls ${f.objectCalls}`,
      ),
    ].join("\n"),
  );
  const [sessionOff, sessionOn, keyOff, keyOn] = scenarios.map((s) => trips[s.name]!);
  // The limiter adds a Durable Object call, no D1 round trip and no wave; a key costs what a session costs.
  for (const f of [sessionOff, sessionOn, keyOff, keyOn])
    expect({ directory: f!.directoryReads + f!.directoryWrites, shard: f!.shardReads + f!.shardWrites }).toEqual({
      directory: 1,
      shard: 1,
    });
  expect(sessionOn!.waves).toBe(sessionOff!.waves);
  expect(keyOn!.waves).toBe(sessionOn!.waves);
  expect([sessionOff!.objectCalls, sessionOn!.objectCalls, keyOff!.objectCalls, keyOn!.objectCalls]).toEqual([0, 1, 0, 1]);
});
