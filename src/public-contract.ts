/**
 * The public contract of the tools a set of packs serves: each tool's name, its whole input schema
 * (every bound the server checks, which `tools/list` gives without what only a malformed call meets),
 * and its whole answer schema (every field typed, down to the rows' columns), which `tools/list`
 * gives as an object. Clients and report scripts depend on it, so a copy is
 * committed (contract/tools.json) and a test fails when the live one differs; nothing needs a database.
 */
import type { Pack } from './pack.js';
import { createRegistry } from './registry/index.js';

export interface ToolContract {
  readonly name: string;
  readonly inputSchema: unknown;
  readonly outputSchema: unknown;
}

/** Tool contracts by pack name, in each pack's order; the schemas' keys sorted, since their order means nothing. */
export type PublicContract = Readonly<Record<string, readonly ToolContract[]>>;

export function publicContract(packs: readonly Pack[]): PublicContract {
  return Object.fromEntries(
    packs.map((pack) => {
      // With a job store, as a deployment serves them: the job tools are part of the contract.
      const registry = createRegistry(pack.templates, { reports: pack.reports ?? [], jobs: true });
      const tools = registry.tools.map((tool) => ({
        name: tool.name,
        inputSchema: sortedKeys(registry.argumentSchemas.get(tool.name)),
        outputSchema: sortedKeys(registry.answerSchemas.get(tool.name)),
      }));
      return [pack.name, tools];
    }),
  );
}

/** The value with every object's keys in code-point order, so the written file does not depend on build order. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

/**
 * What differs between a committed contract and the live one, one line per tool: added, removed,
 * moved, or which of its schemas changed and at which path.
 */
export function contractChanges(committed: PublicContract, live: PublicContract): string[] {
  const changes: string[] = [];
  for (const pack of new Set([...Object.keys(committed), ...Object.keys(live)])) {
    const before = committed[pack];
    const after = live[pack];
    if (!before) {
      changes.push(`pack ${pack}: new, with tools ${after!.map((t) => t.name).join(', ')}`);
      continue;
    }
    if (!after) {
      changes.push(`pack ${pack}: no longer served`);
      continue;
    }
    const found = changes.length;
    for (const tool of after) {
      const old = before.find((t) => t.name === tool.name);
      if (!old) {
        changes.push(`${pack}/${tool.name}: new tool`);
        continue;
      }
      for (const key of ['inputSchema', 'outputSchema'] as const) {
        const path = firstDifference(old[key], tool[key], key);
        if (path !== undefined) changes.push(`${pack}/${tool.name}: ${path}`);
      }
    }
    for (const tool of before) {
      if (!after.some((t) => t.name === tool.name)) changes.push(`${pack}/${tool.name}: removed`);
    }
    const [was, is] = [before.map((t) => t.name), after.map((t) => t.name)];
    if (changes.length === found && was.join() !== is.join()) {
      changes.push(`pack ${pack}: tools listed in another order (${was.join(', ')} -> ${is.join(', ')})`);
    }
  }
  return changes;
}

/** The first path at which two JSON values differ, with both values; undefined when they are equal. */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (JSON.stringify(sortedKeys(a)) === JSON.stringify(sortedKeys(b))) return undefined;
  const bothObjects = typeof a === 'object' && a !== null && typeof b === 'object' && b !== null;
  if (bothObjects && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of [...keys].sort()) {
      const found = firstDifference(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (found !== undefined) return found;
    }
  }
  const show = (v: unknown): string => (v === undefined ? '(absent)' : JSON.stringify(v).slice(0, 200));
  return `${path} was ${show(a)}, is ${show(b)}`;
}
