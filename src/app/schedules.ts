/**
 * The scheduler of a serving replica, from the configuration file's `schedules`: checked against the
 * served reports, the job store and the environment before the server serves, so that a schedule that
 * could never run or deliver stops the server at start-up with the field to fix.
 */
import type { Config } from '../config.js';
import type { ConfigFile } from '../config-file/index.js';
import type { JobService } from '../jobs/service.js';
import type { JobStore } from '../jobs/store.js';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { alertRuleProblems } from '../output/alerts.js';
import { formatsOf } from '../output/files.js';
import { findChromium, printPdf } from '../output/pdf.js';
import type { AnyReport } from '../reports.js';
import { checkSchedules, startScheduler, type Scheduler } from '../schedules/scheduler.js';
import { scheduleStoreOf } from '../schedules/store.js';

/** The scheduler, or undefined when the file declares no schedule. */
export function schedulerOf(
  config: Config,
  file: ConfigFile | undefined,
  reports: readonly AnyReport[],
  parts: {
    readonly jobStore: JobStore | undefined;
    readonly jobs: JobService | undefined;
    readonly timeZone: string;
    /** The data-scope dimensions the served packs declare: a fan-out may scope on these only. */
    readonly dimensions: ReadonlySet<string>;
  },
  logger: Logger,
): Scheduler | undefined {
  const schedules = file?.schedules ?? [];
  if (schedules.length === 0) return undefined;
  if (parts.jobStore === undefined || parts.jobs === undefined) {
    throw new ConfigError(
      'QUERYGATE_CONFIG schedules: scheduled reports run in the job store; set QUERYGATE_JOBS_URL, or QUERYGATE_JOBS_PASSWORD beside DATABASE_URL',
    );
  }
  const byName = new Map(reports.map((r) => [r.name, r]));
  const problems = checkSchedules(schedules, byName, formatsOf);
  for (const name of new Set(schedules.map((s) => s.report))) {
    const report = byName.get(name);
    const rules = file?.reports[name]?.alerts ?? [];
    if (report) problems.push(...alertRuleProblems(report.output, rules, `reports.${name}.alerts`));
  }
  const env = process.env;
  const smtpUrl = file?.smtp === undefined ? undefined : env[file.smtp.urlEnv];
  if (file?.smtp !== undefined) {
    if (smtpUrl === undefined || smtpUrl === '') {
      problems.push(`smtp.url_env: ${file.smtp.urlEnv} is not set; set it to smtp://user:password@host:port`);
    } else if (!/^smtps?:\/\/[^/]+/.test(smtpUrl)) {
      problems.push(`smtp.url_env: ${file.smtp.urlEnv} is not an smtp:// or smtps:// URL`);
    }
  }
  for (const schedule of schedules) {
    for (const run of schedule.runs) {
      for (const dimension of Object.keys(run.dataScope ?? {})) {
        if (!parts.dimensions.has(dimension)) {
          problems.push(
            `schedules.${schedule.name}: data_scope: "${dimension}" is not a data-scope dimension of the served packs (${parts.dimensions.size === 0 ? 'they declare none' : [...parts.dimensions].join(', ')})`,
          );
        }
      }
    }
    schedule.runs.forEach((run) =>
      run.destinations.forEach((d) => {
        if (d.kind === 'webhook' && d.secretEnv !== undefined && !env[d.secretEnv]) {
          problems.push(`schedules.${schedule.name}: ${d.name}.secret_env: ${d.secretEnv} is not set`);
        }
      }),
    );
  }
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `QUERYGATE_CONFIG ${p}`).join('\n'));
  const printing = schedules.some((s) => s.formats.includes('pdf'));
  // Found now, or refused now with the install line: not at the first run, days later.
  const chromium = printing ? findChromium(config.chromium) : undefined;
  const jobs = parts.jobs;
  const scheduler = startScheduler({
    store: scheduleStoreOf(parts.jobStore),
    schedules,
    reports: byName,
    timeZone: parts.timeZone,
    take: (id) => jobs.take(id),
    jobTtlSeconds: config.jobTtlSeconds,
    senders: {
      ...(file?.smtp === undefined || smtpUrl === undefined ? {} : { smtp: { url: smtpUrl, from: file.smtp.from } }),
      env,
    },
    print: chromium === undefined ? undefined : (html) => printPdf(chromium, html),
    staleAfterMs: (report) => file?.reports[report]?.staleAfterMs,
    alertRules: (report) => file?.reports[report]?.alerts ?? [],
    historyKeepMs: file?.historyKeepMs,
    logger,
  });
  logger.info('scheduled reports', { schedules: schedules.map((s) => s.name) });
  return scheduler;
}
