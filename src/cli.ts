#!/usr/bin/env node
/** The `querygate` command: serve (stdio or HTTP), report, doctor, migrate, check-rollups, seed. */
import './boot/young-generation.js'; // first: before the modules' allocations grow the young generation
import './boot/node-compat.js'; // before pg is loaded
import { createServer as createNetServer } from 'node:net';
import { parseArgs } from 'node:util';
import { startApp, STOP_GRACE_MS, type App } from './app/index.js';
import { stdioCallerId } from './lib/caller-ids.js';
import { loadConfig, type Config } from './config.js';
import { defaultDataDir } from './db/embedded.js';
import { checkRollups, migrate, seed } from './commands/database-commands.js';
import { doctor } from './commands/doctor-command.js';
import { reportCommand } from './commands/report-command.js';
import { scaffoldMetric } from './scaffold/metric.js';
import { scaffoldPack } from './scaffold/pack.js';
import { scaffoldQuery } from './scaffold/query.js';
import { ConfigError } from './lib/errors.js';
import { yesterdayUtc } from './lib/date-range.js';
import { createTokenBuckets } from './lib/limits.js';
import { createLogger, type Logger } from './lib/logger.js';
import type { ConfigFile } from './config-file/index.js';
import type { Pack } from './pack.js';
import { packsToServe } from './packs.js';
import { createServer, VERSION } from './server.js';
import { serveStdio } from './transports/stdio.js';

const USAGE = `Usage:
  querygate [serve]                      MCP over stdio (what MCP client configs launch)
  querygate serve --http [--port 3000] [--host 127.0.0.1]
                                         MCP over Streamable HTTP at /mcp
  querygate serve ... --allow-unsafe-role
                                         serve even if the reader role fails the safety check
  querygate report <name> [--<argument> VALUE ...] [--format md|json|html|csv|pdf[,...]] [--out FILE]
                  [--stale-after 36h] [--data-scope DIMENSION=VALUE[,VALUE...]]
                                         run one of the served reports once (weekly, trend: querygate
                                         report --help lists them) as the reader role, for cron; each
                                         failure has its exit code (2 a refused argument, 3 a refused
                                         login, 4 no database, 5 stale data; report --help lists them)
  querygate doctor                       check that the reader role is safe, and EXPLAIN each tool over
                                         its widest arguments; exits 1 when unsafe or over a pack's ceiling
  querygate migrate                      apply the packs' migrations (ADMIN_DATABASE_URL, or the
                                         embedded database)
  querygate check-rollups                compare each declared rollup with its base rows, as migrate
                                         connects; exits 1 when one differs
  querygate seed [--pack NAME] [--count N] [--until YYYY-MM-DD] [--replace | --if-empty]
                                         load a pack's deterministic demo data (each pack has its default
                                         count, up to yesterday); refuses a pack whose tables hold data
                                         unless --replace (replace it) or --if-empty (do nothing)
  querygate new-pack <name> [--pack <dir>]
                                         write a pack that is served and tested as written (default dir
                                         examples/<name>): a view and its grants, its classification, one
                                         metric in its tool query_<name>, a seed for the tests, one test
  querygate new-query <name> [--pack <dir>]
                                         write a template (<dir>/queries/<name>.ts, default dir .) and
                                         its test (test/<name>.test.ts) to fill in
  querygate new-metric <name> [--pack <dir>] [--model <tool>]
                                         write a metric's declaration and measure (<dir>/metrics/<name>.ts)
                                         and its test (test/metric-<name>.test.ts) to fill in; --model
                                         names the metrics model (by its tool) of a pack that has several

The packs served are QUERYGATE_PACKS (default: sales). Without DATABASE_URL, serve starts the
embedded PostgreSQL in QUERYGATE_DATA_DIR (default ${defaultDataDir()}), migrating and
seeding it on first start.`;

