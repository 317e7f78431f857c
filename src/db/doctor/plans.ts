import { widestArguments } from '../../lib/widest-arguments.js';
import type { Pack } from '../../pack.js';
import { builderContext, type QueryContext } from '../../registry/types.js';
import type { ReaderDatabase } from '../connect.js';

export interface PlanCost {
  readonly tool: string;
  /** The planner's highest total cost over the template's widest calls; undefined when EXPLAIN failed. */
  readonly totalCost?: number;
  /** The pack's ceiling: a cost above it fails. */
  readonly maxCost: number;
  /** The arguments of the costliest call. */
  readonly args?: unknown;
  readonly error?: string;
}

/**
 * EXPLAINs each template of each pack over its widest calls (see widest-arguments.ts), ending on
 * `lastDay`, and keeps the costliest: a template whose plan costs more than its pack allows fails.
 */
export async function explainPacks(
  reader: ReaderDatabase,
  packs: readonly Pack[],
  ctx: QueryContext,
  lastDay: string,
): Promise<PlanCost[]> {
  const costs: PlanCost[] = [];
  for (const pack of packs) {
    for (const template of pack.templates) {
      let worst: PlanCost = { tool: template.name, maxCost: pack.maxPlanCost, totalCost: 0 };
      try {
        for (const args of widestArguments(template, lastDay)) {
          const compiled = template.query(reader.compiler, args, builderContext(template, ctx)).limit(101).compile();
          const { rows } = await reader.execute({ ...compiled, sql: `explain (format json) ${compiled.sql}` });
          const plan = (JSON.parse(rows[0]![0]!) as Array<{ Plan: { 'Total Cost': number } }>)[0]!.Plan;
          if (plan['Total Cost'] >= (worst.totalCost ?? 0)) worst = { ...worst, totalCost: plan['Total Cost'], args };
        }
      } catch (err) {
        worst = {
          tool: template.name,
          maxCost: pack.maxPlanCost,
          error: err instanceof Error ? err.message : String(err),
        };
      }
      costs.push(worst);
    }
  }
  return costs;
}

/** A plan that failed, or costs more than its pack allows. */
export function planFails(plan: PlanCost): boolean {
  return plan.totalCost === undefined || plan.totalCost > plan.maxCost;
}
