/**
 * The start-up checks of a template, in the order they run: a template that breaks one is refused
 * with a ConfigError before a single call is served. Each rule is a file of its own.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AnyTemplate } from '../types.js';
import { assertBoundValues } from './bound-values.js';
import { compiledCalls } from './checked-calls.js';
import { assertContract } from './contract.js';
import { assertScopeBound } from './data-scope.js';
import { assertDimensions } from './dimensions.js';
import { assertSelections } from './selections.js';
import { assertShape } from './shape.js';
import { assertTreatments } from './treatments.js';

/** What the template declares of itself and its columns; gives the names of its pack's dimensions. */
export function checkDeclaration(template: AnyTemplate): string[] {
  assertShape(template);
  assertTreatments(template);
  return assertDimensions(template);
}

/** Its argument and result contracts, read from its input's JSON schema. */
export function checkContract(template: AnyTemplate, inputSchema: Tool['inputSchema']): void {
  assertContract(template, inputSchema);
}

/**
 * What its statements do, compiled for every call the checks make (checked-calls.ts): the columns
 * each selects, then, statement by statement, the data scope bound and every free value bound.
 */
export function checkStatements(template: AnyTemplate, inputSchema: Tool['inputSchema']): void {
  // The checks read the template alone (its input schema is derived from it), so one that passed
  // passes again: a process that builds several registries (a reload, the tests) compiles it once.
  if (passed.has(template)) return;
  assertSelections(template);
  for (const call of compiledCalls(template)) {
    assertScopeBound(template, call);
    assertBoundValues(template, inputSchema, call);
  }
  passed.add(template);
}

/** The templates whose statements passed every check, by identity: a changed template is a new object. */
const passed = new WeakSet<AnyTemplate>();
