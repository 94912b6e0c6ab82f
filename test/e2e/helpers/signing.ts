// A signer's side of an envelope against `npm run dev`, as the e2e tests run it: the code mailed by send_code read back
// from the development mail log as `npm run --silent mail` reads it (DESIGN.md contract 8; helpers/local-state.ts), the public signing API driven over HTTP, the sealed PDF fetched
// through its signed link, and Debian's poppler tools run on it.
import { execFile } from "node:child_process";
import { randomInt } from "node:crypto";
import { promisify } from "node:util";
import type { LocalMail } from "../../../scripts/local-mail.mjs";
import type { createApiClient } from "../../../src/client";
import { readMail } from "./local-state";

const run = promisify(execFile);
type Api = ReturnType<typeof createApiClient>;

export const CODE_SUBJECT = "Your signing code";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The 6-digit code of the newest mail to `email`, once it is a "Your signing code" message: the mail leaves after
 * send_code has answered (waitUntil), so this polls the newest mail until it is kept.
 */
export async function mailedSigningCode(email: string, timeoutMs = 45_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let newest: LocalMail | undefined;
  for (;;) {
    [newest] = await readMail(email, 1);
    if (newest?.subject === CODE_SUBJECT) {
      const code = newest.text.match(/\b(\d{6})\b/)?.[1];
      if (!code) throw new Error(`"${CODE_SUBJECT}" to ${email} carries no 6-digit code: ${JSON.stringify(newest.text)}`);
      return code;
    }
    if (Date.now() > deadline)
      throw new Error(`no "${CODE_SUBJECT}" mail to ${email} within ${timeoutMs} ms; newest: ${JSON.stringify(newest ?? null)}`);
    await sleep(500);
  }
}

/**
 * An address of its own for one simulated signer (198.18.0.0/15, set aside for tests), sent as CF-Connecting-IP: the
 * public routes count per client address (public-sign:post, 30 a minute), and under `npm run dev` every local client
 * is 127.0.0.1 and the counts live in .wrangler/state, shared with every other dev server and surviving restarts, so
 * two runs in a row (or another developer's tests) would exhaust them. Real signers come from addresses of their own;
 * on Cloudflare the edge sets this header, locally wrangler passes the client's on.
 */
export function clientAddress(): string {
  const n = randomInt(1, 2 ** 17 - 1);
  return `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

/** The public signing API of one link (`{APP_URL}/sign/<token>`), as a signer's own client calls it from `ip`. */
export function signingApi(link: string, ip = clientAddress()) {
  const url = new URL(link);
  const token = url.pathname.split("/").pop()!;
  const endpoint = `${url.origin}/api/public/sign/${encodeURIComponent(token)}`;
  const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> });
  return {
    open: async () => answer(await fetch(endpoint, { headers: { "cf-connecting-ip": ip } })),
    act: async (body: Record<string, unknown>) =>
      answer(
        await fetch(endpoint, {
          method: "POST",
          headers: { "content-type": "application/json", "cf-connecting-ip": ip },
          body: JSON.stringify(body),
        }),
      ),
  };
}

/**
 * One signer from their own address, all the way over HTTP: open the link, have a code mailed, read it from the mail log, authenticate with
 * it, consent, sign. Throws on any answer but 200; answers the sign step's body ({ok, completed}).
 */
export async function signOverHttp(link: string, email: string, ip = clientAddress()): Promise<{ ok: true; completed: boolean }> {
  const api = signingApi(link, ip);
  const step = async (what: string, call: Promise<{ status: number; body: Record<string, unknown> }>) => {
    const { status, body } = await call;
    if (status !== 200) throw new Error(`${what} answered ${status}: ${JSON.stringify(body)}`);
    return body;
  };
  const opened = await step("open", api.open());
  if (opened.state !== "active") throw new Error(`the link is not live: ${JSON.stringify(opened)}`);
  const sent = await step("send_code", api.act({ action: "send_code" }));
  if (typeof sent.sentTo !== "string" || sent.sentTo.toLowerCase() === email.toLowerCase())
    throw new Error(`send_code should answer a masked address: ${JSON.stringify(sent)}`);
  const code = await mailedSigningCode(email);
  await step("authenticate", api.act({ action: "authenticate", code }));
  await step("consent", api.act({ action: "consent" }));
  return (await step("sign", api.act({ action: "sign" }))) as { ok: true; completed: boolean };
}

/** Waits until the consumer has sealed the completed envelope's PDF (`signedDocument.status === "ready"`). */
export async function waitForSealedDocument(api: Api, envelopeId: string, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
    if (read.response.status !== 200) throw new Error(`GET /api/signatures/${envelopeId} answered ${read.response.status}`);
    if (read.data!.signedDocument.status === "ready") return read.data!;
    if (Date.now() > deadline)
      throw new Error(`the signed document of ${envelopeId} is still ${read.data!.signedDocument.status} after ${timeoutMs} ms`);
    await sleep(1_000);
  }
}

/** The sealed PDF through the signed link GET /api/signatures/{envelopeId}/document hands out. */
export async function downloadSealedDocument(api: Api, envelopeId: string) {
  const link = await api.GET("/api/signatures/{envelopeId}/document", { params: { path: { envelopeId } } });
  if (link.response.status !== 200)
    throw new Error(`GET /api/signatures/${envelopeId}/document answered ${link.response.status}: ${JSON.stringify(link.error)}`);
  const res = await fetch(link.data!.url);
  if (res.status !== 200) throw new Error(`the sealed PDF link answered ${res.status}`);
  return { link: link.data!, contentType: res.headers.get("content-type"), bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** POST /api/public/verify with the PDF as the body, from `ip` (20 a minute per address: see clientAddress). */
export async function verifyPdf(base: string, bytes: Uint8Array<ArrayBuffer>, ip = clientAddress()) {
  const res = await fetch(`${base}/api/public/verify`, {
    method: "POST",
    headers: { "content-type": "application/pdf", "cf-connecting-ip": ip },
    body: bytes,
  });
  return { status: res.status, text: await res.text() };
}

/** A poppler tool's standard output; pdfsig exits 0 for a broken signature too, so its output is what says. */
export async function poppler(tool: "pdfsig" | "pdftotext", args: string[]): Promise<string> {
  try {
    return (await run(`/usr/bin/${tool}`, args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const { stdout, stderr, code } = err as { stdout?: string; stderr?: string; code?: unknown };
    throw new Error(`${tool} ${args.join(" ")} failed (${String(code)}):\n${stdout ?? ""}${stderr ?? ""}`);
  }
}
