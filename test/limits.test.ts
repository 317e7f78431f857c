/** Admission control: the token bucket, per-caller concurrency and the bounded, fair queue. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createCallLimits, createTokenBuckets, type Admission } from '../src/lib/limits.js';
import { startCli, type RunningCli } from './support/cli.js';
import { startHarness, textOf } from './support/harness.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from './support/scratch.js';

const week = { start_date: '2025-06-01', end_date: '2025-06-07' };

describe('the token bucket', () => {
  it('lets a burst of N through, then one per 60/N seconds, per caller', () => {
    let now = 0;
    const buckets = createTokenBuckets(60, () => now);
    for (let i = 0; i < 60; i++) expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(1); // one token a second
    expect(buckets.take('b')).toBe(0); // another caller has a bucket of its own
    now += 1000;
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(1);
  });

  it('says how long to wait when the rate is slow', () => {
    let now = 0;
    const buckets = createTokenBuckets(2, () => now);
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(30);
    now += 29_000;
    expect(buckets.take('a')).toBe(1);
  });
});

describe('call limits', () => {
  const options = { callsPerMinute: 1000, maxQueueWaitMs: 60_000 };

  it("refuses a caller's call beyond its concurrency as busy, and frees the slot on release", async () => {
    const limits = createCallLimits({ ...options, maxConcurrentPerCaller: 2, maxActive: 10, maxQueued: 10 });
    const a = await limits.admit('x');
    const b = await limits.admit('x');
    expect([a.ok, b.ok]).toEqual([true, true]);
    expect(await limits.admit('x')).toMatchObject({ ok: false, code: 'busy' });
    expect((await limits.admit('y')).ok).toBe(true);
    if (a.ok) a.release();
    expect((await limits.admit('x')).ok).toBe(true);
  });

  it('queues up to maxQueued calls when every slot is taken, refuses the next, and hands slots over in order', async () => {
    const limits = createCallLimits({ ...options, maxConcurrentPerCaller: 10, maxActive: 1, maxQueued: 1 });
    const first = await limits.admit('a');
    const queued = limits.admit('b');
    expect(await limits.admit('c')).toMatchObject({ ok: false, code: 'busy' });
    expect(limits.active).toBe(1);
    if (first.ok) first.release();
    const second = await queued;
    expect(second.ok).toBe(true);
    expect(limits.active).toBe(1);
    if (second.ok) second.release();
    expect(limits.active).toBe(0);
    expect(await limits.drain(1000)).toBe(true);
  });

  it('refuses a queued call as busy when no slot frees up in time', async () => {
    const limits = createCallLimits({
      ...options,
      maxConcurrentPerCaller: 10,
      maxActive: 1,
      maxQueued: 5,
      maxQueueWaitMs: 50,
    });
    const first = await limits.admit('a');
    expect(first.ok).toBe(true);
    expect(await limits.admit('b')).toMatchObject({ ok: false, code: 'busy' });
    expect(limits.active).toBe(1);
  });
});

describe('item 9: admission', () => {
  const base = {
    callsPerMinute: 1000,
    maxConcurrentPerCaller: 10,
    maxActive: 1,
    maxQueued: 20,
    maxQueueWaitMs: 60_000,
  };

  it('item 9: a call refused as busy (over its concurrency, a full queue, the queue timeout, cancelled while waiting) costs no rate token', async () => {
    const rate = 3;
    const limits = createCallLimits({
      callsPerMinute: rate,
      maxConcurrentPerCaller: 2,
      maxActive: 1,
      maxQueued: 1,
      maxQueueWaitMs: 50,
      now: () => 0, // the clock stands still: no token comes back by refilling
    });
    const first = await limits.admit('a');
    expect(first.ok).toBe(true);
    // Waits, then is refused when the queue timeout passes.
    expect(await limits.admit('a')).toMatchObject({ ok: false, code: 'busy' });
    // Over its concurrency: one running, one waiting.
    const waiting = limits.admit('a');
    expect(await limits.admit('a')).toMatchObject({ ok: false, code: 'busy' });
    // Over the full queue: b finds a's call in the only place.
    expect(await limits.admit('b')).toMatchObject({ ok: false, code: 'busy' });
    expect(await waiting).toMatchObject({ ok: false, code: 'busy' });
    // Cancelled while waiting.
    const abort = new AbortController();
    const cancelled = limits.admit('a', abort.signal);
    abort.abort();
    expect(await cancelled).toMatchObject({ ok: false, code: 'busy' });
    if (first.ok) first.release();
    // The clock has not moved: only a's admitted call spent a token, so a has `rate - 1` calls left
    // and b its whole rate.
    for (const [caller, left] of [
      ['a', rate - 1],
      ['b', rate],
    ] as const) {
      for (let i = 0; i < left; i++) {
        const call = await limits.admit(caller);
        expect(call.ok, `${caller}: call ${i + 1}`).toBe(true);
        if (call.ok) call.release();
      }
      expect(await limits.admit(caller)).toMatchObject({ ok: false, code: 'rate_limited' });
    }
  });

  it('item 9: a freed slot goes to the waiting caller with the fewest calls running, then the one served least recently', async () => {
    const limits = createCallLimits(base);
    const served: string[] = [];
    const running: Array<() => void> = [];
    const call = (caller: string): Promise<void> =>
      limits.admit(caller).then((admission) => {
        if (!admission.ok) throw new Error(`${caller} refused: ${admission.code}`);
        served.push(caller);
        running.push(() => admission.release());
      });
    // a holds the only slot and queues two more; then b queues two, c and d one each.
    const calls = ['a', 'a', 'a', 'b', 'b', 'c', 'd'].map(call);
    for (let i = 1; i < calls.length; i++) {
      await Promise.resolve();
      running.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(calls);
    // First-come-first-served would give a a a b b c d: a's backlog would hold everyone up.
    expect(served).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'a']);
    running.shift()!();
    expect(limits.active).toBe(0);
  });

  it('item 9: with the queue full, a caller with fewer waiting calls takes the place of the newest call of the one with most', async () => {
    const limits = createCallLimits({ ...base, maxQueued: 3 });
    const first = await limits.admit('a');
    expect(first.ok).toBe(true);
    const a = [limits.admit('a'), limits.admit('a'), limits.admit('a')];
    const b = limits.admit('b'); // takes the place of a's newest
    expect(await a[2]).toMatchObject({ ok: false, code: 'busy' });
    const c = limits.admit('c'); // a still has two waiting: its newest gives way again
    expect(await a[1]).toMatchObject({ ok: false, code: 'busy' });
    // a, b and c each have one waiting now: d has no better claim and is refused.
    expect(await limits.admit('d')).toMatchObject({ ok: false, code: 'busy' });
    const order: string[] = [];
    const settle = async (name: string, admission: Promise<Admission>): Promise<void> => {
      const got = await admission;
      expect(got.ok, name).toBe(true);
      order.push(name);
      if (got.ok) got.release();
    };
    const rest = Promise.all([settle('a', a[0]!), settle('b', b), settle('c', c)]);
    if (first.ok) first.release();
    await rest;
    expect(order).toEqual(['b', 'c', 'a']);
    expect(limits.active).toBe(0);
  });

  it('item 9: QUERYGATE_QUEUE_TIMEOUT_MS is its own setting, 2000 ms by default, and a bad value names the variable', () => {
    expect(loadConfig({}).queueTimeoutMs).toBe(2000);
    expect(loadConfig({ QUERYGATE_QUEUE_TIMEOUT_MS: '750', QUERYGATE_STATEMENT_TIMEOUT_MS: '9000' })).toMatchObject({
      queueTimeoutMs: 750,
      statementTimeoutMs: 9000,
    });
    expect(() => loadConfig({ QUERYGATE_QUEUE_TIMEOUT_MS: '0' })).toThrow(
      /QUERYGATE_QUEUE_TIMEOUT_MS: "0" is not a positive integer/,
    );
  });
});

describe('a caller over its rate', () => {
  it('gets an isError result saying when to retry, and an audit line marked refused', async () => {
    let now = 1_000_000;
    const harness = await startHarness({ limits: { callsPerMinute: 2, now: () => now } });
    try {
      expect((await harness.call('query_order_count', week)).isError).toBeFalsy();
      expect((await harness.call('query_order_count', week)).isError).toBeFalsy();
      const refused = await harness.call('query_order_count', week);
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('Too many calls: the rate limit is reached. Retry in 30 seconds.');
      expect(textOf(refused)).toContain('code: rate_limited');
      expect(harness.audits.at(-1)).toMatchObject({ outcome: 'refused', error_code: 'rate_limited' });
      now += 30_000;
      expect((await harness.call('query_order_count', week)).isError).toBeFalsy();
    } finally {
      await harness.close();
    }
  });
});

describe('item 9: admission over HTTP, several tokens, a stalled database', () => {
  const CALLERS = ['a', 'b', 'c', 'd'] as const;
  const tokens: Record<string, string> = Object.fromEntries(
    [...CALLERS, 'warm'].map((name) => [name, randomBytes(24).toString('base64url')]),
  );
  let scratch: ScratchDatabase;
  let dir: string;
  let tokensFile: string;
  let locked = false;
  const servers: RunningCli[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase('admission', { orders: 200, until: '2025-06-30' });
    dir = await mkdtemp(join(tmpdir(), 'querygate-admission-'));
    tokensFile = join(dir, 'tokens.json');
    await writeFile(
      tokensFile,
      JSON.stringify({ tokens: Object.entries(tokens).map(([name, token]) => ({ name, token })) }),
      {
        mode: 0o600,
      },
    );
  });
  afterEach(async () => {
    // A failed test must not leave the next one a locked table.
    if (locked) await unlock();
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    for (const server of servers) await server.stop();
    await scratch?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A server whose one connection is taken by the first call that waits on the lock. */
  const startServer = async (env: Record<string, string>): Promise<{ server: RunningCli; url: URL }> => {
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'admission-test-key',
      QUERYGATE_HTTP_TOKENS_FILE: tokensFile,
      QUERYGATE_POOL_MAX: '1',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '120000',
      ...env,
    });
    servers.push(server);
    return { server, url: new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!) };
  };
  const connect = async (url: URL, name: string): Promise<Client> => {
    const client = new Client({ name: `admission-${name}`, version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${tokens[name]}` } } }),
    );
    clients.push(client);
    return client;
  };
  const week = { start_date: '2025-06-01', end_date: '2025-06-07' };
  // It reads sales.orders, which the test locks.
  const call = (client: Client): Promise<CallToolResult> =>
    client.callTool({ name: 'query_recent_orders', arguments: week }) as Promise<CallToolResult>;
  const codeOf = (result: CallToolResult): string =>
    result.isError ? (/code: (\w+)/.exec(textOf(result))?.[1] ?? 'unknown') : 'ok';
  const waitingOnLock = async (): Promise<number> =>
    (
      await scratch.admin.query<{ n: number }>(
        // This database's only: other suites run theirs in parallel, under the same application name.
        "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'querygate' and wait_event_type = 'Lock'",
      )
    ).rows[0]!.n;
  const lock = async (): Promise<void> => {
    await scratch.admin.query('begin');
    locked = true;
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
  };
  const unlock = async (): Promise<void> => {
    await scratch.admin.query('rollback');
    locked = false;
  };
  /** Resolves with the results of the first `n` calls to come back; the others go on. */
  const firstSettled = (calls: Promise<CallToolResult>[], n: number): Promise<CallToolResult[]> =>
    new Promise((done, fail) => {
      const settled: CallToolResult[] = [];
      for (const pending of calls) {
        pending.then((result) => {
          settled.push(result);
          if (settled.length === n) done(settled);
        }, fail);
      }
    });

  it('item 9: every caller is served in turn once the database answers, and refusals cost no rate token', async () => {
    const RATE = 6;
    const CONCURRENT = 3;
    const { server, url } = await startServer({
      QUERYGATE_MAX_CONCURRENT: String(CONCURRENT),
      QUERYGATE_MAX_QUEUE: '16',
      QUERYGATE_RATE_LIMIT: String(RATE),
      QUERYGATE_QUEUE_TIMEOUT_MS: '120000',
    });
    const client: Record<string, Client> = {};
    for (const name of [...CALLERS, 'warm']) client[name] = await connect(url, name);
    // Opens the one pooled connection before the lock.
    expect(codeOf(await call(client.warm!))).toBe('ok');
    const started = Date.now();

    await lock();
    // a takes the connection, then fills its share: two calls wait and a third is refused.
    const pending: Promise<CallToolResult>[] = [call(client.a!)];
    await eventually('the first call to wait on the lock', async () => (await waitingOnLock()) === 1);
    const refusedDuringStall: string[] = [];
    const more = [call(client.a!), call(client.a!), call(client.a!)];
    refusedDuringStall.push(...(await firstSettled(more, 1)).map(codeOf));
    pending.push(...more);
    // b, c and d each send CONCURRENT + 1 at once: CONCURRENT wait, one is refused.
    for (const name of ['b', 'c', 'd']) {
      const calls = Array.from({ length: CONCURRENT + 1 }, () => call(client[name]!));
      refusedDuringStall.push(...(await firstSettled(calls, 1)).map(codeOf));
      pending.push(...calls);
    }
    // Every caller retries three more times while its calls still wait: refused as busy each time.
    for (const name of CALLERS) {
      for (let i = 0; i < 3; i++) refusedDuringStall.push(codeOf(await call(client[name]!)));
    }
    // Seven calls from each caller so far, over its rate of six: only the three let in may cost a token.
    expect(refusedDuringStall).toEqual(Array.from({ length: 4 * CALLERS.length }, () => 'busy'));

    await unlock();
    const results = await Promise.all(pending);
    // Of the calls sent during the stall, every one let in succeeds; the others were the refusals above.
    expect(results.map(codeOf).filter((code) => code === 'ok')).toHaveLength(CALLERS.length * CONCURRENT);

    // With one connection, the audit log's order of successful calls is the order of admission.
    const served = await eventually('every admitted call to be audited', async () => {
      const order = auditLines(server.stderr())
        .filter((line) => line.outcome === 'ok' && line.caller !== 'warm')
        .map((line) => String(line.caller));
      return order.length === CALLERS.length * CONCURRENT ? order : undefined;
    });
    // Fair turns: at every point, no caller has had two calls more served than another. First come,
    // first served would run a's three before anyone else's.
    const count = Object.fromEntries(CALLERS.map((name) => [name, 0]));
    for (const [at, name] of served.entries()) {
      count[name]!++;
      const counts = Object.values(count);
      expect(
        Math.max(...counts) - Math.min(...counts),
        `after ${at + 1} calls: ${served.join(' ')}`,
      ).toBeLessThanOrEqual(1);
    }

    // Only the CONCURRENT calls that ran took a token: each caller has RATE - CONCURRENT left, plus
    // what refilled since the test began.
    const refilled = Math.ceil(((Date.now() - started) * RATE) / 60_000);
    for (const name of CALLERS) {
      let ok = 0;
      let refusal: string | undefined;
      while (refusal === undefined && ok <= RATE) {
        const code = codeOf(await call(client[name]!));
        if (code === 'ok') ok++;
        else refusal = code;
      }
      expect(refusal, name).toBe('rate_limited');
      expect(ok, name).toBeGreaterThanOrEqual(RATE - CONCURRENT);
      expect(ok, name).toBeLessThanOrEqual(RATE - CONCURRENT + refilled);
    }
  });

  it('item 9: a call that waits longer than QUERYGATE_QUEUE_TIMEOUT_MS is refused as busy while the running call goes on', async () => {
    const RATE = 2;
    const { server, url } = await startServer({
      QUERYGATE_MAX_CONCURRENT: '4',
      QUERYGATE_RATE_LIMIT: String(RATE),
      QUERYGATE_QUEUE_TIMEOUT_MS: '300',
    });
    const a = await connect(url, 'a');
    const b = await connect(url, 'b');
    const warm = await connect(url, 'warm');
    expect(codeOf(await call(warm))).toBe('ok');

    await lock();
    let running = true;
    const first = call(a).finally(() => (running = false));
    await eventually('the first call to wait on the lock', async () => (await waitingOnLock()) === 1);
    // Bounded only to turn a hang into a failure: the statement timeout is two minutes.
    const queued = await Promise.race([
      call(b),
      new Promise<never>((_, fail) =>
        setTimeout(() => fail(new Error('the queued call was not refused within 20 s')), 20_000),
      ),
    ]);
    expect(codeOf(queued)).toBe('busy');
    expect(textOf(queued)).toMatch(/The server is busy\. Retry in 1 second\./);
    // The running call was not touched: it still waits on the lock, with no timeout.
    expect(running).toBe(true);
    expect(await waitingOnLock()).toBe(1);
    await eventually('the refusal to be audited', async () =>
      auditLines(server.stderr()).some(
        (line) => line.caller === 'b' && line.outcome === 'refused' && line.error_code === 'busy',
      ),
    );

    await unlock();
    expect(codeOf(await first)).toBe('ok');
    // The refusal cost b nothing: its whole rate is left.
    for (let i = 0; i < RATE; i++) expect(codeOf(await call(b)), `call ${i + 1}`).toBe('ok');
  });
});

/** The audit lines in a server's stderr, in order. */
function auditLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((line) => line.includes('"type":"audit"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
