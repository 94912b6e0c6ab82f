// The public signing route (issues 7 and 20): one sign call beside 50 concurrent sign calls on one envelope, from
// 50 addresses and from one, in one run, with the D1 round trips and Durable Object calls one public sign costs.
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createApp } from "../src/app";
import { sha256Hex } from "../src/lib/crypto";
import { act } from "../src/signatures/actions";
import { SignerCodes } from "../src/signatures/codes";
import { loadEnvelope } from "../src/signatures/machine";
import { envelopeSigner } from "../src/signatures/signer-client";
import { createDb } from "../src/db/client";
import { createDocument, freshIp, leaseCanonical, publicSign, sendForSignature, tokenOf } from "../test/helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { countAllD1, countDurableObjectCalls, percentile } from "./harness";

/**
 * Waits until the completions so far have been turned into their certificate and sealed PDF. Those consumers render
 * PDFs (tens of ms of CPU) and, in this bench, run in the same workerd process as the signs being timed; deployed, a
 * queue consumer runs in an invocation of its own. So each measurement starts once they are done.
 */
async function settle(owner: TestPrincipal, envelopeIds: string[]) {
  const deadline = Date.now() + 30_000;
  const db = await tenantDb(owner.organizationId);
  for (;;) {
    const row = await db
      .prepare(
        "SELECT COUNT(*) AS n FROM envelopes WHERE id IN (SELECT value FROM json_each(?)) AND (sealed_key IS NULL OR certificate_key IS NULL)",
      )
      .bind(JSON.stringify(envelopeIds))
      .first<{ n: number }>();
    // The rest of their work (the copies' mail, the other consumers of the event) ends soon after.
    if (row!.n === 0 || Date.now() > deadline) return new Promise((r) => setTimeout(r, 300));
    await new Promise((r) => setTimeout(r, 50));
  }
}

const SINGLES = 40;
const BURSTS = 8;
const BURST = 50;

/** Envelopes with one signer each, brought to `consented`, so the next call is the sign that completes them. */
async function consentedSigners(owner: TestPrincipal, n: number): Promise<{ envelopeId: string; token: string; ip: string }[]> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const doc = await createDocument(owner.token, leaseCanonical());
    const sent = await sendForSignature(owner.token, doc.id, {
      signers: [{ name: "Bench Signer", email: `signer${i}@bench.test`, role: "tenant" }],
    });
    const token = tokenOf(sent.links[0]!.url);
    // The signer's own browser, one address, as it walks the steps before signing.
    const ip = freshIp();
    await publicSign("GET", token, undefined, ip);
    await publicSign("POST", token, { action: "authenticate", codeVerified: true }, ip);
    await publicSign("POST", token, { action: "consent" }, ip);
    out.push({ envelopeId: sent.envelopeId, token, ip });
  }
  return out;
}

