#!/usr/bin/env node
/** The `querygate` command: serve (stdio or HTTP), migrate, seed. */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { templates } from '../queries/index.js';
import { loadConfig, type Config } from './config.js';
import { connectReader, redactUrl } from './db/connect.js';
import { defaultDataDir, startEmbedded, type EmbeddedDatabase } from './db/embedded.js';
import { prepareDatabase } from './db/prepare.js';
import { DEFAULT_SEED_ORDERS, seedDatabase, todayUtc } from './db/seed.js';
import { ConfigError } from './errors.js';
import { createTokenizer } from './lib/masking.js';
import { createLogger, type Logger } from './logger.js';
import { createRegistry } from './registry.js';
import { createServer } from './server.js';
import { serveHttp } from './transports/http.js';
import { serveStdio } from './transports/stdio.js';

const USAGE = `Usage:
  querygate [serve]                      MCP over stdio (what MCP client configs launch)
  querygate serve --http [--port 3000] [--host 127.0.0.1]
                                         MCP over Streamable HTTP at /mcp
  querygate migrate                      apply migrations (ADMIN_DATABASE_URL, or the embedded database)
  querygate seed [--orders N] [--until YYYY-MM-DD] [--replace | --if-empty]
                                         load deterministic demo data (default ${DEFAULT_SEED_ORDERS} orders
                                         up to today); refuses a database that holds orders unless
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
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
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
      return serve(config, logger, { http: values.http, port: parsePort(values.port), host: values.host });
    case 'migrate':
      return migrate(config, logger);
    case 'seed':
      return seed(config, logger, {
        orders: parseCount(values.orders),
        until: values.until ?? todayUtc(),
        replace: values.replace,
        ifEmpty: values['if-empty'],
      });
    default:
      throw new ConfigError(`unknown command ${command}\n${USAGE}`);
  }
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
  options: { http: boolean; port: number; host: string },
): Promise<void> {
  const registry = createRegistry(templates);
  let embedded: EmbeddedDatabase | undefined;
  let readerUrl = config.databaseUrl;
  let tokenKey = config.tokenKey;
  if (readerUrl === undefined) {
    embedded = await startEmbedded(
      {
        dataDir: config.dataDir ?? defaultDataDir(),
        readerRole: config.readerRole,
        seedIfEmpty: { orders: DEFAULT_SEED_ORDERS, until: todayUtc() },
      },
      logger,
    );
    readerUrl = embedded.readerUrl;
    tokenKey ??= embedded.tokenKey;
  }
  if (tokenKey === undefined) {
    logger.warn('QUERYGATE_TOKEN_KEY is not set: order and customer references change on every restart');
    tokenKey = randomBytes(32).toString('base64url');
  }
  const reader = connectReader(readerUrl, config, logger);
  logger.info('serving', { database: redactUrl(readerUrl), time_zone: config.timeZone, tools: registry.tools.length });
  const deps = { registry, db: reader.db, tokenize: createTokenizer(tokenKey), logger, timeZone: config.timeZone };

  let stopping = false;
  const shutdown = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await reader.close().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
  };

  if (options.http) {
    const http = await serveHttp(
      () => createServer(deps),
      {
        host: options.host,
        port: options.port,
        allowedHosts: listEnv('QUERYGATE_ALLOWED_HOSTS'),
        allowedOrigins: listEnv('QUERYGATE_ALLOWED_ORIGINS'),
        bearerToken: process.env.QUERYGATE_HTTP_TOKEN || undefined,
        maxBodyBytes: 1 << 20,
      },
      logger,
    );
    logger.info(`listening on ${http.url}`, { url: http.url });
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    logger.info('stopping');
    await http.close();
  } else {
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await Promise.race([serveStdio(createServer(deps)), stopped]);
  }
  await shutdown();
}

function listEnv(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
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
  () => process.exit(0),
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
