// The public signing route (issue 7): one sign call beside 50 concurrent sign calls on one envelope, in one run, with
// the D1 round trips and Durable Object calls one public sign costs, counted.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createApp } from "../src/app";
import { sha256Hex } from "../src/lib/crypto";
import { act } from "../src/signatures/machine";
import { createDocument, freshIp, leaseCanonical, publicSign, sendForSignature, tokenOf } from "../test/helpers/documents";
import { createPrincipal, type TestPrincipal } from "../test/helpers/factories";
import { countD1, countDurableObjectCalls, percentile } from "./harness";

const SINGLES = 40;
const BURSTS = 8;
const BURST = 50;

/** Envelopes with one signer each, brought to `consented`, so the next call is the sign that completes them. */
async function consentedSigners(owner: TestPrincipal, n: number): Promise<{ envelopeId: string; token: string }[]> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const doc = await createDocument(owner.token, leaseCanonical());
    const sent = await sendForSignature(owner.token, doc.id, { signers: [{ name: "Bench Signer", email: `signer${i}@bench.test`, role: "tenant" }] });
    const token = tokenOf(sent.links[0]!.url);
    await publicSign("GET", token);
    await publicSign("POST", token, { action: "authenticate", codeVerified: true });
    await publicSign("POST", token, { action: "consent" });
    out.push({ envelopeId: sent.envelopeId, token });
  }
  return out;
}

it("public sign: a single call beside 50 concurrent calls on one envelope; D1 round trips and Durable Object calls per call", async () => {
  const owner = await createPrincipal();
  const d1 = countD1(env.DB);
  const signers = countDurableObjectCalls(env.ENVELOPE_SIGNER);
  const limiter = countDurableObjectCalls(env.RATE_LIMITER);
  const benchEnv = { ...env, DB: d1.db, ENVELOPE_SIGNER: signers.namespace, RATE_LIMITER: limiter.namespace };
  const app = createApp();
  // The same app without the per-IP limiter: 50 distinct client addresses make 50 new RateLimiter objects, whose
  // creation dominates a local burst; this shows the signing path alone beside it.
  const unlimited = createApp({ rateLimiter: { consume: async () => ({ allowed: true, remaining: 1, retryAfterSeconds: 0 }) } });
  const sign = async (token: string, via = app) => {
    const ctx = createExecutionContext();
    const started = performance.now();
    const res = await via.fetch(
      new Request(`http://bench.test/api/public/sign/${token}`, { method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": freshIp() }, body: JSON.stringify({ action: "sign" }) }),
      benchEnv,
      ctx,
    );
    const ms = performance.now() - started;
    await res.arrayBuffer();
    await waitOnExecutionContext(ctx);
    return { status: res.status, ms };
  };

  // Counted on one call: what the route does, and what the envelope's object does for it (the object runs with the
  // runtime's own env, so its D1 work is counted by running the same transition with the counting binding).
  const [probe, inside] = await consentedSigners(owner, 2);
  d1.reset();
  signers.reset();
  limiter.reset();
  expect((await sign(probe!.token)).status).toBe(200);
  const route = { d1: d1.trips(), envelopeSigner: signers.calls(), rateLimiter: limiter.calls() };
  d1.reset();
  const deferred: Promise<unknown>[] = [];
  const result = await act({ ...env, DB: d1.db }, inside!.envelopeId, await sha256Hex(inside!.token), { action: "sign" }, { ip: null, userAgent: null }, (w) => deferred.push(w));
  await Promise.all(deferred);
  expect(result).toEqual({ kind: "done", completed: true });
  const object = d1.trips();

  const singles = await consentedSigners(owner, SINGLES);
  const bursts = await consentedSigners(owner, BURSTS * 2);
  const single: number[] = [];
  const burst: number[] = [];
  const bare: number[] = [];
  let burstWall = 0;
  const race = async (token: string, via: typeof app) => {
    const answers = await Promise.all(Array.from({ length: BURST }, () => sign(token, via)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.every((a) => a.status === 200 || a.status === 404)).toBe(true);
    return answers.map((a) => a.ms);
  };
  // Interleaved: a burst with and without the limiter, then a share of the single calls, so all see the same state.
  for (let i = 0; i < BURSTS; i++) {
    const started = performance.now();
    burst.push(...(await race(bursts[2 * i]!.token, app)));
    burstWall += performance.now() - started;
    bare.push(...(await race(bursts[2 * i + 1]!.token, unlimited)));
    for (const s of singles.slice((i * SINGLES) / BURSTS, ((i + 1) * SINGLES) / BURSTS)) {
      const { status, ms } = await sign(s.token);
      expect(status).toBe(200);
      single.push(ms);
    }
  }

  const row = (name: string, values: number[]) => `  ${name.padEnd(58)} p50 ${percentile(values, 0.5).toFixed(2).padStart(7)} ms  p99 ${percentile(values, 0.99).toFixed(2).padStart(7)} ms  (${values.length} calls)`;
  console.log(
    [
      "\n== public sign (POST /api/public/sign/{token}, action sign; the call that completes the envelope)",
      row("one sign call at a time (baseline)", single),
      row(`each of ${BURST} concurrent sign calls on one envelope`, burst),
      row(`the same, per-IP limiter bypassed (signing path alone)`, bare),
      `  a burst of ${BURST} end to end: ${(burstWall / BURSTS).toFixed(1)} ms on average (one 200, ${BURST - 1} 404 gone, no 5xx)`,
      `  per public sign call: D1 round trips ${route.d1} in the route (token lookup) + ${object} in the envelope's object (load, guarded write, event publish);`,
      `  Durable Object calls ${route.envelopeSigner + route.rateLimiter} (envelope signer ${route.envelopeSigner}, rate limiter ${route.rateLimiter})`,
    ].join("\n"),
  );
});