async function main(argv: string[]): Promise<void> {
  // The report command reads options of its own, from the report it runs.
  if (argv[0] === 'report') {
    process.exitCode = await reportCommand(argv.slice(1));
    return;
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      http: { type: 'boolean', default: false },
      port: { type: 'string', default: '3000' },
      host: { type: 'string', default: '127.0.0.1' },
      pack: { type: 'string' },
      model: { type: 'string' },
      count: { type: 'string' },
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
  if (command === 'new-pack') {
    if (positionals.length !== 2) throw new ConfigError(`new-pack takes one pack name\n${USAGE}`);
    const dir = values.pack === undefined ? {} : { packDir: values.pack };
    process.stdout.write(`${scaffoldPack({ name: positionals[1]!, ...dir }).report}\n`);
    return;
  }
  if (command === 'new-query') {
    if (positionals.length !== 2) throw new ConfigError(`new-query takes one tool name\n${USAGE}`);
    process.stdout.write(`${scaffoldQuery({ name: positionals[1]!, packDir: values.pack ?? '.' }).report}\n`);
    return;
  }
  if (command === 'new-metric') {
    if (positionals.length !== 2) throw new ConfigError(`new-metric takes one metric name\n${USAGE}`);
    const model = values.model === undefined ? {} : { model: values.model };
    process.stdout.write(
      `${scaffoldMetric({ name: positionals[1]!, packDir: values.pack ?? '.', ...model }).report}\n`,
    );
    return;
  }
  if (positionals.length > 1) throw new ConfigError(`unexpected argument ${positionals[1]}\n${USAGE}`);
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  if (!['serve', 'doctor', 'migrate', 'check-rollups', 'seed'].includes(command))
    throw new ConfigError(`unknown command ${command}\n${USAGE}`);
  const { packs, paths, file } = await packsToServe(config);
  switch (command) {
    case 'serve':
      return serve(config, packs, paths, file, logger, {
        http: values.http,
        port: parsePort(values.port),
        host: values.host,
        allowUnsafeRole: values['allow-unsafe-role'],
      });
    case 'doctor':
      return doctor(config, packs, logger);
    case 'migrate':
      return migrate(config, packs, logger);
    case 'check-rollups':
      return checkRollups(config, packs, logger);
    case 'seed':
      return seed(config, packs, logger, {
        pack: values.pack,
        count: values.count === undefined ? undefined : parseCount(values.count),
        until: values.until ?? yesterdayUtc(),
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
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new ConfigError(`--count: ${value} is not a positive whole number`);
  return Number(value);
}

async function serve(
  config: Config,
  packs: readonly Pack[],
  packPaths: ReadonlyMap<string, string>,
  configFile: ConfigFile | undefined,
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
  if (!options.http && (configFile?.schedules.length ?? 0) > 0) {
    logger.info('the configuration file schedules reports: serve --http runs them; this server over stdio does not');
  }
  let app: App;
  try {
    app = await startApp(config, logger, {
      packs,
      packPaths,
      ...(configFile ? { configFile } : {}),
      allowUnsafeRole: options.allowUnsafeRole,
      metrics: options.http,
      // A server over stdio lives as long as one client's session: the HTTP replicas run the schedules.
      schedules: options.http,
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
      // Loaded only here: a server over stdio does not hold the HTTP edge, OAuth (jose) or prom-client.
      const [
        { createAuthenticator, createFailureThrottle, createOAuthResourceServer, loadStaticTokens },
        { serveHttp },
      ] = await Promise.all([import('./auth/index.js'), import('./transports/http/index.js')]);
      const staticTokens = loadStaticTokens(
        {
          envToken: config.httpToken,
          file: config.httpTokensFile,
          grants: app.grants,
          dimensions: app.deps.registry.dataScopeDimensions,
          logger,
        },
        app.deps.registry.tools.map((t) => t.name),
      );
      const oauth =
        app.oauth &&
        createOAuthResourceServer(app.oauth, {
          grants: app.grants,
          subjectKey: app.subjectKey,
          dimensions: app.deps.registry.dataScopeDimensions,
          logger,
        });
      const auth = createAuthenticator({
        ...(staticTokens ? { staticTokens } : {}),
        ...(oauth ? { oauth: { settings: app.oauth!, server: oauth } } : {}),
        grants: app.grants,
      });
      await oauth?.warm();
      const http = await serveHttp(
        app.deps,
        {
          host: options.host,
          port: options.port,
          allowedHosts: config.allowedHosts,
          allowedOrigins: config.allowedOrigins,
          auth,
          failedAuth: createFailureThrottle({
            failuresPerMinute: config.authFailuresPerMinute,
            maxAddresses: 10_000,
          }),
          trustProxyHops: config.trustProxyHops,
          onAuthFailure: (event) => {
            app.metrics?.authFailure(event.reason);
            app.metrics?.refusal(
              event.status === 429
                ? 'http_auth_throttled'
                : event.status === 403
                  ? 'http_forbidden'
                  : event.status === 503
                    ? 'http_auth_unavailable'
                    : 'http_unauthorized',
            );
            // Every client's first request has no token: that is discovery, not a failure worth a line.
            // A throttled address gets one line when the throttle starts, not one per refused request.
            if (event.reason !== 'missing_token' && !event.repeated) {
              app.deps.audit.writeAuthFailure?.({ reason: event.reason, status: event.status, source: event.source });
            }
          },
          // Room for a client's initialize and list requests around its calls.
          requestBuckets: createTokenBuckets(config.rateLimitPerMinute * 5),
          maxBodyBytes: 1 << 20,
          isReady: () => app.probeReady(),
          jobStore: () => app.probeJobStore(),
          replicaLag: () => app.probeReplicaLag(),
          metrics: app.metrics,
          sessionKey: app.sessionKey,
        },
        logger,
      );
      logger.info(`listening on ${http.url}`, {
        url: http.url,
        tokens: auth?.staticTokens ?? 0,
        ...(app.oauth ? { oauth: app.oauth.authorizationServers.map((as) => as.issuer) } : {}),
      });
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
      // Each process is its own caller (or the one the operator names): its own rate, jobs and job bound.
      const served = serveStdio(createServer(app.deps, { id: stdioCallerId(config.stdioCaller) }), {
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
