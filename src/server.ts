/** Builds one MCP server over the registry. No state of its own: transports build as many as they need. */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema, type CallToolRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CallDeps, Caller, Registry } from './registry.js';

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export interface ServerDeps extends CallDeps {
  readonly registry: Registry;
}

/**
 * tools/call registered with a lenient schema: the SDK's Server then checks the request itself and
 * answers a malformed one (arguments that are not an object, say) with -32602 Invalid params. With
 * the strict schema the generic parse runs first and a malformed request becomes -32603.
 */
const LenientCallToolRequest = z.looseObject({ method: z.literal('tools/call'), params: z.unknown() });

export const SERVER_INFO = { name: 'querygate', title: 'querygate: read-only sales queries', version: VERSION };
export const CAPABILITIES = { tools: { listChanged: false } };
export const INSTRUCTIONS = [
  'querygate answers questions about sales data through fixed, read-only query tools.',
  'Every tool takes start_date and end_date (YYYY-MM-DD, inclusive, at most 90 days counted inclusively); split longer periods into several calls.',
  'Revenue figures are net: cancelled and refunded orders are left out. Customer data comes back desensitized.',
].join(' ');

/** An MCP server for one caller: it lists and runs only the tools in the caller's toolset. */
export function createServer(deps: ServerDeps, caller: Caller): Server {
  const server = new Server(SERVER_INFO, { capabilities: CAPABILITIES, instructions: INSTRUCTIONS });
  const tools = deps.registry.toolsFor(caller);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools] }));
  server.setRequestHandler(LenientCallToolRequest, (request, extra) => {
    const { name, arguments: args } = request.params as CallToolRequest['params'];
    return deps.registry.call(name, args, deps, { caller, signal: extra.signal });
  });
  return server;
}
