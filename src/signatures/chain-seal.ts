import type { ChainSeal } from "../db/signatures";
import type { Env } from "../env";
import { fromBase64, toBase64 } from "../lib/crypto";
import { NotConfigured } from "../lib/errors";
import { nowIso } from "../lib/time";
import type { ChainHead } from "./audit";

/**
 * The audit chain is a SHA-256 chain, so anyone who can write the table could rebuild it. At every terminal event
 * the head is signed with the platform's seal key (the key that seals the PDFs, src/seal/): a rebuilt chain ends in a
 * head no seal signature covers. The seal module is loaded at first use (Worker startup CPU).
 */
const message = (envelopeId: string, seq: number, hash: string, at: string) =>
  new TextEncoder().encode(`brokerage-edge audit head\n${envelopeId}\n${seq}\n${hash}\n${at}`);

export async function sealChainHead(env: Env, envelopeId: string, head: ChainHead): Promise<ChainSeal> {
  const { signBytes, sealCertificateSha256 } = await import("../seal/keys");
  const at = nowIso();
  const signature = await signBytes(env, message(envelopeId, head.seq, head.hash, at));
  return { seq: head.seq, hash: head.hash, signature: toBase64(signature), certificateSha256: await sealCertificateSha256(env), at };
}

export type SealStatus = "valid" | "invalid" | "missing" | "not_applicable" | "unverifiable";

/**
 * Whether a terminal envelope's chain ends where its seal says, under a signature of a trusted seal key. An open
 * envelope has no seal yet (not_applicable); a terminal one without a seal is `missing`.
 */
export async function checkChainSeal(
  env: Env,
  envelopeId: string,
  terminal: boolean,
  seal: ChainSeal | null,
  head: ChainHead,
): Promise<SealStatus> {
  if (!terminal) return "not_applicable";
  if (!seal) return "missing";
  if (seal.seq !== head.seq || seal.hash !== head.hash) return "invalid";
  const { verifyBytes } = await import("../seal/keys");
  try {
    return (await verifyBytes(env, message(envelopeId, seal.seq, seal.hash, seal.at), fromBase64(seal.signature))) ? "valid" : "invalid";
  } catch (err) {
    // No seal certificate configured here: nothing to check against, which is not the same as a bad signature.
    if (err instanceof NotConfigured) return "unverifiable";
    return "invalid";
  }
}
