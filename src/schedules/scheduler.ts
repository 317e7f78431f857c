/**
 * Reports the server runs by itself. Every replica ticks (every two seconds) through the same steps,
 * each safe to run on all of them at once:
 * 1. **Plan**: each schedule's due times since its newest run (cron in the reporting zone) are claimed
 *    in the job store, one row per run and scope, with the job that runs its report. A run due while
 *    no replica was up (more than MISSED_AFTER_MS ago) is run late or let go, as the schedule says.
 * 2. **Run**: the job service runs the report as any job, with heartbeats and takeover.
 * 3. **Settle**: a run whose job ended keeps its edition in the history (with what it restates) and
 *    queues one delivery per destination, in one transaction.
 * 4. **Deliver**: each due delivery is claimed with FOR UPDATE SKIP LOCKED, sent, and marked delivered
 *    in the transaction that claimed it; a failure is retried with backoff, MAX_DELIVERY_ATTEMPTS times.
 */
import { Cron } from 'croner';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ScheduleSettings } from '../config-file/index.js';
import type { Logger } from '../lib/logger.js';
import { isoInZone } from '../lib/local-day.js';
import { localToday } from '../lib/periods.js';
import { deleteOldEditions, historyOf, keepEditionIn, type EditionRow } from '../history/editions.js';
import { scopeKey } from '../lib/data-scope.js';
import { reportFiles, rendered, type ReportFormat } from '../output/files.js';
import { staleness } from '../output/staleness.js';
import { firedAlerts, type AlertRule } from '../output/alerts.js';
import type { AnyReport, ReportContext } from '../reports.js';
import { DeliveryError, send, type Parcel, type Senders } from './destinations.js';
import {
  claimDelivery,
  claimDue,
  endDelivery,
  lockRunToSettle,
  queueDeliveries,
  runsToSettle,
  scheduleMark,
  setRunState,
  type DueEntry,
  type RunRow,
  type ScheduleStore,
  type ScheduleTables,
} from './store.js';

/** A due time older than this when first seen was missed (no replica was running): `missed` decides. */
export const MISSED_AFTER_MS = 10 * 60_000;
/** Attempts of one delivery before it is failed for good. */
export const MAX_DELIVERY_ATTEMPTS = 5;
const FIRST_RETRY_SECONDS = 2;
const LONGEST_RETRY_SECONDS = 300;
/** Due times caught up at most per schedule and tick. */
const MOST_DUE = 50;

export interface SchedulerOptions {
  readonly store: ScheduleStore;
  readonly schedules: readonly ScheduleSettings[];
  /** The served reports by tool name. */
  readonly reports: ReadonlyMap<string, AnyReport>;
  readonly timeZone: string;
  /** Claims a run's job for this replica to run now (the job service's take). */
  readonly take: (jobId: string) => Promise<void>;
  readonly jobTtlSeconds: number;
  readonly senders: Senders;
  /** Prints a page as PDF; given when a schedule asks for PDF. */
  readonly print: ((html: string) => Promise<Uint8Array>) | undefined;
  /** A report's stale_after bound and alert rules, from the configuration file. */
  readonly staleAfterMs: (report: string) => number | undefined;
  readonly alertRules: (report: string) => readonly AlertRule[];
  readonly historyKeepMs: number | undefined;
  readonly logger: Logger;
  readonly tickMs?: number;
}

export interface Scheduler {
  /** One pass of the four steps (the timer's; the tests call it too). */
  tick(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Checks each schedule against the report it names, before the server serves: its arguments as the
 * report's input schema reads them, and its formats as the report has them. Gives each problem,
 * naming its field.
 */
export function checkSchedules(
  schedules: readonly ScheduleSettings[],
  reports: ReadonlyMap<string, AnyReport>,
  formatsOf: (report: AnyReport) => readonly string[],
): string[] {
  const problems: string[] = [];
  for (const schedule of schedules) {
    const report = reports.get(schedule.report);
    if (!report) continue; // the configuration file's own check names it
    const parsed = report.input.safeParse(schedule.arguments);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        problems.push(
          `schedules.${schedule.name}.arguments${issue.path.map((p) => `.${String(p)}`).join('')}: ${issue.message}`,
        );
      }
    }
    const missing = schedule.formats.filter((f) => !formatsOf(report).includes(f));
    if (missing.length > 0) {
      problems.push(
        `schedules.${schedule.name}.formats: ${schedule.report} has no ${missing.join(', ')} form; it has ${formatsOf(report).join(', ')}`,
      );
    }
  }
  return problems;
}

/** The due times of a cron expression after `afterMs` and at most `nowMs`, oldest first. */
export function dueTimes(cron: string, timeZone: string, afterMs: number, nowMs: number, most = MOST_DUE): Date[] {
  const pattern = new Cron(cron, { timezone: timeZone, paused: true });
  const out: Date[] = [];
  let next = pattern.nextRun(new Date(afterMs));
  while (next !== null && next.getTime() <= nowMs && out.length < most) {
    out.push(next);
    next = pattern.nextRun(next);
  }
  return out;
}

