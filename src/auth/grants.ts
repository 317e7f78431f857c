/**
 * What a caller may do, from the configuration in force: tools granted by toolsets, toolsets granted
 * by scopes. Looked up on every request, so that a reloaded configuration applies at once.
 */
import type { Caller } from '../lib/caller.js';

/** The named toolsets in force (from the configuration file, which may be reloaded). */
export type Toolsets = () => ReadonlyMap<string, ReadonlySet<string>>;

/** The scopes in force: what each grants, toolset names or "*" for every tool. */
export type ScopeGrants = () => ReadonlyMap<string, readonly string[]>;

export interface Grants {
  readonly toolsets: Toolsets;
  readonly scopes: ScopeGrants;
}

export const NO_TOOLS: ReadonlySet<string> = new Set();

/** The tools a set of scopes grants: undefined for every tool; none when no scope grants anything. */
export function toolsOfScopes(scopes: readonly string[], grants: Grants): ReadonlySet<string> | undefined {
  const toolsets = grants.toolsets();
  const mapping = grants.scopes();
  const tools = new Set<string>();
  for (const scope of scopes) {
    for (const toolset of mapping.get(scope) ?? []) {
      if (toolset === '*') return undefined;
      for (const tool of toolsets.get(toolset) ?? NO_TOOLS) tools.add(tool);
    }
  }
  return tools;
}

/** The scopes that would grant a tool, for an insufficient_scope challenge. */
export function scopesGranting(tool: string, grants: Grants): string[] {
  const toolsets = grants.toolsets();
  return [...grants.scopes()]
    .filter(([, granted]) => granted.some((name) => name === '*' || toolsets.get(name)?.has(tool)))
    .map(([scope]) => scope);
}

/** Whether the scopes grant anything at all. */
export function grantsAnything(scopes: readonly string[], grants: Grants): boolean {
  const mapping = grants.scopes();
  return scopes.some((scope) => (mapping.get(scope)?.length ?? 0) > 0);
}

/** A caller whose tools follow its scopes through reloads. */
export function callerWithScopes(base: Omit<Caller, 'tools'>, scopes: readonly string[], grants: Grants): Caller {
  return {
    ...base,
    get tools() {
      return toolsOfScopes(scopes, grants);
    },
  };
}
