// Issue 30: the directory and shard reads of one request, public and authenticated. Target: one directory read per
// request (the token's, or the link key's, lookup), and no more round trips or waves than before.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp } from "../src/app";
import type { Env } from "../src/env";
import { createContact } from "../test/helpers/contacts";
import { createDocument, freshIp, leaseCanonical, publicSign, sendForSignature, tokenOf } from "../test/helpers/documents";
import { createPrincipal } from "../test/helpers/factories";
import { withSignerEnv } from "../test/helpers/faulty-bindings";
import { countReadsByDatabase } from "./harness";

const app = createApp();

async function fetchOn(target: Env, path: string, init: RequestInit): Promise<number> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://bench.test${path}`, init), target, ctx);
  await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return res.status;
}

it("directory and shard reads of one public sign, and of one authenticated read and PUT", async () => {
  const counter = countReadsByDatabase();
  const rows: Record<string, ReturnType<typeof counter.figures>> = {};

  // An authenticated read and write, each after one like it (the shard guess is warm, as on a live isolate).
  const owner = await createPrincipal({ shard: 1 });
  const contact = await createContact(owner.token);
  const get = () => fetchOn(counter.env, `/v1/contacts/${contact.id}`, { headers: { authorization: `Bearer ${owner.token}` } });
  let n = 0;
  const put = () =>
    fetchOn(counter.env, `/v1/contacts/${contact.id}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
      body: JSON.stringify({ notes: `n${n++}` }),
    });
  expect(await get()).toBe(200);
  counter.reset();
  expect(await get()).toBe(200);
  rows["GET /v1/contacts/{id}"] = counter.figures();
  expect(await put()).toBe(200);
  counter.reset();
  expect(await put()).toBe(200);
  rows["PUT /v1/contacts/{id}"] = counter.figures();

  // A public sign that hands the envelope to the next signer (whose link is mailed), on an object that loads the
  // envelope for it (new, or evicted): the route's key lookup, the object's load and write, the mail. The object reads
  // through the counted bindings too (test/helpers/faulty-bindings.ts withSignerEnv).
  const doc = await createDocument(owner.token, leaseCanonical());
  const sent = await sendForSignature(owner.token, doc.id, {
    mode: "sequential",
    signerVerification: "attested",
    signers: [
      { name: "First Signer", email: `${crypto.randomUUID()}@bench.test`, role: "tenant" },
      { name: "Second Signer", email: `${crypto.randomUUID()}@bench.test`, role: "landlord" },
    ],
  });
  const token = tokenOf(sent.links[0]!.url);
  const ip = freshIp();
  await publicSign("GET", token, undefined, ip);
  await publicSign("POST", token, { action: "authenticate", codeVerified: true }, ip);
  await publicSign("POST", token, { action: "consent" }, ip);
  counter.reset();
  const status = await withSignerEnv(sent.envelopeId, counter.env, () =>
    fetchOn(counter.env, `/api/public/sign/${token}`, {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": ip },
      body: JSON.stringify({ action: "sign" }),
    }),
  );
  expect(status).toBe(200);
  rows["POST /api/public/sign/{token} (sign, next signer mailed)"] = counter.figures();

  console.log(
    [
      "\n== D1 round trips per request: reads and writes, on the directory and the shard, and waves (trips in flight together count as one)",
      ...Object.entries(rows).map(
        ([name, f]) =>
          `  ${name.padEnd(58)} directory reads ${f.directoryReads} writes ${f.directoryWrites}  shard reads ${f.shardReads} writes ${f.shardWrites}  waves ${f.waves}`,
      ),
    ].join("\n"),
  );
  for (const f of Object.values(rows)) expect(f.directoryReads).toBe(1);
});
