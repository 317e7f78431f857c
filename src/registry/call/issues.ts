/** A refused call's arguments, told as "field: rule" pairs a model can act on. */
import type { z } from 'zod';
import { quote } from '../../lib/date-range.js';
import type { ArgumentIssue } from '../../lib/errors.js';

/** The code of a call refused for an argument that names data outside the caller's scope. */
export const OUTSIDE_DATA_SCOPE = 'outside_data_scope';

/** Turns zod's issues into "field: rule" pairs a model can act on. */
export function describeIssues(error: z.ZodError, rawArgs: unknown, knownArgs: readonly string[]): ArgumentIssue[] {
  return error.issues.map((issue): ArgumentIssue => {
    const field = issue.path.length > 0 ? issue.path.join('.') : 'arguments';
    if (issue.code === 'unrecognized_keys' && issue.path.length > 0) {
      // A key unknown inside an argument (a filter, say): named by its path, with the rule its schema gives;
      // the caller's key quoted and cut short, as at the top level, so a hostile key is never echoed raw.
      const shown = issue.keys.slice(0, 5).map((k) => `${issue.path.join('.')}.${quote(k)}`);
      if (issue.keys.length > 5) shown.push(`and ${issue.keys.length - 5} more`);
      return { field: shown.join(', '), rule: issue.message };
    }
    if (issue.code === 'unrecognized_keys') {
      // At most five names: a call with thousands of unknown keys must not get them all echoed back.
      const shown = issue.keys.slice(0, 5).map((k) => quote(k));
      if (issue.keys.length > 5) shown.push(`and ${issue.keys.length - 5} more`);
      return {
        field: shown.join(', '),
        rule: `${issue.keys.length > 1 ? 'are not known arguments' : 'is not a known argument'}; the arguments are ${knownArgs.join(', ')}`,
      };
    }
    const value = valueAt(rawArgs, issue.path);
    if (issue.path.length === 0 && issue.code === 'invalid_type')
      return { field, rule: 'arguments must be a JSON object' };
    if (value === undefined && issue.code !== 'custom') return { field, rule: 'is required' };
    if (issue.code === 'invalid_type') {
      if (issue.expected === 'int') return { field, rule: `must be a whole number, got ${quote(value)}` };
      return {
        field,
        rule: `must be ${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}, got ${typeName(value)}`,
      };
    }
    return { field, rule: issue.message };
  });
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
