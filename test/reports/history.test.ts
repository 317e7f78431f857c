/**
 * The history of reports in a real job store, as the job role: editions kept whole and in their key
 * order, found by id and listed newest first; a rerun of a period restates what changed, and one with
 * the same figures carries the restatement on; another scope or period restates nothing; and the
 * retention deletes what is older than it, and nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answerHash,
  deleteOldEditions,
  findEdition,
  historyOf,
  keepEdition,
  listEditions,
  type EditionTables,
} from '../../src/history/editions.js';
import { openJobStore, type JobStore } from '../../src/jobs/store.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let store: JobStore;
const history = () => historyOf(store.withTables<EditionTables>());
/** Keeps an edition of the weekly report, of every row unless a scope is given. */
const keep = (answer: Record<string, unknown>, source = 'cli', dataScope?: { region: string[] }) =>
  keepEdition(history(), { report: 'weekly_sales_report', args: { week: '2025-W43' }, dataScope, answer, source });

const week = (orders: number, revenue: number) => ({
  week: '2025-W43',
  start_date: '2025-10-20',
  end_date: '2025-10-26',
  data_as_of: new Date().toISOString(),
  // Keys out of order on purpose: the edition keeps them as they were sent.
  zeta: 1,
  alpha: 2,
  metrics: [
    { metric: 'order_count', currency: null, value: orders },
    { metric: 'revenue', currency: 'EUR', value: revenue },
  ],
});

beforeAll(async () => {
  scratch = await createScratchDatabase('report_history');
  store = openJobStore(scratch.jobsUrl);
});
afterAll(async () => {
  await store?.destroy();
  await scratch?.drop();
});

describe('the history of reports', () => {
  it('keeps an edition whole, restates a rerun with other figures, and carries a restatement on', async () => {
    const first = await keep(week(177, 19080.37), 'schedule:weekly');
    expect(first.answer.restated).toBeUndefined();
    const found = (await findEdition(history(), first.row.id))!;
    expect(JSON.stringify(found.answer)).toBe(JSON.stringify(first.answer));
    expect(found.hash).toBe(answerHash(first.answer));
    expect([found.start_date, found.end_date, found.scope_key, found.source]).toEqual([
      '2025-10-20',
      '2025-10-26',
      '',
      'schedule:weekly',
    ]);

    // Another scope and another period are other editions: nothing to restate.
    const europe = await keep(week(50, 5000), 'cli', { region: ['Europe'] });
    expect(europe.answer.restated).toBeUndefined();

    const rerun = await keep(week(176, 18898.24), 'cli');
    const restated = rerun.answer.restated as { edition: string; changes: unknown[]; text: string };
    expect(restated.edition).toBe(first.row.id);
    expect(restated.changes).toEqual([
      { figure: 'metrics: order_count', was: 177, now: 176 },
      { figure: 'metrics: revenue EUR', was: 19080.37, now: 18898.24 },
    ]);
    expect(restated.text).toMatch(
      /^Restated since the edition of \d{4}-\d\d-\d\d \d\d:\d\d UTC: metrics: order_count 177 → 176; metrics: revenue EUR 19,080\.37 → 18,898\.24\.$/,
    );
    expect(rerun.row.restates).toBe(first.row.id);

    // The same figures again: still restated since the edition that was sent.
    const again = await keep(week(176, 18898.24), 'cli');
    expect(again.answer.restated).toEqual(restated);

    const listed = await listEditions(history(), { report: 'weekly_sales_report', limit: 10 });
    expect(listed.map((e) => e.id)).toEqual([again.row.id, rerun.row.id, europe.row.id, first.row.id]);
    expect(await listEditions(history(), { report: 'sales_trend_report', limit: 10 })).toEqual([]);
  });

  it('deletes the editions older than the retention, and only those', async () => {
    const before = await listEditions(history(), { limit: 100 });
    await scratch.admin.query(
      "update querygate_jobs.report_editions set ran_at = now() - interval '401 days' where id = $1",
      [before.at(-1)!.id],
    );
    expect(await deleteOldEditions(history(), 400 * 86_400_000)).toBe(1);
    expect((await listEditions(history(), { limit: 100 })).map((e) => e.id)).toEqual(
      before.slice(0, -1).map((e) => e.id),
    );
  });
});
