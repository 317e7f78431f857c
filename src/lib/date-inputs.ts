/**
 * The range rule is the engine's, not each template's: a template's date inputs are the engine's
 * range (dateRangeFields, held by checkDateRange), or the template is refused at start-up. The check
 * reads the input schema and probes it, so it does not depend on the template calling a helper: a
 * template with its own date fields, or with the engine's fields but without the refinement, would
 * answer for any range, or reach resolveRange without its days.
 */
import type { z } from 'zod';
import { ConfigError } from './errors.js';
import { dateRangeFields, MAX_RANGE_DAYS } from './date-range.js';

/** The fields of the engine's range, as dateRangeFields names them. */
const RANGE_FIELDS = Object.keys(dateRangeFields);
const ENGINE_DAYS = ['start_date', 'end_date'] as const;
/** A property whose name says it holds a day or an instant. */
const DATE_LIKE_NAME = /(^|_)(date|dates|day|days|datetime|timestamp|at|from|since|until)$/;
/** A pattern that accepts YYYY-MM-DD (not an ISO week, YYYY-Www). */
const DATE_LIKE_PATTERN = /\\d\{4\}-(?!W)|\[0-9\]\{4\}-(?!W)/;

/** A range of MAX_RANGE_DAYS + 1 days, and one of MAX_RANGE_DAYS: the one must be refused, the other not. */
const TOO_WIDE = { start_date: '2025-01-01', end_date: '2025-04-01' };
const WIDEST = { start_date: '2025-01-01', end_date: '2025-03-31' };

/** The fix of a template that takes a date other than through the engine's range. */
export const DATE_INPUT_FIX =
  "take dates through the engine's range: spread dateRangeFields (src/lib/date-range.ts) into the input and attach .superRefine(checkDateRange, DATE_RANGE_ALWAYS)";

/**
 * Refuses a template whose input takes a date other than through the engine's range, or takes the
 * engine's fields without its rule: a range one day wider than MAX_RANGE_DAYS, or a call with no days
 * and no period, must not validate.
 */
export function assertDateInputs(
  where: string,
  input: z.ZodType,
  properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  examples: readonly Record<string, unknown>[],
): void {
  for (const [name, property] of Object.entries(properties)) {
    if (RANGE_FIELDS.includes(name) || 'enum' in property || 'const' in property) continue;
    const datelike =
      property.format === 'date' ||
      property.format === 'date-time' ||
      (typeof property.pattern === 'string' && DATE_LIKE_PATTERN.test(property.pattern)) ||
      (property.type === 'string' && DATE_LIKE_NAME.test(name));
    if (datelike) {
      throw new ConfigError(
        `${where}: input field ${name} looks like a date, and the engine holds dates to at most ${MAX_RANGE_DAYS} days only through its own range; ${DATE_INPUT_FIX}`,
      );
    }
  }
  const days = ENGINE_DAYS.filter((name) => name in properties);
  if (days.length === 0) return;
  const shape = (input as { shape?: Record<string, unknown> }).shape;
  for (const name of days) {
    if (shape !== undefined && shape[name] !== dateRangeFields[name]) {
      throw new ConfigError(`${where}: input field ${name} is not the engine's own; ${DATE_INPUT_FIX}`);
    }
  }
  if (days.length < ENGINE_DAYS.length) {
    throw new ConfigError(
      `${where}: input takes ${days[0]} without ${ENGINE_DAYS.find((d) => d !== days[0])}; ${DATE_INPUT_FIX}`,
    );
  }
  const base = examples.find((e) => 'start_date' in e || 'period' in e) ?? examples[0] ?? {};
  const { start_date: _start, end_date: _end, period: _period, ...rest } = base;
  const accepts = (args: Record<string, unknown>): boolean => input.safeParse(args).success;
  if (!accepts({ ...rest, ...WIDEST })) return; // the example's other arguments do not validate alone: nothing to probe
  if (accepts({ ...rest, ...TOO_WIDE })) {
    throw new ConfigError(
      `${where}: input accepts ${TOO_WIDE.start_date}..${TOO_WIDE.end_date}, ${MAX_RANGE_DAYS + 1} days: the range refinement is missing; ${DATE_INPUT_FIX}`,
    );
  }
  if (accepts(rest)) {
    throw new ConfigError(
      `${where}: input accepts a call with neither start_date and end_date nor period: the range refinement is missing; ${DATE_INPUT_FIX}`,
    );
  }
}
