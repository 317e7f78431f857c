/**
 * What a report page says above its figures whoever wrote its renderers: that the reader sees part of
 * the data (a scoped caller's answer), and that the data stopped coming in (the report command's
 * freshness bound), and that figures changed since an edition of the same period was sent. Markdown and HTML lay the same sentences out; JSON carries the fields they come from.
 */
import { describeScope, type DataScope } from '../lib/data-scope.js';

export interface NotedAnswer {
  readonly data_scope?: DataScope;
  /** Set by the report command when the newest data are older than the report's bound. */
  readonly stale_feed?: string;
  /** Set when an edition of the same period was kept before and its figures differ (src/history/). */
  readonly restated?: { readonly text: string };
  /** The alert rules that fired on the figures (src/output/alerts.ts), set where rules are declared. */
  readonly alerts?: readonly { readonly text: string }[];
}

export interface ReportNote {
  /** `scope`: a part of the data; `stale`: a feed that stopped, a warning; `restated`: figures changed since sent. */
  readonly kind: 'scope' | 'stale' | 'restated' | 'alert';
  readonly text: string;
}

/** The notes of an answer, the warning first; none for a fresh answer to a caller who sees every row. */
export function reportNotes(answer: NotedAnswer): ReportNote[] {
  return [
    ...(answer.stale_feed === undefined ? [] : [{ kind: 'stale' as const, text: answer.stale_feed }]),
    ...(answer.alerts ?? []).map((alert) => ({ kind: 'alert' as const, text: alert.text })),
    ...(answer.restated === undefined ? [] : [{ kind: 'restated' as const, text: answer.restated.text }]),
    ...(answer.data_scope === undefined
      ? []
      : [
          {
            kind: 'scope' as const,
            text: `Data scope: ${describeScope(answer.data_scope)}. The figures cover those rows only.`,
          },
        ]),
  ];
}
