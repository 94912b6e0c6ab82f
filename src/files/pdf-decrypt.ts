import type { PDFArray, PDFContext, PDFDict, PDFDocument, PDFHexString, PDFObject, PDFRawStream, PDFRef, PDFString } from "@pdfme/pdf-lib";
import { pdfLib } from "./pdf-lib";

/**
 * Opening a PDF encrypted by the Standard security handler with the empty user password (PDF 32000-1 7.6.3, ISO
 * 32000-2 7.6.4): an "owner password only" PDF, which restricts editing but which anyone may open. Board and government
 * forms come that way (issue 44 part 1). The file key comes from the empty password and is checked against /U; every
 * string and stream of every indirect object is then decrypted with its object's key and /Encrypt dropped, so what is
 * saved afterwards opens everywhere. AES and the SHA-2 digests are WebCrypto's; MD5 and RC4, which WebCrypto lacks, are
 * written here (short, and checked against their published vectors).
 */

type Method = "none" | "rc4" | "aesv2" | "aesv3";

interface Security {
  key: Uint8Array;
  /** Streams' and strings' methods: /StmF and /StrF for V4 and up, RC4 before. */
  stream: Method;
  string: Method;
  /** /CF's named crypt filters, for a stream with its own /Crypt filter. */
  filters: Map<string, Method>;
  encryptMetadata: boolean;
}

const PAD = Uint8Array.from([
  0x28, 0xbf, 0x4e, 0x5e, 0x4e, 0x75, 0x8a, 0x41, 0x64, 0x00, 0x4e, 0x56, 0xff, 0xfa, 0x01, 0x08, 0x2e, 0x2e, 0x00, 0xb6, 0xd0, 0x68, 0x3e,
  0x80, 0x2f, 0x0c, 0xa9, 0xfe, 0x64, 0x53, 0x69, 0x7a,
]);

const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
};
const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

const MD5_SHIFTS = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const MD5_K = Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0);

/** MD5 (RFC 1321): the key derivation of revisions 2 to 4. */
export function md5(data: Uint8Array): Uint8Array {
  const blocks = ((data.length + 8) >>> 6) + 1;
  const padded = new Uint8Array(blocks * 64);
  padded.set(data);
  padded[data.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, (data.length * 8) >>> 0, true);
  view.setUint32(padded.length - 4, Math.floor(data.length / 0x20000000), true);
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
  for (let block = 0; block < padded.length; block += 64) {
    let [a, b, c, d] = h as [number, number, number, number];
    for (let i = 0; i < 64; i++) {
      const round = i >> 4;
      const f = round === 0 ? (b & c) | (~b & d) : round === 1 ? (d & b) | (~d & c) : round === 2 ? b ^ c ^ d : c ^ (b | ~d);
      const g = round === 0 ? i : round === 1 ? (5 * i + 1) % 16 : round === 2 ? (3 * i + 5) % 16 : (7 * i) % 16;
      const sum = (a + f + MD5_K[i]! + view.getUint32(block + 4 * g, true)) | 0;
      const s = MD5_SHIFTS[(round << 2) | (i & 3)]!;
      [a, d, c] = [d, c, b];
      b = (b + ((sum << s) | (sum >>> (32 - s)))) | 0;
    }
    h[0] = (h[0]! + a) | 0;
    h[1] = (h[1]! + b) | 0;
    h[2] = (h[2]! + c) | 0;
    h[3] = (h[3]! + d) | 0;
  }
  const out = new Uint8Array(16);
  const outView = new DataView(out.buffer);
  for (const [i, word] of h.entries()) outView.setUint32(4 * i, word >>> 0, true);
  return out;
}

/** RC4: symmetric, so it both encrypts (the /U check) and decrypts. */
export function rc4(key: Uint8Array, data: Uint8Array): Uint8Array {
  const s = Uint8Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i]! + key[i % key.length]!) & 255;
    [s[i], s[j]] = [s[j]!, s[i]!];
  }
  const out = new Uint8Array(data.length);
  for (let k = 0, i = 0, j = 0; k < data.length; k++) {
    i = (i + 1) & 255;
    j = (j + s[i]!) & 255;
    [s[i], s[j]] = [s[j]!, s[i]!];
    out[k] = data[k]! ^ s[(s[i]! + s[j]!) & 255]!;
  }
  return out;
}

