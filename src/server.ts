/** Builds one MCP server over the registry. No state of its own: transports build as many as they need. */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallDeps, Caller, Registry } from './registry.js';

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export interface ServerDeps extends CallDeps {
  readonly registry: Registry;
}

const INSTRUCTIONS = [
  'querygate answers questions about sales data through fixed, read-only query tools.',
  'Every tool takes start_date and end_date (YYYY-MM-DD, inclusive, at most 90 days apart); split longer periods into several calls.',
  'Revenue figures are net: cancelled and refunded orders are left out. Customer data comes back desensitized.',
].join(' ');

/** An MCP server for one caller: it lists and runs only the tools in the caller's toolset. */
export function createServer(deps: ServerDeps, caller: Caller): Server {
  const server = new Server(
    { name: 'querygate', title: 'querygate: read-only sales queries', version: VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  const tools = deps.registry.toolsFor(caller);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools] }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    deps.registry.call(request.params.name, request.params.arguments, deps, { caller, signal: extra.signal }),
  );
  return server;
}
