/**
 * Per-template limits from the configuration file, through a real client: a lower row cap, and a
 * timeout that cancels the query on the server well before the server's own statement timeout.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { templates } from '../../queries/index.js';
import { connectReader, type ReaderDatabase } from '../../src/db/connect.js';
import { createCallLimits, createSubscriptionLimits } from '../../src/lib/limits.js';
import { createTokenizer } from '../../src/lib/masking.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createRegistry, type AnyTemplate, type TemplateLimits } from '../../src/registry/index.js';
import { createServer } from '../../src/server.js';
import { connectAdmin, textOf } from '../support/harness.js';
import { eventually } from '../support/scratch.js';

const APPLICATION = 'querygate-limits-test';
const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' };

/**
 * A query that runs for a long while (a cross join of 1.6 billion rows) over nothing but a function
 * every role may call: no template of a pack is that slow on the test data.
 */
const slowCount: AnyTemplate = {
  name: 'query_slow_count',
  title: 'Slow count',
  description: 'Counts the pairs of a very large cross join, slowly enough for a timeout to cancel it.',
  input: z.strictObject({}),
  examples: [{}],
  output: z.strictObject({ pairs: z.number() }),
  columns: { pairs: { type: 'integer', source: 'computed', treatment: 'plain' } },
  personal: {},
  query: (db) =>
    db
      .selectFrom(sql`generate_series(1, 40000)`.as('a'))
      .innerJoin(sql`generate_series(1, 40000)`.as('b'), (join) => join.onTrue())
      .select((eb) => eb.fn.countAll().as('pairs')),
  present: (rows) => ({ pairs: Number(rows[0]?.pairs) }),
};

let reader: ReaderDatabase;
let admin: pg.Client;
beforeAll(async () => {
  reader = connectReader(
    inject('readerUrl'),
    { statementTimeoutMs: 60_000, poolMax: 4, applicationName: APPLICATION },
    silentLogger,
  );
  admin = await connectAdmin();
});
afterAll(async () => {
  await reader.close();
  await admin.end();
});

/** A real client on a server whose registry has these limits. */
async function connect(limits: Record<string, TemplateLimits>): Promise<Client> {
  const server = createServer(
    {
      registry: createRegistry([...templates, slowCount], { limits }),
      db: reader,
      tokenize: createTokenizer('limits-test-key'),
      logger: silentLogger,
      audit: { write: () => undefined, close: () => undefined },
      limits: createCallLimits({
        callsPerMinute: 1000,
        maxConcurrentPerCaller: 4,
        maxActive: 4,
        maxQueued: 10,
        maxQueueWaitMs: 5000,
      }),
      subscriptions: createSubscriptionLimits({ perCaller: 4, total: 100, maxLifetimeMs: 3_600_000 }),
      ctx: { timeZone: 'UTC' },
      isReady: () => true,
    },
    { id: 'test' },
  );
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'limits-test', version: '1.0.0' });
  await server.connect(serverSide);
  await client.connect(clientSide);
  return client;
}

const call = async (client: Client, name: string, args: object): Promise<CallToolResult> =>
  (await client.callTool({ name, arguments: args as Record<string, unknown> })) as CallToolResult;

describe('per-template limits', () => {
  it('caps the rows of one tool below its own cap, with truncated set, and leaves the others alone', async () => {
    const capped = await connect({ query_recent_orders: { maxRows: 3 } });
    const free = await connect({});
    try {
      const args = { ...RANGE, limit: 10 };
      type Rows = { rows: unknown[]; truncated: boolean };
      const all = (await call(free, 'query_recent_orders', args)).structuredContent as Rows;
      const few = (await call(capped, 'query_recent_orders', args)).structuredContent as Rows;
      expect(all.rows).toHaveLength(10);
      expect(few.rows).toEqual(all.rows.slice(0, 3));
      expect(few.truncated).toBe(true);
      const top = (await call(capped, 'query_top_products', args)).structuredContent as Rows;
      const topFree = (await call(free, 'query_top_products', args)).structuredContent as Rows;
      expect(top.rows.length).toBeGreaterThan(3);
      expect(top.rows).toEqual(topFree.rows);
    } finally {
      await capped.close();
      await free.close();
    }
  });

  it('cancels a query on the server when its timeout passes, long before the statement timeout', async () => {
    const client = await connect({ query_slow_count: { timeoutMs: 300 } });
    const running = async (): Promise<number> =>
      (
        await admin.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where application_name = $1 and state = 'active'",
          [APPLICATION],
        )
      ).rows[0]!.n;
    try {
      const started = Date.now();
      const result = await call(client, 'query_slow_count', {});
      expect(result.isError, textOf(result)).toBe(true);
      expect(textOf(result)).toContain('code: timeout');
      expect(Date.now() - started).toBeLessThan(5000);
      // The backend gave the query up; only a client that stopped waiting would leave it running.
      await eventually('the query to be cancelled on the server', async () => (await running()) === 0, 3000);
    } finally {
      await client.close();
    }
  });
});
