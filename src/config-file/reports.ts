/**
 * The configuration file's `reports` section: per report, the freshness bound (`stale_after`) and the
 * alert rules over its figures (`alerts`), as `querygate report` and the schedules read them.
 */
import { z } from 'zod';
import { DURATION_RULE, durationMs } from '../lib/durations.js';
import type { AlertRule } from '../output/alerts.js';

export interface ReportSettings {
  /** `stale_after`: a report whose newest data are older than this (milliseconds) fails as stale. */
  readonly staleAfterMs?: number;
  /** `alerts`: rules over the report's figures, evaluated with every run (src/output/alerts.ts). */
  readonly alerts?: readonly AlertRule[];
}

export function reportsSchema() {
  return z
    .record(
      z.string(),
      z.strictObject({
        stale_after: z
          .string({ error: 'must be a duration such as 36h' })
          .refine((text) => durationMs(text) !== undefined, DURATION_RULE)
          .optional(),
        alerts: z
          .array(
            z.union(
              [
                z
                  .strictObject({
                    figure: z.string().min(1, 'must name a figure'),
                    above: z.number({ error: 'must be a number' }).optional(),
                    below: z.number({ error: 'must be a number' }).optional(),
                  })
                  .refine((r) => r.above !== undefined || r.below !== undefined, 'give "above", "below", or both'),
                z.strictObject({ rows_in: z.string().min(1, 'must name a table') }),
              ],
              { error: 'must be { figure, above and/or below } or { rows_in: TABLE }' },
            ),
            { error: 'must be a list of rules' },
          )
          .min(1, 'must list at least one rule')
          .optional(),
      }),
      {
        error: (issue) => (issue.code === 'invalid_type' ? 'must be a mapping of report names to settings' : undefined),
      },
    )
    .default({});
}

type Parsed = z.infer<ReturnType<typeof reportsSchema>>;

/** The section as the server reads it. */
export function reportSettingsOf(reports: Parsed): Record<string, ReportSettings> {
  return Object.fromEntries(
    Object.entries(reports).map(([report, { stale_after, alerts }]) => [
      report,
      {
        ...(stale_after === undefined ? {} : { staleAfterMs: durationMs(stale_after)! }),
        ...(alerts === undefined
          ? {}
          : {
              alerts: alerts.map((rule): AlertRule =>
                'rows_in' in rule
                  ? { rowsIn: rule.rows_in }
                  : {
                      figure: rule.figure,
                      ...(rule.above === undefined ? {} : { above: rule.above }),
                      ...(rule.below === undefined ? {} : { below: rule.below }),
                    },
              ),
            }),
      },
    ]),
  );
}