it("public sign: a single call beside 50 concurrent calls on one envelope; D1 round trips and Durable Object calls per call", async () => {
  const owner = await createPrincipal({ shard: 0 });
  const d1 = countAllD1();
  const signers = countDurableObjectCalls(env.ENVELOPE_SIGNER);
  const limiter = countDurableObjectCalls(env.RATE_LIMITER);
  const benchEnv = { ...env, ...d1.dbs, ENVELOPE_SIGNER: signers.namespace, RATE_LIMITER: limiter.namespace };
  const app = createApp();
  const sign = async (token: string, ip: string) => {
    const ctx = createExecutionContext();
    const started = performance.now();
    const res = await app.fetch(
      new Request(`http://bench.test/api/public/sign/${token}`, {
        method: "POST",
        headers: { "content-type": "application/json", "cf-connecting-ip": ip },
        body: JSON.stringify({ action: "sign" }),
      }),
      benchEnv,
      ctx,
    );
    const ms = performance.now() - started;
    await res.arrayBuffer();
    await waitOnExecutionContext(ctx);
    return { status: res.status, ms };
  };

  // Counted on one call: what the route does, and what the envelope's object does for it. The object runs with the
  // runtime's own env, so its D1 work is counted by running the same transition, from the state the object holds,
  // with the counting binding.
  const [probe, inside] = await consentedSigners(owner, 2);
  d1.reset();
  signers.reset();
  limiter.reset();
  expect((await sign(probe!.token, probe!.ip)).status).toBe(200);
  const route = { d1: d1.trips(), envelopeSigner: signers.calls(), rateLimiter: limiter.calls() };
  const stub = envelopeSigner(env, inside!.envelopeId);
  const object = await runInDurableObject(stub, async (_, state) => {
    // The owner lives on shard 0 (placed there below): the object's tenant is that shard, counted.
    const counted = d1.dbs.DB_SHARD_0!;
    const tenant = { db: createDb(counted), d1: counted, directory: createDb(d1.dbs.DB!) };
    const loaded = (await loadEnvelope(tenant, inside!.envelopeId))!;
    d1.reset();
    const deferred: Promise<unknown>[] = [];
    const { result } = await act(
      { ...env, ...d1.dbs },
      { ...loaded, tenant },
      new SignerCodes(state.storage.sql),
      await sha256Hex(inside!.token),
      { action: "sign" },
      { ip: null, userAgent: null },
      (w) => deferred.push(w),
    );
    const answered = d1.trips();
    await Promise.all(deferred);
    expect(result).toEqual({ kind: "done", completed: true });
    return { answered, afterwards: d1.trips() - answered };
  });

  const singles = await consentedSigners(owner, SINGLES);
  const bursts = await consentedSigners(owner, BURSTS * 2);
  const single: number[] = [];
  const spread: number[] = [];
  const oneAddress: number[] = [];
  let limited = 0;
  const race = async (token: string, ip?: string) => {
    const answers = await Promise.all(Array.from({ length: BURST }, () => sign(token, ip ?? freshIp())));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.every((a) => a.status === 200 || a.status === 404 || a.status === 429)).toBe(true);
    limited += answers.filter((a) => a.status === 429).length;
    return answers.map((a) => a.ms);
  };
  // One burst of each first, unmeasured: the first run of a code path in an isolate pays for compiling it.
  const warm = await consentedSigners(owner, 2);
  await race(warm[0]!.token);
  await race(warm[1]!.token, warm[1]!.ip);
  limited = 0;
  // Interleaved: a burst from the signer's address, one from 50 new addresses, then a share of the single calls. The
  // burst from new addresses creates 50 limiter objects, whose storage (files, in local workerd) settles for a while
  // after: it goes after the one-address burst so that each is timed on a quiet process.
  const completed: string[] = [probe!.envelopeId, inside!.envelopeId, warm[0]!.envelopeId, warm[1]!.envelopeId];
  for (let i = 0; i < BURSTS; i++) {
    await settle(owner, completed);
    oneAddress.push(...(await race(bursts[2 * i + 1]!.token, bursts[2 * i + 1]!.ip)));
    completed.push(bursts[2 * i + 1]!.envelopeId);
    await settle(owner, completed);
    spread.push(...(await race(bursts[2 * i]!.token)));
    completed.push(bursts[2 * i]!.envelopeId);
    for (const s of singles.slice((i * SINGLES) / BURSTS, ((i + 1) * SINGLES) / BURSTS)) {
      await settle(owner, completed);
      const { status, ms } = await sign(s.token, s.ip);
      expect(status).toBe(200);
      single.push(ms);
      completed.push(s.envelopeId);
    }
  }

  const p99 = (values: number[]) => percentile(values, 0.99);
  const p50 = (values: number[]) => percentile(values, 0.5);
  const row = (name: string, values: number[]) =>
    `  ${name.padEnd(58)} p50 ${p50(values).toFixed(2).padStart(7)} ms (${(p50(values) / p50(single)).toFixed(2)}x)  p99 ${p99(values).toFixed(2).padStart(7)} ms (${(p99(values) / p99(single)).toFixed(2)}x)  (${values.length} calls)`;
  console.log(
    [
      "\n== public sign (POST /api/public/sign/{token}, action sign; the call that completes the envelope), ratios against one call at a time",
      row("one sign call at a time (baseline)", single),
      row(`each of ${BURST} concurrent sign calls, from the signer's address`, oneAddress),
      row(`each of ${BURST} concurrent sign calls, from ${BURST} new addresses`, spread),
      `  every burst: one 200 (one signature, one completion), the rest 404 gone or 429 (${limited} of ${BURSTS * BURST} from one address: its limit is 30 a minute);`,
      `  from ${BURST} new addresses each call also creates that address's limiter object (a cost each address pays once, where it first calls from)`,
      `  per public sign call: D1 round trips ${route.d1} in the route (the token names its envelope) + ${object.answered} in the envelope's object before the answer`,
      `  (its one guarded write) + ${object.afterwards} after it (the completion's event publish); Durable Object calls ${route.envelopeSigner + route.rateLimiter} (envelope signer ${route.envelopeSigner}, rate limiter ${route.rateLimiter})`,
    ].join("\n"),
  );
});
