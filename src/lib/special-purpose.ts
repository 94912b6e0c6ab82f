/**
 * The IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its updates), as data, plus the multicast
 * blocks, which have registries of their own. An outbound request (a webhook, an OAuth client's metadata document) may
 * reach none of these blocks: most are not globally reachable, and the few that are (anycast services such as AS112,
 * PCP, TURN) are infrastructure, never a customer's server. Where a block embeds an IPv4 address (IPv4-mapped, NAT64, 6to4), `embeds` names where it sits, and the
 * embedded address is judged instead, so a mapped public address stays usable and a mapped private one does not.
 *
 * Kept in the registries' own order and words; when IANA adds a block, add its row here (ip.test covers each row).
 */
export interface SpecialBlock {
  prefix: string;
  name: string;
  rfc: string;
  /** The registry's "Globally Reachable" column; informative only, every block is refused. */
  globallyReachable: boolean | null;
  /** The 32 bits of an embedded IPv4 address: the low 32 bits, or bits 16–47 for 6to4. */
  embeds?: "low32" | "6to4";
}

/** https://www.iana.org/assignments/iana-ipv4-special-registry */
export const IPV4_SPECIAL: SpecialBlock[] = [
  { prefix: "0.0.0.0/8", name: "This network", rfc: "RFC 791", globallyReachable: false },
  { prefix: "0.0.0.0/32", name: "This host on this network", rfc: "RFC 1122", globallyReachable: false },
  { prefix: "10.0.0.0/8", name: "Private-Use", rfc: "RFC 1918", globallyReachable: false },
  { prefix: "100.64.0.0/10", name: "Shared Address Space", rfc: "RFC 6598", globallyReachable: false },
  { prefix: "127.0.0.0/8", name: "Loopback", rfc: "RFC 1122", globallyReachable: false },
  { prefix: "169.254.0.0/16", name: "Link Local", rfc: "RFC 3927", globallyReachable: false },
  { prefix: "172.16.0.0/12", name: "Private-Use", rfc: "RFC 1918", globallyReachable: false },
  { prefix: "192.0.0.0/24", name: "IETF Protocol Assignments", rfc: "RFC 6890", globallyReachable: false },
  { prefix: "192.0.0.0/29", name: "IPv4 Service Continuity Prefix", rfc: "RFC 7335", globallyReachable: false },
  { prefix: "192.0.0.8/32", name: "IPv4 dummy address", rfc: "RFC 7600", globallyReachable: false },
  { prefix: "192.0.0.9/32", name: "Port Control Protocol Anycast", rfc: "RFC 7723", globallyReachable: true },
  { prefix: "192.0.0.10/32", name: "Traversal Using Relays around NAT Anycast", rfc: "RFC 8155", globallyReachable: true },
  { prefix: "192.0.0.170/32", name: "NAT64/DNS64 Discovery", rfc: "RFC 8880", globallyReachable: false },
  { prefix: "192.0.0.171/32", name: "NAT64/DNS64 Discovery", rfc: "RFC 8880", globallyReachable: false },
  { prefix: "192.0.2.0/24", name: "Documentation (TEST-NET-1)", rfc: "RFC 5737", globallyReachable: false },
  { prefix: "192.31.196.0/24", name: "AS112-v4", rfc: "RFC 7535", globallyReachable: true },
  { prefix: "192.52.193.0/24", name: "AMT", rfc: "RFC 7450", globallyReachable: true },
  { prefix: "192.88.99.0/24", name: "Deprecated (6to4 Relay Anycast)", rfc: "RFC 7526", globallyReachable: null },
  { prefix: "192.168.0.0/16", name: "Private-Use", rfc: "RFC 1918", globallyReachable: false },
  { prefix: "192.175.48.0/24", name: "Direct Delegation AS112 Service", rfc: "RFC 7534", globallyReachable: true },
  { prefix: "198.18.0.0/15", name: "Benchmarking", rfc: "RFC 2544", globallyReachable: false },
  { prefix: "198.51.100.0/24", name: "Documentation (TEST-NET-2)", rfc: "RFC 5737", globallyReachable: false },
  { prefix: "203.0.113.0/24", name: "Documentation (TEST-NET-3)", rfc: "RFC 5737", globallyReachable: false },
  { prefix: "240.0.0.0/4", name: "Reserved", rfc: "RFC 1112", globallyReachable: false },
  { prefix: "255.255.255.255/32", name: "Limited Broadcast", rfc: "RFC 8190", globallyReachable: false },
  // https://www.iana.org/assignments/multicast-addresses
  { prefix: "224.0.0.0/4", name: "Multicast", rfc: "RFC 5771", globallyReachable: null },
];

