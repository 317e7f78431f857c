/**
 * Call rates shared by replicas: two `serve --http` processes on one database count a caller's calls
 * together in the job store, so two replicas allow the rate once, not twice. Each caller has its own.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, type RunningCli } from '../support/cli.js';
import { textOf } from '../support/harness.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
/** Two calls a minute: a burst of two, then one every 30 s, far longer than the test takes. */
const RATE = 2;
const TOKENS = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef' };

let scratch: ScratchDatabase;
const replicas: RunningCli[] = [];
const urls: URL[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  scratch = await createScratchDatabase('shared_rates', { orders: 400, until: '2025-06-30' });
  const folder = mkdtempSync(join(tmpdir(), 'querygate-rates-'));
  const tokens = join(folder, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ tokens: Object.entries(TOKENS).map(([name, token]) => ({ name, token })) }));
  chmodSync(tokens, 0o600);
  for (let i = 0; i < 2; i++) {
    const replica = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_JOBS_URL: scratch.jobsUrl,
      QUERYGATE_TOKEN_KEY: 'shared-rates-key-0123',
      QUERYGATE_HTTP_TOKENS_FILE: tokens,
      QUERYGATE_RATE_LIMIT: String(RATE),
    });
    replicas.push(replica);
    urls.push(new URL((await replica.waitForLog(LISTEN))[1]!));
  }
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close();
  for (const replica of replicas) expect(await replica.stop()).toBe(0);
  await scratch?.drop();
});

async function connect(replica: number, caller: keyof typeof TOKENS): Promise<Client> {
  const client = new Client({ name: `rates-${caller}-${replica}`, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(urls[replica]!, {
      requestInit: { headers: { authorization: `Bearer ${TOKENS[caller]}` } },
    }),
  );
  clients.push(client);
  return client;
}

const count = async (client: Client): Promise<CallToolResult> =>
  (await client.callTool({
    name: 'query_order_count',
    arguments: { start_date: '2025-06-01', end_date: '2025-06-07' },
  })) as CallToolResult;

describe('rate limits across replicas', () => {
  it('counts one caller’s calls on both replicas together, and each caller apart', async () => {
    const [aliceOnA, aliceOnB, bobOnB] = [
      await connect(0, 'alice'),
      await connect(1, 'alice'),
      await connect(1, 'bob'),
    ];
    expect((await count(aliceOnA)).isError).toBeFalsy();
    expect((await count(aliceOnB)).isError).toBeFalsy();
    // Per process, each replica would still allow alice two calls.
    for (const client of [aliceOnA, aliceOnB]) {
      const refused = await count(client);
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('code: rate_limited');
    }
    expect((await count(bobOnB)).isError).toBeFalsy();
    const { rows } = await scratch.admin.query<{ key: string }>(
      'select key from querygate_jobs.rate_limits order by key',
    );
    expect(rows.map((r) => r.key)).toEqual(['alice', 'bob']);
  });
});
