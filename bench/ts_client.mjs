// Benchmark client on the official TypeScript SDK (@modelcontextprotocol/sdk):
// Client + StdioClientTransport spawn the server, then N echo calls, printing one JSON
// line like every other client of switchboard-bench.
//
//   node bench/ts_client.mjs [--sdk DIR] [--calls N] [--warmup W] [--inflight K]
//        [--tool echo] [--arg text] [--text hello] --server PROGRAM ARGS...
//   node bench/ts_client.mjs [...] --url http://127.0.0.1:PORT/mcp   (Streamable HTTP)
//
// --server must come last. The SDK is loaded from --sdk (default: the pinned copy that
// scripts/peers.sh installs under target/peers/npm), since ESM imports do not honour
// NODE_PATH. Run with target/peers' node 22.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const opts = {
  sdk: resolve(here, '../target/peers/npm/node_modules/@modelcontextprotocol/sdk'),
  calls: 1000, warmup: 50, inflight: 1, tool: 'echo', arg: 'text', text: 'hello', server: [],
  url: null,
};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const flag = argv[i];
  if (flag === '--server') { opts.server = argv.slice(i + 1); break; }
  const value = argv[++i];
  if (value === undefined) throw new Error(`${flag} needs a value`);
  switch (flag) {
    case '--sdk': opts.sdk = resolve(value); break;
    case '--calls': opts.calls = Number(value); break;
    case '--warmup': opts.warmup = Number(value); break;
    case '--inflight': opts.inflight = Math.max(1, Number(value)); break;
    case '--tool': opts.tool = value; break;
    case '--arg': opts.arg = value; break;
    case '--text': opts.text = value; break;
    case '--url': opts.url = value; break;
    default: throw new Error(`unknown flag ${flag}`);
  }
}
if (opts.server.length === 0 && !opts.url) {
  throw new Error('--server PROGRAM ARGS... (last) or --url URL is required');
}

const load = (rel) => import(pathToFileURL(join(opts.sdk, rel)).href);
const { Client } = await load('dist/esm/client/index.js');
const { StdioClientTransport } = await load('dist/esm/client/stdio.js');

const now = () => process.hrtime.bigint();
const started = now();
const transport = opts.url
  ? new (await load('dist/esm/client/streamableHttp.js')).StreamableHTTPClientTransport(new URL(opts.url))
  : new StdioClientTransport({
    command: opts.server[0],
    args: opts.server.slice(1),
    stderr: 'inherit',
  });
// The client tells the transport the negotiated version through this optional hook.
let protocol = null;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => { protocol = version; setVersion?.(version); };
const client = new Client({ name: 'switchboard-bench-ts', version: '0.1.0' });
await client.connect(transport);
const initNs = now() - started;
const args = { [opts.arg]: opts.text };

async function call() {
  const result = await client.callTool({ name: opts.tool, arguments: args });
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result)}`);
  return result;
}

for (let i = 0; i < opts.warmup; i++) {
  const result = await call();
  const text = result.content?.[0]?.text ?? '';
  if (!text.includes(opts.text)) throw new Error(`unexpected echo: ${JSON.stringify(result)}`);
}

const latencies = new Array(opts.calls);
let next = 0;
async function worker() {
  while (next < opts.calls) {
    const slot = next++;
    const t = now();
    await call();
    latencies[slot] = Number(now() - t);
  }
}
const t0 = now();
await Promise.all(Array.from({ length: opts.inflight }, worker));
const elapsedS = Number(now() - t0) / 1e9;

latencies.sort((a, b) => a - b);
const pct = (p) => {
  if (latencies.length === 0) return 0;
  const rank = Math.min(latencies.length, Math.max(1, Math.ceil((p / 100) * latencies.length)));
  return latencies[rank - 1] / 1000;
};
process.stdout.write(JSON.stringify({
  client: 'ts', calls: opts.calls, inflight: opts.inflight, elapsed_s: elapsedS,
  calls_per_s: opts.calls / elapsedS, p50_us: pct(50), p90_us: pct(90), p99_us: pct(99),
  min_us: (latencies[0] ?? 0) / 1000, max_us: (latencies[latencies.length - 1] ?? 0) / 1000,
  init_ms: Number(initNs) / 1e6, protocol: typeof protocol === 'string' ? protocol : null,
}) + '\n');
await client.close();
