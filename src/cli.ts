#!/usr/bin/env node
/** The `querygate` command: serve (stdio or HTTP), doctor, migrate, seed. */
import './node-compat.js'; // first: before pg is loaded
import { createServer as createNetServer } from 'node:net';
import { parseArgs } from 'node:util';
import { templates } from '../queries/index.js';
import { openDatabase, startApp, STOP_GRACE_MS, type App } from './app.js';
import { loadAuthenticator } from './auth.js';
import { loadConfig, type Config } from './config.js';
import { connectReader, redactUrl } from './db/connect.js';
import { checkReaderSafety, explainTemplates, formatReport } from './db/doctor.js';
import { defaultDataDir, startEmbedded } from './db/embedded.js';
import { prepareDatabase } from './db/prepare.js';
import { DEFAULT_SEED_ORDERS, defaultSeedUntil, seedDatabase, todayUtc } from './db/seed.js';
import { ConfigError } from './errors.js';
import { createTokenBuckets } from './limits.js';
import { createLogger, type Logger } from './logger.js';
import { createServer, VERSION } from './server.js';
import { serveHttp } from './transports/http.js';
import { serveStdio } from './transports/stdio.js';

const USAGE = `Usage:
  querygate [serve]                      MCP over stdio (what MCP client configs launch)
  querygate serve --http [--port 3000] [--host 127.0.0.1]
                                         MCP over Streamable HTTP at /mcp
  querygate serve ... --allow-unsafe-role
                                         serve even if the reader role fails the safety check
  querygate doctor                       check that the reader role is safe, and EXPLAIN each tool;
                                         exits 1 when unsafe
  querygate migrate                      apply migrations (ADMIN_DATABASE_URL, or the embedded database)
  querygate seed [--orders N] [--until YYYY-MM-DD] [--replace | --if-empty]
                                         load deterministic demo data (default ${DEFAULT_SEED_ORDERS} orders
                                         up to yesterday); refuses a database that holds orders unless
                                         --replace (replace them) or --if-empty (do nothing)

Without DATABASE_URL, serve starts the embedded PostgreSQL in QUERYGATE_DATA_DIR
(default ${defaultDataDir()}), migrating and seeding it on first start.`;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      http: { type: 'boolean', default: false },
      port: { type: 'string', default: '3000' },
      host: { type: 'string', default: '127.0.0.1' },
      orders: { type: 'string', default: String(DEFAULT_SEED_ORDERS) },
      until: { type: 'string' },
      replace: { type: 'boolean', default: false },
      'if-empty': { type: 'boolean', default: false },
      'allow-unsafe-role': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      version: { type: 'boolean', short: 'v', default: false },
    },
  });
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  const command = positionals[0] ?? 'serve';
  if (values.help || command === 'help') {
    process.stderr.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length > 1) throw new ConfigError(`unexpected argument ${positionals[1]}\n${USAGE}`);
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  switch (command) {
    case 'serve':
      return serve(config, logger, {
        http: values.http,
        port: parsePort(values.port),
        host: values.host,
        allowUnsafeRole: values['allow-unsafe-role'],
      });
    case 'doctor':
      return doctor(config, logger);
    case 'migrate':
      return migrate(config, logger);
    case 'seed':
      return seed(config, logger, {
        orders: parseCount(values.orders),
        until: values.until ?? defaultSeedUntil(),
        replace: values.replace,
        ifEmpty: values['if-empty'],
      });
    default:
      throw new ConfigError(`unknown command ${command}\n${USAGE}`);
  }
}

async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new ConfigError(`port ${port} on ${host} is in use; pick another with --port`)
          : err,
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value) || port > 65535) throw new ConfigError(`--port: ${value} is not a port number`);
  return port;
}

function parseCount(value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new ConfigError(`--orders: ${value} is not a positive whole number`);
  return Number(value);
}

