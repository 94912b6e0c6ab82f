import { expect, vi } from "vitest";
import { call, json } from "./client";
import { linkIn, mailTo, type Sent, signAll, tokenOf } from "./documents";
import type { TestPrincipal } from "./factories";
import { receiverUrl } from "./receiver";

export * from "./form-canonicals";

/**
 * Signs an envelope through the public flow, one signer after another as a sequential envelope hands them their
 * links: the first from the send's answer, each next one from the mail it gets when the one before has signed.
 */
export async function signInTurn(sent: Sent, emails: string[]): Promise<void> {
  const linksIn = async (email: string) => (await mailTo(email)).map((m) => linkIn(m.text)).filter((l): l is string => Boolean(l));
  // Links these signers were mailed before (another envelope's), not this envelope's.
  const earlier = new Set((await Promise.all(emails.map(linksIn))).flat());
  let token = tokenOf(sent.links[0]!.url);
  for (const [i, email] of emails.entries()) {
    if (i > 0) {
      let url: string | null = null;
      await vi.waitFor(
        async () => {
          url = (await linksIn(email)).find((l) => !earlier.has(l)) ?? null;
          expect(url).toBeTruthy();
        },
        { timeout: 10_000, interval: 100 },
      );
      token = tokenOf(url!);
    }
    const signed = await signAll(token);
    expect(signed.completed).toBe(i === emails.length - 1);
  }
}

/** The sealed PDF of a completed envelope, once its consumers have built it. */
export async function sealedPdf(owner: TestPrincipal, envelopeId: string): Promise<Uint8Array> {
  await vi.waitFor(
    async () =>
      expect((await json(await call("GET", `/api/signatures/${envelopeId}`, { token: owner.token }))).signedDocument.status).toBe("ready"),
    { timeout: 20_000, interval: 100 },
  );
  const link = await json(await call("GET", `/api/signatures/${envelopeId}/document`, { token: owner.token }));
  const res = await call("GET", new URL(link.url).pathname + new URL(link.url).search);
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

/** What poppler's pdftotext and pdfsig print for a PDF (run by the Node receiver: workerd runs no programs). */
export async function poppler(pdf: Uint8Array): Promise<{ text: string; sig: string }> {
  let binary = "";
  for (let i = 0; i < pdf.length; i += 0x8000) binary += String.fromCharCode(...pdf.subarray(i, i + 0x8000));
  const res = await fetch(`${receiverUrl()}/poppler`, { method: "POST", body: btoa(binary) });
  expect(res.status).toBe(200);
  const out = (await res.json()) as { text: string; sig: string };
  return { text: out.text.replace(/\s+/g, " "), sig: out.sig };
}