/** https://www.iana.org/assignments/iana-ipv6-special-registry */
export const IPV6_SPECIAL: SpecialBlock[] = [
  { prefix: "::1/128", name: "Loopback Address", rfc: "RFC 4291", globallyReachable: false },
  { prefix: "::/128", name: "Unspecified Address", rfc: "RFC 4291", globallyReachable: false },
  { prefix: "::ffff:0:0/96", name: "IPv4-mapped Address", rfc: "RFC 4291", globallyReachable: false, embeds: "low32" },
  { prefix: "64:ff9b::/96", name: "IPv4-IPv6 Translat.", rfc: "RFC 6052", globallyReachable: true, embeds: "low32" },
  { prefix: "64:ff9b:1::/48", name: "IPv4-IPv6 Translat.", rfc: "RFC 8215", globallyReachable: false },
  { prefix: "100::/64", name: "Discard-Only Address Block", rfc: "RFC 6666", globallyReachable: false },
  { prefix: "100:0:0:1::/64", name: "Dummy IPv6 Prefix", rfc: "RFC 9780", globallyReachable: false },
  { prefix: "2001::/23", name: "IETF Protocol Assignments", rfc: "RFC 2928", globallyReachable: false },
  { prefix: "2001::/32", name: "TEREDO", rfc: "RFC 4380", globallyReachable: null },
  { prefix: "2001:1::1/128", name: "Port Control Protocol Anycast", rfc: "RFC 7723", globallyReachable: true },
  { prefix: "2001:1::2/128", name: "Traversal Using Relays around NAT Anycast", rfc: "RFC 8155", globallyReachable: true },
  { prefix: "2001:1::3/128", name: "DNS-SD Service Registration Protocol Anycast", rfc: "RFC 9665", globallyReachable: true },
  { prefix: "2001:2::/48", name: "Benchmarking", rfc: "RFC 5180", globallyReachable: false },
  { prefix: "2001:3::/32", name: "AMT", rfc: "RFC 7450", globallyReachable: true },
  { prefix: "2001:4:112::/48", name: "AS112-v6", rfc: "RFC 7535", globallyReachable: true },
  { prefix: "2001:10::/28", name: "Deprecated (previously ORCHID)", rfc: "RFC 4843", globallyReachable: null },
  { prefix: "2001:20::/28", name: "ORCHIDv2", rfc: "RFC 7343", globallyReachable: true },
  { prefix: "2001:30::/28", name: "Drone Remote ID Protocol Entity Tags (DETs) Prefix", rfc: "RFC 9374", globallyReachable: true },
  { prefix: "2001:db8::/32", name: "Documentation", rfc: "RFC 3849", globallyReachable: false },
  { prefix: "2002::/16", name: "6to4", rfc: "RFC 3056", globallyReachable: null, embeds: "6to4" },
  { prefix: "2620:4f:8000::/48", name: "Direct Delegation AS112 Service", rfc: "RFC 7534", globallyReachable: true },
  { prefix: "3fff::/20", name: "Documentation", rfc: "RFC 9637", globallyReachable: false },
  { prefix: "5f00::/16", name: "Segment Routing (SRv6) SIDs", rfc: "RFC 9602", globallyReachable: false },
  { prefix: "fc00::/7", name: "Unique-Local", rfc: "RFC 4193", globallyReachable: false },
  { prefix: "fe80::/10", name: "Link-Local Unicast", rfc: "RFC 4291", globallyReachable: false },
  // Not in the registry any more, but never a public address: deprecated site-local (RFC 3879), the
  // IPv4-compatible block (RFC 4291 section 2.5.5.1) and multicast (its own registry).
  { prefix: "fec0::/10", name: "Site-Local (deprecated)", rfc: "RFC 3879", globallyReachable: false },
  { prefix: "::/96", name: "IPv4-Compatible (deprecated)", rfc: "RFC 4291", globallyReachable: false },
  { prefix: "::ffff:0:0:0/96", name: "IPv4-translated", rfc: "RFC 2765", globallyReachable: false, embeds: "low32" },
  { prefix: "ff00::/8", name: "Multicast", rfc: "RFC 4291", globallyReachable: null },
];
