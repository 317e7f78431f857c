/**
 * Issue 8: a call the client cancels while it still waits for a connection is audited as cancelled,
 * not as a busy refusal (item 11); over stdio, the request after a cancelled one is paced until the
 * cancelled call has let go of its place, so it is not refused as busy (item 10).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startCli } from '../support/cli.js';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let harness: Harness;

beforeAll(async () => {
  scratch = await createScratchDatabase('cancel_queued', { orders: 200, until: '2025-06-30' });
  harness = await startHarness({ readerUrl: scratch.readerUrl, poolMax: 1 });
});
afterAll(async () => {
  await harness.close();
  await scratch.drop();
});

/** Waits until a reader's query waits on the lock the admin connection holds. */
async function firstCallWaitsOnTheLock(): Promise<void> {
  await eventually('the first call waits on the lock', async () => {
    // Inside the transaction that holds the lock, the activity view is a snapshot until cleared.
    await scratch.admin.query('select pg_stat_clear_snapshot()');
    const { rows } = await scratch.admin.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    return rows[0]!.n >= 1;
  });
}

it('item 11: a call cancelled while queued is audited as cancelled', async () => {
  const args = { start_date: '2025-06-01', end_date: '2025-06-07' };
  await scratch.admin.query('begin');
  await scratch.admin.query('lock table sales.orders in access exclusive mode');
  const held = harness.call('query_recent_orders', args); // takes the one connection, waits on the lock
  await firstCallWaitsOnTheLock();
  const abort = new AbortController();
  const queued = harness.client.callTool({ name: 'query_order_count', arguments: args }, undefined, {
    signal: abort.signal,
  });
  await new Promise((resolve) => setTimeout(resolve, 200)); // let it reach admission (a wait, not a measurement)
  abort.abort();
  await expect(queued).rejects.toThrow(/abort/i);
  await eventually('the cancelled call is audited', async () =>
    harness.audits.some((a) => a.tool === 'query_order_count'),
  );
  await scratch.admin.query('commit');
  structured(await held);
  const outcomes = harness.audits.map((a) => [a.tool, a.outcome]);
  expect(outcomes).toContainEqual(['query_order_count', 'cancelled']);
  expect(outcomes).toContainEqual(['query_recent_orders', 'ok']);
});

it('item 10: over stdio, a request after a cancelled one waits for its place, and is not refused as busy', async () => {
  const cli = startCli([], { DATABASE_URL: scratch.readerUrl, QUERYGATE_MAX_CONCURRENT: '1' });
  try {
    await cli.waitForLog(/reader role checked/);
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
    const call = (id: number): string =>
      `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'query_recent_orders', arguments: { start_date: '2025-06-01', end_date: '2025-06-07' } } })}\n`;
    cli.child.stdin!.write(call(1));
    await firstCallWaitsOnTheLock();
    // The cancel and the next request together: the cancelled call still holds the caller's one slot
    // until its query is cancelled in the database.
    cli.child.stdin!.write(
      `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } })}\n${call(2)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 300)); // a wait, not a measurement
    await scratch.admin.query('commit');
    cli.child.stdin!.end();
    let out = '';
    for await (const chunk of cli.child.stdout!) out += String(chunk);
    const answers = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; result: CallToolResult });
    expect(answers.map((a) => a.id)).toEqual([2]); // no answer for the cancelled one
    expect(answers[0]!.result.isError, JSON.stringify(answers[0])).toBeFalsy();
    expect(await cli.exited).toBe(0);
  } finally {
    await scratch.admin.query('rollback').catch(() => undefined);
    await cli.stop();
  }
});