async function serve(
  config: Config,
  logger: Logger,
  options: { http: boolean; port: number; host: string; allowUnsafeRole: boolean },
): Promise<void> {
  let fatal: ((error: Error) => void) | undefined;
  const failed = new Promise<never>((_, reject) => (fatal = reject));
  failed.catch(() => undefined);
  // Taken first, so that a signal during start-up (the embedded database starting, migrations)
  // stops cleanly too. Once only: a second signal ends the process at once, as a way out.
  const stopping = new AbortController();
  const stop = (): void => stopping.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const stopSignal = new Promise<void>((resolve) => stopping.signal.addEventListener('abort', () => resolve()));
  // Fail on a taken port before spending seconds on the database.
  if (options.http) await assertPortFree(options.host, options.port);
  let app: App;
  try {
    app = await startApp(config, logger, {
      allowUnsafeRole: options.allowUnsafeRole,
      onFatal: (e) => fatal?.(e),
      signal: stopping.signal,
    });
  } catch (err) {
    if (!stopping.signal.aborted) throw err;
    logger.info('stopped during start-up');
    return;
  }

  try {
    if (options.http) {
      const auth = loadAuthenticator(
        { envToken: config.httpToken, file: config.httpTokensFile, toolsets: app.toolsets },
        app.deps.registry.tools.map((t) => t.name),
      );
      const http = await serveHttp(
        app.deps,
        {
          host: options.host,
          port: options.port,
          allowedHosts: config.allowedHosts,
          allowedOrigins: config.allowedOrigins,
          auth,
          // Room for a client's initialize and list requests around its calls.
          requestBuckets: createTokenBuckets(config.rateLimitPerMinute * 5),
          maxBodyBytes: 1 << 20,
          isReady: () => app.probeReady(),
          sessionKey: app.sessionKey,
        },
        logger,
      );
      logger.info(`listening on ${http.url}`, { url: http.url, tokens: auth?.count ?? 0 });
      try {
        await Promise.race([stopSignal, failed]);
      } finally {
        logger.info('stopping: no new requests; waiting for calls in flight');
        const closed = http.close();
        await app.drain();
        // The calls are over; their answers get a moment to go out before the last connections are cut.
        await Promise.race([closed, delay(STOP_GRACE_MS)]);
        http.server.closeAllConnections();
      }
    } else {
      if (process.stdin.isTTY) {
        logger.warn('querygate speaks MCP over stdio: launch it from an MCP client, or run `querygate serve --http`');
      }
      const served = serveStdio(createServer(app.deps, { id: 'stdio' }), {
        maxInFlight: app.deps.limits.callerCapacity,
        stopping: stopping.signal,
      });
      await Promise.race([served, stopSignal, failed]);
      // From here on, new requests are refused with an error instead of being run.
      stopping.abort();
      logger.info('stopping: the client closed the session or a signal came');
    }
  } finally {
    await app.stop();
  }
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

async function doctor(config: Config, logger: Logger): Promise<void> {
  const database = await openDatabase(config, logger);
  const reader = connectReader(database.readerUrl, config, logger);
  try {
    const checks = await checkReaderSafety(database.readerUrl);
    const lastDay = todayUtc();
    const firstDay = new Date(Date.parse(`${lastDay}T00:00:00Z`) - 89 * 86_400_000).toISOString().slice(0, 10);
    const plans = await explainTemplates(reader, templates, { timeZone: config.timeZone }, (template) => ({
      start_date: firstDay,
      end_date: lastDay,
      ...(template.name === 'query_sales' ? { group_by: 'category' } : {}),
      ...(template.name === 'query_top_products' || template.name === 'query_recent_orders' ? { limit: 100 } : {}),
    }));
    process.stdout.write(`${formatReport(redactUrl(database.readerUrl), checks, plans)}\n`);
    if (checks.some((c) => !c.ok) || plans.some((p) => p.totalCost === undefined)) process.exitCode = 1;
  } finally {
    await reader.close();
    await database.stop();
  }
}

/** Runs an admin task against ADMIN_DATABASE_URL, or against the embedded database when it is unset. */
async function withAdmin(config: Config, logger: Logger, task: (adminUrl: string) => Promise<void>): Promise<void> {
  if (config.adminDatabaseUrl) return task(config.adminDatabaseUrl);
  const embedded = await startEmbedded(
    { dataDir: config.dataDir ?? defaultDataDir(), readerRole: config.readerRole },
    logger,
  );
  try {
    await task(embedded.adminUrl);
  } finally {
    await embedded.stop();
  }
}

async function migrate(config: Config, logger: Logger): Promise<void> {
  await withAdmin(config, logger, (adminUrl) =>
    prepareDatabase(adminUrl, { readerRole: config.readerRole, readerPassword: config.readerPassword }, logger),
  );
}

async function seed(
  config: Config,
  logger: Logger,
  options: { orders: number; until: string; replace: boolean; ifEmpty: boolean },
): Promise<void> {
  if (options.replace && options.ifEmpty) throw new ConfigError('--replace and --if-empty exclude each other');
  const seedOptions = { orders: options.orders, until: options.until };
  await withAdmin(config, logger, async (adminUrl) => {
    await prepareDatabase(
      adminUrl,
      {
        readerRole: config.readerRole,
        readerPassword: config.readerPassword,
        ...(options.ifEmpty ? { seedIfEmpty: seedOptions } : {}),
      },
      logger,
    );
    if (!options.ifEmpty) await seedDatabase(adminUrl, { ...seedOptions, replace: options.replace }, logger);
  });
}

main(process.argv.slice(2)).then(
  () => process.exit(), // keeps an exit code a command set (doctor: 1 when unsafe)
  (err: unknown) => {
    // Configuration mistakes are one clear line; anything else is a bug, logged with its stack on stderr.
    if (
      err instanceof ConfigError ||
      (err instanceof TypeError && String((err as { code?: string }).code).startsWith('ERR_PARSE_ARGS'))
    ) {
      process.stderr.write(`querygate: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(
      `querygate: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
