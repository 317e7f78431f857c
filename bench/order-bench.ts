/**
 * The order and customer questions (bench/order-questions.ts, issue 30) asked of querygate and of a
 * raw-SQL server on the same seeded data, through real MCP clients, as bench/questions.ts asks its 24:
 * querygate is the built CLI over stdio (reader role, reporting zone UTC, a caller who sees every
 * region); the raw-SQL server is `@modelcontextprotocol/server-postgres` (bench/raw-sql.ts). The demo
 * data end yesterday, with orders in a second currency (EUR) beside the seed's USD. Per question: the
 * calls, the bytes of tool results read and the personal values they expose on both sides, and whether
 * querygate's answer equals the truth (independent SQL through the admin connection). Then the totals
 * and the querygate/raw ratios, written to BENCHMARKS.md, "Order and customer questions". The zones,
 * currencies and scoped callers are held to the truth by test/order-questions.test.ts. Times nothing.
 *
 *   npm run bench:order-questions -- [--orders 50000] [--out BENCHMARKS.md]
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { salesPack } from '../pack/index.js';
import { seedDatabase } from '../pack/seed.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { startEmbedded } from '../src/db/embedded.js';
import { todayUtc, yesterdayUtc } from '../src/lib/date-range.js';
import { createLogger } from '../src/lib/logger.js';
import { writeSection } from './measure.js';
import {
  addEuroOrders,
  answerRows,
  differences,
  ORDER_QUESTIONS,
  truthRows,
  type OrderQuestion,
  type Setting,
} from './order-questions.js';
import { ask, connectQuerygate, fmt, personalValues, rawServer, through, type Outcome, type Reply } from './raw-sql.js';

const { values } = parseArgs({
  options: { orders: { type: 'string', default: '50000' }, out: { type: 'string', default: 'BENCHMARKS.md' } },
});
const ORDERS = Number(values.orders);
const HEADING = '## Order and customer questions (issue 30)';
const logger = createLogger('warn');

interface Result {
  readonly question: OrderQuestion;
  readonly qg: Outcome;
  readonly raw: Outcome;
  /** Where querygate's answer differs from the truth (empty: right). */
  readonly wrong: readonly string[];
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'querygate-order-questions-'));
  await chmod(dataDir, 0o755);
  const database = await startEmbedded({ dataDir, readerRole: DEFAULT_READER_ROLE, packs: [salesPack] }, logger);
  const admin = new pg.Client({ connectionString: database.adminUrl });
  try {
    await seedDatabase(database.adminUrl, { orders: ORDERS, until: yesterdayUtc(), replace: false }, logger);
    await admin.connect();
    await addEuroOrders(admin, yesterdayUtc());
    const personal = await personalValues(admin);
    const querygate = await connectQuerygate('bench-order-questions', database);
    const raw = await rawServer(database.adminUrl);
    const setting: Setting = { timeZone: 'UTC', now: Date.now() };
    const results: Result[] = [];
    for (const question of ORDER_QUESTIONS) {
      const replies: Reply[] = [];
      const qg = await ask([question.call(setting)], through(querygate), personal, replies);
      const rawOutcome = await ask([{ tool: 'query', args: { sql: question.sql(setting) } }], raw.call, personal);
      let wrong: string[];
      try {
        wrong = differences(question, answerRows(question, replies[0]!), await truthRows(admin, question, setting));
      } catch (error) {
        wrong = [String(error)];
      }
      results.push({ question, qg, raw: rawOutcome, wrong });
      process.stderr.write(`${question.text}: querygate ${wrong.length === 0 ? 'right' : 'not right'}\n`);
    }
    await querygate.close();
    await raw.stop();
    const section = report(results, raw.label);
    process.stdout.write(`${section}\n`);
    await writeSection(values.out, HEADING, `${section}\n`);
  } finally {
    await admin.end().catch(() => undefined);
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The section: how it was run, the table, the totals and ratios, and why each wrong answer is wrong. */
function report(results: readonly Result[], rawLabel: string): string {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim();
  const sum = (pick: (r: Result) => number, rows: readonly Result[] = results): number =>
    rows.reduce((total, r) => total + pick(r), 0);
  const right = results.filter((r) => r.wrong.length === 0);
  const ratio = (a: number, b: number): string => (b === 0 ? 'n/a' : `${fmt(a / b, 2)}x`);
  const ratios = (rows: readonly Result[]): string =>
    `calls ${ratio(
      sum((r) => r.qg.calls, rows),
      sum((r) => r.raw.calls, rows),
    )}, bytes ${ratio(
      sum((r) => r.qg.bytes, rows),
      sum((r) => r.raw.bytes, rows),
    )}`;
  return [
    HEADING,
    '',
    `Run on ${todayUtc()} at commit \`${commit}\`${dirty ? ' (with uncommitted changes)' : ''}: \`npm run bench:order-questions -- --orders ${ORDERS}\` (bench/order-bench.ts, the questions in bench/order-questions.ts), ${fmt(ORDERS)} demo orders up to ${yesterdayUtc()} and 13 in EUR, reporting zone UTC, a caller who sees every region. Raw SQL: ${rawLabel}, one \`query\` call a question. "Right" is querygate's answer against independent SQL through the admin connection; test/order-questions.test.ts holds the same answers to the truth in UTC and Europe/Berlin, unscoped and scoped to two regions, on a stopped and a live feed.`,
    '',
    '| # | question | querygate tool | calls | bytes | raw personal | masked | right | raw SQL calls | bytes | raw personal |',
    '| ---: | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |',
    ...results.map(
      ({ question, qg, raw, wrong }, i) =>
        `| ${i + 1} | ${question.text} | ${qg.tools} | ${qg.calls} | ${fmt(qg.bytes)} | ${qg.raw} | ${qg.masked} | ${wrong.length === 0 ? 'yes' : 'no'} | ${raw.calls} | ${fmt(raw.bytes)} | ${raw.raw} |`,
    ),
    `| | **all ${results.length}** | | ${sum((r) => r.qg.calls)} | ${fmt(sum((r) => r.qg.bytes))} | ${sum((r) => r.qg.raw)} | ${sum((r) => r.qg.masked)} | ${right.length} | ${sum((r) => r.raw.calls)} | ${fmt(sum((r) => r.raw.bytes))} | ${sum((r) => r.raw.raw)} |`,
    `| | **the ${right.length} right on querygate** | | ${sum((r) => r.qg.calls, right)} | ${fmt(sum((r) => r.qg.bytes, right))} | ${sum((r) => r.qg.raw, right)} | ${sum((r) => r.qg.masked, right)} | | ${sum((r) => r.raw.calls, right)} | ${fmt(sum((r) => r.raw.bytes, right))} | ${sum((r) => r.raw.raw, right)} |`,
    '',
    `- Ratios querygate/raw (targets: at most 1.2x the calls, 1.5x the bytes, no personal value): all ${results.length} questions ${ratios(results)}; the ${right.length} right on querygate ${ratios(right)}.`,
    ...results.flatMap(({ question, qg, wrong }, i) =>
      wrong.length === 0
        ? []
        : [
            `- ${i + 1} not right${question.needs.length > 0 ? ` (needs: ${question.needs.join(', ')})` : ''}: ${(qg.unanswered ?? wrong.slice(0, 2).join('; ')).replace(/\s+/g, ' ').replace(/\|/g, '/').slice(0, 200)}`,
          ],
    ),
  ].join('\n');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