const digest = async (algorithm: string, data: Uint8Array) => new Uint8Array(await crypto.subtle.digest(algorithm, data));

async function aesCbc(mode: "encrypt" | "decrypt", key: Uint8Array, iv: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key, "AES-CBC", false, [mode]);
  const params = { name: "AES-CBC", iv };
  return new Uint8Array(mode === "encrypt" ? await crypto.subtle.encrypt(params, k, data) : await crypto.subtle.decrypt(params, k, data));
}

/**
 * AES-CBC decryption of whole blocks with no padding to strip (WebCrypto always checks PKCS#7): one block more is
 * appended, the encryption of a full padding block chained on the last one, which decrypts to exactly the padding
 * WebCrypto removes.
 */
async function aesDecryptRaw(key: Uint8Array, iv: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const last = data.length ? data.subarray(data.length - 16) : iv;
  const padding = (await aesCbc("encrypt", key, last, new Uint8Array(16).fill(16))).subarray(0, 16);
  return aesCbc("decrypt", key, iv, concat(data, padding));
}

/** A string's or a stream's AES data: a 16-byte IV, then padded blocks. A bad padding keeps the blocks as they are. */
async function aesDecrypt(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  if (data.length < 32) return new Uint8Array(0);
  const iv = data.slice(0, 16);
  const body = data.subarray(16, 16 + Math.floor((data.length - 16) / 16) * 16);
  return aesCbc("decrypt", key, iv, body).catch(() => aesDecryptRaw(key, iv, body));
}

/** ISO 32000-2 algorithm 2.B (revision 6): SHA-256/384/512 and AES-128 rounds, at least 64, at most 288. */
async function hash2B(password: Uint8Array, salt: Uint8Array, userKey: Uint8Array): Promise<Uint8Array> {
  let k = await digest("SHA-256", concat(password, salt, userKey));
  let e: Uint8Array = new Uint8Array([0]);
  for (let round = 0; round < 64 || e[e.length - 1]! > round - 32; round++) {
    const unit = concat(password, k, userKey);
    const k1 = new Uint8Array(unit.length * 64);
    for (let i = 0; i < 64; i++) k1.set(unit, i * unit.length);
    e = (await aesCbc("encrypt", k.subarray(0, 16), k.subarray(16, 32), k1)).subarray(0, k1.length);
    const mod3 = e.subarray(0, 16).reduce((sum, b) => sum + b, 0) % 3;
    k = await digest(["SHA-256", "SHA-384", "SHA-512"][mod3]!, e);
  }
  return k.subarray(0, 32);
}

/** Algorithms 2 and 6 (revisions 2 to 4): the file key of the empty user password, or null when /U rejects it. */
function rc4FileKey(dict: Fields, id: Uint8Array, revision: number, length: number, encryptMetadata: boolean): Uint8Array | null {
  const o = dict.bytes("O").subarray(0, 32);
  const u = dict.bytes("U").subarray(0, 32);
  const p = new Uint8Array(4);
  new DataView(p.buffer).setInt32(0, dict.number("P") ?? 0, true);
  const noMetadata = revision >= 4 && !encryptMetadata ? new Uint8Array([255, 255, 255, 255]) : new Uint8Array(0);
  let key = md5(concat(PAD, o, p, id, noMetadata)).subarray(0, length);
  if (revision >= 3) for (let i = 0; i < 50; i++) key = md5(key).subarray(0, length);
  if (revision === 2) return equal(rc4(key, PAD), u) ? key : null;
  let check = rc4(key, md5(concat(PAD, id)));
  for (let i = 1; i <= 19; i++)
    check = rc4(
      key.map((b) => b ^ i),
      check,
    );
  return equal(check, u.subarray(0, 16)) ? key : null;
}

