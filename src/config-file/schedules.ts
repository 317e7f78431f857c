/**
 * The configuration file's `schedules`, `smtp` and `history` sections: reports the server runs by
 * itself, where each goes, and how long their editions are kept. Checked field by field like the rest
 * of the file; the secrets (the SMTP URL with its password, a webhook's signing key) stay in the
 * environment, the file naming the variable, and a variable that is not set is refused at start-up.
 */
import { Cron } from 'croner';
import { z } from 'zod';
import type { DataScope } from '../lib/data-scope.js';
import { DURATION_RULE, durationMs } from '../lib/durations.js';

export const SCHEDULE_FORMATS = ['md', 'json', 'html', 'csv', 'pdf'] as const;
export type ScheduleFormat = (typeof SCHEDULE_FORMATS)[number];

/** Where a run's report goes. `name` is how the history and the logs call it: `email[0]`, `webhook[1]`. */
export type Destination =
  | { readonly kind: 'folder'; readonly name: string; readonly path: string }
  | {
      readonly kind: 'webhook';
      readonly name: string;
      readonly url: string;
      /** `json`: the answer and its files; `slack`: a Slack-compatible message with the headline figures. */
      readonly style: 'json' | 'slack';
      /** The environment variable holding the key the body is signed with (HMAC-SHA256), if any. */
      readonly secretEnv?: string;
    }
  | { readonly kind: 'email'; readonly name: string; readonly to: readonly string[]; readonly subject?: string };

/** One report of a schedule's due run: the whole data, or one scope of it, to its own destinations. */
export interface ScheduledRun {
  readonly dataScope?: DataScope;
  readonly destinations: readonly Destination[];
}

export interface ScheduleSettings {
  readonly name: string;
  /** The report's tool name (`weekly_sales_report`). */
  readonly report: string;
  /** Its arguments as a tool call gives them; a relative week is read on the day the run is due. */
  readonly arguments: Readonly<Record<string, unknown>>;
  /** Five fields (minute first) or six (second first), read in the reporting time zone. */
  readonly cron: string;
  /** A run missed while no replica was up: run late (`catch_up`) or let go (`skip`, the default). */
  readonly missed: 'catch_up' | 'skip';
  /** `always` (the default), or `on_alert`: only when an alert rule of the report fired (the edition is kept either way). */
  readonly send: 'always' | 'on_alert';
  /** The files each destination gets. */
  readonly formats: readonly ScheduleFormat[];
  /** One report per entry: a schedule without `fan_out` has one, for every row. */
  readonly runs: readonly ScheduledRun[];
}

export interface SmtpSettings {
  /** The environment variable holding `smtp://user:password@host:port` (or smtps://). */
  readonly urlEnv: string;
  readonly from: string;
}

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const SCHEDULE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** A plain address check: one @, no spaces; the SMTP server has the last word. */
const ADDRESS = /^[^\s@<>,;]+@[^\s@<>,;]+$/;

const isCron = (text: string): boolean => {
  try {
    new Cron(text, { paused: true });
    return true;
  } catch {
    return false;
  }
};

