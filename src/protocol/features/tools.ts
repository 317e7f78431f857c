/**
 * Tools: the registry's templates, listed for the caller and run through its one door. A tool that
 * runs as a job answers a client of the tasks extension with a task handle (features/tasks.ts).
 */
import { INVALID_PARAMS, ProtocolError } from '../../lib/errors.js';
import type { Feature } from '../feature.js';
import { isObject } from '../json-rpc.js';
import { acceptsTasks, createTaskResult } from './tasks.js';

/**
 * The tool list changes when the configuration file is reloaded, which clients that listen are told
 * of; a client that does not listen re-lists within a minute. Each caller's list is its own (toolsets).
 */
const TOOL_LIST_TTL_MS = 60_000;

export const toolsFeature: Feature = {
  capabilities: { tools: { listChanged: true } },
  methods: {
    'tools/list': {
      eras: ['legacy', 'modern'],
      cache: { ttlMs: TOOL_LIST_TTL_MS, cacheScope: 'private' },
      // Always in the registry's order, so a client's cache and a model's prompt stay stable. A client of
      // the tasks extension runs reports as tasks: the job tools would only cost its model context.
      handle: (_params, ctx) => ({ tools: ctx.deps.registry.toolsFor(ctx.caller, { tasks: acceptsTasks(ctx) }) }),
    },
    'tools/call': {
      eras: ['legacy', 'modern'],
      nameParam: 'name',
      handle: async (params, ctx) => {
        const { deps, caller, signal, traceparent, log, notify } = ctx;
        const { name, arguments: args } = params;
        if (typeof name !== 'string') throw new ProtocolError(INVALID_PARAMS, 'Invalid params: name must be a string');
        if (args !== undefined && !isObject(args)) {
          throw new ProtocolError(INVALID_PARAMS, 'Invalid params: arguments must be an object');
        }
        // A tool that runs as a job, called by a client of the tasks extension: a task handle at once.
        if (acceptsTasks(ctx) && deps.registry.runsAsJob(name)) {
          const submitted = await deps.registry.submit(name, args, deps, { caller, traceparent, report: log });
          if ('result' in submitted) return submitted.result as unknown as Record<string, unknown>;
          return createTaskResult(submitted.job, deps.jobs!);
        }
        // A request that carries a progress token hears after each step of a call that takes several.
        const meta = isObject(params._meta) ? params._meta : undefined;
        const token = meta?.progressToken;
        const progress =
          notify !== undefined && (typeof token === 'string' || typeof token === 'number')
            ? (done: number, total: number, message: string): void =>
                notify({
                  jsonrpc: '2.0',
                  method: 'notifications/progress',
                  params: { progressToken: token, progress: done, total, message },
                })
            : undefined;
        const result = await deps.registry.call(name, args, deps, {
          caller,
          signal,
          traceparent,
          report: log,
          ...(progress ? { progress } : {}),
        });
        return result as unknown as Record<string, unknown>;
      },
    },
  },
};