/** Algorithm 2.A (revisions 5 and 6): the file key of the empty user password, or null when /U rejects it. */
async function aesFileKey(dict: Fields, revision: number): Promise<Uint8Array | null> {
  const u = dict.bytes("U");
  const ue = dict.bytes("UE");
  if (u.length < 48 || ue.length < 32) return null;
  const empty = new Uint8Array(0);
  const hash = (salt: Uint8Array) => (revision === 6 ? hash2B(empty, salt, empty) : digest("SHA-256", salt));
  if (!equal(await hash(u.subarray(32, 40)), u.subarray(0, 32))) return null;
  return aesDecryptRaw(await hash(u.subarray(40, 48)), new Uint8Array(16), ue.subarray(0, 32));
}

/** The few reads of the /Encrypt dictionary this needs, typed. */
interface Fields {
  bytes(name: string): Uint8Array;
  number(name: string): number | undefined;
  name(name: string): string | undefined;
  dict(name: string): PDFDict | undefined;
}

async function fieldsOf(dict: PDFDict): Promise<Fields> {
  const { PDFName, PDFNumber, PDFString, PDFHexString, PDFDict } = await pdfLib();
  const get = (name: string) => dict.lookup(PDFName.of(name));
  return {
    bytes: (name) => {
      const v = get(name);
      return v instanceof PDFString || v instanceof PDFHexString ? v.asBytes() : new Uint8Array(0);
    },
    number: (name) => {
      const v = get(name);
      return v instanceof PDFNumber ? v.asNumber() : undefined;
    },
    name: (name) => {
      const v = get(name);
      return v instanceof PDFName ? v.decodeText() : undefined;
    },
    dict: (name) => {
      const v = get(name);
      return v instanceof PDFDict ? v : undefined;
    },
  };
}

const CFM: Record<string, Method> = { None: "none", V2: "rc4", AESV2: "aesv2", AESV3: "aesv3" };

/**
 * The file key and methods of the empty user password; null when that password does not open the file (a password is
 * needed) or the security handler is not one this reads (not /Standard, an unknown version).
 */
async function securityOf(encrypt: PDFDict, id: Uint8Array): Promise<Security | null> {
  const dict = await fieldsOf(encrypt);
  const v = dict.number("V") ?? 0;
  const revision = dict.number("R") ?? 0;
  if (dict.name("Filter") !== "Standard" || ![1, 2, 4, 5].includes(v) || revision < 2 || revision > 6) return null;
  const { PDFBool, PDFDict, PDFName } = await pdfLib();
  const encryptMetadata = encrypt.lookup(PDFName.of("EncryptMetadata")) !== PDFBool.False;
  const filters = new Map<string, Method>([["Identity", "none"]]);
  const cf = dict.dict("CF");
  for (const [name, value] of v >= 4 && cf ? cf.entries() : []) {
    const filter = encrypt.context.lookup(value);
    // An unknown /CFM leaves the filter out: a file using it cannot be opened here.
    const method = filter instanceof PDFDict ? CFM[(await fieldsOf(filter)).name("CFM") ?? "None"] : undefined;
    if (method) filters.set(name.decodeText(), method);
  }
  const stream = v >= 4 ? filters.get(dict.name("StmF") ?? "Identity") : "rc4";
  const string = v >= 4 ? filters.get(dict.name("StrF") ?? "Identity") : "rc4";
  if (!stream || !string) return null;
  let key: Uint8Array | null;
  if (revision >= 5) key = await aesFileKey(dict, revision);
  else {
    // /Length is in bits (40 to 128); a few writers give bytes.
    const bits = v === 1 ? 40 : (dict.number("Length") ?? (v === 4 ? 128 : 40));
    const length = Math.min(16, Math.max(5, Math.floor(bits <= 16 ? bits : bits / 8)));
    key = rc4FileKey(dict, id, revision, revision === 2 ? 5 : length, encryptMetadata);
  }
  return key && { key, stream, string, filters, encryptMetadata };
}

