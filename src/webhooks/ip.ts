/**
 * IP literals in every form a URL or a resolver can hand us, and the ranges a webhook may never reach. The WHATWG
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

type V4Range = [base: string, bits: number];

/** Not routable on the public Internet, or owned by the platform (RFC 6890 and the cloud metadata service). */
const BLOCKED_V4: V4Range[] = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, incl. 169.254.169.254 metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

const inV4 = (n: number, [base, bits]: V4Range) => bits === 0 || n >>> (32 - bits) === parseIPv4(base)! >>> (32 - bits);

export type AddressKind = "public" | "loopback" | "blocked";

export function classifyIPv4(n: number): AddressKind {
  if (inV4(n, ["127.0.0.0", 8])) return "loopback";
  return BLOCKED_V4.some((r) => inV4(n, r)) ? "blocked" : "public";
}

export function classifyIPv6(g: number[]): AddressKind {
  const embeddedV4 = ((g[6]! << 16) + g[7]!) >>> 0;
  const zeroTo = (k: number) => g.slice(0, k).every((x) => x === 0);
  if (zeroTo(7) && g[7] === 1) return "loopback"; // ::1
  if (zeroTo(5) && g[5] === 0xffff) return classifyIPv4(embeddedV4); // ::ffff:a.b.c.d, IPv4-mapped
  if (zeroTo(4) && g[4] === 0xffff && g[5] === 0) return classifyIPv4(embeddedV4); // ::ffff:0:a.b.c.d, IPv4-translated
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return classifyIPv4(embeddedV4); // NAT64
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "blocked"; // 64:ff9b:1::/48, local-use NAT64
  if (g[0] === 0x2002) return classifyIPv4(((g[1]! << 16) + g[2]!) >>> 0); // 6to4 carries an IPv4 address
  if (zeroTo(6)) return "blocked"; // ::, ::a.b.c.d (deprecated IPv4-compatible)
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return "blocked"; // fc00::/7 unique local (incl. fd00:ec2::254 metadata)
  if ((first & 0xffc0) === 0xfe80 || (first & 0xffc0) === 0xfec0) return "blocked"; // link-local, site-local
  if ((first & 0xff00) === 0xff00) return "blocked"; // multicast
  if (first === 0x2001 && (g[1] === 0x0db8 || g[1] === 0)) return "blocked"; // documentation, Teredo
  if (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return "blocked"; // discard-only
  return "public";
}

/** An IP literal's kind, or null when `host` is a name that needs DNS. */
export function classifyLiteral(host: string): AddressKind | null {
  const v6 = parseIPv6(host);
  if (v6) return classifyIPv6(v6);
  const v4 = parseIPv4(host);
  return v4 === null ? null : classifyIPv4(v4);
}
