// The outbound address policy: every request the service makes on a tenant's behalf (Git and
// OCI registries, webhooks) goes through it, so that a tenant cannot make the server reach
// what only the server can reach.
//   * link-local (169.254.0.0/16, fe80::/10) and cloud metadata addresses: always refused;
//   * unspecified, broadcast and multicast addresses: always refused (never a real peer);
//   * loopback and private ranges: allowed unless OUTBOUND_ALLOW_PRIVATE_NETWORKS=false
//     (what a shared multi-tenant installation sets).
// The check runs on the addresses the host name resolves to, inside the connection's own DNS
// lookup (guardedLookup), so a name cannot resolve to a public address when checked and to a
// private one when connected (DNS rebinding).
import dns from "node:dns";
import net from "node:net";

export interface OutboundPolicy {
  allowPrivateNetworks: boolean;
}

export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link-local"
  | "metadata"
  | "unspecified"
  | "multicast";

export class OutboundRefused extends Error {
  override readonly name = "OutboundRefused";
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`Outbound request to ${host} refused: ${reason}`);
  }
}

export function outboundPolicyOf(config: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: boolean }): OutboundPolicy {
  return { allowPrivateNetworks: config.OUTBOUND_ALLOW_PRIVATE_NETWORKS };
}

/** Host names of cloud metadata services; their addresses are refused too, this is a second fence. */
const METADATA_HOSTNAMES = new Set(["metadata.google.internal", "metadata.goog", "metadata.azure.com", "instance-data", "instance-data.ec2.internal"]);

/** Cloud metadata endpoints, named as such in refusals. */
const METADATA_ADDRESSES = [
  "169.254.169.254/32", // AWS, GCP, Azure, OpenStack, ... (also link-local)
  "169.254.170.2/32", // AWS ECS task credentials (also link-local)
  "100.100.100.200/32", // Alibaba Cloud
  "168.63.129.16/32", // Azure wire server
  "fd00:ec2::254/128", // AWS (IPv6)
];

const RANGES: Array<[AddressClass, string[]]> = [
  ["metadata", METADATA_ADDRESSES],
  ["link-local", ["169.254.0.0/16", "fe80::/10"]],
  ["unspecified", ["0.0.0.0/8", "::/128", "255.255.255.255/32"]],
  ["multicast", ["224.0.0.0/4", "ff00::/8"]],
  ["loopback", ["127.0.0.0/8", "::1/128"]],
  [
    "private",
    [
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "100.64.0.0/10", // carrier-grade NAT
      "fc00::/7", // unique local
      "fec0::/10", // deprecated site-local
    ],
  ],
];

interface Cidr {
  bytes: Uint8Array;
  prefix: number;
}

const PARSED_RANGES: Array<[AddressClass, Cidr[]]> = RANGES.map(([cls, list]) => [cls, list.map(parseCidr)]);

function parseCidr(text: string): Cidr {
  const [address, prefix] = text.split("/");
  const bytes = parseIp(address!);
  if (!bytes) throw new Error(`bad CIDR ${text}`);
  return { bytes, prefix: Number(prefix) };
}

