/** The fields the registry adds to every answer, so that no template or report can leave them out. */
import { z } from 'zod';
import type { AnyTemplate } from './types.js';

/**
 * Added to every result by the registry, so no template can leave it out. Taken before the statement
 * is sent: its snapshot is later, so it holds every commit made before this instant.
 */
export const SUPPRESSED_GROUPS = z
  .number()
  .int()
  .nonnegative()
  .describe(
    'Groups left out because they stand for fewer people than the small-group threshold, so that no one can be singled out; for a tool that says figures_cover, the groups are the combinations of the attributes it groups and filters by, left out of every figure',
  );

export const FIGURES_COVER = z
  .enum(['all', 'visible_groups_only'])
  .describe(
    "visible_groups_only when suppressed_groups > 0: then every figure of this answer (each group, each period and every total) leaves out what the groups that stand for too few people hold, as every grouping of the same range and filters does, so totals are those of the visible groups; 'all' when nothing was left out",
  );

export const DATA_AS_OF = z
  .string()
  .describe(
    "How fresh the figures are: every row committed before this instant (ISO 8601, UTC) is in them; from a hot standby with WAL left to replay, a tool gives the time of its last replayed commit (a report: subtract the standby's lag).",
  );

/** Present on a template's answer read from a hot standby further behind its primary than the operator allows. */
export const DATA_STALE = z
  .literal(true)
  .optional()
  .describe(
    'Present (true) when the figures come from a read replica further behind its primary than the server allows (QUERYGATE_MAX_REPLICA_LAG_SECONDS): recent commits are missing from them.',
  );

/** Added to every result of a scoped caller, so that a model knows its figures cover part of the data. */
export const DATA_SCOPE = z
  .record(z.string(), z.array(z.string()))
  .optional()
  .describe(
    'Present when your access is limited to part of the data: for each dimension, the values whose rows the figures cover (e.g. {"region": ["Europe"]}). Every figure leaves out the rest, so totals are partial.',
  );

/** Whether a scoped caller can be served these templates at all: each applies some data scope. */
export const scopable = (templates: readonly AnyTemplate[]): boolean =>
  templates.every((t) => (t.dataScope ?? []).length > 0);
