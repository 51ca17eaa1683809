"""An OTLP/HTTP (protobuf) traces receiver for the `serve --otlp` tests.

    otlp_receiver.py OUT.jsonl [--hang]

Listens on 127.0.0.1 (a free port), prints `listening PORT` on stdout, and for each
POST /v1/traces decodes the body with the official `opentelemetry-proto` messages
(ExportTraceServiceRequest), appends one JSON line per span to OUT.jsonl (name, kind,
ids in hex, attributes, status, the resource's attributes) and every body as it came to
OUT.jsonl.raw, then answers 200 with an empty ExportTraceServiceResponse. A body that
does not decode is answered 400 and noted as a line {"undecodable": reason}. With --hang
it reads each request and never answers (a collector that is stuck). Exits when
its stdin closes (its test went away) or on SIGTERM.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MAX_BODY = 16 * 1024 * 1024
LOCK = threading.Lock()


def any_value(value):
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(pairs):
    return {kv.key: any_value(kv.value) for kv in pairs}


def span_lines(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "name": span.name,
                    "kind": Span.SpanKind.Name(span.kind),
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "traceState": span.trace_state,
                    "attributes": attributes(span.attributes),
                    "status": {
                        "code": Status.StatusCode.Name(span.status.code),
                        "message": span.status.message,
                    },
                    "scope": scope_spans.scope.name,
                    "resource": resource,
                }


def main():
    out = sys.argv[1]
    hang = "--hang" in sys.argv[2:]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if self.path != "/v1/traces" or length > MAX_BODY:
                self.send_response(404 if self.path != "/v1/traces" else 413)
                self.end_headers()
                return
            body = self.rfile.read(length)
            if hang:
                time.sleep(3600)
                return
            request = ExportTraceServiceRequest()
            try:
                request.ParseFromString(body)
                lines = list(span_lines(request))
                status = 200
            except Exception as error:  # noqa: BLE001 - any decode failure is the answer
                lines = [{"undecodable": str(error)}]
                status = 400
            with LOCK:
                with open(out + ".raw", "ab") as raw:
                    raw.write(body)
                with open(out, "a", encoding="utf-8") as spans:
                    for line in lines:
                        spans.write(json.dumps(line, sort_keys=True) + "\n")
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)

    def watch_stdin():
        sys.stdin.read()
        server.shutdown()

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
