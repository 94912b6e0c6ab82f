// CAdES (CMS SignedData) for the seal, over pkijs. Imported only with `await import("./cms")`: pkijs is large, and a
// Worker pays at startup for every module it evaluates.
import { fromBER, ObjectIdentifier, OctetString, Sequence } from "asn1js";
import {
  Attribute,
  Certificate,
  ContentInfo,
  EncapsulatedContentInfo,
  getCrypto,
  IssuerAndSerialNumber,
  SignedAndUnsignedAttributes,
  SignedData,
  SignerInfo,
} from "pkijs";
import type { SealKeys } from "./keys";

const OID = {
  data: "1.2.840.113549.1.7.1",
  signedData: "1.2.840.113549.1.7.2",
  contentType: "1.2.840.113549.1.9.3",
  messageDigest: "1.2.840.113549.1.9.4",
  signingCertificateV2: "1.2.840.113549.1.9.16.2.47",
} as const;

const HASHES: Record<string, string> = {
  "2.16.840.1.101.3.4.2.1": "SHA-256",
  "2.16.840.1.101.3.4.2.2": "SHA-384",
  "2.16.840.1.101.3.4.2.3": "SHA-512",
};

const sha256 = async (bytes: BufferSource) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/**
 * A detached CAdES SignedData over the content whose SHA-256 is `contentSha256` (the PDF without its /Contents), DER. Signed attributes are the PAdES
 * B-B set: contentType, messageDigest and ESS signing-certificate-v2 (RFC 5035); no signing-time, which ETSI EN
 * 319 142-1 forbids (the time is the signature dictionary's /M).
 */
export async function buildCadesSignature(keys: SealKeys, contentSha256: Uint8Array): Promise<Uint8Array> {
  // ESSCertIDv2 with the hash algorithm left at its DEFAULT (SHA-256), so DER omits it; issuerSerial is optional.
  const essCertIdV2 = new Sequence({ value: [new OctetString({ valueHex: await sha256(keys.certificateDer) })] });
  const attributes = [
    new Attribute({ type: OID.contentType, values: [new ObjectIdentifier({ value: OID.data })] }),
    new Attribute({ type: OID.messageDigest, values: [new OctetString({ valueHex: contentSha256.slice().buffer })] }),
    new Attribute({ type: OID.signingCertificateV2, values: [new Sequence({ value: [new Sequence({ value: [essCertIdV2] })] })] }),
  ];
  // DER sorts a SET OF by encoding; pkijs writes the order it is given, and a verifier that re-encodes would differ.
  const encoded = attributes.map((a) => ({ a, der: new Uint8Array(a.toSchema().toBER(false)) }));
  encoded.sort((x, y) => compareBytes(x.der, y.der));

  const { certificate } = keys;
  const signedData = new SignedData({
    version: 1,
    encapContentInfo: new EncapsulatedContentInfo({ eContentType: OID.data }),
    certificates: [certificate],
    signerInfos: [
      new SignerInfo({
        version: 1,
        sid: new IssuerAndSerialNumber({ issuer: certificate.issuer, serialNumber: certificate.serialNumber }),
        signedAttrs: new SignedAndUnsignedAttributes({ type: 0, attributes: encoded.map((e) => e.a) }),
      }),
    ],
  });
  await signedData.sign(keys.privateKey, 0, "SHA-256");
  return new Uint8Array(new ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) }).toSchema().toBER(false));
}

export type CadesCheck =
  | { ok: true; certificateDer: Uint8Array }
  | { ok: false; reason: "malformed" | "digest_mismatch" | "signature_invalid" | "not_our_seal" };

/**
 * Checks a detached CMS signature over `content` (whose SHA-256 is `contentSha256`): the messageDigest attribute, the
 * embedded signer certificate against the trusted ones, and the signature over the signed attributes with that
 * certificate's key. Never throws: anything that does not parse is `malformed`.
 */
export async function checkCadesSignature(
  der: Uint8Array,
  content: Uint8Array,
  contentSha256: Uint8Array,
  trusted: Uint8Array[],
): Promise<CadesCheck> {
  try {
    return await checkParsed(der, content, contentSha256, trusted);
  } catch {
    return { ok: false, reason: "malformed" };
  }
}

/** The DER element at the start of `bytes`, without the zero padding /Contents carries after it (parsing that costs). */
function firstElement(bytes: Uint8Array): Uint8Array {
  const first = bytes[1] ?? 0;
  if (first < 0x80) return bytes.subarray(0, 2 + first);
  const octets = first & 0x7f;
  if (octets === 0 || octets > 4) return bytes; // BER's indefinite length, or nonsense: the parser decides
  let length = 0;
  for (let i = 0; i < octets; i++) length = length * 256 + (bytes[2 + i] ?? 0);
  return bytes.subarray(0, 2 + octets + length);
}

async function checkParsed(der: Uint8Array, content: Uint8Array, contentSha256: Uint8Array, trusted: Uint8Array[]): Promise<CadesCheck> {
  const asn1 = fromBER(firstElement(der));
  if (asn1.offset === -1) return { ok: false, reason: "malformed" };
  const info = new ContentInfo({ schema: asn1.result });
  if (info.contentType !== OID.signedData) return { ok: false, reason: "malformed" };
  const signedData = new SignedData({ schema: info.content });
  const signer = signedData.signerInfos[0];
  if (!signer) return { ok: false, reason: "malformed" };
  // Our seals always carry signed attributes; a signature without them is someone else's format.
  if (!signer.signedAttrs) return { ok: false, reason: "not_our_seal" };

  const hash = HASHES[signer.digestAlgorithm.algorithmId];
  if (!hash) return { ok: false, reason: "not_our_seal" };
  const digest = hash === "SHA-256" ? contentSha256 : new Uint8Array(await crypto.subtle.digest(hash, content));
  const claimed = signer.signedAttrs.attributes.find((a) => a.type === OID.messageDigest)?.values[0];
  if (!(claimed instanceof OctetString)) return { ok: false, reason: "malformed" };
  if (!sameBytes(claimed.valueBlock.valueHexView, digest)) return { ok: false, reason: "digest_mismatch" };

  const sid = signer.sid;
  const certificate = (signedData.certificates ?? []).find(
    (c): c is Certificate =>
      c instanceof Certificate &&
      sid instanceof IssuerAndSerialNumber &&
      c.issuer.isEqual(sid.issuer) &&
      c.serialNumber.isEqual(sid.serialNumber),
  );
  // Trust before the signature check: a public verifier then only ever runs WebCrypto on our own keys.
  if (!certificate) return { ok: false, reason: "not_our_seal" };
  const certificateDer = new Uint8Array(certificate.toSchema().toBER(false));
  if (!trusted.some((t) => sameBytes(t, certificateDer))) return { ok: false, reason: "not_our_seal" };
  const signatureValid = await getCrypto(true)
    .verifyWithPublicKey(
      signer.signedAttrs.encodedValue,
      signer.signature,
      certificate.subjectPublicKeyInfo,
      signer.signatureAlgorithm,
      hash,
    )
    .catch(() => false);
  if (!signatureValid) return { ok: false, reason: "signature_invalid" };
  return { ok: true, certificateDer };
}
