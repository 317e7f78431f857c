/** What the registry derives once from each template and report it serves. */
import type { z } from 'zod';
import type { Statement } from '../db/connect.js';
import type { AnyReport } from '../reports.js';
import type { ShapedTemplate } from './shaping/rows.js';

/** A registered template, with what the registry derives from it once. */
export interface Entry extends ShapedTemplate {
  /** The template's output with data_as_of added. */
  readonly output: z.ZodType<Record<string, unknown>>;
  readonly knownArgs: readonly string[];
  /**
   * Compiled statements by their validated arguments: the same question compiles to the same SQL
   * and parameters, so it is built once. Bounded; cleared when full.
   */
  readonly statements: Map<string, Statement>;
}

/** A registered report, with what the registry derives from it once. */
export interface ReportEntry {
  readonly report: AnyReport;
  /** The report's output with data_as_of added. */
  readonly output: z.ZodType<Record<string, unknown>>;
  readonly knownArgs: readonly string[];
}
