// An OTLP/HTTP trace receiver for tests, independent of the gateway's encoder: each POST body is decoded
// with the protobufjs module generated from opentelemetry-proto that @opentelemetry/otlp-proto-exporter-base
// ships (build/src/generated/root.js), as ExportTraceServiceRequest.
//
// Usage: node receiver.js OUT_FILE [--close-kept]
// Listens on 127.0.0.1, port 0 (the kernel chooses), and prints "listening on PORT". For each request it
// appends one JSON line to OUT_FILE before answering:
//   {"client_port" (the connection's), "method", "path", "content_type", "bytes",
//    "reencoded_identical": protobufjs encodes the decoded message to the very bytes received,
//    "verify_error": ExportTraceServiceRequest.verify() of the decoded message (null when valid),
//    "request": the decoded message (toObject: int64 and fixed64 as decimal strings, enums as numbers,
//               oneof cases named in "value"; trace and span ids as lowercase hex)}
// or {"error": "..."} when the body does not decode (then it answers 400). A decoded export gets 200 with
// an empty ExportTraceServiceResponse. With --close-kept each connection is closed right after its
// answer, which still says keep-alive: a collector whose idle timeout passed before the next request.
"use strict";

const fs = require("node:fs");
const http = require("node:http");
const root = require("@opentelemetry/otlp-proto-exporter-base/build/src/generated/root.js");

const service = root.opentelemetry.proto.collector.trace.v1;
const Request = service.ExportTraceServiceRequest;
const Response = service.ExportTraceServiceResponse;

const outFile = process.argv[2];
const closeKept = process.argv[3] === "--close-kept";
if (!outFile || (process.argv[3] !== undefined && !closeKept)) {
  console.error("usage: node receiver.js OUT_FILE [--close-kept]");
  process.exit(2);
}

const idFields = new Set(["traceId", "spanId", "parentSpanId"]);

// Ids arrive as base64 strings from toObject({bytes: String}); hex is how trace context writes them.
function hexIds(value) {
  if (Array.isArray(value)) return value.map(hexIds);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = idFields.has(k) ? Buffer.from(v, "base64").toString("hex") : hexIds(v);
  }
  return out;
}

function record(line) {
  fs.appendFileSync(outFile, JSON.stringify(line) + "\n");
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    let decoded;
    try {
      decoded = Request.decode(body);
    } catch (e) {
      record({ error: String(e && e.message ? e.message : e), bytes: body.length });
      res.writeHead(400, { "Content-Type": "text/plain" });
      res.end("undecodable\n");
      return;
    }
    const reencoded = Buffer.from(Request.encode(decoded).finish());
    record({
      client_port: req.socket.remotePort,
      method: req.method,
      path: req.url,
      content_type: req.headers["content-type"] || null,
      bytes: body.length,
      reencoded_identical: Buffer.compare(reencoded, body) === 0,
      verify_error: Request.verify(decoded),
      request: hexIds(
        Request.toObject(decoded, { longs: String, enums: Number, bytes: String, oneofs: true, defaults: false }),
      ),
    });
    const answer = Buffer.from(Response.encode(Response.create({})).finish());
    res.writeHead(200, { "Content-Type": "application/x-protobuf", "Content-Length": answer.length });
    if (closeKept) res.on("finish", () => req.socket.destroy());
    res.end(answer);
  });
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening on ${server.address().port}`);
});

process.on("SIGTERM", () => process.exit(0));