export function schedulesSchema() {
  const envName = z
    .string({ error: 'must be an environment variable name' })
    .regex(ENV_NAME, 'must be an environment variable name such as REPORTS_SMTP_URL');
  const destination = z.union(
    [
      z.strictObject({ folder: z.string({ error: 'must be a path' }).min(1, 'must not be empty') }),
      z.strictObject({
        webhook: z.strictObject({
          url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }),
          style: z.enum(['json', 'slack'], { error: 'must be "json" or "slack"' }).default('json'),
          secret_env: envName.optional(),
        }),
      }),
      z.strictObject({
        email: z.strictObject({
          to: z
            .array(z.string().regex(ADDRESS, 'must be an email address'), { error: 'must be a list of addresses' })
            .min(1, 'must name at least one address'),
          subject: z.string({ error: 'must be a string' }).max(200, 'must be at most 200 characters').optional(),
        }),
      }),
    ],
    { error: 'must be one of { folder: PATH }, { webhook: { url } } or { email: { to: [...] } }' },
  );
  const destinations = z
    .array(destination, { error: 'must be a list of destinations' })
    .min(1, 'must name at least one destination');
  const dataScope = z.record(
    z.string(),
    z.array(z.string(), { error: 'must be a list of values' }).min(1, 'must list at least one value'),
    { error: 'must be a mapping of dimensions to lists of values' },
  );
  const schedule = z
    .strictObject({
      report: z.string({ error: 'must be a report name' }),
      arguments: z.record(z.string(), z.unknown(), { error: 'must be a mapping' }).default({}),
      cron: z
        .string({ error: 'must be a cron expression' })
        .refine(isCron, 'is not a cron expression of five or six fields'),
      missed: z.enum(['catch_up', 'skip'], { error: 'must be "catch_up" or "skip"' }).default('skip'),
      send: z.enum(['always', 'on_alert'], { error: 'must be "always" or "on_alert"' }).default('always'),
      formats: z
        .array(z.enum(SCHEDULE_FORMATS, { error: `must be one of ${SCHEDULE_FORMATS.join(', ')}` }), {
          error: 'must be a list of formats',
        })
        .min(1, 'must name at least one format')
        .default(['html']),
      data_scope: dataScope.optional(),
      deliver: destinations.optional(),
      fan_out: z
        .array(z.strictObject({ data_scope: dataScope, deliver: destinations }), { error: 'must be a list' })
        .min(1, 'must list at least one scope')
        .optional(),
    })
    .superRefine((entry, ctx) => {
      if (entry.deliver === undefined && entry.fan_out === undefined) {
        ctx.addIssue({ code: 'custom', message: 'give "deliver", "fan_out", or both' });
      }
      if (entry.fan_out !== undefined && entry.data_scope !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['data_scope'], message: 'give each scope in "fan_out", not here too' });
      }
    });
  return {
    schedules: z
      .record(
        z.string().regex(SCHEDULE_NAME, 'a schedule name is 1 to 64 lower-case letters, digits, _ or -'),
        schedule,
        {
          error: (issue) =>
            issue.code === 'invalid_type' ? 'must be a mapping of schedule names to schedules' : undefined,
        },
      )
      .default({}),
    smtp: z
      .strictObject({
        url_env: envName,
        from: z.string({ error: 'must be an email address' }).regex(ADDRESS, 'must be an email address'),
      })
      .optional(),
    history: z
      .strictObject({
        keep: z
          .string({ error: 'must be a duration such as 400d' })
          .refine((text) => durationMs(text) !== undefined, DURATION_RULE),
      })
      .optional(),
  };
}

type Parsed = z.infer<z.ZodObject<ReturnType<typeof schedulesSchema>>>;

function destinationsOf(list: NonNullable<Parsed['schedules'][string]['deliver']>): Destination[] {
  const seen: Record<string, number> = {};
  return list.map((entry): Destination => {
    const kind = 'folder' in entry ? 'folder' : 'webhook' in entry ? 'webhook' : 'email';
    const name = `${kind}[${(seen[kind] = (seen[kind] ?? -1) + 1)}]`;
    if ('folder' in entry) return { kind: 'folder', name, path: entry.folder };
    if ('webhook' in entry) {
      const { url, style, secret_env } = entry.webhook;
      return { kind: 'webhook', name, url, style, ...(secret_env === undefined ? {} : { secretEnv: secret_env }) };
    }
    const { to, subject } = entry.email;
    return { kind: 'email', name, to, ...(subject === undefined ? {} : { subject }) };
  });
}

/** The sections as the server reads them. */
export function schedulesOf(parsed: Pick<Parsed, 'schedules' | 'smtp' | 'history'>): {
  schedules: ScheduleSettings[];
  smtp: SmtpSettings | undefined;
  historyKeepMs: number | undefined;
} {
  return {
    schedules: Object.entries(parsed.schedules).map(([name, s]) => ({
      name,
      report: s.report,
      arguments: s.arguments,
      cron: s.cron,
      missed: s.missed,
      send: s.send,
      formats: [...new Set(s.formats)],
      runs: [
        ...(s.deliver === undefined
          ? []
          : [
              {
                ...(s.data_scope === undefined ? {} : { dataScope: s.data_scope }),
                destinations: destinationsOf(s.deliver),
              },
            ]),
        ...(s.fan_out ?? []).map((f) => ({ dataScope: f.data_scope, destinations: destinationsOf(f.deliver) })),
      ],
    })),
    smtp: parsed.smtp && { urlEnv: parsed.smtp.url_env, from: parsed.smtp.from },
    historyKeepMs: parsed.history && durationMs(parsed.history.keep),
  };
}