/** Algorithm 1: an object's key, from the file key, its number and generation ("sAlT" for AES-128). */
function objectKey(security: Security, method: Method, ref: PDFRef): Uint8Array {
  if (method === "aesv3") return security.key;
  const n = ref.objectNumber;
  const g = ref.generationNumber;
  const salt = method === "aesv2" ? [0x73, 0x41, 0x6c, 0x54] : [];
  const input = concat(security.key, new Uint8Array([n & 255, (n >> 8) & 255, (n >> 16) & 255, g & 255, (g >> 8) & 255, ...salt]));
  return md5(input).subarray(0, Math.min(security.key.length + 5, 16));
}

function decryptWith(security: Security, method: Method, ref: PDFRef, data: Uint8Array): Promise<Uint8Array> | Uint8Array {
  if (method === "none") return data;
  const key = objectKey(security, method, ref);
  return method === "rc4" ? rc4(key, data) : aesDecrypt(key, data);
}

type Lib = Awaited<ReturnType<typeof pdfLib>>;

/**
 * How a stream's data is encrypted: the document's stream method, or the crypt filter its own /Filter names first.
 * That /Crypt entry is dropped once read: without /Encrypt a reader could not apply it.
 */
function streamMethod(lib: Lib, security: Security, dict: PDFDict): Method {
  const { PDFArray, PDFDict, PDFName } = lib;
  const filter = dict.lookup(PDFName.of("Filter"));
  if ((filter instanceof PDFArray ? filter.lookup(0) : filter) !== PDFName.of("Crypt")) return security.stream;
  const params = dict.lookup(PDFName.of("DecodeParms"));
  const own = params instanceof PDFArray ? params.lookup(0) : params;
  const name = own instanceof PDFDict ? own.lookup(PDFName.of("Name")) : undefined;
  if (filter instanceof PDFArray) {
    filter.remove(0);
    if (params instanceof PDFArray) params.remove(0);
  } else {
    dict.delete(PDFName.of("Filter"));
    dict.delete(PDFName.of("DecodeParms"));
  }
  return security.filters.get(name instanceof PDFName ? name.decodeText() : "Identity") ?? "none";
}

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * One indirect object, decrypted: a stream's data (an XRef stream is never encrypted; /Metadata is not under
 * /EncryptMetadata false) and every string nested in it, walked with a stack rather than recursion: a parsed object is
 * a finite tree, so the walk ends whatever its depth. A signature's /Contents is never encrypted (7.6.1).
 */
async function decryptObject(lib: Lib, security: Security, ref: PDFRef, object: PDFObject): Promise<PDFObject> {
  const { PDFName } = lib;
  const isString = (v: PDFObject): v is PDFString | PDFHexString => v instanceof lib.PDFString || v instanceof lib.PDFHexString;
  const isContainer = (v: PDFObject): v is PDFDict | PDFArray => v instanceof lib.PDFDict || v instanceof lib.PDFArray;
  const decryptString = async (v: PDFString | PDFHexString) =>
    lib.PDFHexString.of(hex(await decryptWith(security, security.string, ref, v.asBytes())));
  if (isString(object)) return decryptString(object);
  let result = object;
  const containers: (PDFDict | PDFArray)[] = [];
  if (object instanceof lib.PDFRawStream) {
    const type = object.dict.lookup(PDFName.of("Type"));
    if (type === PDFName.of("XRef")) return object;
    containers.push(object.dict);
    const method = streamMethod(lib, security, object.dict);
    if (type !== PDFName.of("Metadata") || security.encryptMetadata)
      result = lib.PDFRawStream.of(object.dict, await decryptWith(security, method, ref, object.contents));
  } else if (isContainer(object)) containers.push(object);
  const jobs: Promise<unknown>[] = [];
  for (let container = containers.pop(); container; container = containers.pop()) {
    if (container instanceof lib.PDFDict) {
      const signature = container.has(PDFName.of("ByteRange"));
      for (const [key, value] of container.entries()) {
        if (isString(value) && !(signature && key === PDFName.of("Contents")))
          jobs.push(decryptString(value).then((plain) => container.set(key, plain)));
        else if (isContainer(value)) containers.push(value);
      }
    } else {
      container.asArray().forEach((value, i) => {
        if (isString(value)) jobs.push(decryptString(value).then((plain) => container.set(i, plain)));
        else if (isContainer(value)) containers.push(value);
      });
    }
  }
  await Promise.all(jobs);
  return result;
}

