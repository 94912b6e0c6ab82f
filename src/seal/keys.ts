import type { Certificate } from "pkijs";
import { ConfigError, type Env, readConfig } from "../env";
import { sha256Hex } from "../lib/crypto";
import { NotConfigured } from "../lib/errors";
import { settledCache } from "../lib/settled-cache";

/** A certificate the verifier accepts as ours, with its public key ready for WebCrypto. */
export interface TrustedCertificate {
  der: Uint8Array;
  sha256: string;
  publicKey: CryptoKey;
  /** WebCrypto sign/verify parameters for this key (SHA-256 for every key type). */
  algorithm: SubtleCryptoSignAlgorithm;
}

/** The seal key with the current certificate (trusted[0]) and every certificate a seal may carry (key rotation). */
export interface SealKeys {
  privateKey: CryptoKey;
  algorithm: SubtleCryptoSignAlgorithm;
  certificate: Certificate;
  certificateDer: Uint8Array;
  certificateSha256: string;
  trusted: TrustedCertificate[];
}

// Key material is derived once per isolate; keyed by the PEMs, since a test may hand several envs to one isolate.
const cache = settledCache<SealKeys>(8);

/** The seal key and certificates from SEAL_PRIVATE_KEY and SEAL_CERTIFICATE; NotConfigured when either is unset. */
export function loadSealKeys(env: Env): Promise<SealKeys> {
  const { SEAL_PRIVATE_KEY: keyPem, SEAL_CERTIFICATE: certificatePem } = readConfig(env);
  if (!keyPem) throw new NotConfigured("SEAL_PRIVATE_KEY");
  if (!certificatePem) throw new NotConfigured("SEAL_CERTIFICATE");
  return cache(`${keyPem}\u0000${certificatePem}`, () => importSealKeys(keyPem, certificatePem));
}

/** The DER bodies of the PEM blocks with this label, in order; ConfigError naming `setting` when there is none. */
function readPem(pem: string, label: string, setting: string): Uint8Array[] {
  const blocks = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)].filter((m) => m[1] === label);
  if (blocks.length === 0) throw new ConfigError(`${setting}: no PEM block "-----BEGIN ${label}-----"`);
  try {
    return blocks.map((m) => Uint8Array.from(atob(m[2]!.replace(/\s+/g, "")), (c) => c.charCodeAt(0)));
  } catch {
    throw new ConfigError(`${setting}: the PEM body is not base64`);
  }
}

const CURVES: Record<string, string> = { "1.2.840.10045.3.1.7": "P-256", "1.3.132.0.34": "P-384" };

/** WebCrypto import parameters for a certificate's public key algorithm (ECDSA P-256/P-384, RSA PKCS#1 v1.5). */
function importParams(certificate: Certificate): SubtleCryptoImportKeyAlgorithm {
  const { algorithmId, algorithmParams } = certificate.subjectPublicKeyInfo.algorithm;
  if (algorithmId === "1.2.840.113549.1.1.1") return { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  const curve = algorithmId === "1.2.840.10045.2.1" ? CURVES[String(algorithmParams?.valueBlock?.toString?.())] : undefined;
  if (!curve) throw new ConfigError("SEAL_CERTIFICATE: the key must be ECDSA P-256/P-384 or RSA");
  return { name: "ECDSA", namedCurve: curve };
}

async function importSealKeys(keyPem: string, certificatePem: string): Promise<SealKeys> {
  const { Certificate } = await import("pkijs");
  const keyDer = readPem(keyPem, "PRIVATE KEY", "SEAL_PRIVATE_KEY")[0]!;
  const parsed = readPem(certificatePem, "CERTIFICATE", "SEAL_CERTIFICATE").map((der) => {
    try {
      return { der, certificate: Certificate.fromBER(der) };
    } catch {
      throw new ConfigError("SEAL_CERTIFICATE: a certificate in it does not parse as X.509");
    }
  });
  const current = parsed[0]!;

  const trusted = await Promise.all(
    parsed.map(async ({ der, certificate }) => {
      const params = importParams(certificate);
      return {
        der,
        sha256: await sha256Hex(der),
        publicKey: await crypto.subtle.importKey("spki", certificate.subjectPublicKeyInfo.toSchema().toBER(false), params, false, [
          "verify",
        ]),
        algorithm: params.name === "ECDSA" ? { name: "ECDSA", hash: "SHA-256" } : { name: params.name },
      };
    }),
  );
  const params = importParams(current.certificate);
  const privateKey = await crypto.subtle.importKey("pkcs8", keyDer, params, false, ["sign"]).catch(() => {
    throw new ConfigError(`SEAL_PRIVATE_KEY: not a PKCS#8 ${params.name} key for the certificate's key type`);
  });
  if (params.name === "RSASSA-PKCS1-v1_5" && (privateKey.algorithm as CryptoKeyRsaKeyAlgorithm).modulusLength < 2048) {
    throw new ConfigError("SEAL_PRIVATE_KEY: RSA keys must be 2048 bits or longer");
  }
  const { algorithm } = trusted[0]!;
  // A key that does not match the certificate would seal PDFs nobody can verify: refuse it at the first use.
  const probe = new TextEncoder().encode("seal key check");
  if (!(await crypto.subtle.verify(algorithm, trusted[0]!.publicKey, await crypto.subtle.sign(algorithm, privateKey, probe), probe))) {
    throw new ConfigError("SEAL_PRIVATE_KEY does not belong to the first certificate in SEAL_CERTIFICATE");
  }
  return {
    privateKey,
    algorithm,
    certificate: current.certificate,
    certificateDer: current.der,
    certificateSha256: trusted[0]!.sha256,
    trusted,
  };
}

/** A raw WebCrypto signature with the seal key (ECDSA: r‖s; RSA: PKCS#1 v1.5), e.g. over an audit chain's head. */
export async function signBytes(env: Env, bytes: Uint8Array): Promise<Uint8Array> {
  const keys = await loadSealKeys(env);
  return new Uint8Array(await crypto.subtle.sign(keys.algorithm, keys.privateKey, bytes));
}

/** True when `signature` over `bytes` verifies with any trusted seal certificate (an older key still verifies). */
export async function verifyBytes(env: Env, bytes: Uint8Array, signature: Uint8Array): Promise<boolean> {
  const keys = await loadSealKeys(env);
  for (const { publicKey, algorithm } of keys.trusted) {
    if (await crypto.subtle.verify(algorithm, publicKey, signature, bytes).catch(() => false)) return true;
  }
  return false;
}

/** SHA-256 (hex) of the current seal certificate's DER, as a verifier would print it. */
export async function sealCertificateSha256(env: Env): Promise<string> {
  return (await loadSealKeys(env)).certificateSha256;
}
