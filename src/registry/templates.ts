/** The templates a registry serves: each checked, registered once, and listed as a tool. */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { ConfigError } from '../lib/errors.js';
import { checkContract, checkDeclaration, checkStatements } from './checks/index.js';
import type { Entry } from './entries.js';
import { DATA_AS_OF, DATA_SCOPE, DATA_STALE, DATA_THROUGH, scopable } from './outputs.js';
import { shapedColumns } from './shaping/rows.js';
import { describe, jsonSchema, outline } from './tools.js';
import { DEFAULT_SMALL_GROUP_THRESHOLD, TOOL_ANNOTATIONS, type AnyTemplate } from './types.js';

export interface ServedTemplates {
  readonly byName: ReadonlyMap<string, Entry>;
  readonly tools: readonly Tool[];
  /** Each tool's whole answer schema, which its listing outlines. */
  readonly answers: ReadonlyMap<string, Record<string, unknown>>;
  /** The data-scope dimensions the templates' packs declare. */
  readonly dimensions: ReadonlySet<string>;
}

/** Checks every template against the contract, in order, and refuses on the first violation. */
export function serveTemplates(
  templates: readonly AnyTemplate[],
  thresholds: Readonly<Record<string, number>> = {},
): ServedTemplates {
  const byName = new Map<string, Entry>();
  const tools: Tool[] = [];
  const answers = new Map<string, Record<string, unknown>>();
  const dimensions = new Set<string>();
  for (const template of templates) {
    for (const dimension of checkDeclaration(template)) dimensions.add(dimension);
    if (byName.has(template.name)) throw new ConfigError(`duplicate tool name: ${template.name}`);
    const inputSchema = jsonSchema(template.input, 'input') as Tool['inputSchema'];
    checkContract(template, inputSchema);
    const entry = templateEntry(template, inputSchema, thresholds[template.name] ?? DEFAULT_SMALL_GROUP_THRESHOLD);
    byName.set(template.name, entry);
    checkStatements(template, inputSchema);
    const answer = jsonSchema(entry.output, 'output', inputSchema);
    answers.set(template.name, answer);
    tools.push({
      name: template.name,
      title: template.title,
      description: describe(template),
      inputSchema,
      outputSchema: outline(answer) as Tool['outputSchema'],
      // The title is the tool's own; annotations.title would only repeat it.
      annotations: TOOL_ANNOTATIONS,
    });
  }
  return { byName, tools, answers, dimensions };
}

/** A checked template's entry: its output with what the registry adds, and its threshold of protected counts. */
function templateEntry(template: AnyTemplate, inputSchema: Tool['inputSchema'], threshold: number): Entry {
  // checkContract has seen the output is an object.
  const output = (template.output as z.ZodObject).extend({
    data_as_of: DATA_AS_OF,
    ...(template.dataThrough ? { data_through: DATA_THROUGH } : {}),
    data_stale: DATA_STALE,
    // Only a template that applies a data scope is ever served to a scoped caller.
    ...(scopable([template]) ? { data_scope: DATA_SCOPE } : {}),
  });
  if (!Number.isInteger(threshold) || threshold < 2) {
    throw new ConfigError(
      `template ${template.name}: the threshold of protected counts must be a whole number of at least 2`,
    );
  }
  return {
    template,
    output,
    threshold,
    knownArgs: Object.keys(inputSchema.properties ?? {}),
    columns: shapedColumns(template),
    statements: new Map(),
    placements: new Map(),
  };
}