/** The next due time of a cron expression after `nowMs`. */
export function nextDue(cron: string, timeZone: string, nowMs: number): Date | null {
  return new Cron(cron, { timezone: timeZone, paused: true }).nextRun(new Date(nowMs));
}

const safeName = (text: string): string => text.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-|-$/g, '');

export function startScheduler(options: SchedulerOptions): Scheduler {
  const { store, schedules, reports, logger } = options;
  let closed = false;
  let ticking: Promise<void> | undefined;
  /** Files made for an edition, by edition and formats: a retried delivery does not print again. */
  const made = new Map<string, Parcel['files']>();

  const plan = async (schedule: ScheduleSettings, nowMs: number): Promise<void> => {
    const report = reports.get(schedule.report)!;
    const { since, lastDue } = await scheduleMark(store, schedule.name);
    const after = Math.max(since.getTime(), lastDue?.getTime() ?? 0);
    for (const dueAt of dueTimes(schedule.cron, options.timeZone, after, nowMs)) {
      const late = nowMs - dueAt.getTime() > MISSED_AFTER_MS;
      // A relative argument (last week) is read on the day the run was due, however late it runs.
      const ctx: ReportContext = {
        timeZone: options.timeZone,
        nowMs: dueAt.getTime(),
        today: localToday(options.timeZone, dueAt.getTime()),
      };
      const entries = schedule.runs.map((run): DueEntry => {
        const due = { schedule: schedule.name, dueAt, scopeKey: scopeKey(run.dataScope) };
        if (late && schedule.missed === 'skip') {
          return { unrun: due, state: 'skipped', error: 'missed: no replica was running when it was due' };
        }
        try {
          const parsed = report.input.parse(schedule.arguments);
          const args = (report.resolve ? report.resolve(parsed, ctx) : parsed) as Record<string, unknown>;
          return {
            run: { ...due, dataScope: run.dataScope, tool: schedule.report, args, ttlSeconds: options.jobTtlSeconds },
          };
        } catch (err) {
          const message = err instanceof Error ? err.message.split('\n')[0]! : String(err);
          logger.error('scheduled report refused its arguments', { alert: true, schedule: schedule.name, message });
          return { unrun: due, state: 'failed', error: message };
        }
      });
      // Empty when another replica claimed them first.
      for (const jobId of await claimDue(store, entries)) {
        logger.info('scheduled report due', {
          schedule: schedule.name,
          due_at: dueAt.toISOString(),
          late,
          job_id: jobId,
        });
        await options.take(jobId);
      }
    }
  };

  const settle = async (run: RunRow): Promise<void> => {
    const schedule = schedules.find((s) => s.name === run.schedule);
    const entry = schedule?.runs.find((r) => scopeKey(r.dataScope) === run.scope_key);
    await store.transaction().execute(async (tx) => {
      const ended = await lockRunToSettle(tx, run);
      if (!ended) return;
      const result = ended.result as CallToolResult | null;
      if (ended.state !== 'completed' || !result?.structuredContent || !schedule || !entry) {
        const why =
          ended.error?.message ??
          (!schedule || !entry ? 'the schedule is no longer in the configuration file' : 'the report did not finish');
        await setRunState(tx, run, { state: 'failed', error: why.split('\n')[0]! });
        logger.error('scheduled report failed', {
          alert: true,
          schedule: run.schedule,
          due_at: run.due_at.toISOString(),
          message: why,
        });
        return;
      }
      let answer = result.structuredContent;
      const bound = options.staleAfterMs(schedule.report);
      const stale = bound === undefined ? undefined : staleness(answer, bound, Date.now());
      if (stale !== undefined) {
        answer = { ...answer, stale_feed: stale };
        logger.warn('scheduled report is stale', { alert: true, schedule: run.schedule, message: stale });
      }
      const fired = firedAlerts(answer, options.alertRules(schedule.report));
      if (fired.length > 0) {
        answer = { ...answer, alerts: fired };
        logger.warn('scheduled report alert', {
          alert: true,
          schedule: run.schedule,
          due_at: run.due_at.toISOString(),
          alerts: fired.map((f) => f.text),
        });
      }
      const { row } = await keepEditionIn(historyOf<ScheduleTables>(tx), {
        report: schedule.report,
        args: ended.args ?? {},
        dataScope: ended.dataScope ?? undefined,
        answer,
        source: `schedule:${schedule.name}`,
      });
      // `send: on_alert` keeps the edition of a quiet week, and sends nothing.
      const destinations = schedule.send === 'always' || fired.length > 0 ? entry.destinations.map((d) => d.name) : [];
      await queueDeliveries(tx, run, destinations);
      await setRunState(tx, run, { state: destinations.length === 0 ? 'done' : 'delivering', editionId: row.id });
    });
  };

  const filesOf = async (
    schedule: ScheduleSettings,
    report: AnyReport,
    edition: EditionRow,
    dueAt: Date,
  ): Promise<Parcel['files']> => {
    const cacheKey = `${edition.id}:${schedule.formats.join(',')}`;
    const cached = made.get(cacheKey);
    if (cached) return cached;
    const scope = edition.data_scope === null ? '' : `-${safeName(Object.values(edition.data_scope).flat().join('-'))}`;
    // The due time on the zone's wall clock: each run of a schedule has files of its own (weekly-sales-2026-11-30-0800).
    const due = isoInZone(dueAt.getTime(), options.timeZone).slice(0, 16).replace('T', '-').replace(':', '');
    const stem = `${schedule.name}-${due}${scope}`;
    const formats = [...schedule.formats] as ReportFormat[];
    const files = await reportFiles(report, formats, stem, edition.answer, options.print);
    const named = files.map((f) => ({ name: f.path === stem ? `${stem}.${formats[0]}` : f.path!, content: f.text }));
    if (made.size >= 16) made.delete(made.keys().next().value!);
    made.set(cacheKey, named);
    return named;
  };

  /** Claims and sends one due delivery; false when none is due. */
  const deliverOne = async (): Promise<boolean> =>
    store.transaction().execute(async (tx) => {
      const delivery = await claimDelivery(tx);
      if (!delivery) return false;
      const schedule = schedules.find((s) => s.name === delivery.schedule);
      const entry = schedule?.runs.find((r) => scopeKey(r.dataScope) === delivery.scope_key);
      const destination = entry?.destinations.find((d) => d.name === delivery.destination);
      const edition =
        delivery.edition_id === null
          ? undefined
          : await tx
              .selectFrom('querygate_jobs.report_editions')
              .selectAll()
              .where('id', '=', delivery.edition_id)
              .executeTakeFirst();
      const report = schedule && reports.get(schedule.report);
      if (!schedule || !destination || !edition || !report) {
        await endDelivery(tx, delivery, {
          delivered: false,
          error: 'the destination is no longer in the configuration file',
          retryInSeconds: undefined,
        });
        return true;
      }
      const where = {
        schedule: schedule.name,
        destination: destination.name,
        due_at: delivery.due_at.toISOString(),
        attempt: delivery.attempts + 1,
      };
      try {
        const files = await filesOf(schedule, report, edition, delivery.due_at);
        await send(
          destination,
          {
            schedule: schedule.name,
            report: schedule.report,
            dueAt: delivery.due_at,
            edition: edition.id,
            idempotencyKey: delivery.idempotency_key,
            dataScope: edition.data_scope ?? undefined,
            answer: edition.answer,
            files,
            html: report.render?.html ? rendered(report, 'html', edition.answer) : undefined,
            text: report.render?.markdown ? rendered(report, 'md', edition.answer) : undefined,
          },
          options.senders,
        );
        await endDelivery(tx, delivery, { delivered: true });
        logger.info('scheduled report delivered', where);
      } catch (err) {
        const failure =
          err instanceof DeliveryError ? err : new DeliveryError((err as Error).message ?? String(err), true);
        const attempts = delivery.attempts + 1;
        const retryInSeconds =
          failure.transient && attempts < MAX_DELIVERY_ATTEMPTS
            ? Math.min(LONGEST_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** (attempts - 1))
            : undefined;
        await endDelivery(tx, delivery, { delivered: false, error: failure.message, retryInSeconds });
        if (retryInSeconds === undefined) {
          logger.error('scheduled report undelivered', { alert: true, ...where, message: failure.message });
        } else {
          logger.warn('scheduled report delivery failed; retrying', {
            ...where,
            message: failure.message,
            retry_in_s: retryInSeconds,
          });
        }
      }
      return true;
    });

  let lastRetention = 0;
  /** One step of a pass, its failure logged: a step that fails (the store restarting) leaves the others to run. */
  const step = async (name: string, work: () => Promise<void>): Promise<void> => {
    if (closed) return;
    await work().catch((err: unknown) =>
      logger.warn(`scheduler: ${name} failed; the next pass tries again`, {
        message: String((err as Error).message ?? err),
      }),
    );
  };
  const pass = async (): Promise<void> => {
    const nowMs = Date.now();
    for (const schedule of schedules) await step(`planning ${schedule.name}`, () => plan(schedule, nowMs));
    await step('settling runs', async () => {
      for (const run of await runsToSettle(store)) if (!closed) await settle(run);
    });
    await step('delivering', async () => {
      for (let i = 0; i < 20 && !closed && (await deliverOne()); i++);
    });
    if (options.historyKeepMs !== undefined && nowMs - lastRetention > 3_600_000) {
      await step('deleting old editions', async () => {
        lastRetention = nowMs;
        const deleted = await deleteOldEditions(historyOf<ScheduleTables>(store), options.historyKeepMs!);
        if (deleted > 0) logger.info('old report editions deleted', { count: deleted });
      });
    }
  };

  const tick = async (): Promise<void> => {
    if (closed) return;
    ticking ??= pass()
      .catch((err: unknown) => logger.warn('scheduler pass failed', { message: String((err as Error).message ?? err) }))
      .finally(() => (ticking = undefined));
    await ticking;
  };
  const timer = setInterval(() => void tick(), options.tickMs ?? 2000);
  timer.unref();
  void tick();
  return {
    tick,
    close: async () => {
      closed = true;
      clearInterval(timer);
      await ticking;
    },
  };
}
