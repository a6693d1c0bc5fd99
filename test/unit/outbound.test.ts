// The outbound address policy, both sides: what is always refused, what the
// OUTBOUND_ALLOW_PRIVATE_NETWORKS switch decides, and that a real request obeys it (IP literal
// hosts, names resolved at connection time, redirects, the byte budget).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertUrlAllowed,
  classifyAddress,
  guardedLookup,
  OutboundRefused,
  outboundPolicyOf,
  refusalReason,
  resolveAllowed,
} from "../../src/lib/outbound.js";
import { ByteBudget, createOutboundClient, ResponseTooLarge } from "../../src/lib/outbound-http.js";

const OPEN = { allowPrivateNetworks: true };
const SHARED = { allowPrivateNetworks: false };

describe("classifyAddress", () => {
  it.each([
    ["169.254.169.254", "metadata"],
    ["100.100.100.200", "metadata"],
    ["168.63.129.16", "metadata"],
    ["fd00:ec2::254", "metadata"],
    ["169.254.10.1", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["64:ff9b::a9fe:a9fe", "metadata"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["fd12:3456::1", "private"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["255.255.255.255", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["8.8.8.8", "public"],
    ["172.32.0.1", "public"],
    ["169.253.255.255", "public"],
    ["2606:4700::1111", "public"],
  ])("%s is %s", (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected);
  });

  it("throws on something that is not an address", () => {
    expect(() => classifyAddress("example.com")).toThrow(/not an IP address/);
  });
});

describe("refusalReason", () => {
  it("always refuses link-local, metadata, unspecified and multicast addresses", () => {
    for (const ip of ["169.254.169.254", "169.254.1.1", "fe80::1", "100.100.100.200", "0.0.0.0", "224.0.0.1"]) {
      expect(refusalReason(ip, OPEN), ip).not.toBeNull();
      expect(refusalReason(ip, SHARED), ip).not.toBeNull();
    }
    expect(refusalReason("169.254.169.254", OPEN)).toMatch(/cloud metadata/);
    expect(refusalReason("fe80::1", OPEN)).toMatch(/link-local/);
  });

  it("allows loopback and private ranges unless private networks are switched off", () => {
    for (const ip of ["127.0.0.1", "::1", "10.0.0.1", "192.168.0.10", "fd00::1"]) {
      expect(refusalReason(ip, OPEN), ip).toBeNull();
      expect(refusalReason(ip, SHARED), ip).toMatch(/OUTBOUND_ALLOW_PRIVATE_NETWORKS=false/);
    }
  });

  it("allows public addresses either way", () => {
    expect(refusalReason("93.184.216.34", OPEN)).toBeNull();
    expect(refusalReason("93.184.216.34", SHARED)).toBeNull();
  });

  it("reads the switch from the configuration", () => {
    expect(outboundPolicyOf({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: false })).toEqual(SHARED);
  });
});

describe("assertUrlAllowed", () => {
  it("refuses IP literal hosts the policy refuses, in every spelling", () => {
    for (const url of ["http://169.254.169.254/latest/meta-data", "http://[fe80::1]/", "http://[::ffff:169.254.169.254]/", "http://0xa9fea9fe/", "http://2852039166/"]) {
      expect(() => assertUrlAllowed(url, OPEN), url).toThrow(OutboundRefused);
    }
  });

  it("refuses metadata host names and other schemes", () => {
    expect(() => assertUrlAllowed("http://metadata.google.internal/computeMetadata/v1/", OPEN)).toThrow(/metadata host/);
    expect(() => assertUrlAllowed("file:///etc/passwd", OPEN)).toThrow(/scheme file:/);
  });

  it("lets loopback literals through only when private networks are allowed", () => {
    expect(assertUrlAllowed("http://127.0.0.1:8080/x", OPEN).port).toBe("8080");
    expect(() => assertUrlAllowed("http://127.0.0.1:8080/x", SHARED)).toThrow(OutboundRefused);
    expect(() => assertUrlAllowed("http://[::1]/", SHARED)).toThrow(OutboundRefused);
  });
});

describe("resolving names", () => {
  it("checks the addresses a name resolves to", async () => {
    const addresses = await resolveAllowed("localhost", OPEN);
    expect(addresses.length).toBeGreaterThan(0);
    await expect(resolveAllowed("localhost", SHARED)).rejects.toThrow(OutboundRefused);
  });

  it("refuses inside the connection's own lookup (no window for DNS rebinding)", async () => {
    const lookup = guardedLookup(SHARED);
    const err = await new Promise<Error | null>((resolve) => lookup("localhost", { all: true }, (e) => resolve(e)));
    expect(err).toBeInstanceOf(OutboundRefused);
    const ok = await new Promise<unknown>((resolve) => guardedLookup(OPEN)("localhost", { family: 4 }, (e, address) => resolve(e ?? address)));
    expect(ok).toBe("127.0.0.1");
  });
});

describe("outbound requests", () => {
  let server: http.Server;
  let base: string;
  let other: http.Server;
  let otherBase: string;
  const seenAuthorization: Array<string | undefined> = [];

  beforeAll(async () => {
    other = http.createServer((req, res) => {
      seenAuthorization.push(req.headers.authorization);
      res.end("other");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    server = http.createServer((req, res) => {
      if (req.url === "/big") return void res.end(Buffer.alloc(4096, 1));
      if (req.url === "/to-metadata") return void res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data" }).end();
      if (req.url === "/to-other") return void res.writeHead(302, { location: `${otherBase}/landing` }).end();
      res.end("hello");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await new Promise((r) => other.close(r));
  });

  const text = async (body: AsyncIterable<Uint8Array>) => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of body) chunks.push(chunk);
    return Buffer.concat(chunks).toString();
  };

  it("reaches a loopback peer when private networks are allowed, by address and by name", async () => {
    const client = createOutboundClient({ policy: OPEN });
    const byAddress = await client.request({ url: `${base}/` });
    expect(byAddress.status).toBe(200);
    expect(await text(byAddress.body)).toBe("hello");
    const byName = await client.request({ url: base.replace("127.0.0.1", "localhost") + "/" });
    expect(await text(byName.body)).toBe("hello");
  });

  it("refuses the same peer when private networks are not allowed", async () => {
    const client = createOutboundClient({ policy: SHARED });
    await expect(client.request({ url: `${base}/` })).rejects.toThrow(OutboundRefused);
    await expect(client.request({ url: base.replace("127.0.0.1", "localhost") + "/" })).rejects.toThrow(OutboundRefused);
  });

  it("checks every redirect, and drops credentials when one leaves the origin", async () => {
    const client = createOutboundClient({ policy: OPEN });
    await expect(client.request({ url: `${base}/to-metadata` })).rejects.toThrow(/cloud metadata/);
    const res = await client.request({ url: `${base}/to-other`, headers: { Authorization: "Basic c2VjcmV0" } });
    expect(await text(res.body)).toBe("other");
    expect(res.url).toBe(`${otherBase}/landing`);
    expect(seenAuthorization).toEqual([undefined]);
  });

  it("stops a response that exceeds the byte budget", async () => {
    const client = createOutboundClient({ policy: OPEN, budget: new ByteBudget(1024) });
    const res = await client.request({ url: `${base}/big` });
    await expect(text(res.body)).rejects.toThrow(ResponseTooLarge);
  });
});
