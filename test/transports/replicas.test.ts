/**
 * Stateless HTTP: two server processes on one database, and one client configuration whose requests
 * alternate between them, as behind a round-robin load balancer. Nothing ties a client to a process.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin, figures } from '../support/harness.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
let replicas: RunningCli[];
let urls: URL[];

beforeAll(async () => {
  const env = { DATABASE_URL: inject('readerUrl'), QUERYGATE_TOKEN_KEY: 'replica-shared-token-key' };
  replicas = [startCli(['serve', '--http', '--port', '0'], env), startCli(['serve', '--http', '--port', '0'], env)];
  urls = await Promise.all(replicas.map(async (r) => new URL((await r.waitForLog(LISTEN))[1]!)));
});
afterAll(async () => {
  for (const replica of replicas) expect(await replica.stop()).toBe(0);
});

const auditLines = (replica: RunningCli): number =>
  replica
    .stderr()
    .split('\n')
    .filter((l) => l.includes('"type":"audit"')).length;

describe('two replicas behind one client configuration', () => {
  it('serve one client whose requests alternate between them, with the same answers', async () => {
    let next = 0;
    const sentTo: number[] = [];
    // The load balancer: every request goes to the other replica.
    const roundRobin: typeof fetch = (input, init) => {
      const target = next++ % 2;
      sentTo.push(target);
      const url = new URL(input instanceof Request ? input.url : String(input));
      url.port = urls[target]!.port;
      return fetch(url, init);
    };
    const client = new Client({ name: 'replicas', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(urls[0]!, { fetch: roundRobin }));
    try {
      const args = { start_date: '2025-05-01', end_date: '2025-05-31' };
      const answers: unknown[] = [];
      for (let i = 0; i < 6; i++) {
        const result = (await client.callTool({
          name: 'query_recent_orders',
          arguments: { ...args, limit: 5 },
        })) as CallToolResult;
        expect(result.isError).toBeFalsy();
        answers.push(result.structuredContent);
      }
      // Both replicas answered calls, and gave identical results (tokens too: they share the key).
      expect(new Set(sentTo)).toEqual(new Set([0, 1]));
      expect(auditLines(replicas[0]!)).toBeGreaterThanOrEqual(3);
      expect(auditLines(replicas[1]!)).toBeGreaterThanOrEqual(3);
      for (const answer of answers) expect(figures(answer)).toEqual(figures(answers[0]));

      const count = (await client.callTool({ name: 'query_order_count', arguments: args })) as CallToolResult;
      const admin = await connectAdmin();
      const { rows } = await admin.query(
        "select count(*)::int as n from sales.orders where ordered_at >= '2025-05-01T00:00:00Z' and ordered_at < '2025-06-01T00:00:00Z'",
      );
      await admin.end();
      expect((count.structuredContent as { order_count: number }).order_count).toBe(rows[0].n);
    } finally {
      await client.close();
    }
  });
});
