"""A small OTLP/HTTP trace receiver for TracingTests (issue 39): decodes each POST /v1/traces body (protobuf
ExportTraceServiceRequest, with opentelemetry-proto from PyPI) and prints one JSON line per span on standard output:
name, kind, trace and span ids (hex), parent span id, the resource's service.name and every attribute. The first
line is "listening on PORT". Nothing is kept on disk; the test reads the lines.

    python otlp_receiver.py        (port 0: the kernel picks one)
"""
import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding", "") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces" or "protobuf" not in self.headers.get("Content-Type", ""):
            print(json.dumps({"error": f"unexpected {self.path} {self.headers.get('Content-Type')}"}), flush=True)
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {kv.key: value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    print(json.dumps({
                        "name": span.name,
                        "kind": span.kind,
                        "traceId": span.trace_id.hex(),
                        "spanId": span.span_id.hex(),
                        "parentSpanId": span.parent_span_id.hex(),
                        "service": resource.get("service.name"),
                        "status": span.status.code,
                        "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                    }, sort_keys=True), flush=True)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Receiver)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
