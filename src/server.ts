/** Builds one MCP server over the registry. No state of its own: transports build as many as they need. */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import type { ReportingDatabase } from './db/schema.js';
import { INVALID_PARAMS, ProtocolError } from './errors.js';
import type { Tokenizer } from './lib/masking.js';
import type { Logger } from './logger.js';
import type { Registry } from './registry.js';

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export interface ServerDeps {
  readonly registry: Registry;
  readonly db: Kysely<ReportingDatabase>;
  readonly tokenize: Tokenizer;
  readonly logger: Logger;
  readonly timeZone: string;
}

const INSTRUCTIONS = [
  'querygate answers questions about sales data through fixed, read-only query tools.',
  'Every tool takes start_date and end_date (YYYY-MM-DD, inclusive, at most 90 days apart); split longer periods into several calls.',
  'Revenue figures are net: cancelled and refunded orders are left out. Customer data comes back desensitized.',
].join(' ');

export function createServer(deps: ServerDeps): Server {
  const server = new Server(
    { name: 'querygate', title: 'querygate: read-only sales queries', version: VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...deps.registry.tools] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params;
    if (!deps.registry.has(name)) {
      // The spec's protocol error for an unknown tool, not an isError result.
      throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${JSON.stringify(name.slice(0, 100))}`);
    }
    return deps.registry.call(name, args, {
      db: deps.db,
      tokenize: deps.tokenize,
      logger: deps.logger,
      ctx: { timeZone: deps.timeZone },
    });
  });
  return server;
}
