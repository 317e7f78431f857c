/** MCP over stdio: the form that MCP client configurations launch. stdout carries only protocol messages. */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpServer } from '../server.js';

/** Serves until the client closes stdin; resolves then. */
export async function serveStdio(server: McpServer): Promise<void> {
  const ended = new Promise<void>((resolve) => process.stdin.once('end', () => resolve()));
  await server.connect(new StdioServerTransport());
  await Promise.race([server.closed, ended]);
  await server.close().catch(() => undefined);
}