const ENDOBJ = Array.from("endobj", (c) => c.charCodeAt(0));

/** What of pdf-lib's parser the decrypting pass reaches into: private in its types, and its own load path's steps. */
interface ParserInternals {
  context: PDFContext;
  parseIndirectObjectHeader(): PDFRef;
  parseObject(ref?: PDFRef): PDFObject;
  skipWhitespaceAndComments(): void;
  matchKeyword(keyword: number[]): boolean;
  shouldWaitForTick: () => boolean;
  parseIndirectObject: () => Promise<PDFRef>;
  parseDocument(): Promise<PDFContext>;
}

/**
 * The document decrypted with the empty user password, /Encrypt gone; null when that password does not open it (the
 * reader must be asked for one) or its security handler is not the Standard one. `encrypted` is the same bytes loaded
 * with `ignoreEncryption`, read for /Encrypt and /ID only.
 *
 * The bytes are parsed a second time, each object decrypted as it is read: an object stream's objects can only be read
 * once the stream is decrypted, and pdf-lib reads them as it meets the stream (its own decryption, the `password` load
 * option, also decrypts /Encrypt's strings and XRef streams, which are stored in the clear).
 */
export async function decryptPdf(bytes: Uint8Array, encrypted: PDFDocument): Promise<PDFDocument | null> {
  const lib = await pdfLib();
  const { PDFArray, PDFDict, PDFHexString, PDFName, PDFObjectStreamParser, PDFRawStream, PDFString, PDFXRefStreamParser } = lib;
  const { context } = encrypted;
  const encryptRef = context.trailerInfo.Encrypt;
  const encrypt = context.lookup(encryptRef);
  if (!(encrypt instanceof PDFDict)) return null;
  const ids = context.lookup(context.trailerInfo.ID);
  const first = ids instanceof PDFArray && ids.size() > 0 ? ids.lookup(0) : undefined;
  const id = first instanceof PDFString || first instanceof PDFHexString ? first.asBytes() : new Uint8Array(0);
  const security = await securityOf(encrypt, id);
  if (!security) return null;

  const parser = lib.PDFParser.forBytesWithOptions(bytes, Number.POSITIVE_INFINITY, false, false) as unknown as ParserInternals;
  const typeOf = (object: PDFObject) => (object instanceof PDFRawStream ? object.dict.lookup(PDFName.of("Type")) : undefined);
  // pdf-lib's parseIndirectObject, with the object decrypted between being read and being stored or unpacked.
  parser.parseIndirectObject = async () => {
    const ref = parser.parseIndirectObjectHeader();
    parser.skipWhitespaceAndComments();
    const read = parser.parseObject(ref);
    parser.skipWhitespaceAndComments();
    parser.matchKeyword(ENDOBJ);
    const object = ref === encryptRef ? read : await decryptObject(lib, security, ref, read);
    if (typeOf(object) === PDFName.of("ObjStm"))
      await PDFObjectStreamParser.forStream(object as PDFRawStream, parser.shouldWaitForTick).parseIntoContext();
    else if (typeOf(object) === PDFName.of("XRef")) PDFXRefStreamParser.forStream(object as PDFRawStream).parseIntoContext();
    else parser.context.assign(ref, object);
    return ref;
  };
  const decrypted = await parser.parseDocument();
  if (encryptRef instanceof lib.PDFRef) decrypted.delete(encryptRef);
  decrypted.trailerInfo.Encrypt = undefined;
  // pdf-lib's constructor is private in its types; its own load path calls it with a parsed context the same way.
  const Doc = lib.PDFDocument as unknown as new (context: PDFContext, ignoreEncryption: boolean, updateMetadata: boolean) => PDFDocument;
  return new Doc(decrypted, false, false);
}
