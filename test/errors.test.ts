/** Errors as the spec draws them: protocol errors for unknown tools, safe isError results for failures. */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates } from '../queries/index.js';
import type { AnyTemplate } from '../src/registry/index.js';
import { startHarness, textOf, type Harness } from './support/harness.js';
import { ALL_PACKS, readerUrlFor } from './support/packs.js';
import { createScratchDatabase, type ScratchDatabase } from './support/scratch.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(async () => {
  await harness.close();
});

const week = { start_date: '2025-06-01', end_date: '2025-06-07' };

describe('an unknown tool', () => {
  it('is a JSON-RPC error -32602 that names the tool, not an isError result', async () => {
    const error = await harness.call('drop_all_tables', week).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toContain('Unknown tool: "drop_all_tables"');
  });
});

/** Nothing a client sees may carry SQL, a stack, or a connection string. */
function expectSafe(text: string): void {
  expect(text).not.toMatch(/select|from "|reporting\.|sales\./i);
  expect(text).not.toMatch(/\bat .+:\d+:\d+/); // stack frames
  expect(text).not.toMatch(/postgres(ql)?:\/\//);
  expect(text).not.toMatch(/password/i);
}

describe('a database that is down', () => {
  it('gives an isError result saying so, with a request id that is in the log', async () => {
    const down = await startHarness({ readerUrl: 'postgres://querygate_reader:secret-pw@127.0.0.1:1/querygate' });
    try {
      const result = await down.call('query_order_count', week);
      expect(result.isError).toBe(true);
      const text = textOf(result);
      expect(text).toContain('The database is unavailable right now. Retry in a few seconds.');
      expectSafe(text);
      const requestId = /request_id: ([0-9a-f-]{36})/.exec(text)?.[1];
      expect(requestId).toBeDefined();
      expect(down.audits.find((entry) => entry.request_id === requestId)).toMatchObject({
        tool: 'query_order_count',
        outcome: 'failed',
        error_class: 'infrastructure',
        error_code: 'database_unavailable',
      });
      const logged = down.logs.find((line) => line.request_id === requestId);
      expect(logged).toMatchObject({ level: 'error', msg: 'tool call failed', code: 'ECONNREFUSED' });
      expect(JSON.stringify(down.logs)).not.toContain('secret-pw');
    } finally {
      await down.close();
    }
  });
});

describe('a database that refuses the password', () => {
  it('says the login was refused, not that the database is down, so that nobody waits for it to come back', async () => {
    const url = new URL(readerUrlFor(ALL_PACKS.find((p) => p.name === 'sales')!));
    url.password = 'rotated-yesterday';
    const refused = await startHarness({ readerUrl: url.toString() });
    try {
      const result = await refused.call('query_order_count', week);
      expect(result.isError).toBe(true);
      const text = textOf(result);
      expect(text).toMatch(
        /^The database refused the server's login or a permission the query needs\. Retrying will not help until an operator fixes the credentials or the grants; report the request id\. \(code: database_refused, request_id: [0-9a-f-]{36}\)$/,
      );
      expectSafe(text);
      expect(refused.audits.at(-1)).toMatchObject({ outcome: 'failed', error_code: 'database_refused' });
      // PostgreSQL's own code for a wrong password, in the log only.
      expect(refused.logs.find((line) => line.msg === 'tool call failed')).toMatchObject({ code: '28P01' });
      expect(JSON.stringify(refused.logs)).not.toContain('rotated-yesterday');
    } finally {
      await refused.close();
    }
  });
});

describe('a query that runs too long', () => {
  // Its own database: the lock it holds would stall every suite reading the shared one in parallel.
  let scratch: ScratchDatabase;
  beforeAll(async () => {
    scratch = await createScratchDatabase('errors_timeout');
  });
  afterAll(async () => {
    await scratch?.drop();
  });

  it('is cancelled by the server-side statement timeout and reported as a timeout', async () => {
    const slow = await startHarness({
      readerUrl: scratch.readerUrl,
      statementTimeoutMs: 300,
      applicationName: 'querygate-timeout-test',
    });
    const admin = scratch.admin;
    // Hold a lock the query must wait for, so that it cannot finish before the timeout fires.
    await admin.query('begin');
    await admin.query('lock table sales.products in access exclusive mode');
    try {
      const result = await slow.call('query_top_products', week);
      expect(result.isError).toBe(true);
      const text = textOf(result);
      expect(text).toContain('The query timed out and was cancelled');
      expect(text).toContain('code: timeout');
      expectSafe(text);
      const waiting = await admin.query(
        "select count(*)::int as n from pg_stat_activity where application_name = 'querygate-timeout-test' and wait_event_type = 'Lock'",
      );
      expect(waiting.rows[0].n).toBe(0); // the backend gave up its query, it is not still waiting
    } finally {
      await admin.query('rollback');
      await slow.close();
    }
  });
});

describe('a template that breaks its own output schema', () => {
  it('gives a safe query_failed, and the log says what broke', async () => {
    const count = templates.find((t) => t.name === 'query_order_count')!;
    const broken: AnyTemplate = {
      ...count,
      name: 'query_broken_count',
      present: (rows, page, args, ctx) => ({ ...count.present(rows, page, args, ctx), order_count: 'internal-7' }),
    };
    const brokenHarness = await startHarness({ templates: [broken] });
    try {
      const result = await brokenHarness.call('query_broken_count', week);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('code: query_failed');
      expect(textOf(result)).not.toContain('internal-7');
      const logged = JSON.stringify(brokenHarness.logs);
      expect(logged).toContain('output does not match its schema');
      expect(logged).toContain('order_count');
    } finally {
      await brokenHarness.close();
    }
  });
});
