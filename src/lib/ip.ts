import { IPV4_SPECIAL, IPV6_SPECIAL, type SpecialBlock } from "./special-purpose";

/**
 * IP literals in every form a URL or a resolver can hand us, and the ranges an outbound request may never reach. The WHATWG
 * URL parser already rewrites `2130706433`, `0x7f000001` and `127.1` to `127.0.0.1`; parsing them again here keeps
 * the check right for addresses that did not come through a URL (resolver answers) and for any parser that differs.
 */

/** IPv4 in dotted, decimal, hex, octal and short forms (inet_aton rules), as a 32-bit number; null if not IPv4. */
export function parseIPv4(host: string): number | null {
  const parts = host.split(".");
  if (parts.length === 0 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const part of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(part)) n = part.length === 2 ? 0 : parseInt(part.slice(2), 16);
    else if (/^0[0-7]+$/.test(part)) n = parseInt(part, 8);
    else if (/^(0|[1-9][0-9]*)$/.test(part)) n = Number(part);
    else return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255) || last >= 256 ** (4 - nums.length)) return null;
  return nums.reduce((acc, n, i) => acc + n * 256 ** (3 - i), 0) + last;
}

/** IPv6 (with `::` and a dotted IPv4 tail) as eight 16-bit groups; null if not IPv6. Brackets and zone ids allowed. */
export function parseIPv6(input: string): number[] | null {
  let host = input.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!host.includes(":")) return null;
  const v4 = host.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const n = parseIPv4(v4[2]!);
    if (n === null) return null;
    host = `${v4[1]}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const halves = host.split("::");
  if (halves.length > 2) return null;
  const toGroups = (s: string) => (s === "" ? [] : s.split(":"));
  const head = toGroups(halves[0]!);
  const tail = halves.length === 2 ? toGroups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return null;
  return groups.map((g) => parseInt(g, 16));
}

export type AddressKind = "public" | "loopback" | "blocked";

interface Block<T> {
  base: T;
  bits: number;
  block: SpecialBlock;
}

function parsePrefix<T>(prefix: string, parse: (s: string) => T | null): { base: T; bits: number } {
  const [address, bits] = prefix.split("/");
  const base = parse(address!);
  if (base === null) throw new Error(`bad prefix in the special-purpose table: ${prefix}`);
  return { base, bits: Number(bits) };
}

const toBigInt = (groups: number[]): bigint => groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);

const V4_BLOCKS: Block<number>[] = IPV4_SPECIAL.map((block) => ({ ...parsePrefix(block.prefix, parseIPv4), block }));
// Longest prefix first, so the first match is the most specific block (2001:db8::/32 before a /23 around it).
const V6_BLOCKS: Block<bigint>[] = IPV6_SPECIAL.map((block) => {
  const { base, bits } = parsePrefix(block.prefix, parseIPv6);
  return { base: toBigInt(base), bits, block };
}).sort((a, b) => b.bits - a.bits);

const inV4 = (n: number, { base, bits }: Block<number>) => bits === 0 || n >>> (32 - bits) === base >>> (32 - bits);
const inV6 = (n: bigint, { base, bits }: Block<bigint>) => n >> BigInt(128 - bits) === base >> BigInt(128 - bits);

export function classifyIPv4(n: number): AddressKind {
  if (n >>> 24 === 127) return "loopback";
  return V4_BLOCKS.some((b) => inV4(n, b)) ? "blocked" : "public";
}

/** The special-purpose block an IPv6 address falls in (the most specific one), if any. */
export const specialBlockOfIPv6 = (g: number[]): SpecialBlock | undefined => V6_BLOCKS.find((b) => inV6(toBigInt(g), b))?.block;

export function classifyIPv6(g: number[]): AddressKind {
  const block = specialBlockOfIPv6(g);
  if (!block) return "public";
  if (block.prefix === "::1/128") return "loopback";
  if (block.embeds === "low32") return classifyIPv4(((g[6]! << 16) + g[7]!) >>> 0);
  if (block.embeds === "6to4") return classifyIPv4(((g[1]! << 16) + g[2]!) >>> 0);
  return "blocked";
}

/** An IP literal's kind, or null when `host` is a name that needs DNS. */
export function classifyLiteral(host: string): AddressKind | null {
  const v6 = parseIPv6(host);
  if (v6) return classifyIPv6(v6);
  const v4 = parseIPv4(host);
  return v4 === null ? null : classifyIPv4(v4);
}
