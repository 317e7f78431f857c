/**
 * The prompt a pack's metric declarations derive beside `query_metrics`: a person picks a metric, a
 * breakdown, a period and filter values, with completions for each (the declared metrics and
 * dimensions, closed lists, and the labels the caller's own scope holds, read through the tool as that
 * caller), and the model is told the one call that answers it.
 */
import type { PromptMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CompletionSource, ToolCompletionSource } from '../content/declarations.js';
import { ConfigError } from '../lib/errors.js';
import { oneOf } from '../lib/arguments.js';
import { PERIODS } from '../lib/periods.js';
import { definePrompt, type AnyPrompt } from '../content/prompts.js';
import { CYCLIC_TIMES, TIME_GRAINS, type MetricsModel } from './declarations.js';
import { derivedDimensions } from './call.js';
import { METRICS_TOOL } from './tool.js';

const user = (text: string): PromptMessage => ({ role: 'user', content: { type: 'text', text } });

export function metricsPrompt(model: MetricsModel): AnyPrompt {
  const tool = model.toolName ?? METRICS_TOOL;
  const metrics = model.metrics.map((m) => m.name) as [string, ...string[]];
  const dimensions = [
    ...TIME_GRAINS,
    ...CYCLIC_TIMES,
    ...model.attributes.map((a) => a.name),
    ...derivedDimensions(model).map((d) => d.name),
  ] as [string, ...string[]];
  // Labels are read with a metric that counts no one, so that every label is read exactly.
  const counting = model.metrics.find((m) => !m.people && !m.ratio)?.name ?? metrics[0];
  const filters = Object.fromEntries(
    model.attributes.map((a) => [
      a.name,
      z.string().min(1).max(100).optional().describe(`Only this ${a.name} (optional)`),
    ]),
  );
  const labelsOf = (name: string): ToolCompletionSource => ({
    tool,
    arguments: { metrics: [counting], group_by: [name], period: 'last_90_days' },
    field: name,
  });
  const completions: Record<string, CompletionSource> = {};
  for (const a of model.attributes) {
    const within = a.completedWithin;
    if (within !== undefined && !model.attributes.some((b) => b.name === within && b !== a)) {
      throw new ConfigError(`attribute ${a.name}: completedWithin names ${within}, which is not another attribute`);
    }
    completions[a.name] = a.values
      ? { values: a.values }
      : {
          ...labelsOf(a.name),
          ...(within === undefined
            ? {}
            : {
                within: { source: labelsOf(within), narrowTo: (value: string) => ({ filters: { [within]: [value] } }) },
              }),
        };
  }
  return definePrompt({
    name: 'explore_metric',
    title: 'Explore a metric',
    description: `Look at one ${model.subject} metric over a period, broken down by a dimension and kept to filter values, answered by one ${tool} call.`,
    arguments: z.strictObject({
      metric: oneOf(metrics, 'The metric to look at'),
      group_by: oneOf(dimensions, 'What to break it down by').optional(),
      period: oneOf(PERIODS, 'The period, relative to today'),
      ...filters,
    }),
    completions,
    messages: (args: Record<string, string | undefined>) => {
      const picked = Object.fromEntries(
        model.attributes.flatMap((a) => (args[a.name] === undefined ? [] : [[a.name, [args[a.name]!]]])),
      );
      const call = {
        metrics: [args.metric!],
        ...(args.group_by ? { group_by: [args.group_by] } : {}),
        ...(Object.keys(picked).length > 0 ? { filters: picked } : {}),
        period: args.period!,
      };
      return [
        user(
          [
            `Call ${tool} with ${JSON.stringify(call)}.`,
            `Answer with the figures as it gives them: its totals are exact for every matching row, money is per currency (never add two), and a row or range marked partial covers only part of its period (say so, and never add it to another answer's row for the same period). Say how fresh the figures are from data_as_of and data_through, and that a protected count of people is approximate (±2, never 1 to 4). What ${args.metric!} means: querygate://catalog/${tool}/${args.metric!}.`,
          ].join('\n'),
        ),
      ];
    },
  });
}
