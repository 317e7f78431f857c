/**
 * The most costly calls a template allows, derived from its input schema alone: every combination of
 * its enumerable and optional arguments (see argument-combinations.ts), each with the widest date
 * range allowed (MAX_RANGE_DAYS ending on `lastDay`) and every bounded number at its maximum. `doctor`
 * and the contract tests EXPLAIN each of them, so no template needs a hand-written "widest" call.
 */
import { z } from 'zod';
import { checkedCombinations, type CheckedDeclaration } from './argument-combinations.js';
import { MAX_RANGE_DAYS } from './date-range.js';

const DAY_MS = 86_400_000;

/** What the widest calls are read from: a template's name, input and examples (any template has them; src/lib/ names no registry type). */
type Declared = CheckedDeclaration;

interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
}

/** The largest value a number schema accepts, through optional and default wrappers. */
function maximumOf(schema: z.ZodType): number | undefined {
  const def = schema.def as unknown as Def;
  if (def.type === 'optional' || def.type === 'default' || def.type === 'prefault' || def.type === 'nullable') {
    return maximumOf(def.innerType!);
  }
  if (schema instanceof z.ZodNumber && Number.isFinite(schema.maxValue)) return schema.maxValue ?? undefined;
  return undefined;
}

/** Validated arguments for each of the template's most costly calls. */
export function widestArguments(template: Declared, lastDay: string): unknown[] {
  const shape = (template.input as unknown as z.ZodObject).shape as Record<string, z.ZodType>;
  const firstDay = new Date(Date.parse(`${lastDay}T00:00:00Z`) - (MAX_RANGE_DAYS - 1) * DAY_MS)
    .toISOString()
    .slice(0, 10);
  const widened: unknown[] = [];
  const seen = new Set<string>();
  for (const combination of checkedCombinations(template)) {
    const args: Record<string, unknown> = { ...combination };
    if ('start_date' in shape && 'end_date' in shape) Object.assign(args, { start_date: firstDay, end_date: lastDay });
    for (const [name, schema] of Object.entries(shape)) {
      const max = maximumOf(schema);
      if (max !== undefined) args[name] = max;
    }
    const parsed = template.input.safeParse(args);
    if (!parsed.success) continue;
    const key = JSON.stringify(parsed.data);
    if (seen.has(key)) continue;
    seen.add(key);
    widened.push(parsed.data);
  }
  return widened;
}