/** 4 bytes for IPv4, 16 for IPv6; null when `text` is not an IP address. */
export function parseIp(text: string): Uint8Array | null {
  const ip = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const version = net.isIP(ip.split("%")[0]!);
  if (version === 4) return Uint8Array.from(ip.split(".").map(Number));
  if (version !== 6) return null;
  let body = ip.split("%")[0]!.toLowerCase();
  const out = new Uint8Array(16);
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two hextets.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (quad) {
    const b = quad[1]!.split(".").map(Number);
    body = body.slice(0, -quad[1]!.length) + `${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = body.includes("::") ? body.split("::") : [body, undefined];
  const headParts = head ? head.split(":") : [];
  const tailParts = tail ? tail.split(":") : [];
  const parts = tail === undefined ? headParts : [...headParts, ...Array(8 - headParts.length - tailParts.length).fill("0"), ...tailParts];
  parts.forEach((part, i) => {
    const value = parseInt(part, 16);
    out[i * 2] = value >> 8;
    out[i * 2 + 1] = value & 0xff;
  });
  return out;
}

function inCidr(bytes: Uint8Array, cidr: Cidr): boolean {
  if (bytes.length !== cidr.bytes.length) return false;
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (cidr.bytes[i]! & mask)) return false;
  }
  return true;
}

/** The IPv4 address an IPv6 address carries (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96), if any. */
function embeddedIpv4(bytes: Uint8Array): Uint8Array | null {
  if (bytes.length !== 16) return null;
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  const nat64 = bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && bytes.subarray(4, 12).every((b) => b === 0);
  return mapped || nat64 ? bytes.slice(12) : null;
}

/** Which kind of address this is; throws on something that is not an IP address. */
export function classifyAddress(ip: string): AddressClass {
  let bytes = parseIp(ip);
  if (!bytes) throw new Error(`not an IP address: ${ip}`);
  bytes = embeddedIpv4(bytes) ?? bytes;
  for (const [cls, cidrs] of PARSED_RANGES) {
    if (cidrs.some((cidr) => inCidr(bytes!, cidr))) return cls;
  }
  return "public";
}

/** Why the policy refuses `ip`, or null when it may be reached. */
export function refusalReason(ip: string, policy: OutboundPolicy): string | null {
  const cls = classifyAddress(ip);
  switch (cls) {
    case "public":
      return null;
    case "loopback":
    case "private":
      return policy.allowPrivateNetworks ? null : `${ip} is a ${cls} address and private networks are not allowed (OUTBOUND_ALLOW_PRIVATE_NETWORKS=false)`;
    case "metadata":
      return `${ip} is a cloud metadata address`;
    default:
      return `${ip} is a ${cls} address`;
  }
}

/**
 * Checks what can be checked without DNS: the URL's scheme, a metadata host name, and an IP
 * literal host. Host names are checked again, on their resolved addresses, at connection time.
 */
export function assertUrlAllowed(rawUrl: string | URL, policy: OutboundPolicy, schemes: readonly string[] = ["http:", "https:"]): URL {
  const url = typeof rawUrl === "string" ? new URL(rawUrl) : rawUrl;
  if (!schemes.includes(url.protocol)) throw new OutboundRefused(url.host, `scheme ${url.protocol} is not allowed`);
  const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
  if (METADATA_HOSTNAMES.has(host)) throw new OutboundRefused(host, "it is a cloud metadata host");
  if (net.isIP(host)) {
    const reason = refusalReason(host, policy);
    if (reason) throw new OutboundRefused(host, reason);
  }
  return url;
}

/** Resolves `hostname` and checks every address; throws OutboundRefused when one is refused. */
export async function resolveAllowed(hostname: string, policy: OutboundPolicy): Promise<dns.LookupAddress[]> {
  const host = hostname.replace(/^\[|\]$/g, "");
  if (METADATA_HOSTNAMES.has(host.replace(/\.$/, "").toLowerCase())) throw new OutboundRefused(host, "it is a cloud metadata host");
  const addresses = net.isIP(host) ? [{ address: host, family: net.isIP(host) }] : await dns.promises.lookup(host, { all: true, verbatim: true });
  checkAll(host, addresses, policy);
  return addresses;
}

// A name with one refused address is refused as a whole: the client would pick any of them.
function checkAll(host: string, addresses: dns.LookupAddress[], policy: OutboundPolicy) {
  for (const { address } of addresses) {
    const reason = refusalReason(address, policy);
    if (reason) throw new OutboundRefused(host, reason);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request / net.connect that resolves and checks in one step, so the
 * address that was checked is the address that is connected to. (IP literal hosts never
 * reach a lookup function: check them with assertUrlAllowed first.)
 */
export function guardedLookup(policy: OutboundPolicy) {
  return (hostname: string, options: dns.LookupOptions | number | LookupCallback, maybeCallback?: LookupCallback): void => {
    const callback = (typeof options === "function" ? options : maybeCallback)!;
    const opts: dns.LookupOptions = typeof options === "object" ? options : typeof options === "number" ? { family: options } : {};
    resolveAllowed(hostname, policy).then(
      (addresses) => {
        const family = opts.family === 4 || opts.family === 6 ? opts.family : 0;
        const usable = family ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = "ENOTFOUND";
          return callback(err, []);
        }
        if (opts.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, opts.all ? [] : ""),
    );
  };
}
