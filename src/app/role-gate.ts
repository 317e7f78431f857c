import type { ReaderDatabase } from '../db/connect.js';
import {
  checkJobRoleSafety,
  checkReaderSafety,
  formatReport,
  JOB_ROLE_CHECK,
  type ReaderScope,
  type SafetyCheck,
} from '../db/doctor/index.js';
import { ConfigError, classifyDatabaseError, PermissionError, type InfraError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { compareZoneRules } from './zone-rules-report.js';

const MAX_BACKOFF_MS = 30_000;

export interface RoleGateOptions {
  readonly readerUrl: string;
  /** The redacted reader URL, as the logs and the report name it. */
  readonly target: string;
  readonly jobsUrl: string | undefined;
  readonly scope: ReaderScope;
  readonly reader: ReaderDatabase;
  readonly timeZone: string;
  readonly allowUnsafeRole: boolean;
  /** Called when the database, reachable at last, turns out to be unsafe: the server must not go on. */
  readonly onFatal: (error: Error) => void;
}

/** The server is ready once its roles are proven safe (or the operator chose to serve an unsafe one). */
export interface RoleGate {
  readonly ready: () => boolean;
  /** Why the last check could not run (the database unreachable, or refusing the login), while not ready. */
  readonly unready: () => InfraError | undefined;
  /** The first check; when the database does not answer, it is retried with backoff, after this resolves. */
  start(): Promise<void>;
  /** No retry after this. */
  stop(): void;
}

/**
 * The start-up safety check of the reader (and of the job role), retried until the database
 * answers: an unsafe role refuses to serve, unless --allow-unsafe-role says otherwise.
 */
export function createRoleGate(options: RoleGateOptions, logger: Logger): RoleGate {
  const { readerUrl, target, jobsUrl, scope, reader } = options;
  let ready = false;
  let failure: InfraError | undefined;
  let retry: NodeJS.Timeout | undefined;
  const judge = (checks: SafetyCheck[]): void => {
    // A pack's declaration the database cannot serve, on a role otherwise safe: the author's mistake,
    // refused in one line (an unsafe role is refused first, with every finding in its report).
    const mistake = checks.find((c) => !c.ok && c.declaration);
    const roleFails = checks.some((c) => !c.ok && !c.outsideDatabase && !c.declaration);
    if (mistake && !roleFails && !options.allowUnsafeRole) {
      const message = `${mistake.detail}; ${mistake.fix}`;
      throw mistake.permission ? new PermissionError(message) : new ConfigError(message);
    }
    // A warning with a fix is worth acting on; one without (what any direct session may SET) is a
    // property of PostgreSQL, said once at info rather than warned about on every start.
    for (const check of checks.filter((c) => c.ok && c.warning)) {
      const log = check.fix ? logger.warn : logger.info;
      log.call(logger, `reader role: ${check.name}`, { detail: check.detail, fix: check.fix });
    }
    for (const check of checks.filter((c) => !c.ok && c.outsideDatabase)) {
      logger.error(`reader role, outside this database: ${check.name} fails; serving, but fix it`, {
        detail: check.detail,
        fix: check.fix,
      });
    }
    if (checks.every((c) => c.ok || c.outsideDatabase)) {
      ready = true;
      logger.info('reader role checked: safe', { database: target });
      return;
    }
    const report = formatReport(target, checks, []);
    const unsafe = checks.some((c) => !c.ok && !c.outsideDatabase && !c.name.startsWith(JOB_ROLE_CHECK))
      ? 'reader role'
      : 'job role';
    if (!options.allowUnsafeRole) {
      throw new ConfigError(`the ${unsafe} is unsafe; refusing to serve (override: --allow-unsafe-role)\n${report}`);
    }
    logger.error(`UNSAFE ${unsafe.toUpperCase()}: serving anyway because --allow-unsafe-role was given`, {
      failed: checks.filter((c) => !c.ok && !c.outsideDatabase).map((c) => c.name),
    });
    process.stderr.write(`${report}\n`);
    ready = true;
  };
  const attempt = async (delayMs: number): Promise<void> => {
    let checks: SafetyCheck[];
    try {
      checks = [
        ...(await checkReaderSafety(readerUrl, scope)),
        ...(jobsUrl === undefined ? [] : await checkJobRoleSafety(jobsUrl, scope)),
      ];
      // The checks' plain connection is not the pool's: a pooler may refuse the pool's startup parameters.
      await reader.execute({ sql: 'select 1', parameters: [] });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      failure = classifyDatabaseError(err);
      logger.warn('database unavailable; calls fail until it answers', {
        code: failure.code,
        reason,
        retry_in_ms: delayMs,
      });
      retry = setTimeout(() => {
        attempt(Math.min(delayMs * 2, MAX_BACKOFF_MS)).catch((fatal: Error) => options.onFatal(fatal));
      }, delayMs);
      return;
    }
    failure = undefined;
    await compareZoneRules(reader, options.timeZone, logger);
    judge(checks);
  };
  return {
    ready: () => ready,
    unready: () => (ready ? undefined : failure),
    start: () => attempt(1000),
    stop: () => clearTimeout(retry),
  };
}
