/** Who this server says it is, in `initialize`, in `server/discover` and in every modern result. */
import { MAX_RANGE_DAYS } from '../lib/date-range.js';
import { PERIODS } from '../lib/periods.js';

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export interface Identity {
  readonly info: { readonly name: string; readonly title: string; readonly version: string };
  readonly instructions: string;
}

/**
 * What the arguments and answer fields many tools share mean, said once here rather than in every
 * tool's listing: the listed input schemas leave out these arguments' descriptions and the period's
 * names, and the listed output schemas every field (src/registry/tools.ts, src/registry/outputs.ts).
 */
const ANSWER_FIELDS = [
  `A tool taking start_date and end_date takes a period instead, e.g. {"period":"last_week"}: ${PERIODS.slice(0, -1).join(', ')} or ${PERIODS.at(-1)!}. Weeks run Monday to Sunday, and last_N_days end yesterday.`,
  `A range spans at most ${MAX_RANGE_DAYS} days, both ends included. Split a longer span into calls of at most ${MAX_RANGE_DAYS} days and add their figures: a quarter of 92 days as its first two months, then its last month (group_by month in each call for monthly rows). Never add counts of distinct people (one person may be in both) nor ratios across calls: work a ratio out from its parts.`,
  'compare_to adds an earlier range and the change: previous_period (as long, just before) or previous_year (52 weeks back for whole ISO weeks).',
  "Answers are JSON objects, rows flat objects (each tool's whole answer schema is in the public contract); every answer also echoes its range (start_date, end_date, time_zone, starts_at and ends_before in UTC, and the period asked for) and carries data_as_of, and data_through, data_stale and data_scope when they apply; partial, until and truncated appear only when true.",
  'Money is in the currency (ISO 4217) of its row or total, and figures of two currencies are never added.',
  'partial: true means the range had not ended, and the figures stop at until: now, or where the data stop if earlier (a comparison is cut at the same local time).',
  'A row of a day, week or month the range covers only in part says partial, with the first_day and last_day it counts.',
  'change_note says why change_pct is null. data_as_of: every commit before it is counted. data_through: the newest data. data_stale: read from a replica further behind than allowed.',
  'data_scope: your access covers only these values, so totals are partial. A protected count of people (its metric says so) is 0 or at least the threshold and off by up to 2: never subtract one from another.',
].join(' ');

/** What a server serving these packs says about itself: its subjects in the title, each pack's instructions. */
export function describeServer(packs: readonly { subject: string; instructions: string }[]): Identity {
  const subjects = packs.map((p) => p.subject);
  const listed =
    subjects.length <= 1 ? (subjects[0] ?? 'data') : `${subjects.slice(0, -1).join(', ')} and ${subjects.at(-1)}`;
  return {
    info: { name: 'querygate', title: `querygate: read-only ${listed} queries`, version: VERSION },
    instructions: [
      `querygate answers questions about ${listed} through fixed, read-only query tools; every result is capped, and personal data comes back desensitized.`,
      ...packs.map((p) => p.instructions),
      ANSWER_FIELDS,
    ].join(' '),
  };
}

/** A server described by no pack: what the engine alone can say. */
export const ENGINE_IDENTITY: Identity = describeServer([]);
