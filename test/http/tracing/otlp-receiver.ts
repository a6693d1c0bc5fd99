// An OTLP/HTTP trace receiver on loopback for the tracing tests: keeps every export's raw body
// (the leak check reads the bytes as sent) and decodes the spans from protobuf.
//
// Decoded here by a small protobuf reader of the fields the tests read, after
// opentelemetry-proto's trace.proto: @opentelemetry/otlp-transformer (0.223) only encodes
// requests and decodes responses, and no package of the proto definitions is installed.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** 0 unset, 1 ok, 2 error */
  statusCode: number;
  resource: Record<string, string | number | boolean>;
}

type Field = { field: number; wire: number; value: bigint | Buffer };

/** The fields of one protobuf message, in order (varint as bigint, length-delimited as bytes). */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[i++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ field, wire, value: varint() });
    else if (wire === 1) { out.push({ field, wire, value: buf.readBigUInt64LE(i) }); i += 8; }
    else if (wire === 5) { out.push({ field, wire, value: BigInt(buf.readUInt32LE(i)) }); i += 4; }
    else if (wire === 2) {
      const length = Number(varint());
      out.push({ field, wire, value: buf.subarray(i, i + length) });
      i += length;
    } else throw new Error(`unexpected protobuf wire type ${wire}`);
  }
  return out;
}

const bytesOf = (f: Field[], n: number) => f.filter((x) => x.field === n).map((x) => x.value as Buffer);
const firstBytes = (f: Field[], n: number) => bytesOf(f, n)[0] ?? Buffer.alloc(0);
const varintOf = (f: Field[], n: number) => Number((f.find((x) => x.field === n)?.value as bigint | undefined) ?? 0n);

/** AnyValue: string 1, bool 2, int 3, double 4. */
function anyValue(buf: Buffer): string | number | boolean {
  const [f] = fields(buf);
  if (!f) return "";
  if (f.field === 1) return (f.value as Buffer).toString("utf8");
  if (f.field === 2) return f.value !== 0n;
  if (f.field === 3) return Number(BigInt.asIntN(64, f.value as bigint));
  if (f.field === 4) return Buffer.from(new BigUint64Array([f.value as bigint]).buffer).readDoubleLE(0);
  return `(unsupported AnyValue field ${f.field})`;
}

/** KeyValue: key 1, value 2. */
function attributesOf(list: Buffer[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list) {
    const f = fields(kv);
    out[firstBytes(f, 1).toString("utf8")] = anyValue(firstBytes(f, 2));
  }
  return out;
}

/** ExportTraceServiceRequest { resource_spans 1 { resource 1 { attributes 1 }, scope_spans 2 { spans 2 } } }. */
export function decodeTraces(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of bytesOf(fields(body), 1)) {
    const rs = fields(resourceSpans);
    const resource = attributesOf(bytesOf(fields(firstBytes(rs, 1)), 1));
    for (const scopeSpans of bytesOf(rs, 2)) {
      for (const spanBytes of bytesOf(fields(scopeSpans), 2)) {
        // Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, attributes 9, status 15 { code 3 }
        const s = fields(spanBytes);
        spans.push({
          traceId: firstBytes(s, 1).toString("hex"),
          spanId: firstBytes(s, 2).toString("hex"),
          parentSpanId: firstBytes(s, 4).toString("hex"),
          name: firstBytes(s, 5).toString("utf8"),
          kind: varintOf(s, 6),
          attributes: attributesOf(bytesOf(s, 9)),
          statusCode: varintOf(fields(firstBytes(s, 15)), 3),
          resource,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  /** for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces) */
  url: string;
  bodies: Buffer[];
  /** what each export's request carried (content-type, the configured headers) */
  requests: Array<{ path: string; headers: http.IncomingHttpHeaders }>;
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: Buffer[] = [];
  const requests: OtlpReceiver["requests"] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", headers: req.headers });
      if (req.method === "POST" && req.url === "/v1/traces") bodies.push(Buffer.concat(chunks));
      // An empty ExportTraceServiceResponse: all accepted.
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    requests,
    spans: () => bodies.flatMap(decodeTraces),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
