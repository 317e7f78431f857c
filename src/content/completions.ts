/**
 * Where the values of a prompt argument or a resource template variable come from, for
 * completion/complete. A pack declares it as data; the engine computes the values: a closed list, the
 * most recent ISO weeks, or the labels of a tool's rows, read through the registry as the caller (so
 * completions take no other way to the database than a tool call, with its toolset, limits and audit).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CompletionSource, ContentContext, ToolCompletionSource } from './declarations.js';
import { scopeOf } from '../lib/data-scope.js';
import { recentWeeks, WEEK_KEYWORDS } from '../lib/weeks.js';

/** How long the labels read from a tool are reused: a completion is asked for at every key stroke. */
export const LABELS_TTL_MS = 60_000;
const MAX_CACHED = 1000;

/** The labels read from tools lately, by caller (its id, tools and data scope) and call; one per server. */
export interface LabelCache {
  labels(source: ToolSource, ctx: ContentContext): Promise<readonly string[]>;
}

type ToolSource = ToolCompletionSource;

export function createLabelCache(now: () => number = Date.now): LabelCache {
  const cache = new Map<string, { readonly at: number; readonly labels: Promise<readonly string[]> }>();
  return {
    labels: (source, ctx) => {
      // A tool outside the caller's toolset offers nothing, and is not tried, whoever loaded it before.
      if (!ctx.tools.some((t) => t.name === source.tool)) return Promise.resolve(FAILED);
      // What the caller may call and see (one id may hold several toolsets or scopes: a reload, an
      // OAuth subject's tokens); today: a period means another day's data.
      const key = JSON.stringify([
        ctx.caller.id,
        ctx.tools.map((t) => t.name),
        scopeOf(ctx.caller) ?? null,
        ctx.today,
        source.tool,
        source.arguments,
        source.field,
        source.within?.source ?? null,
      ]);
      const hit = cache.get(key);
      if (hit && now() - hit.at < LABELS_TTL_MS) return hit.labels;
      if (cache.size >= MAX_CACHED) cache.clear();
      const labels = readLabels(source, ctx);
      cache.set(key, { at: now(), labels });
      // A failed call is not remembered: the next key stroke asks again.
      void labels.then(
        (found) => found === FAILED && cache.delete(key),
        () => cache.delete(key),
      );
      return labels;
    },
  };
}

const FAILED: readonly string[] = Object.freeze([]);

async function readLabels(source: ToolSource, ctx: ContentContext): Promise<readonly string[]> {
  const calls = [source.arguments];
  if (source.within) {
    const { narrowTo } = source.within;
    const outer = await readLabels(source.within.source, ctx);
    if (outer === FAILED) return FAILED;
    calls.splice(0, 1, ...outer.map((value) => ({ ...source.arguments, ...narrowTo(value) })));
  }
  const labels = new Set<string>();
  for (const args of calls) {
    let result: CallToolResult;
    try {
      result = await ctx.callTool(source.tool, args);
    } catch {
      return FAILED; // the tool went away in a reload
    }
    const rows = (result.structuredContent as { rows?: unknown } | undefined)?.rows;
    // One call refused (a rate limit, say) fails the whole list, which is then not remembered.
    if (result.isError || !Array.isArray(rows)) return FAILED;
    for (const row of rows) {
      const label = (row as Record<string, unknown> | null)?.[source.field];
      if (typeof label === 'string' && label !== '') labels.add(label);
    }
  }
  return [...labels].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Every value a source offers now, before what was typed narrows them. */
export async function valuesOf(
  source: CompletionSource,
  ctx: ContentContext,
  cache: LabelCache,
): Promise<readonly string[]> {
  if ('values' in source) return source.values;
  if ('recentWeeks' in source)
    return [...recentWeeks(ctx.today, source.recentWeeks).map((w) => w.week), ...WEEK_KEYWORDS];
  return cache.labels(source, ctx);
}

/** The values that begin with what was typed, whatever its case. */
export function narrow(values: readonly string[], typed: string): string[] {
  const prefix = typed.toLowerCase();
  return values.filter((value) => value.toLowerCase().startsWith(prefix));
}
