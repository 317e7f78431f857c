/**
 * The order and customer questions of bench/order-questions.ts, each asked through a real MCP client
 * and held to its truth (independent SQL through the admin connection) at test scale: in UTC and in
 * Europe/Berlin (its clocks change on 2025-03-30, inside the 90-day questions), with orders in two
 * currencies, for a caller who sees everything and one scoped to two regions, on a feed that stopped
 * the evening before (the clock on 18 June, the newest order on the 17th) and on a live one (the clock
 * on the 17th at 15:45, orders still coming). No answer of querygate holds a customer's raw name, email
 * or phone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addEuroOrders,
  answerRows,
  differences,
  ORDER_QUESTIONS,
  truthRows,
  type OrderQuestion,
  type Setting,
} from '../bench/order-questions.js';
import { exposure, personalValues, type PersonalValues } from '../bench/raw-sql.js';
import { startHarness, type Harness } from './support/harness.js';
import { TEST_SEED } from './support/database.js';
import { createScratchDatabase, type ScratchDatabase } from './support/scratch.js';

const UNTIL = '2025-06-17';
const STALE = Date.parse('2025-06-18T16:00:00Z');
const LIVE = Date.parse('2025-06-17T15:45:00Z');
const ZONES = ['UTC', 'Europe/Berlin'];
const SCOPE = ['Europe', 'Asia Pacific'];

let scratch: ScratchDatabase;
let personal: PersonalValues;
const harnesses = new Map<string, Harness>();
const settings = ZONES.flatMap((timeZone) => [{ timeZone }, { timeZone, scope: SCOPE }]);
const keyOf = (s: Omit<Setting, 'now'>, now: number): string => `${s.timeZone} ${s.scope?.join('+') ?? 'all'} ${now}`;

beforeAll(async () => {
  scratch = await createScratchDatabase('order_questions', { orders: TEST_SEED.orders, until: UNTIL });
  await addEuroOrders(scratch.admin, UNTIL);
  personal = await personalValues(scratch.admin);
  for (const s of settings) {
    for (const now of [STALE, LIVE]) {
      const caller = s.scope ? { id: 'rep', dataScope: { region: s.scope } } : { id: 'analyst' };
      harnesses.set(
        keyOf(s, now),
        await startHarness({ readerUrl: scratch.readerUrl, timeZone: s.timeZone, caller, now: () => now }),
      );
    }
  }
}, 240_000);
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch?.drop();
});

/** Every setting's differences from the truth, and the raw personal values the answers held. */
async function check(question: OrderQuestion): Promise<{ differences: string[]; personal: number }> {
  const found: string[] = [];
  let raw = 0;
  for (const base of settings) {
    const s: Setting = { ...base, now: question.clock === 'live' ? LIVE : STALE };
    const call = question.call(s);
    const result = await harnesses.get(keyOf(base, s.now))!.call(call.tool, call.args);
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    raw += exposure(text, personal).raw;
    const truth = await truthRows(scratch.admin, question, s);
    try {
      const got = answerRows(question, {
        text,
        isError: result.isError === true,
        structured: result.structuredContent,
      });
      for (const d of differences(question, got, truth))
        found.push(`${s.timeZone} ${s.scope ? 'scoped' : 'unscoped'}: ${d}`);
    } catch (error) {
      found.push(`${s.timeZone} ${s.scope ? 'scoped' : 'unscoped'}: ${String(error)}`);
    }
  }
  return { differences: found, personal: raw };
}

describe('the order and customer questions, against independent SQL', () => {
  it('are at least 30, and cover both currencies', async () => {
    expect(ORDER_QUESTIONS.length).toBeGreaterThanOrEqual(30);
    const { rows } = await scratch.admin.query<{ currency: string }>(
      `select distinct currency from sales.orders where ordered_at >= '2025-05-01' order by 1`,
    );
    expect(rows.map((r) => r.currency)).toEqual(['EUR', 'USD']);
  });

  it('have a truth that runs in every setting and holds a figure other than 0', async () => {
    const empty: string[] = [];
    for (const question of ORDER_QUESTIONS) {
      for (const base of settings) {
        const s: Setting = { ...base, now: question.clock === 'live' ? LIVE : STALE };
        const truth = await truthRows(scratch.admin, question, s);
        if (differences(question, truth, truth).length > 0) empty.push(`${question.text} (${keyOf(base, s.now)})`);
      }
    }
    expect(empty).toEqual([]);
  });

  for (const question of ORDER_QUESTIONS) {
    it(question.text, async () => {
      const outcome = await check(question);
      expect(outcome.differences).toEqual([]);
      expect(outcome.personal).toBe(0);
    });
  }
});
