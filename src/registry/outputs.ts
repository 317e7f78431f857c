/**
 * The fields the registry adds to every answer, so that no template or report can leave them out.
 * Their meaning is the same in every tool, so the server's instructions say it once
 * (src/protocol/identity.ts); the whole answer schemas type them.
 */
import { z } from 'zod';
import { rangeEcho } from '../lib/result-shape.js';
import type { AnyTemplate } from './types.js';

/**
 * The answer fields every tool shares: the range it echoes and what the registry adds. The server's
 * instructions say what they mean once, for every tool.
 */
export const SHARED_ANSWER_FIELDS: ReadonlySet<string> = new Set([
  ...Object.keys(rangeEcho),
  'data_as_of',
  'data_through',
  'data_stale',
  'data_scope',
]);

/** Groups left out of the answer for standing for fewer people than the small-group threshold. */
export const SUPPRESSED_GROUPS = z.number().int().nonnegative();

/** visible_groups_only when groups were left out: then every figure and total leaves out what they hold. */
export const FIGURES_COVER = z.enum(['all', 'visible_groups_only']);

/**
 * Taken before the statement is sent: its snapshot is later, so the figures hold every commit made
 * before this instant.
 */
export const DATA_AS_OF = z.string();

/**
 * For a template whose pack declares its high-water mark: the newest data the figures saw (ISO 8601),
 * read before them; null while the pack holds no data. Absent from the steps of a report.
 */
export const DATA_THROUGH = z.string().nullable().optional();

/** Present on a template's answer read from a hot standby further behind its primary than the operator allows. */
export const DATA_STALE = z.literal(true).optional();

/** Added to every result of a scoped caller, so that a model knows its figures cover part of the data. */
export const DATA_SCOPE = z.record(z.string(), z.array(z.string())).optional();

/** Whether a scoped caller can be served these templates at all: each applies some data scope. */
export const scopable = (templates: readonly AnyTemplate[]): boolean =>
  templates.every((t) => (t.dataScope ?? []).length > 0);
