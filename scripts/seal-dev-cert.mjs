// A self-signed seal key and certificate for development and tests (DESIGN.md "Configuration": SEAL_PRIVATE_KEY and
// SEAL_CERTIFICATE are generated when unset). WebCrypto and pkijs only, so Node scripts and workerd tests share it.
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";

const KEY_ALGORITHMS = {
  "P-256": { name: "ECDSA", namedCurve: "P-256" },
  "P-384": { name: "ECDSA", namedCurve: "P-384" },
  "RSA-2048": { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
};

const pem = (label, der) => {
  let bin = "";
  for (const b of new Uint8Array(der)) bin += String.fromCharCode(b);
  const lines = btoa(bin).match(/.{1,64}/g) ?? [];
  return [`-----BEGIN ${label}-----`, ...lines, `-----END ${label}-----`, ""].join("\n");
};

// One attribute per RDN (pkijs would put every attribute in a single multi-valued RDN): parsed from DER, it keeps
// that encoding.
const name = (commonName, organization) => {
  const rdn = (type, value) =>
    new asn1js.Set({ value: [new pkijs.AttributeTypeAndValue({ type, value: new asn1js.Utf8String({ value }) }).toSchema()] });
  const der = new asn1js.Sequence({ value: [rdn("2.5.4.10", organization), rdn("2.5.4.3", commonName)] }).toBER(false);
  return new pkijs.RelativeDistinguishedNames({ schema: asn1js.fromBER(der).result });
};

/**
 * `{ SEAL_PRIVATE_KEY, SEAL_CERTIFICATE }` as one-line PEMs (line breaks written as a literal `\n`, which the config
 * reads back as line breaks). P-256 unless told otherwise; the other key types exist to test what the seal accepts.
 */
export async function generateSealPair({
  keyAlgorithm = "P-256",
  commonName = "Brokerage Edge development seal",
  organization = "Brokerage Edge (development)",
} = {}) {
  const algorithm = KEY_ALGORITHMS[keyAlgorithm];
  if (!algorithm) throw new Error(`unknown key algorithm ${keyAlgorithm}`);
  const keys = await crypto.subtle.generateKey(algorithm, true, ["sign", "verify"]);

  const certificate = new pkijs.Certificate();
  certificate.version = 2;
  // A positive 16-byte serial in minimal DER (RFC 5280 section 4.1.2.2): the top bit clear keeps the INTEGER positive,
  // and a first byte of 0x40 or more keeps it from starting with a zero byte, an encoding NSS (pdfsig) and OpenSSL
  // refuse ("BAD INTEGER"): one generated pair in 256 was unreadable.
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] = (serial[0] & 0x3f) | 0x40;
  certificate.serialNumber = new asn1js.Integer({ valueHex: serial });
  certificate.subject = name(commonName, organization);
  certificate.issuer = name(commonName, organization);
  const notBefore = new Date();
  const notAfter = new Date(notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + 10);
  certificate.notBefore.value = notBefore;
  certificate.notAfter.value = notAfter;
  // keyUsage digitalSignature + nonRepudiation (bits 0 and 1), critical as RFC 5280 section 4.2.1.3 advises.
  const keyUsage = new asn1js.BitString({ valueHex: new Uint8Array([0xc0]), unusedBits: 6 });
  certificate.extensions = [
    new pkijs.Extension({ extnID: "2.5.29.15", critical: true, extnValue: keyUsage.toBER(false), parsedValue: keyUsage }),
  ];
  await certificate.subjectPublicKeyInfo.importKey(keys.publicKey);
  await certificate.sign(keys.privateKey, "SHA-256");

  const oneLine = (text) => text.replaceAll("\n", "\\n");
  return {
    SEAL_PRIVATE_KEY: oneLine(pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", keys.privateKey))),
    SEAL_CERTIFICATE: oneLine(pem("CERTIFICATE", certificate.toSchema().toBER(false))),
  };
}
